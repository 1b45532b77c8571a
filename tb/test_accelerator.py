"""Bench for rtl/accelerator.v: whole compiled programs, run by the top by itself after `start`.

Programs come from networks larger than the array (several filter and channel tiles), with the
channel shift on and off and every output mode. Every layer's output read back through the host
port equals the golden executor; the cycle at which every instruction retires equals
fpga.cycle_model exactly; the active cell-cycles of every instruction equal the golden count
of nonzero (weight, datum) pairs; malformed words halt with the right error code and
write nothing.
"""

import os
from pathlib import Path

import cocotb
import numpy as np
import pytest
from cocotb.triggers import FallingEdge

from fpga.arch import ArrayConfig
from fpga.compiler import Program, compile_network
from fpga.cycle_model import program_timeline
from fpga.execute import execute, interpret
from fpga.interpreter import Machine
from fpga.isa import ErrorCode, Halt, LoadWeights, Matmul, encode
from models import golden
from models.datasets import adapt_to_network, load_dataset
from models.numerics import sac
from models.numerics.sac import OutputMode
from models.onnx.importer import import_onnx
from tb.bitserial import start_clock
from tb.host_port import (
    CTRL_CYCLES,
    CTRL_START_PC,
    CTRL_STATUS,
    R_BMEM,
    R_CTRL,
    R_DBUF,
    R_IMEM,
    R_PBUF,
    R_SMEM,
    R_WMEM,
    READ_LATENCY,
    HostPort,
    RtlDevice,
    address,
)
from tb.programs import BNN_CASE, compiled_network_cases
from tb.seeds import bench_seed, seeded_rng
from tb.sim import SIMULATORS, run

ROOT = Path(__file__).resolve().parents[1]


async def setup(dut):
    cfg = ArrayConfig.from_env()
    await start_clock(dut)
    host = HostPort(dut, cfg)
    await host.reset()
    st = await host.status()
    assert st["config"] == (cfg.rows, cfg.cols, cfg.cmax & 0xFF), st
    return cfg, host


async def run_and_check(dut, host, cfg, net, image, label):
    """Run one image through the compiled network on the RTL (segments and host layers by
    fpga.execute); check every layer against the golden executor, every instruction's retire
    cycle against the cycle model and its activity against the golden pair count."""
    prog = compile_network(net, cfg)
    ref = golden.run(net, image[None])
    await host.load_program(prog)
    device = RtlDevice(host, prog)
    res = await execute(prog, device, image[None])
    for i, got in res.outputs.items():
        want = ref.outputs[i]
        bad = np.argwhere(got != want)
        assert not bad.size, (
            f"{label}: layer {i} differs at {tuple(bad[0])}: "
            f"got {got[tuple(bad[0])]}, want {want[tuple(bad[0])]}"
        )
    interp = interpret(prog, image[None])
    for seg, st_rtl, st_model in zip(prog.segments, res.segments, interp.segments, strict=True):
        steps = program_timeline(prog.instructions[seg.start_pc : seg.start_pc + seg.n_instr], cfg)
        ends = device.ends[seg.start_pc]
        want = [s.end for s in steps]
        assert ends == want, f"{label}: retire cycles {ends} != model {want}"
        assert st_rtl.activity == st_model.activity, (
            f"{label}: activity {st_rtl.activity} != golden {st_model.activity}"
        )
    total = sum(st.total_cycles for st in res.segments)
    dut._log.info(
        f"{label}: {len(prog.words)} instructions in {len(prog.segments)} segment(s), "
        f"{total} cycles, {sum(sum(st.activity) for st in res.segments)} active "
        f"cell-cycles, host layers {prog.host_layers}: match"
    )
    return prog, res


@cocotb.test()
async def compiled_networks(dut):
    """Random networks larger than the array, every final mode, shift on and off, and a BNN
    lowered onto the array (tb/programs.py)."""
    cfg, host = await setup(dut)
    rng = seeded_rng(dut._log)
    for label, net, image in compiled_network_cases(rng, cfg):
        if label not in (BNN_CASE, "1x1 frames"):  # SAC networks must need several tiles
            prog = compile_network(net, cfg)
            assert max(lp.n_tiles for lp in prog.layers) > 1
            assert max(lp.k_tiles for lp in prog.layers) > 1, "need several channel tiles"
        await run_and_check(dut, host, cfg, net, image, label)


