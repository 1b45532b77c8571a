"""Simulation-speed probe for benchmarks/sim_speed.py (not a pytest bench: no test_ prefix).

Loads one compiled program into the accelerator, then runs it REPEATS times and measures the
wall-clock time from `start` to `done` with no Python activity per clock edge, so the number is
the simulator's own speed on the whole design. Writes JSON to $PERF_OUT. The first run's
outputs are checked against the golden executor so the timed design is known to be right.
"""

import os
import time

import cocotb
import numpy as np

from fpga.arch import ArrayConfig
from fpga.compiler import compile_network
from fpga.lowering import encode_input
from models import golden
from models.random_networks import random_images, random_sac_network
from safeio import write_json_atomic
from tb.bitserial import start_clock
from tb.host_port import HostPort


@cocotb.test()
async def whole_program(dut):
    cfg = ArrayConfig.from_env()
    repeats = int(os.environ.get("PERF_REPEATS", "3"))
    rng = np.random.default_rng(int(os.environ.get("PERF_SEED", "7")))
    side = int(os.environ.get("PERF_SIDE", "16"))
    # two filter tiles per layer whatever the array's size, so every row does work
    net = random_sac_network(
        rng,
        in_shape=(8, side, side),
        widths=(2 * cfg.rows, 2 * cfg.rows),
        groups=(1, 2, 4),
        final="pixel_sum",
    )
    prog = compile_network(net, cfg)
    image = random_images(rng, 1, net.input_shape, zero_fraction=0.5)[0]
    await start_clock(dut)
    host = HostPort(dut, cfg)
    await host.reset()
    await host.load_program(prog)
    first = prog.layers[0]  # a SAC network: one segment, no host layers
    assert not prog.host_layers and len(prog.segments) == 1
    await host.write_tensor(first.input, encode_input(first.op, image[None])[0])
    walls, cycles = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        st = await host.run()
        walls.append(time.perf_counter() - t0)
        cycles.append(st["cycles"])
        assert not st["error"]
    got = await host.read_tensor(prog.layers[-1].output)
    assert np.array_equal(got, golden.run(net, image[None]).scores[0]), "wrong result"
    best = min(walls)
    result = {
        "cycles": cycles[0],
        "wall_s": walls,
        "cycles_per_s": cycles[0] / best,
        "instructions": len(prog.instructions),
        "cells": cfg.rows * cfg.cols,
    }
    dut._log.info(f"{result}")
    write_json_atomic(os.environ["PERF_OUT"], result)
