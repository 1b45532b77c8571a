"""Driver of rtl/accelerator_axi.v, the accelerator behind AXI4-Lite and AXI4-Stream, built on
Forencich's cocotbext-axi (AxiLiteMaster, AxiStreamSource, AxiStreamSink).

:class:`AxiPort` offers what :class:`tb.host_port.HostPort` offers (load a compiled program,
write and read tensors, run a segment, status, trace), so :class:`tb.host_port.RtlDevice` and
fpga.execute run whole programs through the buses exactly as they do through the simple port:
bulk writes and reads go as bursts of AXI4-Stream commands, control and status through the
AXI4-Lite registers, the end of a run is the `irq` line. Register map and stream format:
docs/microarchitecture.md, "AXI top". Values go through unchanged; nothing is computed here.
"""

from __future__ import annotations

import logging
import time

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles
from cocotbext.axi import (
    AxiLiteBus,
    AxiLiteMaster,
    AxiResp,
    AxiStreamBus,
    AxiStreamFrame,
    AxiStreamSink,
    AxiStreamSource,
)

from fpga.arch import ArrayConfig
from tb.host_port import CTRL_START_PC, R_CTRL, HostPort, RunTimeout, address, wait_watched

# AXI4-Lite registers (byte addresses)
A_CONTROL, A_STATUS, A_HOST_ADDR, A_HOST_DATA = 0x000, 0x004, 0x008, 0x00C
A_IRQ_ENABLE, A_IRQ_STATUS, A_ID, A_WINDOW = 0x010, 0x014, 0x018, 0x100
ID = 0x53414301
READ_FLAG = 1 << 63  # stream command bit 63: a read
CMD_BYTES, DATA_BYTES = 8, 4


def command_beats(addr, data=None) -> bytes:
    """Stream commands as the little-endian bytes of 64-bit beats: writes of `data` at `addr`
    (full host-port addresses), or reads of `addr` when `data` is None."""
    a = np.asarray(addr, dtype=np.uint64) & np.uint64(0x7FFFFFFF)
    if data is None:
        beats = (a << np.uint64(32)) | np.uint64(READ_FLAG)
    else:
        beats = (a << np.uint64(32)) | (np.asarray(data, dtype=np.uint64) & np.uint64(0xFFFFFFFF))
    return beats.astype("<u8").tobytes()