@cocotb.test(skip=os.environ.get("TB_ZOO") != "1")
async def zoo_sac_network(dut):
    """The trained digits SAC CNN from models/zoo on a real test digit, every layer checked
    (on the array instances sized for it)."""
    cfg, host = await setup(dut)
    net = import_onnx(ROOT / "models" / "zoo" / "sac_digits.onnx")
    ds = load_dataset("digits", split="test")
    image = adapt_to_network(ds, net)[0]
    prog, res = await run_and_check(dut, host, cfg, net, image, "zoo sac_digits")
    scores = res.outputs[prog.layers[-1].layer_index][0]
    dut._log.info(f"label {int(ds.labels[0])}, predicted {int(np.argmax(scores))}")


@cocotb.test()
async def errors_halt_and_write_nothing(dut):
    """A malformed word halts with its error code at its pc; the buffers keep their contents."""
    cfg, host = await setup(dut)
    p = 4
    good = [
        LoadWeights(rows=1, cols=1),
        Matmul(height=2, width=2, in_addr=0, out_addr=p, out_ch=1, mode=OutputMode.RELU_QUANT),
    ]
    bad_words = {
        ErrorCode.ILLEGAL_OPCODE: 0x3,
        ErrorCode.RESERVED_BITS: encode(Matmul(height=2, width=2, in_addr=0, out_addr=8, out_ch=1))
        | (1 << 11),
        ErrorCode.BAD_TILE: encode(LoadWeights(rows=cfg.rows + 1, cols=1)),
        ErrorCode.DBUF_RANGE: encode(Matmul(height=2, width=2, in_addr=0, out_addr=cfg.ddepth - 1, out_ch=1)),
        ErrorCode.OVERLAP: encode(Matmul(height=2, width=2, in_addr=0, out_addr=2, out_ch=0)),
        ErrorCode.PBUF_RANGE: encode(
            Matmul(height=2, width=2, in_addr=0, out_addr=cfg.pdepth - 1, mode=OutputMode.RAW)
        ),
    }
    for code, word in bad_words.items():
        items = HostPort.program_writes([encode(i) for i in good] + [word, encode(Halt())])
        sentinel = [(R_DBUF, (b << 16) | e, 0xA5) for b in (1, 2) for e in range(cfg.ddepth)] + [
            (R_PBUF, e, 0x5A5A5A5A) for e in range(cfg.pdepth)
        ]
        await host.write_many(items + sentinel)
        st = await host.run()
        assert st["error"] and st["error_code"] == code and st["pc"] == 2, (code, st)
        # the good MATMUL wrote bank 1 entries p..p+3; nothing else changed (bank 2, the next
        # channel: the array's row 1 is outside the one-row tile)
        dbank = await host.read_many([(R_DBUF, (1 << 16) | e) for e in range(cfg.ddepth)])
        assert all(v == 0xA5 for e, v in enumerate(dbank) if not p <= e < p + 4), code
        dbank = await host.read_many([(R_DBUF, (2 << 16) | e) for e in range(cfg.ddepth)])
        assert all(v == 0xA5 for v in dbank), (code, "bank 2")
        pbank = await host.read_many([(R_PBUF, e) for e in range(cfg.pdepth)])
        assert all(v == 0x5A5A5A5A for v in pbank), code
    dut._log.info(f"{len(bad_words)} malformed words: right code, right pc, nothing written")


def hand_program(cfg, rng, instrs, n, shift_words):
    """A hand-written program on an n x n tile: its words, random weights (cell bytes [index
    0][sign][exponent code 1..7], three in four positive) and positive biases, so that the
    activations stay alive through a chain, and the given shift words."""
    return Program(
        config=cfg,
        network=None,
        instructions=instrs,
        words=[encode(i) for i in instrs],
        wmem=sac.encode_byte(
            np.zeros((n, cfg.cols), dtype=np.uint8),
            (rng.random((n, cfg.cols)) < 0.75).astype(np.uint8),
            rng.integers(1, sac.MAX_CODE + 1, size=(n, cfg.cols)),
        ),
        bmem=rng.integers(0, 64 << sac.QUANT_SHIFT, size=n).astype(np.int32),
        smem=np.stack(shift_words),
        layers=[],
        segments=[],
        plan=[],
    )


