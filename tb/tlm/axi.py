"""Transaction-level components of the AXI top (rtl/accelerator_axi.v).

Transactions: :class:`BusWrite` and :class:`BusRead` (one host-port word through the
AXI4-Stream command and read-data ports), :class:`ImageJob` (one image through a compiled
network: program load, the plan's segments and host layers, outputs read back) and its
:class:`ImageResult`.

* Driver: :class:`tb.axi_port.AxiPort` (cocotbext-axi AXI4-Lite master and stream source/sink)
  for bus transactions; :class:`ImageDriver` runs an ImageJob with fpga.execute on it.
* Monitor: :class:`StreamMonitor` watches both streams' handshakes (cocotbext-axi
  AxiStreamMonitor) and reports every command as a BusWrite or, paired in order with its data
  beat, a BusRead, whoever drove them.
* Scoreboards: :class:`MemoryScoreboard` holds each memory word to the last value written to it
  (the memories' specification; runs invalidate what a program writes); :class:`ImageScoreboard`
  asks the golden executor (models.golden.run) for every layer's output and fpga.cycle_model /
  the interpreter for every instruction's retire cycle and activity.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiStreamBus, AxiStreamMonitor

from fpga.arch import ArrayConfig
from fpga.compiler import Program, compile_network
from fpga.cycle_model import program_timeline
from fpga.execute import execute, interpret
from models import golden
from tb.axi_port import AxiPort
from tb.host_port import R_CTRL, R_DBUF, R_PBUF, R_TRACE, RtlDevice
from tb.tlm.scoreboard import Scoreboard

REGION_SHIFT = 28
RUN_WRITES = (R_CTRL, R_DBUF, R_PBUF, R_TRACE)  # regions a run (or its counters) may change


@dataclass(frozen=True)
class BusWrite:
    addr: int
    data: int


@dataclass(frozen=True)
class BusRead:
    addr: int
    data: int = -1  # -1 in a request; the monitor fills it in


@dataclass
class ImageJob:
    """One image through a network compiled for the bench's array."""

    net: object
    image: np.ndarray
    label: str = ""


@dataclass
class ImageResult:
    label: str
    outputs: object  # layer index -> golden-format batch (dict or list)
    ends: dict = field(default_factory=dict)  # segment start pc -> retire cycles (trace)
    activity: list = field(default_factory=list)  # per segment, per instruction


def decode_commands(tdata: bytes):
    """The 64-bit command beats of a frame as (is_read, address, data) arrays."""
    beats = np.frombuffer(bytes(tdata), dtype="<u8")
    return (
        (beats >> np.uint64(63)).astype(bool),
        ((beats >> np.uint64(32)) & np.uint64(0x7FFFFFFF)).astype(np.int64),
        (beats & np.uint64(0xFFFFFFFF)).astype(np.int64),
    )


class StreamMonitor:
    """Both AXI4-Stream ports, as bus transactions: callbacks get BusWrite and BusRead."""

    def __init__(self, dut, on_write, on_read, quiet: bool = True):
        self.cmd = AxiStreamMonitor(
            AxiStreamBus.from_prefix(dut, "s_axis"), dut.aclk, dut.aresetn, reset_active_level=False
        )
        self.rsp = AxiStreamMonitor(
            AxiStreamBus.from_prefix(dut, "m_axis"), dut.aclk, dut.aresetn, reset_active_level=False
        )
        if quiet:
            self.cmd.log.setLevel(logging.WARNING)
            self.rsp.log.setLevel(logging.WARNING)
        self.on_write, self.on_read = on_write, on_read
        self.pending: deque = deque()  # addresses of read commands not answered yet
        self.writes = self.reads = 0
        self._tasks = []

    def start(self) -> None:
        self._tasks = [cocotb.start_soon(self._commands()), cocotb.start_soon(self._answers())]

    def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        self._tasks = []

    async def _commands(self) -> None:
        while True:
            frame = await self.cmd.recv()
            is_read, addr, data = decode_commands(frame.tdata)
            for r, a, v in zip(is_read.tolist(), addr.tolist(), data.tolist(), strict=True):
                if r:
                    self.pending.append(a)
                else:
                    self.writes += 1
                    self.on_write(BusWrite(a, v))

    async def _answers(self) -> None:
        while True:
            frame = await self.rsp.recv()
            for v in np.frombuffer(bytes(frame.tdata), dtype="<u4").tolist():
                assert self.pending, f"read data 0x{v:08x} without a read command"
                self.reads += 1
                self.on_read(BusRead(self.pending.popleft(), v))


