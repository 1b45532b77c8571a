#!/usr/bin/env python3
"""The variance of the search's gradient estimate for the gate logits, before and after its two
variance reductions (workbench/search/gates.py), on one fixed batch of one fixed super network.

The anchor is the paper's estimator in the same run: REINFORCE with the batch mean of D as the
baseline and the log-probability of every gate. Against it: the leave-one-out baseline, the
masked log-probability (only the gates that change the example's sub-network), and both. Each
estimate is drawn `--draws` times on the same batch (new gate samples each time); printed per
estimator: the total variance (the sum over gates of the variance of the gradient's component),
its ratio to the anchor's, and the cosine between the mean gradient and the anchor's (the
masked and leave-one-out estimates are unbiased; the batch mean is biased by (n-1)/n).

    .venv/bin/python benchmarks/search_estimator.py [--family sac|bnn] [--data digits]
        [--budget 15000] [--draws 300] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
import torch.nn.functional as F

from models.datasets import load_dataset
from models.train.common import to_tensors, training_session
from workbench.search.costs import CostModel, CostSettings
from workbench.search.families import family
from workbench.search.gates import budget_penalty, reinforce_loss
from workbench.search.trial import TrialConfig, train_supernet

ESTIMATORS = {  # name: (baseline, masked)
    "batch mean, every gate (the paper's)": ("batch-mean", False),
    "leave-one-out, every gate": ("leave-one-out", False),
    "batch mean, relevant gates": ("batch-mean", True),
    "leave-one-out, relevant gates (the search's)": ("leave-one-out", True),
}


def gradients(
    net, model, cost: str, budget: float, lam: float, x, y, draws: int, gen, baseline: str, masked: bool
) -> torch.Tensor:
    """[draws, gates]: the estimate of d objective / d logits, one per fresh sample of gates."""
    out = []
    net.eval()  # batch norm fixed: only the gates' draws vary
    for _ in range(draws):
        h = net.gates.sample(len(x), generator=gen)
        with torch.no_grad():
            logits, activity = net(x, h)
            loss = F.cross_entropy(logits, y, reduction="none")
            d = loss + budget_penalty(model.per_example(cost, net.decode_batch(h), activity), budget, lam)
        net.gates.logits.grad = None
        logp = net.gates.log_prob(h, net.relevant(h) if masked else None)
        reinforce_loss(d, logp, baseline).backward()
        out.append(net.gates.logits.grad.detach().clone())
    return torch.stack(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", choices=("sac", "bnn"), default="sac")
    ap.add_argument("--data", default="digits")
    ap.add_argument("--cost", default="cycles")
    ap.add_argument("--budget", type=float, default=15000.0)
    ap.add_argument("--lam", type=float, default=1.0)
    ap.add_argument(
        "--warmup-epochs", type=int, default=3, help="weight-only epochs that make the fixed super network"
    )
    ap.add_argument("--draws", type=int, default=300)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(
        f"seed {args.seed}; {args.family} super network on {args.data}, {args.cost} budget "
        f"{args.budget:,.0f}, lambda {args.lam}; {args.warmup_epochs} warm-up epochs, one "
        f"batch of {args.batch}, {args.draws} draws per estimator",
        flush=True,
    )
    fam = family(args.family)
    t0 = time.perf_counter()
    with training_session(args.seed, 1) as gen:
        train, val = load_dataset(args.data, "train"), load_dataset(args.data, "val")
        model = CostModel(fam, CostSettings(), train.image_shape, train.classes)
        cfg = TrialConfig(
            family=args.family,
            cost=args.cost,
            budget=args.budget,
            lam=args.lam,
            seed=args.seed,
            data=args.data,
            epochs=args.warmup_epochs,
            warmup_epochs=args.warmup_epochs,
            export=False,
        )
        net, _ = train_supernet(cfg, fam, model, to_tensors(train), to_tensors(val), gen)
        x, y = to_tensors(train)
        x, y = x[: args.batch], y[: args.batch]
        results = {}
        for name, (baseline, masked) in ESTIMATORS.items():
            g = gradients(
                net,
                model,
                args.cost,
                args.budget,
                args.lam,
                x,
                y,
                args.draws,
                torch.Generator().manual_seed(args.seed + 1),
                baseline,
                masked,
            )
            results[name] = g
    anchor = next(iter(results.values()))
    var0, mean0 = float(anchor.var(dim=0).sum()), anchor.mean(dim=0)
    print(f"\n{'estimator':48s} {'total variance':>15s} {'vs paper':>9s} {'cosine(mean)':>13s}")
    for name, g in results.items():
        var, mean = float(g.var(dim=0).sum()), g.mean(dim=0)
        cos = float(F.cosine_similarity(mean, mean0, dim=0))
        print(f"{name:48s} {var:15.6g} {var / var0:9.3f} {cos:13.3f}")
    print(f"\n[search_estimator] {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