@cocotb.test()
async def back_to_back_matmuls(dut):
    """Instructions the top starts a cycle before their FETCH, right behind the one that feeds
    them (compiled programs always put a LOAD_WEIGHTS of several rows between two MATMULs):
    - MATMULs with no LOAD_WEIGHTS between them, each reading what the one before wrote. A
      MATMUL reads its first pixel in its DECODE, the cycle in which the MATMUL before writes
      its last byte (last row, last pixel): chains on 1x1 frames (that byte is the entry read)
      and on 2x2 frames with every direction (1, 1) (pixel 0 reads pixel 3);
    - a MATMUL with the shift right after a one-row LOAD_WEIGHTS (two cycles) that loads a new
      shift word: the MATMUL steers its banks in the LOAD_WEIGHTS' second cycle. Its word
      alternates two directions and its in_ch is 1, so that steering it by the wrong in_ch
      (the LOAD_WEIGHTS' bits there) or with the old word reads other pixels.
    The data buffer equals the interpreter's and every retire cycle the cycle model's."""
    cfg, host = await setup(dut)
    rng = seeded_rng(dut._log, stream=3)
    n = min(cfg.rows, cfg.cols)  # tile rows = tile columns: each output is the next input
    every = np.full(cfg.cols * 8, 8, dtype=np.uint8)  # direction (1, 1) everywhere
    cases = []
    for size, shift in ((1, False), (2, True)):
        p = size * size
        chain = [
            Matmul(height=size, width=size, in_addr=i * p, out_addr=(i + 1) * p, shift_en=shift)
            for i in range(4)
        ]
        cases.append((f"4 MATMULs on {size}x{size}", p, [LoadWeights(rows=n, cols=n), *chain], [every]))
    p = 4
    cases.append(
        (
            "a MATMUL right after a one-row LOAD_WEIGHTS",
            p,
            [
                LoadWeights(rows=n, cols=n, s_addr=0),
                Matmul(height=2, width=2, in_addr=0, out_addr=p, shift_en=True),
                LoadWeights(rows=1, cols=n, s_addr=1),  # directions (-1, -1), (1, 1), ...
                Matmul(height=2, width=2, in_addr=p, out_addr=2 * p, shift_en=True, in_ch=1),
            ],
            [every, np.arange(cfg.cols * 8, dtype=np.uint8) % 2 * 8],
        )
    )
    for label, p, body, shift_words in cases:
        instrs = [*body, Halt()]
        prog = hand_program(cfg, rng, instrs, n, shift_words)
        machine = Machine(cfg)
        machine.load_program(prog)
        image = rng.integers(1, 256, size=(n, p), dtype=np.uint8)
        machine.dbuf[0, :n, :p] = image
        before = machine.dbuf[0].copy()
        stats = machine.run()
        assert stats.error is None, stats.error
        last = max(m.out_addr for m in body if isinstance(m, Matmul))
        entries = last + p
        await host.load_program(prog)
        # the image, and zeros where the programs before left their outputs
        banks = min(n + 1, cfg.cmax)  # in_ch 1 reads bank n too
        await host.write_many(
            [(R_DBUF, (b << 16) | e, int(before[b, e])) for b in range(banks) for e in range(entries)]
        )
        st = await host.run()
        assert not st["error"], (label, st)
        got = await host.read_many([(R_DBUF, (b << 16) | e) for b in range(n) for e in range(entries)])
        got = np.array(got, dtype=np.int64).reshape(n, entries) & 0xFF
        want = machine.dbuf[0, :n, :entries]
        bad = np.argwhere(got != want)
        assert not bad.size, (
            f"{label}: (bank, entry) {tuple(bad[0])}: got {got[tuple(bad[0])]}, want {want[tuple(bad[0])]}"
        )
        ends, _ = await host.trace(len(body))
        want_ends = [s.end for s in program_timeline(instrs, cfg)][: len(body)]
        assert ends == want_ends, (label, ends, want_ends)
        assert (want[:, last:] != 0).any(), f"{label}: the last MATMUL wrote only zeros: a weak check"
    dut._log.info(f"{len(cases)} programs ({n} channels): buffers and cycles match")


