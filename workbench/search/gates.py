"""Bernoulli gates of a stochastic super network and the REINFORCE estimator (BSN, Veniat &
Denoyer, CVPR 2018).

A super network E has N gates; the logits Gamma (here `GateSet.logits`) give each gate's
probability sigmoid(Gamma). For every example one binary vector H ~ Gamma is sampled and the
example is computed by the sub-network H (x) E. The objective of one example is

    D(x, y, H) = loss(f(x; H, theta), y) + lambda * max(0, C(H) - budget) / budget

(the penalty is relative to the budget, so one lambda means the same for cycles, parameters or
microjoules: the paper's lambda is our lambda / budget). Its gradient with respect to Gamma is
estimated by REINFORCE:

    grad_Gamma ~ mean_n (D_n - b_n) * grad_Gamma log p(H_n | Gamma)

with two variance reductions (`benchmarks/search_estimator.py` measures them):
* the baseline b_n is the mean of D over the *other* examples of the batch (leave-one-out: the
  paper's batch mean includes D_n itself, which biases the estimate by 1/n and adds noise);
* log p(H_n) sums only the gates that matter for example n (`relevant`): the width gates of a
  skipped layer, or the gates after the first "off" of a chain (depth, column-combining group),
  change nothing in the sub-network, so rewarding their random draws only adds noise.

theta gets the ordinary gradient of the loss through the sampled sub-networks. The final
architecture keeps the gates whose probability is above 0.5.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class GateGroup:
    """A named run of gates inside the gate vector: `size` gates starting at `start`."""

    name: str
    start: int
    size: int

    @property
    def slice(self) -> slice:
        return slice(self.start, self.start + self.size)


class GateSet(nn.Module):
    """The gate logits of one super network, in named groups (e.g. "depth", "width3").

    `groups` lists (name, number of gates, initial probability). Super networks start from
    their most expressive sub-network: gates that add capacity (a layer, a channel block) start
    likely on, gates that remove it (a larger column-combining group) likely off."""

    def __init__(self, groups: list[tuple[str, int, float]]):
        super().__init__()
        self.groups: dict[str, GateGroup] = {}
        init = []
        for name, size, prob in groups:
            if name in self.groups:
                raise ValueError(f"gate group {name!r} defined twice")
            if not 0.0 < prob < 1.0:
                raise ValueError(f"gate group {name!r}: initial probability must be in (0, 1), got {prob}")
            self.groups[name] = GateGroup(name, len(init), int(size))
            init += [float(torch.logit(torch.tensor(prob)))] * int(size)
        self.logits = nn.Parameter(torch.tensor(init, dtype=torch.float32))

    @property
    def size(self) -> int:
        return int(self.logits.numel())

    def probs(self) -> torch.Tensor:
        return torch.sigmoid(self.logits)

    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """n independent gate vectors H [n, N] (0./1. floats) on the logits' device, drawn
        from the CPU `generator` (the same draws for a seed on every device)."""
        p = self.probs().detach().cpu().expand(n, -1)
        return torch.bernoulli(p, generator=generator).to(self.logits.device)

    def deterministic(self) -> torch.Tensor:
        """The final architecture: gates with probability above 0.5, as a [1, N] batch."""
        return (self.probs().detach() > 0.5).float()[None]

    def log_prob(self, h: torch.Tensor, relevant: torch.Tensor | None = None) -> torch.Tensor:
        """log p(H_n | Gamma) per row of h [n, N] (differentiable in the logits), summed over
        the gates `relevant` [n, N] marks (all when None)."""
        logp = nn.functional.logsigmoid(self.logits)
        log1mp = nn.functional.logsigmoid(-self.logits)
        terms = h * logp + (1 - h) * log1mp
        return (terms if relevant is None else terms * relevant).sum(dim=1)

    def entropy(self) -> torch.Tensor:
        """The gates' summed Bernoulli entropy (nats; differentiable): what the late entropy
        term lowers, so that the gates settle on 0 or 1."""
        p = self.probs()
        return -(
            p * nn.functional.logsigmoid(self.logits) + (1 - p) * nn.functional.logsigmoid(-self.logits)
        ).sum()

    def part(self, h: torch.Tensor, name: str) -> torch.Tensor:
        """The columns of h [n, N] that belong to group `name`."""
        return h[:, self.groups[name].slice]

    def summary(self) -> dict:
        """Probability of every gate, by group (for logs and trial results)."""
        p = self.probs().detach()
        return {g.name: [round(float(v), 4) for v in p[g.slice]] for g in self.groups.values()}


PENALTIES = ("hinge", "abs")


def budget_penalty(cost: torch.Tensor, budget: float, lam: float, form: str = "hinge") -> torch.Tensor:
    """Per example: lambda * max(0, C - budget) / budget (`hinge`: the paper's), or lambda *
    |C - budget| / budget (`abs`: the BSN authors' code; a cost under the budget is penalized
    too, so the search spends the budget instead of drifting below it)."""
    if budget <= 0:
        raise ValueError(f"budget must be positive, got {budget}")
    if form == "abs":
        return lam * torch.abs(cost - budget) / budget
    if form != "hinge":
        raise ValueError(f"penalty must be one of {PENALTIES}, got {form!r}")
    return lam * torch.clamp(cost - budget, min=0.0) / budget


BASELINES = ("leave-one-out", "batch-mean")


def reinforce_loss(
    quality: torch.Tensor, log_prob: torch.Tensor, baseline: str = "leave-one-out"
) -> torch.Tensor:
    """The surrogate whose gradient is the REINFORCE estimate for the gate logits:
    mean_n (D_n - b_n) * log p(H_n), with D detached (it carries no gradient of its own);
    b_n the mean of the other examples' D (`leave-one-out`) or of all (`batch-mean`, the
    paper's)."""
    d = quality.detach()
    n = d.numel()
    if baseline == "leave-one-out" and n > 1:
        b = (d.sum() - d) / (n - 1)
    elif baseline in BASELINES:
        b = d.mean()
    else:
        raise ValueError(f"baseline must be one of {BASELINES}, got {baseline!r}")
    return ((d - b) * log_prob).mean()


def nested_count(h: torch.Tensor) -> torch.Tensor:
    """Number of leading ones per row of h [n, k]: gates in a chain, each one only meaningful
    if the one before it is on (depth prefixes, group-size doublings)."""
    return torch.cumprod(h, dim=1).sum(dim=1)


def chain_relevant(h: torch.Tensor) -> torch.Tensor:
    """[n, k] 1 where a gate of a chain matters: the first always, the others only while every
    gate before them is on (after the first "off" the rest change nothing)."""
    if h.shape[1] == 0:
        return h
    on_before = torch.cumprod(h, dim=1)[:, :-1]
    return torch.cat([torch.ones_like(h[:, :1]), on_before], dim=1)


def extracted_probability(net, arch, samples: int = 20_000, seed: int = 0) -> float:
    """The chance that a sample of the final gates decodes to `arch` (the architecture the
    search returns): Monte Carlo over `samples` gate vectors drawn from a fixed seed. Near 1
    when the super network trained the network it returns; the BSN paper's deterministic
    extraction says nothing about it."""
    g = torch.Generator().manual_seed(seed)
    hits = 0
    for lo in range(0, samples, 2000):
        h = net.gates.sample(min(2000, samples - lo), generator=g).cpu()
        hits += sum(a == arch for a in net.decode_batch(h))
    return hits / samples