class MemoryScoreboard:
    """A read must return the last value written to its address (data-buffer entries hold the
    low byte). Addresses never written since the last run are learned from their first read,
    not checked. Regions a run changes (control, buffers, trace) are forgotten at each run."""

    def __init__(self, log=None):
        self.shadow: dict[int, int] = {}
        self.checked = 0
        self.learned = 0
        self.errors: list[str] = []
        self.log = log

    def write(self, t: BusWrite) -> None:
        region = t.addr >> REGION_SHIFT
        if region in (R_CTRL, R_TRACE):
            return  # not memory words the host owns
        self.shadow[t.addr] = t.data & 0xFF if region == R_DBUF else t.data

    def read(self, t: BusRead) -> None:
        want = self.shadow.get(t.addr)
        if want is None:
            self.learned += 1
        elif want != t.data:
            self.errors.append(f"read of 0x{t.addr:08x} returned 0x{t.data:08x}, last written 0x{want:08x}")
        else:
            self.checked += 1

    def forget_run(self) -> None:
        self.shadow = {a: v for a, v in self.shadow.items() if (a >> REGION_SHIFT) not in RUN_WRITES}

    def check(self) -> int:
        if self.errors:
            raise AssertionError(f"{len(self.errors)} bus reads differ, first: {self.errors[0]}")
        if self.log is not None:
            self.log.info(
                f"memory scoreboard: {self.checked} reads equal the last write, "
                f"{self.learned} reads of unwritten words"
            )
        return self.checked


def expected_image(job: ImageJob, prog: Program) -> ImageResult:
    """What the golden models say: every layer's output (golden.run), every segment's retire
    cycles (fpga.cycle_model.program_timeline) and activity (the interpreter's golden count)."""
    ref = golden.run(job.net, job.image[None])
    model = interpret(prog, job.image[None])
    ends = {
        s.start_pc: [
            st.end
            for st in program_timeline(prog.instructions[s.start_pc : s.start_pc + s.n_instr], prog.config)
        ]
        for s in prog.segments
    }
    return ImageResult(job.label, ref.outputs, ends, [st.activity for st in model.segments])


def compare_images(want: ImageResult, got: ImageResult) -> list[str]:
    diffs = []
    for i, out in got.outputs.items():
        bad = np.argwhere(out != want.outputs[i])
        if bad.size:
            at = tuple(bad[0])
            diffs.append(f"{got.label}: layer {i} differs at {at}: got {out[at]}, want {want.outputs[i][at]}")
    if got.ends != want.ends:
        diffs.append(f"{got.label}: retire cycles {got.ends} != cycle model {want.ends}")
    if got.activity != want.activity:
        diffs.append(f"{got.label}: activity {got.activity} != golden {want.activity}")
    return diffs


class TrackedAxiPort(AxiPort):
    """AxiPort that tells listeners when it starts a run (the memory scoreboard forgets what
    the program may overwrite)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.on_run = []

    async def run(self, *args, **kw) -> dict:
        for f in self.on_run:
            f()
        return await super().run(*args, **kw)


class ImageDriver:
    """Runs ImageJobs through the AXI top: compiles the job's network for the array (once per
    network), loads the program in one stream burst, then fpga.execute with the RTL device."""

    def __init__(self, port: AxiPort, cfg: ArrayConfig):
        self.port = port
        self.cfg = cfg
        self._loaded = None  # (network, program) now in the memories
        self._fresh = False  # compiled, not loaded yet

    def program(self, job: ImageJob) -> Program:
        if self._loaded is None or self._loaded[0] is not job.net:
            self._loaded = (job.net, compile_network(job.net, self.cfg))
            self._fresh = True
        return self._loaded[1]

    async def send(self, job: ImageJob) -> ImageResult:
        prog = self.program(job)
        if self._fresh:
            await self.port.load_program(prog)
            self._fresh = False
        device = RtlDevice(self.port, prog)
        res = await execute(prog, device, job.image[None])
        return ImageResult(job.label, res.outputs, dict(device.ends), [st.activity for st in res.segments])


class AxiEnv:
    """Driver, monitor and scoreboards of the AXI top: tests call `write`, `read` and `image`
    with transactions and `check` at the end."""

    def __init__(self, dut, port: TrackedAxiPort, cfg: ArrayConfig):
        self.port = port
        self.memory = MemoryScoreboard(dut._log)
        self.images = Scoreboard("images", compare_images, dut._log)
        self.monitor = StreamMonitor(dut, self.memory.write, self.memory.read)
        self.driver = ImageDriver(port, cfg)
        port.on_run.append(self.memory.forget_run)
        self.sent_writes = self.sent_reads = 0

    def start(self) -> None:
        self.monitor.start()

    async def write(self, items: list[BusWrite]) -> None:
        await self.port.write_words([t.addr for t in items], [t.data for t in items])
        self.sent_writes += len(items)

    async def read(self, items: list[BusRead]) -> list[BusRead]:
        data = await self.port.read_words([t.addr for t in items])
        self.sent_reads += len(items)
        return [BusRead(t.addr, v) for t, v in zip(items, data, strict=True)]

    async def image(self, job: ImageJob) -> ImageResult:
        self.images.expect(expected_image(job, self.driver.program(job)))
        got = await self.driver.send(job)
        self.images.observe(got)
        return got

    async def check(self) -> dict:
        """Let the monitors take the last beats, then the scoreboards' verdicts."""
        await ClockCycles(self.port.dut.aclk, 4)
        self.monitor.stop()
        counts = {
            "images": self.images.check(),
            "reads checked": self.memory.check(),
            "writes seen": self.monitor.writes,
            "reads seen": self.monitor.reads,
        }
        return counts