class AxiPort(HostPort):
    """The host side of a system around rtl/accelerator_axi.v: a CPU on AXI4-Lite, a DMA on
    the two streams. Same methods as HostPort (which it extends: read_tensor, trace,
    load_program and write_tensor come from there and use this class's transfers)."""

    def __init__(self, dut, cfg: ArrayConfig, period_ns: int = 10, quiet: bool = True):
        """Use :meth:`create` in a bench: the drivers must first see the reset asserted
        (Icarus starts with X on every net, which cocotbext-axi would sample)."""
        # HostPort.__init__ drives the simple port's pins, which this top does not have
        self.dut = dut
        self.cfg = cfg
        self.period_ns = period_ns
        self.run_wall_s = 0.0
        self.lite = AxiLiteMaster(
            AxiLiteBus.from_prefix(dut, "s_axi"), dut.aclk, dut.aresetn, reset_active_level=False
        )
        self.cmd = AxiStreamSource(
            AxiStreamBus.from_prefix(dut, "s_axis"), dut.aclk, dut.aresetn, reset_active_level=False
        )
        self.rsp = AxiStreamSink(
            AxiStreamBus.from_prefix(dut, "m_axis"), dut.aclk, dut.aresetn, reset_active_level=False
        )
        if quiet:  # cocotbext-axi logs every frame at INFO: thousands of words
            for log in {self.lite.write_if.log, self.lite.read_if.log, self.cmd.log, self.rsp.log}:
                log.setLevel(logging.WARNING)
        self.words_written = 0
        self.words_read = 0

    @classmethod
    async def create(cls, dut, cfg: ArrayConfig, period_ns: int = 10, **kw) -> AxiPort:
        """Start the clock with the reset asserted, build the drivers, release the reset."""
        dut.aresetn.value = 0
        cocotb.start_soon(Clock(dut.aclk, period_ns, unit="ns", impl="gpi").start())
        await ClockCycles(dut.aclk, 2)
        port = cls(dut, cfg, period_ns, **kw)
        await ClockCycles(dut.aclk, 2)
        dut.aresetn.value = 1
        await ClockCycles(dut.aclk, 2)
        return port

    async def reset(self) -> None:
        self.dut.aresetn.value = 0
        await ClockCycles(self.dut.aclk, 3)
        self.dut.aresetn.value = 1
        await ClockCycles(self.dut.aclk, 2)

    # -- AXI4-Lite --------------------------------------------------------------------------
    async def reg_write(self, addr: int, value: int, strobe_bytes: int = 4) -> AxiResp:
        """Write a register; returns the response (OKAY or SLVERR). `strobe_bytes` < 4 makes a
        partial write (the slave answers SLVERR)."""
        data = int(value & 0xFFFFFFFF).to_bytes(4, "little")[:strobe_bytes]
        return (await self.lite.write(addr, data)).resp

    async def reg_read(self, addr: int) -> tuple[int, AxiResp]:
        r = await self.lite.read(addr, 4)
        return int.from_bytes(r.data, "little"), r.resp

    async def reg(self, addr: int) -> int:
        value, resp = await self.reg_read(addr)
        assert resp == AxiResp.OKAY, f"AXI4-Lite read of 0x{addr:03x} answered {resp!r}"
        return value

    async def set_reg(self, addr: int, value: int) -> None:
        resp = await self.reg_write(addr, value)
        assert resp == AxiResp.OKAY, f"AXI4-Lite write of 0x{addr:03x} answered {resp!r}"

    # -- AXI4-Stream bursts: the transfers HostPort makes word by word --------------------------
    async def write_words(self, addr, data) -> None:
        """One burst of write commands (a frame, TLAST on its last beat); returns when the
        last write has landed."""
        if not len(addr):
            return
        await self.cmd.send(AxiStreamFrame(command_beats(addr, data)))
        await self.cmd.wait()
        await ClockCycles(self.dut.aclk, 2)  # the port registers its inputs
        self.words_written += len(addr)

    async def read_words(self, addr) -> list[int]:
        """One burst of read commands; the answers come back as one frame (the output stream's
        TLAST follows the command's)."""
        if not len(addr):
            return []
        await self.cmd.send(AxiStreamFrame(command_beats(addr)))
        frame = await self.rsp.recv()
        words = np.frombuffer(bytes(frame.tdata), dtype="<u4")
        assert len(words) == len(addr), f"{len(addr)} read commands, {len(words)} words back in the frame"
        self.words_read += len(addr)
        return [int(v) for v in words]

    async def read_many(self, items) -> list[int]:
        return await self.read_words([address(r, o) for r, o in items])

    # -- running ------------------------------------------------------------------------------
    async def status(self) -> dict:
        """The accelerator's control region, read through the AXI4-Lite window."""
        st, cyc, pc, act, ret, conf = [await self.reg(A_WINDOW + 4 * i) for i in range(6)]
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

    async def run(
        self, start_pc: int = 0, timeout_cycles: int = 20_000_000, on_cycles=None, poll_s: float = 0.5
    ) -> dict:
        """Start pc through the window, CONTROL.start, then wait for the interrupt (the end of
        the run), acknowledge it and return the status. Same watchdog as HostPort.run."""
        d = self.dut
        await self.set_reg(A_WINDOW + 4 * CTRL_START_PC, start_pc)
        await self.set_reg(A_IRQ_ENABLE, 1)
        t0 = time.perf_counter()
        await self.set_reg(A_CONTROL, 1)
        if not int(d.irq.value) and not await wait_watched(
            d.irq, self.period_ns, timeout_cycles, on_cycles, poll_s
        ):
            self.run_wall_s += time.perf_counter() - t0
            st = await self.status()
            raise RunTimeout(
                f"the run from pc {start_pc} did not raise irq within "
                f"{timeout_cycles:,} cycles (the watchdog); the decoder "
                f"is at instruction {st['pc']}"
            )
        self.run_wall_s += time.perf_counter() - t0
        assert await self.reg(A_IRQ_STATUS) == 1, "irq high without IRQ_STATUS"
        await self.set_reg(A_IRQ_STATUS, 1)  # write 1 to clear
        assert not int(d.irq.value), "irq still high after IRQ_STATUS was cleared"
        return await self.status()


__all__ = [
    "AxiPort",
    "command_beats",
    "ID",
    "READ_FLAG",
    "R_CTRL",
    "A_CONTROL",
    "A_STATUS",
    "A_HOST_ADDR",
    "A_HOST_DATA",
    "A_IRQ_ENABLE",
    "A_IRQ_STATUS",
    "A_ID",
    "A_WINDOW",
]
