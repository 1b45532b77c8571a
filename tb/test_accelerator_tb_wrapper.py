"""Bench for rtl/accelerator_tb_wrapper.v, the bulk transfers long runs use (tb/rtl_job.py).

Bulk loads (longer than one load, so they come in parts) into every memory region read back
word by word through the real host port equal what was written; dumps of the data and
partial-sum buffers and of the trace equal the host port's reads of the same entries; a
compiled network run with tensors and trace moved in bulk (tb.host_port.RtlDevice over a
BulkPort) equals the golden executor in every layer and the cycle model in every instruction.
tb/test_accelerator.py keeps verifying the bare top through its host port alone.
"""

import cocotb
import numpy as np
import pytest
from cocotb.triggers import FallingEdge

from fpga.arch import ArrayConfig
from fpga.compiler import compile_network
from fpga.execute import execute, interpret
from models import golden
from models.random_networks import random_images, random_sac_network
from tb.bitserial import start_clock
from tb.host_port import (
    D_DBUF,
    D_PBUF,
    R_DBUF,
    R_PBUF,
    BulkPort,
    HostPort,
    RtlDevice,
    address,
    random_location,
    read_hex_lines,
)
from tb.seeds import bench_seed, seeded_rng
from tb.sim import SIMULATORS, run


def random_writes(rng, cfg: ArrayConfig, n: int):
    """n random (region, offset, value) writes over every memory region, plus a full fill of
    entries 0..7 of every data-buffer bank and partial-sum row (defined values to dump)."""
    items = []
    for _ in range(n):
        region, offset = random_location(rng, cfg)
        items.append((region, offset, int(rng.integers(1 << 32))))
    items += [(R_DBUF, (b << 16) | e, int(rng.integers(256))) for b in range(cfg.cmax) for e in range(8)]
    items += [(R_PBUF, (r << 16) | e, int(rng.integers(1 << 32))) for r in range(cfg.rows) for e in range(8)]
    return items


@cocotb.test()
async def bulk_load_and_dumps_equal_the_host_port(dut):
    cfg = ArrayConfig.from_env()
    rng = seeded_rng(dut._log)
    await start_clock(dut)
    host, bulk = HostPort(dut, cfg), BulkPort(dut, cfg)
    await host.reset()
    items = random_writes(rng, cfg, int(bulk.depth * 1.5))
    await bulk.write_words([address(r, o) for r, o, _ in items], [v for _, _, v in items])
    assert bulk.words_loaded == len(items) > bulk.depth, "the load must come in parts"
    want = {}
    for region, offset, value in items:  # the last write of an address wins
        want[(region, offset)] = value & 0xFF if region == R_DBUF else value
    keys = sorted(want)
    got = await host.read_many(keys)
    bad = [(k, g, want[k]) for k, g in zip(keys, got, strict=True) if g != want[k]]
    assert not bad, f"{len(bad)} words differ after a bulk load, first {bad[0]}"
    await bulk.dump(D_DBUF, 0, 7)
    lines, undefined = read_hex_lines(bulk.dir / "dump.hex", 8, 2, cfg.cmax)
    assert not undefined.any()
    assert all(
        int(lines[e, b]) == want[(R_DBUF, (b << 16) | e)] for b in range(cfg.cmax) for e in range(8)
    ), "data-buffer dump"
    await bulk.dump(D_PBUF, 2, 7)
    lines, undefined = read_hex_lines(bulk.dir / "dump.hex", 6, 8, cfg.rows)
    assert not undefined.any()
    assert all(
        int(lines[e - 2, r]) == want[(R_PBUF, (r << 16) | e)] for r in range(cfg.rows) for e in range(2, 8)
    ), "partial-sum dump"
    # a bulk load with a count outside 1..LOAD_DEPTH loads nothing (the Python side splits
    # long loads) and never raises load_busy; load.hex would change the first address read
    region, offset = keys[0]
    other = (want[keys[0]] + 1) & (0xFF if region == R_DBUF else 0xFFFFFFFF)
    (bulk.dir / "load.hex").write_text(f"{(address(region, offset) << 32) | other:016x}\n")
    for count in (0, bulk.depth + 1, 0xFFFFFFFF):
        dut.load_count.value = count
        dut.load_go.value = 1
        await FallingEdge(dut.clk)
        dut.load_go.value = 0
        for _ in range(4):
            assert not int(dut.load_busy.value), f"load_count={count} started a load"
            await FallingEdge(dut.clk)
    assert await host.read(region, offset) == want[keys[0]], "an out-of-range load wrote"
    # while no bulk load runs the host port passes through: word writes (random 32-bit data
    # into the partial-sum buffer, whose entries hold all 32 bits) land and read back
    direct = [
        (
            R_PBUF,
            (int(rng.integers(cfg.rows)) << 16) | int(rng.integers(8, cfg.pdepth)),
            int(rng.integers(1 << 32)),
        )
        for _ in range(16)
    ]
    await host.write_many(direct)
    last = {(r, o): v for r, o, v in direct}
    assert await host.read_many(list(last)) == list(last.values()), "host-port writes"
    # dump addresses are 32 bits of which the wrapper uses the low log2(depth): entries
    # 2^32 - 2 and 2^32 - 1 are the buffer's last two (the dump counter runs through the top
    # of its range and stops there)
    assert cfg.pdepth & (cfg.pdepth - 1) == 0, "the bench's partial-sum depth is a power of two"
    top = [
        (R_PBUF, (r << 16) | e, int(rng.integers(1 << 32)))
        for r in range(cfg.rows)
        for e in (cfg.pdepth - 2, cfg.pdepth - 1)
    ]
    await host.write_many(top)
    await bulk.dump(D_PBUF, (1 << 32) - 2, (1 << 32) - 1)
    lines, undefined = read_hex_lines(bulk.dir / "dump.hex", 2, 8, cfg.rows)
    assert not undefined.any()
    got = {(r, cfg.pdepth - 2 + k): int(lines[k, r]) for k in range(2) for r in range(cfg.rows)}
    assert all(got[(o >> 16, o & 0xFFFF)] == v for _, o, v in top), "dump at the top of the address range"
    # the host port's regions 8..15 are unmapped and read 0 (accelerator.v's read multiplexer)
    assert await host.read_many([(8, 0), (11, 3), (15, 1)]) == [0, 0, 0]
    dut._log.info(
        f"{len(items)} bulk writes in {-(-len(items) // bulk.depth)} loads, "
        f"{len(keys)} addresses read back through the host port, dumps equal; "
        "out-of-range load counts load nothing, unmapped regions read 0"
    )


