"""Bench for rtl/accelerator_axi.v: the accelerator behind AXI4-Lite and AXI4-Stream, driven
with Forencich's cocotbext-axi (tb/axi_port.py).

* The register map: ID, STATUS, HOST_ADDR/HOST_DATA with auto-increment, the control window,
  SLVERR for unmapped addresses, read-only registers and partial byte strobes (which change
  nothing), the interrupt's enable and write-1-to-clear, responses held by BREADY/RREADY.
* Stream bursts: random writes into every memory region and reads back, with random TVALID and
  TREADY pauses on both streams, equal the last value written; without pauses a burst of N
  commands takes N cycles (one host-port access per clock).
* The same compiled programs as tb/test_accelerator.py (random networks larger than the array,
  every final mode, shift on and off, a BNN) and, on the instance sized for it, the zoo SAC CNN
  (models/zoo/sac_digits.onnx through fpga.compiler) on a real digit, loaded and read through
  the buses: every layer equals the golden executor, every instruction retires on the cycle
  fpga.cycle_model predicts and its activity equals the golden pair count
  (tb.test_accelerator.run_and_check, the same checks as the simple-port top).
"""

import itertools
import os
from pathlib import Path

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiResp

from fpga.arch import ArrayConfig
from fpga.compiler import compile_network
from fpga.isa import ErrorCode, Halt, encode
from models.datasets import adapt_to_network, load_dataset
from models.onnx.importer import import_onnx
from tb.axi_port import (
    A_CONTROL,
    A_HOST_ADDR,
    A_HOST_DATA,
    A_ID,
    A_IRQ_ENABLE,
    A_IRQ_STATUS,
    A_STATUS,
    A_WINDOW,
    ID,
    AxiPort,
)
from tb.host_port import R_BMEM, R_DBUF, HostPort, address, random_location
from tb.programs import compiled_network_cases
from tb.seeds import bench_seed, seeded_rng
from tb.sim import SIMULATORS, run
from tb.test_accelerator import run_and_check

ROOT = Path(__file__).resolve().parents[1]


async def setup(dut):
    cfg = ArrayConfig.from_env()
    return cfg, await AxiPort.create(dut, cfg)


def random_writes(rng, cfg: ArrayConfig, n: int):
    """n random (full address, value) writes over every memory region."""
    out = []
    for _ in range(n):
        region, offset = random_location(rng, cfg)
        out.append((address(region, offset), int(rng.integers(1 << 32)), region))
    return out


def unpause(channel) -> None:
    """Stop a cocotbext-axi pause generator; clearing it alone leaves the channel paused if the
    last value drawn was a pause."""
    channel.clear_pause_generator()
    channel.pause = False


async def write_program(port: AxiPort, words) -> None:
    items = HostPort.program_writes(words)
    await port.write_words([address(r, o) for r, o, _ in items], [v for _, _, v in items])


def pause_pattern(rng, fraction: float):
    """An endless random pause pattern (True = pause this cycle) for cocotbext-axi."""
    bits = (rng.random(4096) < fraction).tolist()
    return itertools.cycle(bits)