@cocotb.test()
async def host_reads_in_the_first_idle_cycle(dut):
    """A data-buffer read presented in the first cycle after a run, the one in which `busy` has
    just fallen, is served at the host's address in every bank, whatever direction the run's
    MATMUL left the bank in: the channel shift's host select (a register, from the decoder's
    next `busy`) must be the host's in that very cycle. Each run is a shifted MATMUL (a random
    direction per entry) and HALT; its first idle cycle reads another bank's sentinel entry,
    which no run touches, and every bank's sentinel is read right after."""
    cfg, host = await setup(dut)
    rng = seeded_rng(dut._log, stream=4)
    n = min(cfg.rows, cfg.cols)
    far = cfg.ddepth - 1  # the frame is 2x2 at entries 0..3, its output at 4..7
    sentinel = [int(v) for v in rng.integers(1, 256, size=cfg.cmax)]
    instrs = [
        LoadWeights(rows=n, cols=n, s_addr=0),
        Matmul(height=2, width=2, in_addr=0, out_addr=4, shift_en=True),
        Halt(),
    ]
    prog = hand_program(cfg, rng, instrs, n, [rng.integers(0, 9, size=cfg.cols * 8, dtype=np.uint8)])
    await host.load_program(prog)
    image = rng.integers(1, 256, size=(cfg.cmax, 8))
    await host.write_many(
        [(R_DBUF, (b << 16) | e, int(image[b, e])) for b in range(cfg.cmax) for e in range(8)]
        + [(R_DBUF, (b << 16) | far, sentinel[b]) for b in range(cfg.cmax)]
    )
    d = dut
    bad = []
    for first in rng.choice(cfg.cmax, size=4, replace=False).tolist():
        d.start.value = 1
        await FallingEdge(d.clk)
        d.start.value = 0
        for _ in range(10_000):
            await FallingEdge(d.clk)
            if not int(d.busy.value):
                break
        assert int(d.done.value) and not int(d.error.value), "the run did not halt cleanly"
        order = [first, *(b for b in range(cfg.cmax) if b != first)]  # the first read: this cycle
        got = await host.read_many([(R_DBUF, (b << 16) | far) for b in order])
        bad += [
            (first, b, g & 0xFF, sentinel[b])
            for b, g in zip(order, got, strict=True)
            if g & 0xFF != sentinel[b]
        ]
    assert not bad, f"reads from the first idle cycle on (run's first bank, bank, got, want): {bad[:4]}"
    dut._log.info(f"4 runs, then {cfg.cmax} reads each from its first idle cycle on: the host's entries")


@cocotb.test()
async def host_writes_reach_one_bank(dut):
    """A host write to the data buffer lands in the one bank and entry it names, and a bank
    number at or past CMAX writes nothing. (The host's writes travel the array's write-back path:
    row 0's place, shifted to the bank, its entry on the bank's entry chain; a bank number past
    the last one must not wrap around to a real bank.)"""
    cfg, host = await setup(dut)
    rng = seeded_rng(dut._log, stream=2)
    entries = sorted({0, cfg.ddepth - 1, *(int(e) for e in rng.integers(cfg.ddepth, size=3))})
    want = {(b, e): 0x3C for b in range(cfg.cmax) for e in entries}
    await host.write_many([(R_DBUF, (b << 16) | e, v) for (b, e), v in want.items()])
    writes = []
    for _ in range(4 * len(entries)):
        b, e, v = (
            int(rng.integers(cfg.cmax)),
            entries[int(rng.integers(len(entries)))],
            int(rng.integers(256)),
        )
        writes.append((R_DBUF, (b << 16) | e, v))
        want[b, e] = v
    for b in (cfg.cmax, cfg.cmax + 1, 2 * cfg.cmax, 0xFFF):  # past the last bank: ignored
        writes += [(R_DBUF, (b << 16) | e, 0xFF) for e in entries]
    await host.write_many(writes)
    got = await host.read_many([(R_DBUF, (b << 16) | e) for b, e in want])
    bad = [(key, g & 0xFF, w) for (key, w), g in zip(want.items(), got, strict=True) if g & 0xFF != w]
    assert not bad, f"data buffer after host writes: (bank, entry), got, want: {bad[:4]}"
    dut._log.info(f"{len(writes)} host writes to the data buffer: each in its own bank and entry")


