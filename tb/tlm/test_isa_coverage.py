"""Constrained-random ISA regression with functional coverage (tb/tlm/isa_coverage.py).

Random SAC networks (shift on or off, in front of every layer, with zero or random nonzero
fill; every final mode; every fourth program a BNN with random channel counts and 3x3 padding
0 or 1, lowered onto the array; column groups 1/2/4/8, channel and
filter counts around the array's size so tiles of 1, mid and full rows and columns occur,
frames of 1 or more pixels, inputs with no, some or only zero bytes; every third SAC program
with the final layer's biases at the int32 extremes, so its accumulators wrap) are compiled and
run on the accelerator top; every layer is checked against the golden executor and every instruction's
retire cycle and activity against the cycle model and the interpreter
(tb.test_accelerator.run_and_check); then every executed instruction is sampled into the
covergroups. A malformed program per error code follows (the decoder's code and pc must equal
fpga.isa.check_program's). The seed is printed and replays the same programs.

TB_COVERAGE_PROGRAMS sets the most programs (`make test`: a smoke of 3; `make coverage`: 80,
stopping early once every program bin is hit); with TB_COVERAGE_OUT set, the covergroups are
written there as functional.xml and functional.yml (cocotb-coverage's formats) plus
functional.json (the table workbench/flows/coverage.py prints)."""

import dataclasses
import json
import os
from pathlib import Path

import cocotb
import numpy as np
import pytest

from fpga.arch import ArrayConfig
from fpga.compiler import compile_network
from fpga.isa import ErrorCode, Halt, IsaError, LoadWeights, Matmul, check_program, encode
from models import ir
from models.checks import INT32_MAX, INT32_MIN
from models.numerics.sac import OutputMode
from models.random_networks import random_bnn_network, random_images, random_sac_network
from safeio import write_text_atomic
from tb.bitserial import start_clock
from tb.host_port import HostPort
from tb.seeds import bench_seed, seeded_rng, simulation_seed
from tb.sim import SIMULATORS, run
from tb.test_accelerator import CONFIGS, run_and_check
from tb.tlm import isa_coverage as cov

FINALS = ("relu_quant", "binary", "raw", "pixel_sum")


