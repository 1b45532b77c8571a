#!/usr/bin/env python3
"""What the data feeder's pipeline registers cost in cycles: cycles per image of the zoo models
(on the default 8x8 array and on the paper's 128x64 with 1,024 banks, as their cards) and of the
seed CIFAR-10 network on 128x64 (benchmarks/cifar_cycles.py's network), with the cycle model as
it is (fpga/cycle_model.py FEED_LATENCY, which the RTL meets exactly) against the anchor of the
same model with the feeder unregistered (FEED_LATENCY - FEEDER_REGISTERS), computed in the same
run. The budget for timing-closure registers is +2 % cycles.

    .venv/bin/python benchmarks/feed_pipeline_cost.py
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

import cifar_cycles  # benchmarks/ is this script's folder, so it imports directly
import numpy as np

from fpga import cycle_model
from fpga.compiler import compile_network, fitted_config
from fpga.cycle_model import program_timeline
from models.onnx.importer import import_onnx
from workbench.cards import cycles_per_image  # as the cards count them

ZOO = Path(__file__).resolve().parents[1] / "models" / "zoo"
ARRAYS = ((8, 8, 64), (128, 64, 1024))  # as the cards (workbench/cards.py)
BUDGET = 0.02


@contextmanager
def feed_latency(value: int):
    saved = cycle_model.FEED_LATENCY
    cycle_model.FEED_LATENCY = value
    try:
        yield
    finally:
        cycle_model.FEED_LATENCY = saved


def cifar_cycles_128x64() -> int:
    cfg = cifar_cycles.seed_array(128, 64)
    rng = np.random.default_rng(0)
    total = 0
    for _name, cin, cout, side, group, shift, mode in cifar_cycles.seed_layers():
        prog = cifar_cycles.layer_program(rng, cin, cout, side, group, shift, mode, cfg)
        total += sum(s.cycles for s in program_timeline(prog.instructions, cfg)[:-1])
    return total


def rows():
    for path in sorted(ZOO.glob("*.onnx")):
        net = import_onnx(path)
        for r, c, cmax in ARRAYS:
            prog = compile_network(net, fitted_config(net, r, c, cmax))
            yield f"{path.stem} {r}x{c}", lambda prog=prog: cycles_per_image(prog)
    yield "seed CIFAR-10 128x64", cifar_cycles_128x64


def main() -> int:
    now = cycle_model.FEED_LATENCY
    anchor = now - cycle_model.FEEDER_REGISTERS
    print(f"cycles per image, FEED_LATENCY {now} (as the RTL) vs {anchor} (feeder unregistered, the anchor)")
    print(f"{'model':<28}{'anchor':>12}{'now':>12}{'growth':>9}")
    worst = 0.0
    for name, count in rows():
        with feed_latency(anchor):
            before = count()
        after = count()
        growth = after / before - 1
        worst = max(worst, growth)
        flag = "" if growth <= BUDGET else "  over the 2 % budget"
        print(f"{name:<28}{before:>12,}{after:>12,}{growth:>8.2%}{flag}")
    print(f"largest growth {worst:.2%} (budget {BUDGET:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