@cocotb.test()
async def registers_and_errors(dut):
    cfg, port = await setup(dut)
    assert await port.reg(A_ID) == ID
    assert await port.reg(A_STATUS) == 0, "idle after reset: not busy, not done, no error"
    assert await port.reg(A_CONTROL) == 0
    conf = await port.reg(A_WINDOW + 4 * 5)
    assert (conf & 0xFF, (conf >> 8) & 0xFF, (conf >> 16) & 0xFF) == (cfg.rows, cfg.cols, cfg.cmax & 0xFF), (
        hex(conf)
    )
    await port.set_reg(A_HOST_ADDR, 0x1234_5678)
    assert await port.reg(A_HOST_ADDR) == 0x1234_5678
    # SLVERR, and nothing changes: unmapped, read-only, partial strobes
    for addr in (0x01C, 0x0FC, 0x140, 0x800):
        value, resp = await port.reg_read(addr)
        assert resp == AxiResp.SLVERR and value == 0, (hex(addr), resp, value)
        assert await port.reg_write(addr, 0xFFFFFFFF) == AxiResp.SLVERR, hex(addr)
    assert await port.reg_write(A_ID, 0) == AxiResp.SLVERR
    assert await port.reg_write(A_STATUS, 0xFF) == AxiResp.SLVERR
    assert await port.reg_write(A_HOST_ADDR, 0, strobe_bytes=2) == AxiResp.SLVERR
    assert await port.reg(A_ID) == ID and await port.reg(A_STATUS) == 0
    assert await port.reg(A_HOST_ADDR) == 0x1234_5678, "a partial write changed HOST_ADDR"
    # HOST_DATA: writes and reads at HOST_ADDR, which steps by one after each
    rng = seeded_rng(dut._log)
    values = [int(v) for v in rng.integers(0, 1 << 32, size=cfg.bdepth // 2)]
    await port.set_reg(A_HOST_ADDR, address(R_BMEM, 3))
    for v in values:
        await port.set_reg(A_HOST_DATA, v)
    assert await port.reg(A_HOST_ADDR) == address(R_BMEM, 3 + len(values))
    got = await port.read_words([address(R_BMEM, 3 + i) for i in range(len(values))])
    assert got == values, "stream reads differ from the HOST_DATA writes"
    await port.set_reg(A_HOST_ADDR, address(R_BMEM, 3))
    got = [await port.reg(A_HOST_DATA) for _ in values]
    assert got == values, "HOST_DATA reads differ from the writes"
    # the window writes the start pc (control register 8) and reads it back
    await port.set_reg(A_WINDOW + 4 * 8, 5)
    assert await port.reg(A_WINDOW + 4 * 8) == 5
    # a run that ends in an error: irq (when enabled), STATUS and the window's error code
    await write_program(port, [0x3])  # an illegal opcode at pc 0
    await port.set_reg(A_WINDOW + 4 * 8, 0)
    await port.set_reg(A_CONTROL, 1)
    await ClockCycles(dut.aclk, 20)
    assert int(dut.irq.value) == 0, "irq while IRQ_ENABLE is 0"
    assert await port.reg(A_IRQ_STATUS) == 1
    assert await port.reg(A_STATUS) == 0b110, "done and error after an illegal opcode"
    await port.set_reg(A_IRQ_ENABLE, 1)
    assert int(dut.irq.value) == 1 and await port.reg(A_IRQ_ENABLE) == 1
    await port.set_reg(A_IRQ_STATUS, 0)  # writing 0 clears nothing
    assert int(dut.irq.value) == 1 and await port.reg(A_IRQ_STATUS) == 1
    await port.set_reg(A_IRQ_STATUS, 1)
    assert int(dut.irq.value) == 0 and await port.reg(A_IRQ_STATUS) == 0
    st = await port.status()
    assert st["error"] and st["error_code"] == ErrorCode.ILLEGAL_OPCODE and st["pc"] == 0, st
    # responses held back by the master (BREADY, RREADY low on random cycles) wait, unchanged
    port.lite.write_if.b_channel.set_pause_generator(pause_pattern(rng, 0.6))
    port.lite.read_if.r_channel.set_pause_generator(pause_pattern(rng, 0.6))
    for v in values[:16]:
        await port.set_reg(A_HOST_ADDR, v)
        assert await port.reg(A_HOST_ADDR) == v
    unpause(port.lite.write_if.b_channel)
    unpause(port.lite.read_if.r_channel)
    # a good program after it: HALT, through the driver's run (irq-driven)
    await write_program(port, [encode(Halt())])
    st = await port.run()
    assert st["done"] and not st["error"] and st["retired"] == 1, st
    dut._log.info("registers, SLVERR cases, HOST_DATA auto-increment, window, irq: as documented")


@cocotb.test()
async def stream_bursts_with_backpressure(dut):
    cfg, port = await setup(dut)
    rng = seeded_rng(dut._log, stream=1)
    n = 600
    # without pauses a burst of n commands takes n cycles
    writes = random_writes(rng, cfg, n)
    t0 = get_sim_time("ns")
    await port.write_words([a for a, _, _ in writes], [v for _, v, _ in writes])
    write_cycles = round((get_sim_time("ns") - t0) / port.period_ns)
    addrs = sorted({a for a, _, _ in writes})
    t0 = get_sim_time("ns")
    await port.read_words(addrs)
    read_cycles = round((get_sim_time("ns") - t0) / port.period_ns)
    dut._log.info(
        f"{n} write commands in {write_cycles} cycles, {len(addrs)} reads in "
        f"{read_cycles} cycles (one host-port access per clock plus a fixed latency)"
    )
    assert write_cycles <= n + 8, write_cycles
    assert read_cycles <= len(addrs) + 8, read_cycles
    # with random pauses on both streams, the same content arrives
    for fraction in (0.3, 0.7):
        port.cmd.set_pause_generator(pause_pattern(rng, fraction))
        port.rsp.set_pause_generator(pause_pattern(rng, fraction))
        more = random_writes(rng, cfg, n // 2)
        writes += more
        await port.write_words([a for a, _, _ in more], [v for _, v, _ in more])
        want = {}
        for a, v, region in writes:  # the last write of an address wins
            want[a] = v & 0xFF if region == R_DBUF else v
        keys = sorted(want)
        got = await port.read_words(keys)
        bad = [(hex(k), g, want[k]) for k, g in zip(keys, got, strict=True) if g != want[k]]
        assert not bad, f"pauses {fraction}: {len(bad)} words differ, first {bad[0]}"
    unpause(port.cmd)
    unpause(port.rsp)
    dut._log.info(f"{len(writes)} writes, read back with 30 % and 70 % TVALID/TREADY pauses: equal")


@cocotb.test()
async def compiled_networks(dut):
    """The programs of tb/test_accelerator.py's compiled_networks (same seed), through the
    buses."""
    cfg, port = await setup(dut)
    rng = seeded_rng(dut._log)
    for label, net, image in compiled_network_cases(rng, cfg):
        await run_and_check(dut, port, cfg, net, image, f"AXI {label}")
    dut._log.info(f"{port.words_written} words written and {port.words_read} read in bursts")


@cocotb.test(skip=os.environ.get("TB_ZOO") != "1")
async def zoo_sac_network(dut):
    """models/zoo/sac_digits.onnx compiled by fpga.compiler, loaded, run and read back through
    the buses on a real test digit."""
    cfg, port = await setup(dut)
    net = import_onnx(ROOT / "models" / "zoo" / "sac_digits.onnx")
    ds = load_dataset("digits", split="test")
    image = adapt_to_network(ds, net)[0]
    prog, res = await run_and_check(dut, port, cfg, net, image, "AXI zoo sac_digits")
    assert prog is not None and compile_network(net, cfg).words == prog.words
    scores = res.outputs[prog.layers[-1].layer_index][0]
    dut._log.info(
        f"label {int(ds.labels[0])}, predicted {int(np.argmax(scores))}; "
        f"{port.words_written} words written, {port.words_read} read through the buses"
    )


# Verilator: the instance sized for the zoo network (as tb/test_accelerator.py's 8x8);
# Icarus (about 500 times slower): the small one, without the zoo network.
CONFIGS = {
    "verilator": (
        ArrayConfig(
            rows=8, cols=8, cmax=64, ddepth=512, pdepth=128, wdepth=512, bdepth=256, sdepth=16, imem_depth=128
        ),
        "1",
    ),
    "icarus": (
        ArrayConfig(
            rows=4, cols=3, cmax=32, ddepth=128, pdepth=64, wdepth=256, bdepth=64, sdepth=16, imem_depth=128
        ),
        "0",
    ),
}


@pytest.mark.parametrize("sim", SIMULATORS)
def test_accelerator_axi(sim):
    cfg, zoo = CONFIGS[sim]
    run(
        "accelerator_axi",
        "test_accelerator_axi",
        sim,
        cfg.hdl_parameters(),
        extra_env={"TB_ZOO": zoo},
        seed=bench_seed("accelerator"),  # tb/test_accelerator.py's seed: the same programs
    )
