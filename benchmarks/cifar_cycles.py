#!/usr/bin/env python3
"""Cycles per image and array utilisation of the seed paper's CIFAR-10 network on a 128x64 SAC
array, from the exact cycle model (fpga/cycle_model.py, which the RTL meets cycle for cycle),
next to the seed design's own estimate of 8*P + W + H + 22 cycles per tile (weight loading not
overlapped).

The network (the seed paper's, Kung et al., ICS 2019): a 1x1 conv 3->128 on the 32x32 image,
then three stages of six
[channel shift, 1x1 conv, BN folded, ReLU & quantize] layers at 128, 256, 512 channels, with
stride 1, 2, 2 at the stage entries and column-combining groups 1, 2, 8; average pooling folded
into the final 512->10 layer (raw + pixel sum). The ISA has no stride, so a strided 1x1 layer is
compiled for its output resolution (the host subsamples its input: same arithmetic, same
cycles). Weights are random power-of-two values with the right sparsity pattern: cycles do not
depend on the values.

Utilisation = cell-cycles in which a loaded cell processes a datum (tile rows x tile columns x
8 cycles per pixel, summed over MATMULs) / (rows x cols x total cycles).
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from fpga.arch import ArrayConfig
from fpga.clock import clock_for
from fpga.compiler import compile_network
from fpga.cycle_model import program_timeline, seed_tile_cycles
from fpga.isa import LoadWeights, Matmul
from models import ir
from models.numerics.sac import OutputMode
from models.random_networks import random_combined
from safeio import write_text_atomic


def seed_layers():
    """(name, in_channels, out_channels, side, group, shift, mode) of the seed CIFAR-10 net."""
    layers = [("conv0", 3, 128, 32, 1, False, OutputMode.RELU_QUANT)]
    c, side = 128, 32
    for stage, (width, stride, group) in enumerate([(128, 1, 1), (256, 2, 2), (512, 2, 8)]):
        for i in range(6):
            if i == 0:
                side //= stride
            layers.append((f"s{stage + 1}.{i}", c, width, side, group, True, OutputMode.RELU_QUANT))
            c = width
    layers.append(("fc", 512, 10, side, 8, False, OutputMode.RAW))
    return layers


def layer_program(rng, cin, cout, side, group, shift, mode, cfg):
    parts = []
    if shift:
        parts.append(ir.ChannelShift(directions=rng.integers(0, 9, size=cin)))
    parts.append(
        ir.PointwiseConv(
            weights=random_combined(rng, cout, cin, group, density=1.0),
            bias=np.zeros(cout, dtype=np.int32),
            mode=mode,
        )
    )
    if mode == OutputMode.RAW:
        parts.append(ir.PixelSum())
    net = ir.Network((cin, side, side), "uint8", parts)
    return compile_network(net, cfg)


def seed_array(rows: int, cols: int) -> ArrayConfig:
    """The array the seed network runs on: 1,024 banks and memories deep enough for it."""
    return ArrayConfig(
        rows=rows,
        cols=cols,
        cmax=1024,
        ddepth=8192,
        pdepth=4096,
        wdepth=8192,
        bdepth=4096,
        sdepth=256,
        imem_depth=1024,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--array", default="128x64")
    ap.add_argument(
        "--clock-mhz",
        type=float,
        default=None,
        help="for latency (default: the routed Fmax of this configuration, else the seed's 170 MHz)",
    )
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows, cols = (int(v) for v in args.array.lower().split("x"))
    cfg = seed_array(rows, cols)
    clock = clock_for(cfg, args.clock_mhz)
    rng = np.random.default_rng(0)
    table = []
    tot = {"cycles": 0, "load": 0, "seed": 0, "busy": 0, "tiles": 0}
    for name, cin, cout, side, group, shift, mode in seed_layers():
        prog = layer_program(rng, cin, cout, side, group, shift, mode, cfg)
        steps = program_timeline(prog.instructions, cfg)[:-1]  # drop HALT
        cycles = sum(s.cycles for s in steps)
        load = sum(s.cycles for s in steps if isinstance(s.instr, LoadWeights))
        tiles, busy, rows_of = 0, 0, {}
        for s in steps:
            if isinstance(s.instr, LoadWeights):
                rows_of = (s.instr.rows, s.instr.cols)
            elif isinstance(s.instr, Matmul):
                tiles += 1
                busy += rows_of[0] * rows_of[1] * 8 * s.instr.pixels
        p = side * side
        seed = tiles * seed_tile_cycles(p, cols, rows)
        table.append((name, cin, cout, side, group, tiles, cycles, load, seed, busy))
        for k, v in zip(
            ("cycles", "load", "seed", "busy", "tiles"), (cycles, load, seed, busy, tiles), strict=True
        ):
            tot[k] += v
    print(f"seed CIFAR-10 network on a {rows}x{cols} array (exact cycle model vs seed estimate)")
    print(
        f"{'layer':<8}{'C->F':>10}{'HxW':>7}{'G':>3}{'tiles':>6}{'cycles':>10}{'of which load':>15}"
        f"{'seed est.':>11}{'util':>7}"
    )
    for name, cin, cout, side, group, tiles, cycles, load, seed, busy in table:
        util = busy / (rows * cols * cycles)
        print(
            f"{name:<8}{f'{cin}->{cout}':>10}{f'{side}x{side}':>7}{group:>3}{tiles:>6}{cycles:>10,}"
            f"{load:>15,}{seed:>11,}{util:>7.1%}"
        )
    util = tot["busy"] / (rows * cols * tot["cycles"])
    lat = tot["cycles"] / clock.mhz / 1e3
    print(
        f"{'total':<8}{'':>10}{'':>7}{'':>3}{tot['tiles']:>6}{tot['cycles']:>10,}{tot['load']:>15,}"
        f"{tot['seed']:>11,}{util:>7.1%}"
    )
    print(
        f"cycles per image {tot['cycles']:,} (without weight loads {tot['cycles'] - tot['load']:,}); "
        f"seed formula {tot['seed']:,}; utilisation {util:.1%}; "
        f"{lat:.3f} ms per image at {clock.label}"
    )
    if args.json:
        write_text_atomic(
            args.json,
            json.dumps(
                {
                    "array": [rows, cols],
                    "layers": [
                        dict(
                            zip(
                                (
                                    "name",
                                    "cin",
                                    "cout",
                                    "side",
                                    "group",
                                    "tiles",
                                    "cycles",
                                    "load",
                                    "seed",
                                    "busy",
                                ),
                                row,
                                strict=True,
                            )
                        )
                        for row in table
                    ],
                    "total": tot,
                    "utilisation": util,
                    "latency_ms": lat,
                    "clock": clock.as_dict(),
                },
                indent=2,
            ),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
