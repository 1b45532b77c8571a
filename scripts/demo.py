#!/usr/bin/env python3
"""`make demo`: the main job as far as it exists.

Compiles a seeded random SAC network for an 8x8 array, runs it through the golden executor and
the instruction-level interpreter, and prints per-layer agreement and cycles.
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models import golden  # noqa: E402
from models.arch import ArrayConfig  # noqa: E402
from models.compiler import compile_network  # noqa: E402
from models.interpreter import run_program  # noqa: E402
from models.random_networks import random_images, random_sac_network  # noqa: E402


def main() -> int:
    seed = 2026
    rng = np.random.default_rng(seed)
    net = random_sac_network(rng, in_shape=(3, 16, 16), widths=(16, 24), groups=(1, 2, 4), s2d=2)
    cfg = ArrayConfig(rows=8, cols=8)
    prog = compile_network(net, cfg)
    print(f"seed {seed}\n{net.summary()}\n")
    x = random_images(rng, 4, net.input_shape)
    ref = golden.run(net, x)
    bad = 0
    for i in range(len(x)):
        outs, stats, _ = run_program(prog, x[i])
        for lp, out in zip(prog.layers, outs):
            bad += int((out != ref.outputs[lp.layer_index][i]).sum())
    print(f"{'layer':<44}{'tiles':>8}{'cycles':>10}")
    for lp in prog.layers:
        cyc = sum(stats.cycles[lp.first_instr:lp.first_instr + lp.n_instr])
        desc = net.layers[lp.layer_index].describe()
        print(f"{lp.layer_index:2d} {desc:<41}{lp.n_tiles}x{lp.k_tiles:<6}{cyc:>10}")
    print(f"total cycles per image on {cfg.rows}x{cfg.cols}: {stats.total_cycles}")
    print(f"interpreter vs golden on {len(x)} images: {bad} mismatching elements")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
