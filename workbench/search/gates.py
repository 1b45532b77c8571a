"""Bernoulli gates of a stochastic super network and the REINFORCE estimator (BSN, Veniat &
Denoyer, CVPR 2018).

A super network E has N gates; the logits Gamma (here `GateSet.logits`) give each gate's
probability sigmoid(Gamma). For every example one binary vector H ~ Gamma is sampled and the
example is computed by the sub-network H (x) E. The objective of one example is

    D(x, y, H) = loss(f(x; H, theta), y) + lambda * max(0, C(H) - budget) / budget

(the penalty is relative to the budget, so one lambda means the same for cycles, parameters or
microjoules: the paper's lambda is our lambda / budget). Its gradient with respect to Gamma is
estimated by REINFORCE with the batch mean of D as the baseline (the paper's variance
reduction):

    grad_Gamma ~ mean_n (D_n - mean_m D_m) * grad_Gamma log p(H_n | Gamma)

while theta gets the ordinary gradient of the loss through the sampled sub-networks. The final
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
                raise ValueError(f"gate group {name!r}: initial probability must be in (0, 1), "
                                 f"got {prob}")
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

    def log_prob(self, h: torch.Tensor) -> torch.Tensor:
        """log p(H_n | Gamma) per row of h [n, N] (differentiable in the logits)."""
        logp = nn.functional.logsigmoid(self.logits)
        log1mp = nn.functional.logsigmoid(-self.logits)
        return (h * logp + (1 - h) * log1mp).sum(dim=1)

    def part(self, h: torch.Tensor, name: str) -> torch.Tensor:
        """The columns of h [n, N] that belong to group `name`."""
        return h[:, self.groups[name].slice]

    def summary(self) -> dict:
        """Probability of every gate, by group (for logs and trial results)."""
        p = self.probs().detach()
        return {g.name: [round(float(v), 4) for v in p[g.slice]] for g in self.groups.values()}


def budget_penalty(cost: torch.Tensor, budget: float, lam: float) -> torch.Tensor:
    """lambda * max(0, C - budget) / budget, per example."""
    if budget <= 0:
        raise ValueError(f"budget must be positive, got {budget}")
    return lam * torch.clamp(cost - budget, min=0.0) / budget


def reinforce_loss(quality: torch.Tensor, log_prob: torch.Tensor) -> torch.Tensor:
    """The surrogate whose gradient is the REINFORCE estimate for the gate logits:
    mean_n (D_n - mean D) * log p(H_n), with D detached (it carries no gradient of its own)."""
    d = quality.detach()
    return ((d - d.mean()) * log_prob).mean()


def nested_count(h: torch.Tensor) -> torch.Tensor:
    """Number of leading ones per row of h [n, k]: gates in a chain, each one only meaningful
    if the one before it is on (depth prefixes, group-size doublings)."""
    return torch.cumprod(h, dim=1).sum(dim=1)