@cocotb.test()
async def network_with_bulk_transfers(dut):
    cfg = ArrayConfig.from_env()
    rng = seeded_rng(dut._log, stream=1)
    await start_clock(dut)
    host, bulk = HostPort(dut, cfg), BulkPort(dut, cfg)
    await host.reset()
    net = random_sac_network(
        rng,
        in_shape=(3 * cfg.cols + 1, 4, 4),
        widths=(cfg.rows + 3,),
        groups=(3, 2),
        shift=True,
        final="raw",
        classes=cfg.rows + 2,
        s2d=1,
    )
    prog = compile_network(net, cfg)
    image = random_images(rng, 1, net.input_shape, zero_fraction=0.5)[0]
    await bulk.load_program(prog)
    device = RtlDevice(host, prog, bulk)
    res = await execute(prog, device, image[None])
    ref = golden.run(net, image[None])
    for i, got in res.outputs.items():
        bad = np.argwhere(got != ref.outputs[i])
        assert not bad.size, f"layer {i} differs at {tuple(bad[0])}"
    model = interpret(prog, image[None])
    for seg, st_rtl, st_model in zip(prog.segments, res.segments, model.segments, strict=True):
        assert st_rtl.cycles == st_model.cycles, "cycles differ from the cycle model"
        assert st_rtl.activity == st_model.activity, "activity differs from the golden count"
        assert await host.trace(seg.n_instr, seg.start_pc) == await bulk.trace(seg.n_instr, seg.start_pc), (
            "trace dump differs from the port"
        )
    dut._log.info(
        f"{len(prog.words)} instructions, every layer equal to golden, every "
        f"instruction's cycles and activity equal to the model"
    )


# Verilator: the instance the compare job builds for models/zoo/sac_digits.onnx (one build for
# both); Icarus: a small one with short loads, so a load of a few hundred words comes in parts.
CONFIGS = {
    "verilator": (
        ArrayConfig(
            rows=8, cols=8, cmax=64, ddepth=512, pdepth=128, wdepth=512, bdepth=256, sdepth=16, imem_depth=128
        ),
        {},
    ),
    "icarus": (
        ArrayConfig(
            rows=4, cols=3, cmax=32, ddepth=128, pdepth=64, wdepth=256, bdepth=64, sdepth=16, imem_depth=128
        ),
        {"LOAD_DEPTH": 200},
    ),
}


@pytest.mark.parametrize("sim", SIMULATORS)
def test_accelerator_tb_wrapper(sim):
    cfg, extra = CONFIGS[sim]
    run(
        "accelerator_tb_wrapper",
        "test_accelerator_tb_wrapper",
        sim,
        {**cfg.hdl_parameters(), **extra},
        seed=bench_seed("accelerator_tb_wrapper"),
    )