@cocotb.test()
async def host_writes_while_busy_are_dropped(dut):
    """A host write is served when it is presented while `busy` is low and no `start` is taken
    in that cycle: a write presented with the start pulse or in any cycle of the run, the last
    busy cycle included (it would land after `busy` fell), changes no memory and not the start
    pc. (The write decision is registered from the port's inputs, beside each memory.)"""
    cfg, host = await setup(dut)
    prog = [
        LoadWeights(rows=1, cols=1),
        Matmul(height=2, width=2, in_addr=0, out_addr=4, out_ch=1, mode=OutputMode.RELU_QUANT),
        Halt(),
    ]
    places = [  # (region, offset): nothing the program writes
        (R_IMEM, 4 * (len(prog) + 1)),
        (R_WMEM, 1 * 256),
        (R_SMEM, 1 * 256),
        (R_BMEM, 1),
        (R_DBUF, (2 << 16) | 0),
        (R_PBUF, (1 << 16) | 3),
        (R_CTRL, CTRL_START_PC),
    ]
    sentinel = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0]
    await host.write_many(HostPort.program_writes([encode(i) for i in prog]))
    await host.write_many([(r, o, v) for (r, o), v in zip(places, sentinel, strict=True)])
    d = dut
    d.host_en.value = 1
    d.host_we.value = 1
    d.start.value = 1  # the first write goes with the start pulse
    presented, busy_seen = 0, 0
    while True:
        region, offset = places[presented % len(places)]
        d.host_addr.value = address(region, offset)
        d.host_wdata.value = 0xFFFFFFF0 | presented  # never a sentinel, never start pc 0
        await FallingEdge(d.clk)
        d.start.value = 0
        presented += 1
        busy_seen += int(d.busy.value)
        if not int(d.busy.value):  # the write just presented while busy was the run's last
            break
        assert presented < 10_000, "the run did not finish"
    d.host_en.value = 0
    d.host_we.value = 0
    await FallingEdge(d.clk)
    assert busy_seen > 20, f"the run was busy only {busy_seen} cycles"
    got = await host.read_many(places)
    bad = [(p, g, w) for p, g, w in zip(places, got, sentinel, strict=True) if g & 0xFF != w]
    assert not bad, f"writes while busy landed: (region, offset), got, want: {bad}"
    dut._log.info(f"{presented} host writes presented from the start pulse to the run's end: none landed")


