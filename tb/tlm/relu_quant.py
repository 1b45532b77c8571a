"""Transaction-level components of the ReLU & quantization output of an array row
(rtl/relu_quant.v): an input transaction is a finished accumulator word (the value the row
must end with, the initial value added when its bit 31 arrives, the output mode); an output
transaction is what the block presents with `valid` (raw word, result byte, the cycle).

The driver streams words back to back (one every 8 cycles on the 4 lanes, as the array
does) and shows a completing phase only in the cycle a word's bit 31 arrives, so `valid` rises
exactly once per word; the monitor reports every `valid`; the scoreboard asks
models.numerics.sac (apply_mode) for the result and holds the latency to the documented one:
`valid` rises at the clock edge that takes bit 31 and stays high for that one cycle (word p of
a burst: at edge 8p + 31, counting the edge that takes the burst's first bit as 0)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge
from cocotb.utils import get_sim_time

from models.numerics import sac
from models.numerics.sac import OutputMode
from tb.bitserial import LaneStreams, pack_bits
from tb.tlm.scoreboard import Scoreboard

PERIOD_NS = 10
LATENCY = 31  # word p of a burst: valid from edge 8p + LATENCY


@dataclass(frozen=True)
class AccWord:
    """Input transaction: the row's finished accumulator `acc` (int32), the initial value
    `init` (int32) presented when it completes, the output mode (0..3)."""

    acc: int
    init: int
    mode: int


@dataclass(frozen=True)
class RowResult:
    """Output transaction: `raw` (int32), `result` (the output byte of modes 0 and 1), the
    rising edge after which `valid` was high (edges counted from the clock's start)."""

    raw: int
    result: int
    cycle: int


def cycle_now() -> int:
    return math.ceil(get_sim_time("ns") / PERIOD_NS)


class ReluQuantDriver:
    """Drives bursts of AccWord; the serial word is `acc - init` modulo 2^32, so the block's
    addition wraps exactly when the transaction's values do (a stimulus transform; the
    expected result comes from the golden model)."""

    def __init__(self, dut, rng: np.random.Generator):
        self.dut = dut
        self.rng = rng  # junk on `init` between words
        dut.phase.value = 0
        dut.mode.value = 0
        dut.init.value = 0
        dut.serial_in.value = 0

    async def send(self, words: list[AccWord], on_start=None) -> None:
        """Drive one burst; `on_start(edge)` is called with the edge that takes its first bit."""
        d = self.dut
        acc = np.array([w.acc for w in words], dtype=np.int64)
        init = np.array([w.init for w in words], dtype=np.int64)
        serial = (acc - init + 2**31) % 2**32 - 2**31
        lanes = LaneStreams(serial, 0)
        await FallingEdge(d.clk)
        start = cycle_now()
        if on_start is not None:
            on_start(start)
        for c in range(8 * len(words) + 24):
            d.serial_in.value = pack_bits(lanes.bits_at(c))
            p, rem = divmod(c - 31, 8)
            real = rem == 0 and 0 <= p < len(words)
            # the lane of word p shows bit 31 at phase (8p + 31) % 32; 0 completes no lane
            d.phase.value = c % 32 if real else 0
            junk = int(self.rng.integers(-(2**31), 2**31))
            d.init.value = (words[p].init if real else junk) & 0xFFFFFFFF
            if real:
                d.mode.value = words[p].mode
            await FallingEdge(d.clk)
        d.phase.value = 0


class ReluQuantMonitor:
    """Reports every cycle with `valid` high as a RowResult."""

    def __init__(self, dut, callback):
        self.dut = dut
        self.callback = callback
        self.seen = 0
        self._task = None

    def start(self) -> None:
        self._task = cocotb.start_soon(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _run(self) -> None:
        d = self.dut
        while True:
            await RisingEdge(d.clk)
            await ReadOnly()
            if str(d.valid.value) == "1":
                self.seen += 1
                self.callback(RowResult(d.raw.value.to_signed(), int(d.result.value), cycle_now()))


def expected_result(word: AccWord, cycle: int) -> RowResult:
    """What the golden model says the block must present for `word`: raw = the accumulator,
    result = sac.apply_mode of it (modes 0 and 1; the byte is unused in modes 2 and 3)."""
    mode = OutputMode(word.mode)
    result = int(sac.apply_mode(np.array([word.acc]), mode)[0]) if word.mode in (0, 1) else -1
    return RowResult(word.acc, result, cycle)


def compare(want: RowResult, got: RowResult) -> list[str]:
    diffs = []
    if got.raw != want.raw:
        diffs.append(f"raw {got.raw} != {want.raw}")
    if want.result >= 0 and got.result != want.result:
        diffs.append(f"result {got.result} != {want.result} (raw {want.raw})")
    if got.cycle != want.cycle:
        diffs.append(f"valid in cycle {got.cycle}, documented {want.cycle}")
    return diffs


class ReluQuantEnv:
    """Driver, monitor and scoreboard wired together: `await env.send(words)` drives a burst
    and tells the scoreboard what to expect; `env.check()` after the last burst."""

    def __init__(self, dut, rng: np.random.Generator):
        self.driver = ReluQuantDriver(dut, rng)
        self.scoreboard = Scoreboard("relu_quant", compare, dut._log)
        self.monitor = ReluQuantMonitor(dut, self.scoreboard.observe)
        self.sent: list[AccWord] = []
        self.dut = dut

    def start(self) -> None:
        self.monitor.start()

    async def send(self, words: list[AccWord]) -> None:
        def expect(start: int) -> None:
            for p, w in enumerate(words):
                self.scoreboard.expect(expected_result(w, start + 8 * p + LATENCY))

        await self.driver.send(words, on_start=expect)
        self.sent += words

    async def check(self) -> int:
        for _ in range(4):
            await FallingEdge(self.dut.clk)
        self.monitor.stop()
        return self.scoreboard.check()