def random_program_spec(rng, cfg: ArrayConfig, i: int) -> dict:
    """Constraints of SAC program i: modes and shift cycle so that every (mode, shift) pair comes
    early; sizes straddle the array's so tile edges (1, mid, max) occur."""
    g = [1, 2, 4, 8]
    return {
        "shift": bool(i % 2),
        "final": FINALS[(i // 2) % 4],
        "groups": (int(rng.choice(g)), int(rng.choice(g))),
        "channels": int(rng.integers(1, 3 * cfg.cols + 2)),
        # every other round of the 8 (mode, shift) pairs: hidden width past COLS x group, so
        # the final layer takes several channel tiles (acc_in)
        "width": (
            4 * cfg.cols + 1
            if (i // 8) % 2
            else int(rng.choice([1, cfg.rows // 2 + 1, cfg.rows, cfg.rows + 1, 2 * cfg.rows + 1]))
        ),
        "classes": int(rng.choice([1, cfg.rows // 2 + 1, cfg.rows, cfg.rows + 2])),
        "frame": (int(rng.choice([1, 2, 3])), int(rng.choice([1, 2, 4]))),
        "zeros": float(rng.choice([0.0, 0.5, 1.0], p=[0.3, 0.5, 0.2])),
        "fill": int(rng.choice([0, int(rng.integers(1, 256))])),
    }


def shift_everywhere(rng, net, fill: int):
    """The network with every channel shift filling with `fill` and one more shift in front of
    the final layer (random_sac_network shifts only the hidden layers' inputs, so the final
    modes, binary and pixel-sum among them, would never run with the shift on)."""
    layers = []
    for layer in net.layers:
        if isinstance(layer, ir.ChannelShift):
            layer = ir.ChannelShift(directions=layer.directions, fill=fill)
        if isinstance(layer, ir.PointwiseConv) and layer.name == "final":
            layers.append(
                ir.ChannelShift(directions=rng.integers(0, 9, size=layer.weights.in_channels), fill=fill)
            )
        layers.append(layer)
    return ir.Network(net.input_shape, "uint8", layers, name="random_sac_shifted")


def extreme_biases(net):
    """The network with its final 1x1 convolution's biases next to the int32 extremes
    (alternately INT32_MAX - 8f and INT32_MIN + 8f for filter f), so positive sums wrap through
    the top and negative sums through the bottom; the golden model wraps mod 2^32 the same way.
    Deterministic: it draws nothing from the regression's generator."""
    layers = []
    for layer in net.layers:
        if isinstance(layer, ir.PointwiseConv) and layer.name == "final":
            f = np.arange(layer.weights.out_channels, dtype=np.int64)
            bias = np.where(f % 2 == 0, INT32_MAX - 8 * f, INT32_MIN + 8 * f)
            layer = dataclasses.replace(layer, bias=bias.astype(np.int32))
        layers.append(layer)
    return ir.Network(net.input_shape, "uint8", layers, name=f"{net.name}_extreme_bias")


def malformed_programs(cfg: ArrayConfig) -> dict:
    """One program per error code (instruction words)."""
    lw = LoadWeights(rows=1, cols=1)
    mm = Matmul(height=2, width=2, in_addr=0, out_addr=8, out_ch=1)
    halt = encode(Halt())
    return {
        ErrorCode.ILLEGAL_OPCODE: [0x3, halt],
        ErrorCode.RESERVED_BITS: [encode(lw), encode(mm) | (1 << 11), halt],
        ErrorCode.BAD_TILE: [encode(LoadWeights(rows=cfg.rows + 1, cols=1)), halt],
        ErrorCode.WEIGHT_RANGE: [encode(LoadWeights(rows=2, cols=1, w_addr=cfg.wdepth - 1)), halt],
        ErrorCode.NO_WEIGHTS: [encode(mm), halt],
        ErrorCode.BAD_SHAPE: [
            encode(lw),
            encode(Matmul(height=0, width=2, in_addr=0, out_addr=8, out_ch=1)),
            halt,
        ],
        ErrorCode.DBUF_RANGE: [
            encode(lw),
            encode(Matmul(height=2, width=2, in_addr=0, out_addr=cfg.ddepth - 1, out_ch=1)),
            halt,
        ],
        ErrorCode.PBUF_RANGE: [
            encode(lw),
            encode(Matmul(height=2, width=2, in_addr=0, out_addr=cfg.pdepth - 1, mode=OutputMode.RAW)),
            halt,
        ],
        ErrorCode.OVERLAP: [
            encode(lw),
            encode(Matmul(height=2, width=2, in_addr=0, out_addr=2, out_ch=0)),
            halt,
        ],
        ErrorCode.PC_OVERFLOW: [encode(lw)] * cfg.imem_depth,
    }


@cocotb.test()
async def constrained_random_programs(dut):
    cfg = ArrayConfig.from_env()
    n_programs = int(os.environ.get("TB_COVERAGE_PROGRAMS", "3"))
    rng = seeded_rng(dut._log)
    await start_clock(dut)
    host = HostPort(dut, cfg)
    await host.reset()
    ran = skipped = instructions = 0
    for i in range(n_programs):
        bins = cov.summary(exclude=("isa.error",))
        if i >= 8 and bins["hit"] == bins["size"]:
            break  # every bin closed (errors come below)
        if i % 4 == 3:  # a BNN lowered onto the array
            spec = {
                "bnn": True,
                "padding": int(rng.integers(2)),
                "channels": (int(rng.integers(2, 11)), int(rng.integers(2, 11))),
                "zeros": 0.2,
            }
            side = 6 if spec["padding"] else 10  # pad 0 shrinks each 3x3 conv
            net = random_bnn_network(
                rng,
                in_shape=(1, side, side),
                channels=spec["channels"],
                hidden=int(rng.integers(3, 12)),
                padding=spec["padding"],
            )
        else:
            k = i - i // 4  # SAC programs count 0, 1, 2..
            spec = random_program_spec(rng, cfg, k)
            c = spec["channels"]
            net = random_sac_network(
                rng,
                in_shape=(c, *spec["frame"]),
                widths=(spec["width"],),
                groups=spec["groups"],
                shift=spec["shift"],
                final=spec["final"],
                classes=spec["classes"],
                s2d=1,
            )
            if spec["shift"]:
                net = shift_everywhere(rng, net, spec["fill"])
            if k % 3 == 2:  # int32 wrap-around in the accumulators
                spec["bias"] = "int32 extremes"
                net = extreme_biases(net)
        try:
            prog = compile_network(net, cfg)
        except (ValueError, IsaError) as e:  # does not fit this array's memories
            skipped += 1
            dut._log.info(f"program {i}: {spec} does not compile for {cfg}: {e}")
            continue
        image = random_images(rng, 1, net.input_shape, zero_fraction=spec["zeros"])[0]
        if spec["zeros"] == 1.0:
            image = np.zeros_like(image)
        await run_and_check(dut, host, cfg, net, image, f"program {i} {spec}")
        cov.sample_input(image)
        cov.sample_wraps(net, image)
        cov.sample_lowering(prog)
        for seg in prog.segments:
            instructions += cov.sample_program(prog, seg.start_pc, seg.n_instr)
        ran += 1
    # one malformed program per error code: the RTL's code and pc equal the golden checker's
    for code, words in malformed_programs(cfg).items():
        try:
            check_program(words, cfg)
            raise AssertionError(f"{code.name}: the golden checker accepts the program")
        except IsaError as e:
            want = e
        assert want.code == code, (code, want)
        await host.write_many(HostPort.program_writes(words))
        st = await host.run(timeout_cycles=100_000)
        assert st["error"] and st["error_code"] == code, (code.name, st)
        if code != ErrorCode.PC_OVERFLOW:
            assert st["pc"] == want.index, (code.name, st, want.index)
        cov.sample_error(ErrorCode(st["error_code"]))
    summary = cov.summary()
    dut._log.info(
        f"{ran} programs ran ({skipped} did not fit), {instructions} instructions "
        f"sampled; functional coverage {summary['hit']}/{summary['size']} bins "
        f"({summary['percent']:.1f} %)"
    )
    for name, item in summary["items"].items():
        if item["missing"]:
            dut._log.info(f"  {name}: missing {item['missing']}")
    out = os.environ.get("TB_COVERAGE_OUT")
    if out:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        xml, yaml = out / "functional.xml", out / "functional.yml"
        cov.export(str(xml), str(yaml))
        write_text_atomic(
            out / "functional.json",
            json.dumps(
                {
                    **summary,
                    "seed": simulation_seed(),
                    "programs": ran,
                    "skipped": skipped,
                    "instructions": instructions,
                    "xml": str(xml),
                    "yaml": str(yaml),
                },
                indent=1,
            ),
        )
    assert ran >= 1 and skipped <= ran, f"{ran} programs ran, {skipped} did not compile"


# the 8x8 instance of tb/test_accelerator.py (its Verilator build is reused); Icarus: the 4x3 one
@pytest.mark.parametrize("sim", SIMULATORS)
def test_isa_coverage(sim):
    cfg = CONFIGS["8x8" if sim == "verilator" else "4x3"]
    env = {} if sim == "verilator" else {"TB_COVERAGE_PROGRAMS": "1"}
    run(
        "accelerator",
        "tb.tlm.test_isa_coverage",
        sim,
        cfg.hdl_parameters(),
        extra_env=env,
        seed=bench_seed("isa_coverage"),
    )