@cocotb.test()
async def start_right_after_a_program_write(dut):
    """A run started 1, 2 or 3 cycles after the host wrote its first word executes the word
    written (the port's contract: one access per cycle, each seeing the ones before). The
    first word is an illegal opcode before the write and, after it, a LOAD_WEIGHTS of shift
    word 1 whose tile and shift word the MATMUL after it needs; a run started with shift word 0
    (direction (1, 1)) in the shift read's address would steer the MATMUL otherwise. The
    decoder takes the first word's fields in the cycle of its start (lw_pre): a run that read
    the word as x there keeps the old shift address in Icarus, one that read the old word stops
    at once, and one that read it as x in FETCH loads no tile (NOWEIGHTS). `busy` rises in the
    cycle after the pulse, the run's cycle count is the cycle model's and the data buffer the
    interpreter's (`fpga.interpreter.Machine`), whatever the gap (the run reads its first word
    from the cycle after the pulse on, after the write)."""
    cfg, host = await setup(dut)
    rng = seeded_rng(dut._log, stream=4)
    d = dut
    n, p = min(cfg.rows, cfg.cols), 4
    first_instr = LoadWeights(rows=n, cols=n, s_addr=1)
    rest = [Matmul(height=2, width=2, in_addr=0, out_addr=p, shift_en=True), Halt()]
    instrs = [first_instr, *rest]
    # shift word 0: direction (1, 1) everywhere; word 1 (the one loaded): (-1, -1)
    shift_words = [np.full(cfg.cols * 8, 8, dtype=np.uint8), np.zeros(cfg.cols * 8, dtype=np.uint8)]
    prog = hand_program(cfg, rng, instrs, n, shift_words)
    machine = Machine(cfg)
    machine.load_program(prog)
    machine.dbuf[0, :n, :p] = rng.integers(1, 256, size=(n, p), dtype=np.uint8)
    before = machine.dbuf[0, :n, : 2 * p].copy()
    assert machine.run().error is None
    want = machine.dbuf[0, :n, : 2 * p]
    # with shift word 0 instead (what a run that missed the word's shift address reads)
    other = Machine(cfg)
    other.load_program(prog)
    other.smem[1] = other.smem[0]
    other.dbuf[0, :n, : 2 * p] = before
    assert other.run().error is None
    assert (other.dbuf[0, :n, : 2 * p] != want).any(), "shift words 0 and 1 give the same outputs"
    want_cycles = program_timeline(instrs, cfg)[-1].end
    prime = [LoadWeights(rows=1, cols=1, s_addr=0), Halt()]  # the shift read's address to 0
    first = encode(first_instr)
    bad = []
    for gap in (1, 2, 3):
        await host.write_many(HostPort.program_writes([encode(i) for i in prime]))
        st = await host.run()
        assert not st["error"], st
        await host.load_program(prog)
        await host.write_many(
            [(R_DBUF, (b << 16) | e, int(before[b, e])) for b in range(n) for e in range(2 * p)]
        )
        await host.write_many(HostPort.program_writes([0x3]))  # opcode 3
        await host.write_many([(R_CTRL, CTRL_START_PC, 0)])
        await host.write_many([(R_IMEM, c, (first >> (32 * c)) & 0xFFFFFFFF) for c in (3, 2, 1)])
        d.host_en.value = 1
        d.host_we.value = 1
        d.host_addr.value = address(R_IMEM, 0)
        d.host_wdata.value = first & 0xFFFFFFFF
        await FallingEdge(d.clk)
        d.host_en.value = 0
        d.host_we.value = 0
        for _ in range(gap - 1):
            await FallingEdge(d.clk)
        d.start.value = 1
        await FallingEdge(d.clk)
        d.start.value = 0
        busy_after = int(d.busy.value)
        for _ in range(want_cycles + 20):
            await FallingEdge(d.clk)
        st, cycles = await host.read_many([(R_CTRL, CTRL_STATUS), (R_CTRL, CTRL_CYCLES)])  # data are x
        got = await host.read_many([(R_DBUF, (b << 16) | e) for b in range(n) for e in range(2 * p)])
        got = np.array(got, dtype=np.int64).reshape(n, 2 * p) & 0xFF
        if (st >> 2) & 1 or not (st >> 1) & 1 or not busy_after or cycles != want_cycles:
            bad.append((gap, (st >> 4) & 0xF, busy_after, cycles, want_cycles))
        elif (got != want).any():
            bad.append((gap, "data buffer", tuple(np.argwhere(got != want)[0])))
    assert not bad, (
        "(gap, error code, busy after the pulse, cycles, model) or (gap, first entry that differs "
        f"from the interpreter's) of runs that did not execute the word just written: {bad}"
    )
    assert (want[:, p:] != 0).any(), "the MATMUL wrote only zeros: a weak check"


@cocotb.test()
async def program_read_right_before_start(dut):
    """A read of the instruction memory presented in the cycle before `start` returns the word
    it asked for (the port serves every read presented while idle), not the first word the run
    reads: the run reads the memory only from the cycle after the pulse on. Each of the second
    word's four chunks, then the run ends without error."""
    _, host = await setup(dut)
    d = dut
    words = [encode(LoadWeights(rows=1, cols=1, s_addr=0)), encode(Halt())]
    await host.write_many(HostPort.program_writes(words))
    await host.write_many([(R_CTRL, CTRL_START_PC, 0)])
    bad = []
    for chunk in range(4):
        d.host_en.value = 1
        d.host_we.value = 0
        d.host_addr.value = address(R_IMEM, 4 + chunk)  # word 1, chunk `chunk`
        await FallingEdge(d.clk)
        d.host_en.value = 0
        d.start.value = 1
        await FallingEdge(d.clk)
        d.start.value = 0
        for _ in range(READ_LATENCY - 2):
            await FallingEdge(d.clk)
        got = int(d.host_rdata.value)
        want = (words[1] >> (32 * chunk)) & 0xFFFFFFFF
        if got != want:
            bad.append((chunk, hex(got), hex(want)))
        for _ in range(40):
            await FallingEdge(d.clk)
        st = await host.status()
        if st["error"] or not st["done"]:
            bad.append((chunk, "status", st))
    assert not bad, f"program reads presented right before `start` (chunk, got, want): {bad}"
    dut._log.info("4 program reads presented in the cycle before start: each returns its word")


