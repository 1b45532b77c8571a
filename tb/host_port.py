"""Drivers for the accelerator's host port (memory map in docs/microarchitecture.md).

:class:`HostPort` drives the real port word by word from Python: loads compiled programs and
tensors, starts a run, waits for `done`, and reads back tensors, status, counters and the
per-instruction trace. :class:`BulkPort` does the same transfers in bulk through the bench
wrapper rtl/accelerator_tb_wrapper.v (writes still go through the real port, one word per
clock, but without a Python round trip per word; reads come straight from the memories), which
is what long runs use (tb/rtl_job.py). Values go through unchanged: tensors are read back with
fpga.memory.gather, the same function the interpreter uses.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
from cocotb.triggers import FallingEdge, RisingEdge, SimTimeoutError, with_timeout

from fpga.arch import ArrayConfig
from fpga.compiler import Program
from fpga.isa import words_to_u32
from fpga.memory import Placement, gather

R_CTRL, R_IMEM, R_WMEM, R_BMEM, R_SMEM, R_DBUF, R_PBUF, R_TRACE = range(8)
CTRL_STATUS, CTRL_CYCLES, CTRL_PC, CTRL_ACTIVITY, CTRL_RETIRED, CTRL_CONFIG = range(6)
CTRL_START_PC = 8


def address(region: int, offset: int) -> int:
    return (region << 28) | offset


def random_location(rng, cfg: ArrayConfig) -> tuple[int, int]:
    """A random (region, offset) of the host port's memories (region first, then its offset;
    the benches' random write streams)."""
    wch = -(-cfg.cols * 8 // 32)
    spaces = [
        (R_DBUF, lambda: (int(rng.integers(cfg.cmax)) << 16) | int(rng.integers(cfg.ddepth))),
        (R_PBUF, lambda: (int(rng.integers(cfg.rows)) << 16) | int(rng.integers(cfg.pdepth))),
        (R_IMEM, lambda: int(rng.integers(cfg.imem_depth * 4))),
        (R_WMEM, lambda: int(rng.integers(cfg.wdepth)) * 256 + int(rng.integers(wch))),
        (R_BMEM, lambda: int(rng.integers(cfg.bdepth))),
        (R_SMEM, lambda: int(rng.integers(cfg.sdepth)) * 256 + int(rng.integers(cfg.cols))),
    ]
    region, offset = spaces[int(rng.integers(len(spaces)))]
    return region, offset()


def to_i32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


READ_LATENCY = 3  # the port's inputs, the memories' read, and the register after each memory


# -- what a program or a tensor writes: (full address, 32-bit word) arrays -----------------------
def _addr(region: int, offsets) -> np.ndarray:
    return (np.uint32(region) << np.uint32(28)) | np.asarray(offsets, dtype=np.uint32)


def program_image(prog: Program, cfg: ArrayConfig) -> tuple[np.ndarray, np.ndarray]:
    """Every host write that loads `prog`: instruction words (4 chunks each), weight words
    (COLS bytes in 32-bit chunks), biases and shift-table words (8 directions of 4 bits per
    chunk), as (address, data) uint32 arrays in that order."""
    parts = []
    imem = np.asarray(words_to_u32(prog.words), dtype=np.uint32).reshape(-1, 4)
    parts.append((_addr(R_IMEM, np.arange(imem.size)), imem.reshape(-1)))
    if len(prog.wmem):
        wmem = np.asarray(prog.wmem, dtype=np.uint8).reshape(len(prog.wmem), -1)
        padded = np.zeros((len(wmem), -(-cfg.cols // 4) * 4), dtype=np.uint8)
        padded[:, : cfg.cols] = wmem[:, : cfg.cols]
        chunks = padded.view("<u4")  # [words, chunks]
        offs = np.arange(len(wmem))[:, None] * 256 + np.arange(chunks.shape[1])[None, :]
        parts.append((_addr(R_WMEM, offs.reshape(-1)), chunks.reshape(-1).astype(np.uint32)))
    bmem = np.asarray(prog.bmem, dtype=np.int64).reshape(-1)
    parts.append((_addr(R_BMEM, np.arange(len(bmem))), (bmem & 0xFFFFFFFF).astype(np.uint32)))
    if len(prog.smem):
        smem = np.asarray(prog.smem, dtype=np.uint32).reshape(len(prog.smem), cfg.cols, 8)
        packed = (smem << (4 * np.arange(8, dtype=np.uint32))).sum(axis=2, dtype=np.uint32)
        offs = np.arange(len(smem))[:, None] * 256 + np.arange(cfg.cols)[None, :]
        parts.append((_addr(R_SMEM, offs.reshape(-1)), packed.reshape(-1)))
    return (
        np.concatenate([a for a, _ in parts]).astype(np.uint32),
        np.concatenate([d for _, d in parts]).astype(np.uint32),
    )


def tensor_writes(pl: Placement, x) -> tuple[np.ndarray, np.ndarray]:
    """Host writes that put one image's tensor [C, H, W] into its data-buffer region."""
    x = np.asarray(x, dtype=np.uint8).reshape(pl.channels, pl.pixels)
    bank, entry = pl.banks_entries()
    offs = (bank[:, None].astype(np.uint32) << np.uint32(16)) | entry.astype(np.uint32)
    return _addr(R_DBUF, offs.reshape(-1)), x.reshape(-1).astype(np.uint32)


class HostPort:
    """All accesses happen at falling edges; a read's data is there READ_LATENCY cycles later."""

    def __init__(self, dut, cfg: ArrayConfig):
        self.dut = dut
        self.cfg = cfg
        dut.host_en.value = 0
        dut.host_we.value = 0
        dut.host_addr.value = 0
        dut.host_wdata.value = 0
        dut.start.value = 0
        self.run_wall_s = 0.0  # wall time from start to done, all runs: the raw sim speed

    async def reset(self):
        self.dut.rst.value = 1
        await FallingEdge(self.dut.clk)
        await FallingEdge(self.dut.clk)
        self.dut.rst.value = 0
        await FallingEdge(self.dut.clk)

    async def write_many(self, items) -> None:
        """items: iterable of (region, offset, value)."""
        items = list(items)
        await self.write_words(
            [address(r, o) for r, o, _ in items], [int(v) & 0xFFFFFFFF for _, _, v in items]
        )

    async def write_words(self, addr, data) -> None:
        """One write per clock: full addresses and 32-bit words."""
        d = self.dut
        d.host_en.value = 1
        d.host_we.value = 1
        for a, v in zip(np.asarray(addr).tolist(), np.asarray(data).tolist(), strict=True):
            d.host_addr.value = int(a)
            d.host_wdata.value = int(v) & 0xFFFFFFFF
            await FallingEdge(d.clk)
        d.host_en.value = 0
        d.host_we.value = 0
        await FallingEdge(d.clk)  # the last write lands at the next edge

    async def read_many(self, items) -> list[int]:
        """items: list of (region, offset); pipelined, one read per cycle."""
        d = self.dut
        items = list(items)
        out = []
        d.host_we.value = 0
        d.host_en.value = 1
        for i in range(len(items) + READ_LATENCY - 1):
            if i < len(items):
                d.host_addr.value = address(*items[i])
            else:
                d.host_en.value = 0
            await FallingEdge(d.clk)
            if i >= READ_LATENCY - 1:
                out.append(int(d.host_rdata.value))
        d.host_en.value = 0
        return out

    async def read(self, region: int, offset: int) -> int:
        return (await self.read_many([(region, offset)]))[0]

    # -- programs and tensors -----------------------------------------------------------------
    @staticmethod
    def program_writes(words) -> list:
        """Host writes that put 128-bit instruction words into the instruction memory."""
        return [
            (R_IMEM, i * 4 + j, int(v))
            for i, row in enumerate(words_to_u32(words))
            for j, v in enumerate(row)
        ]

    async def load_program(self, prog: Program) -> None:
        await self.write_words(*program_image(prog, self.cfg))

    async def write_tensor(self, pl: Placement, x) -> None:
        """Write one image's tensor [C, H, W] into its data-buffer region."""
        await self.write_words(*tensor_writes(pl, x))

    async def read_tensor(self, pl: Placement) -> np.ndarray:
        """Read one tensor back; returns what fpga.memory.gather returns."""
        cfg = self.cfg
        dbuf = np.zeros((cfg.cmax, cfg.ddepth), dtype=np.uint8)
        pbuf = np.zeros((cfg.rows, cfg.pdepth), dtype=np.int64)
        if pl.space == "dbuf":
            bank, entry = pl.banks_entries()
            keys = [(int(bank[c]), int(e)) for c in range(pl.channels) for e in entry[c]]
            vals = await self.read_many([(R_DBUF, (b << 16) | e) for b, e in keys])
            for (b, e), v in zip(keys, vals, strict=True):
                dbuf[b, e] = v & 0xFF
        else:
            per_tile = 1 if pl.pixel_sum else pl.pixels
            keys = [
                (f % cfg.rows, pl.addr + (f // cfg.rows) * per_tile + p)
                for f in range(pl.channels)
                for p in range(per_tile)
            ]
            vals = await self.read_many([(R_PBUF, (r << 16) | e) for r, e in keys])
            for (r, e), v in zip(keys, vals, strict=True):
                pbuf[r, e] = to_i32(v)
        return gather(pl, dbuf, pbuf.astype(np.int32), cfg.rows)

    # -- running ------------------------------------------------------------------------------
    async def run(
        self, start_pc: int = 0, timeout_cycles: int = 20_000_000, on_cycles=None, poll_s: float = 0.5
    ) -> dict:
        """Set the start pc, pulse start, wait for done, return the status registers.

        The wait is a watchdog (:func:`wait_watched`): after `timeout_cycles` without `done`
        it raises RunTimeout naming the instruction the decoder was at."""
        d = self.dut
        await self.write_many([(R_CTRL, CTRL_START_PC, start_pc)])
        d.start.value = 1
        t0 = time.perf_counter()
        await FallingEdge(d.clk)  # the rising edge in between took start: done = 0
        d.start.value = 0
        if not await wait_watched(d.done, 10, timeout_cycles, on_cycles, poll_s):
            self.run_wall_s += time.perf_counter() - t0
            st = await self.status()
            raise RunTimeout(
                f"the run from pc {start_pc} did not finish within "
                f"{timeout_cycles:,} cycles (the watchdog); the decoder "
                f"is at instruction {st['pc']}"
            )
        await FallingEdge(d.clk)
        self.run_wall_s += time.perf_counter() - t0
        return await self.status()

    async def status(self) -> dict:
        st, cyc, pc, act, ret, conf = await self.read_many(
            [
                (R_CTRL, i)
                for i in (CTRL_STATUS, CTRL_CYCLES, CTRL_PC, CTRL_ACTIVITY, CTRL_RETIRED, CTRL_CONFIG)
            ]
        )
        return {
            "busy": st & 1,
            "done": (st >> 1) & 1,
            "error": (st >> 2) & 1,
            "error_code": (st >> 4) & 0xF,
            "cycles": cyc,
            "pc": pc,
            "activity": act,
            "retired": ret,
            "config": (conf & 0xFF, (conf >> 8) & 0xFF, (conf >> 16) & 0xFF),
        }

    async def trace(self, n: int, first: int = 0) -> tuple[list[int], list[int]]:
        """(end cycle, active cell-cycles) of instructions first .. first+n-1 of the last run
        (end cycles count from that run's start)."""
        vals = await self.read_many([(R_TRACE, i * 2 + w) for i in range(first, first + n) for w in (0, 1)])
        return vals[0::2], vals[1::2]


# -- bulk transfers through rtl/accelerator_tb_wrapper.v ----------------------------------------
LOAD_DEPTH = 65536  # entries of one bulk load: the wrapper's default (PARAM_LOAD_DEPTH)
D_DBUF, D_PBUF, D_TRACE = range(3)
_HEX = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _HEX[_c] = _HEX[ord(chr(_c).upper())] = _i


def read_hex_lines(path: Path, count: int, digits: int, fields: int = 1):
    """A hex file ($writememh, or one $fwrite %h per line): `count` lines of `fields` words of
    `digits` hex digits each (field 0 is the last of a line). Returns (words uint64 [count,
    fields], undefined bool [count, fields]: X or Z bits, read as 0). Address comments (Icarus
    writes `// 0x...`) are skipped."""
    raw = path.read_bytes()
    if b"/" in raw or b"@" in raw:
        raw = b"\n".join(ln for ln in raw.split(b"\n") if not ln.startswith((b"//", b"@")))
    text = np.frombuffer(b"".join(raw.split()), dtype=np.uint8)
    if text.size != count * fields * digits:
        raise RuntimeError(
            f"{path.name}: expected {count} lines of {fields * digits} hex digits, got {text.size} digits"
        )
    nib = _HEX[text].reshape(count, fields, digits)[:, ::-1]
    undefined = (nib == 255).any(axis=2)
    nib = np.where(nib == 255, 0, nib).astype(np.uint64)
    out = np.zeros((count, fields), dtype=np.uint64)
    for k in range(digits):
        out = (out << np.uint64(4)) | nib[:, :, k]
    return out, undefined


def read_memh(path: Path, count: int, digits: int) -> np.ndarray:
    """The `count` words of a $writememh file as uint64; X or Z bits raise: a result the
    design left undefined is a bug, never a number."""
    words, undefined = read_hex_lines(path, count, digits)
    if undefined.any():
        raise RuntimeError(f"{path.name}: word {int(np.argmax(undefined[:, 0]))} is undefined (X/Z)")
    return words[:, 0]


class BulkPort:
    """Bulk transfers of the bench wrapper rtl/accelerator_tb_wrapper.v.

    Writes (programs, input tensors) go to a file the wrapper reads, then through the real host
    port at one word per clock with no Python per word; reads (tensors, the trace) are dumps of
    the memories' entries that hold them, taken between runs (one cycle per entry, the trace in
    none). Only what is asked for is dumped. The files live in the simulator's working
    directory: give each simulation running at once its own, on a RAM disk for speed."""

    def __init__(self, dut, cfg: ArrayConfig):
        self.dut = dut
        self.cfg = cfg
        self.dir = Path(os.getcwd())  # where the simulator reads and writes the files
        self.depth = int(os.environ.get("PARAM_LOAD_DEPTH", LOAD_DEPTH))
        dut.load_go.value = 0
        dut.load_count.value = 0
        dut.dump_go.value = 0
        self.words_loaded = 0  # words written through the port by bulk loads
        self.load_wall_s = 0.0  # wall time of bulk loads (file, transfer)
        self.read_wall_s = 0.0  # wall time of dumps and reading them

    async def write_words(self, addr, data) -> None:
        d = self.dut
        t0 = time.perf_counter()
        addr, data = np.asarray(addr, dtype=np.uint64), np.asarray(data, dtype=np.uint64)
        for s in range(0, len(addr), self.depth):
            a, v = addr[s : s + self.depth], data[s : s + self.depth]
            entries = ((a << np.uint64(32)) | (v & np.uint64(0xFFFFFFFF))).astype(">u8")
            text = np.frombuffer(entries.tobytes().hex().encode(), dtype=np.uint8)
            lines = np.full((len(a), 17), ord("\n"), dtype=np.uint8)
            lines[:, :16] = text.reshape(len(a), 16)
            lines.tofile(self.dir / "load.hex")
            d.load_count.value = len(a)
            d.load_go.value = 1
            await FallingEdge(d.clk)  # the rising edge in between read the file
            d.load_go.value = 0
            if d.load_busy.value:
                await FallingEdge(d.load_busy)
            await FallingEdge(d.clk)
            self.words_loaded += len(a)
        self.load_wall_s += time.perf_counter() - t0

    async def load_program(self, prog: Program) -> None:
        await self.write_words(*program_image(prog, self.cfg))

    async def write_tensor(self, pl: Placement, x) -> None:
        await self.write_words(*tensor_writes(pl, x))

    async def dump(self, what: int, lo: int, hi: int) -> None:
        """Dump entries lo..hi of the data buffer or partial-sum buffer (dump.hex: one line
        per entry, every bank), or of the trace (dump_trace_*.hex)."""
        d = self.dut
        d.dump_what.value = what
        d.dump_lo.value = lo
        d.dump_hi.value = hi
        d.dump_go.value = 1
        await FallingEdge(d.clk)  # the rising edge in between took the request
        d.dump_go.value = 0
        if d.dump_busy.value:
            await FallingEdge(d.dump_busy)
            await FallingEdge(d.clk)

    async def read_tensor(self, pl: Placement) -> np.ndarray:
        """Read one tensor back: only the entries that hold it; returns what
        fpga.memory.gather returns."""
        cfg = self.cfg
        t0 = time.perf_counter()
        dbuf = np.zeros((cfg.cmax, cfg.ddepth), dtype=np.uint8)
        pbuf = np.zeros((cfg.rows, cfg.pdepth), dtype=np.int32)
        undef_d = np.zeros(dbuf.shape, dtype=np.uint8)  # X/Z entries (Icarus)
        undef_p = np.zeros(pbuf.shape, dtype=np.uint8)
        if pl.space == "dbuf":
            lo, n = pl.addr, pl.entries
            await self.dump(D_DBUF, lo, lo + n - 1)
            words, undef = read_hex_lines(self.dir / "dump.hex", n, 2, cfg.cmax)
            dbuf[:, lo : lo + n], undef_d[:, lo : lo + n] = words.T, undef.T
        else:
            per_tile = 1 if pl.pixel_sum else pl.pixels
            lo, n = pl.addr, -(-pl.channels // cfg.rows) * per_tile
            await self.dump(D_PBUF, lo, lo + n - 1)
            words, undef = read_hex_lines(self.dir / "dump.hex", n, 8, cfg.rows)
            pbuf[:, lo : lo + n] = words.T.astype(np.uint32).view(np.int32)
            undef_p[:, lo : lo + n] = undef.T
        if gather(pl, undef_d, undef_p, cfg.rows).any():
            raise RuntimeError(f"the RTL left undefined (X/Z) values in a tensor at {pl}")
        self.read_wall_s += time.perf_counter() - t0
        return gather(pl, dbuf, pbuf, cfg.rows)

    async def trace(self, n: int, first: int = 0) -> tuple[list[int], list[int]]:
        """As :meth:`HostPort.trace`."""
        t0 = time.perf_counter()
        await self.dump(D_TRACE, first, first + n - 1)
        ends = read_memh(self.dir / "dump_trace_cycle.hex", n, 8)
        acts = read_memh(self.dir / "dump_trace_act.hex", n, 8)
        self.read_wall_s += time.perf_counter() - t0
        return [int(v) for v in ends], [int(v) for v in acts]


async def wait_watched(
    signal, period_ns: int, timeout_cycles: int, on_cycles=None, poll_s: float = 0.5
) -> bool:
    """Wait for a rising edge of `signal` for at most `timeout_cycles` clock periods; False when
    the budget ran out (the caller names the failure). About every `poll_s` seconds of wall time
    `on_cycles(cycles so far)` is called (progress inside a long run): the wait goes in chunks
    of simulated cycles sized from the speed measured so far (icarus runs ~300 times slower
    than Verilator); no Python runs inside a chunk."""
    waited, poll = 0, 1_000
    while waited < timeout_cycles:
        chunk = min(poll, timeout_cycles - waited)
        c0 = time.perf_counter()
        try:
            await with_timeout(RisingEdge(signal), chunk * period_ns, "ns")
            return True
        except SimTimeoutError:
            waited += chunk
            speed = chunk / max(time.perf_counter() - c0, 1e-6)
            poll = int(min(max(speed * poll_s, 1_000), 1_000_000))
            if on_cycles is not None and waited < timeout_cycles:
                on_cycles(waited)
    return False


class RunTimeout(AssertionError):
    """A run did not reach `done` within its cycle budget (a bench failure, named)."""


# watchdog of a segment run: the cycle model's count times this, plus a margin
WATCHDOG_FACTOR, WATCHDOG_MARGIN = 2, 10_000


def watchdog_cycles(model_cycles: int) -> int:
    """The cycle budget of a run the cycle model puts at `model_cycles`. RTL_WATCHDOG_CYCLES
    (environment) caps it: a way to see the watchdog fire, and to stop a suspected hang early."""
    budget = WATCHDOG_FACTOR * model_cycles + WATCHDOG_MARGIN
    cap = os.environ.get("RTL_WATCHDOG_CYCLES", "").strip()
    return min(budget, int(cap)) if cap else budget


class RtlDevice:
    """The RTL accelerator as a fpga.execute device (one image per call): runs a segment
    and reports per-instruction cycles and activity read from the trace memory. Tensors and
    the trace move through `transport`: the host port itself (default) or a :class:`BulkPort`;
    runs are always started and their status read through the host port."""

    def __init__(
        self, host: HostPort, prog: Program, transport: HostPort | BulkPort | None = None, on_cycles=None
    ):
        self.host = host
        self.prog = prog
        self.io = transport or host
        self.ends = {}  # segment start pc -> retire cycles measured by the RTL
        self.on_cycles = on_cycles  # progress: on_cycles(start_pc, cycles so far in the run)

    async def write_tensor(self, pl: Placement, data) -> None:
        data = np.asarray(data)
        assert data.shape[0] == 1, "the RTL runs one image at a time"
        await self.io.write_tensor(pl, data[0])

    async def read_tensor(self, pl: Placement) -> np.ndarray:
        return (await self.io.read_tensor(pl))[None]

    async def run(self, start_pc: int):
        from fpga.cycle_model import total_cycles
        from fpga.interpreter import RunStats
        from fpga.isa import ErrorCode, IsaError

        seg = next(s for s in self.prog.segments if s.start_pc == start_pc)
        model = total_cycles(self.prog.instructions[start_pc : start_pc + seg.n_instr], self.prog.config)
        report = None if self.on_cycles is None else (lambda c: self.on_cycles(start_pc, c))
        st = await self.host.run(start_pc, watchdog_cycles(model), report)
        if st["error"]:
            return RunStats(
                error=IsaError(ErrorCode(st["error_code"]), st["pc"], None, "reported by the RTL")
            )
        ends, acts = await self.io.trace(seg.n_instr, start_pc)
        self.ends[start_pc] = ends
        cycles = [e - (ends[i - 1] if i else 0) for i, e in enumerate(ends)]
        assert sum(cycles) == st["cycles"], (cycles, st)
        return RunStats(cycles=cycles, activity=acts)
