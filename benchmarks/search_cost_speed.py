#!/usr/bin/env python3
"""What a gated step of a SAC search spends on its cycles cost: the cost model's
`fpga.compiler.network_cycles` (each op shape's tiles emitted once) against the full
`compile_network` + cycle model of the same sampled architectures (the anchor, in the same
run), and against one training step of the super network. Every cycles value is checked
equal to the full compile's; the cost model's memory is printed too.

    .venv/bin/python benchmarks/search_cost_speed.py [--data fashion] [--array 8x8] \\
        [--batches 8] [--seed 0]
"""

import argparse
import sys
import time

import torch
import torch.nn.functional as F

from fpga.compiler import compile_network, roomy_config
from workbench.search import sac_family
from workbench.search.costs import CostModel, CostSettings

SHAPES = {"digits": (1, 8, 8), "fashion": (1, 28, 28)}


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        return int(fh.read().split("VmRSS:")[1].split()[0]) / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", choices=sorted(SHAPES), default="fashion")
    ap.add_argument("--array", default="8x8")
    ap.add_argument("--batches", type=int, default=8, help="batches of 64 sampled architectures")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(
        f"seed {args.seed}; zoo {args.data} SAC space, {args.array} array, "
        f"{args.batches} batches of 64 samples (gates at their initial probabilities)"
    )
    shape = SHAPES[args.data]
    space = sac_family.make_space(shape, 10, sac_family.zoo_space(args.data))
    net = sac_family.supernet(space, 0.9)
    model = CostModel(sac_family, CostSettings(array=args.array), shape, 10)
    rows, cols = model.settings.rows_cols
    gen = torch.Generator().manual_seed(args.seed)
    torch.set_num_threads(2)

    # anchor 1: one training step of the super network on a batch of 64
    opt = torch.optim.Adam(net.weight_parameters(), lr=0.01)
    x, y = torch.rand(64, *shape, generator=gen) * 255, torch.arange(64) % 10
    steps = []
    for _i in range(4):
        t0 = time.perf_counter()
        logits, _ = net(x, net.gates.sample(64, generator=gen))
        opt.zero_grad()
        F.cross_entropy(logits, y).backward()
        opt.step()
        steps.append(time.perf_counter() - t0)
    step_s = min(steps[1:])

    rss0, fast_s, full_s, n, full_n = rss_mb(), 0.0, 0.0, 0, 0
    for b in range(args.batches):
        archs = net.decode_batch(net.gates.sample(64, generator=gen))
        t0 = time.perf_counter()
        cycles = [model.static("cycles", a) for a in archs]
        fast_s += time.perf_counter() - t0
        n += len(archs)
        # anchor 2: the full compile of a quarter of them (it is the slow one)
        t0 = time.perf_counter()
        for a, c in list(zip(archs, cycles, strict=True))[::4]:
            full = compile_network(
                model.network(a), roomy_config(rows, cols), encode_words=False
            ).cycles_per_image()
            if full != c:
                print(f"MISMATCH: {a.describe()}: cost {c}, full compile {full}")
                return 1
            full_n += 1
        full_s += time.perf_counter() - t0
        print(
            f"  batch {b + 1}/{args.batches}: {1e3 * fast_s / n:.1f} ms per sample, "
            f"{len(model._op_cycles)} op shapes timed",
            flush=True,
        )
    fast, full = fast_s / n, full_s / full_n
    print(f"training step (batch 64):          {step_s:.3f} s")
    print(
        f"cycles cost, network_cycles:       {1e3 * fast:.1f} ms per sample, "
        f"{64 * fast:.2f} s per batch ({64 * fast / step_s:.1f}x the training step)"
    )
    print(
        f"cycles cost, full compile (anchor): {1e3 * full:.1f} ms per sample, "
        f"{64 * full:.2f} s per batch ({64 * full / step_s:.1f}x the training step)"
    )
    print(
        f"speed-up {full / fast:.1f}x; {full_n} of {n} samples checked equal; "
        f"cost model holds {model.objects_kept} networks/programs, memory "
        f"{rss_mb() - rss0:+.0f} MB over {model.cached_architectures} architectures"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