@cocotb.test()
async def host_reads_its_writes_at_once(dut):
    """A data-buffer read issued 0, 1, 2 or 3 cycles after a write to the same bank and entry
    returns the written byte (the port's contract: one access per cycle, each seeing the ones
    before). The host's writes reach the banks a few cycles late, through the write-back's
    registers; the port covers the gap, which a read straight behind the write tests, and a
    second write to the same entry in between tests which copy wins."""
    cfg, host = await setup(dut)
    rng = seeded_rng(dut._log, stream=3)
    d = dut
    bad = []
    for gap in range(4):
        for double in (False, True, False, True):
            b, e = int(rng.integers(cfg.cmax)), int(rng.integers(cfg.ddepth))
            first, second = (int(v) for v in rng.integers(256, size=2))
            ops = [(1, b, e, first)]
            if double:  # a second write to the entry right behind the first: the newer wins
                ops.append((1, b, e, second))
            want = second if double else first
            ops += [(0, 0, 0, 0)] * gap + [(2, b, e, 0)]  # idle cycles, then the read
            for kind, bank, entry, value in ops:
                d.host_en.value = int(kind != 0)
                d.host_we.value = int(kind == 1)
                d.host_addr.value = (R_DBUF << 28) | (bank << 16) | entry
                d.host_wdata.value = value
                await FallingEdge(d.clk)
            d.host_en.value = 0
            for _ in range(READ_LATENCY - 1):
                await FallingEdge(d.clk)
            got = int(d.host_rdata.value) & 0xFF
            if got != want:
                bad.append((gap, b, e, got, want))
    assert not bad, f"reads right behind writes (idle cycles, bank, entry, got, want): {bad[:4]}"
    dut._log.info("16 reads 0..3 cycles behind writes to the same entry: each sees the newest write")


CONFIGS = {
    "4x3": ArrayConfig(
        rows=4, cols=3, cmax=32, ddepth=128, pdepth=64, wdepth=256, bdepth=64, sdepth=16, imem_depth=128
    ),
    "8x8": ArrayConfig(
        rows=8, cols=8, cmax=64, ddepth=512, pdepth=128, wdepth=512, bdepth=256, sdepth=16, imem_depth=128
    ),
    # taller than 8 rows: rows 8.. finish a pixel more than 8 cycles after row 0, so they write
    # an earlier pixel than row 0's current one (the write-back's entry chain)
    "12x2": ArrayConfig(
        rows=12, cols=2, cmax=32, ddepth=128, pdepth=64, wdepth=256, bdepth=64, sdepth=16, imem_depth=128
    ),
}
# The zoo network (instances large enough for models/zoo/sac_digits.onnx) runs on Verilator
# only, as in tb/test_accelerator_axi.py: about 360,000 cycles, nine tenths of the Icarus 8x8
# item's time and the longest stretch of `make test`. Icarus runs every other test of the 8x8
# instance, whose compiled networks take the same instructions through the same blocks.
RUNS_ZOO = {("verilator", "8x8")}


@pytest.mark.parametrize("array", list(CONFIGS))
@pytest.mark.parametrize("sim", SIMULATORS)
def test_accelerator(sim, array):
    run(
        "accelerator",
        "test_accelerator",
        sim,
        CONFIGS[array].hdl_parameters(),
        extra_env={"TB_ZOO": "1" if (sim, array) in RUNS_ZOO else "0"},
        seed=bench_seed("accelerator"),
    )
