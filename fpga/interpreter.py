"""Instruction-level interpreter of the SAC accelerator, for a batch of images at once.

It executes programs word by word on numpy copies of the accelerator's memories (one copy of
the data and partial-sum buffers per image), using the golden numerics for all arithmetic,
and counts cycles with the cycle model and activity with the golden activity count. Tests use
it to show that compiled programs compute what the golden executor computes; the RTL is held to
the same golden outputs and the same cycle model; the compare script uses it for the images it
does not simulate.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fpga.arch import ArrayConfig
from fpga.compiler import Program
from fpga.cycle_model import FETCH, lw_cycles, mm_cycles
from fpga.isa import DecoderState, ErrorCode, Halt, IsaError, LoadWeights, Matmul, check, decode
from fpga.memory import Placement, gather, scatter
from models.numerics import sac
from models.numerics.sac import OutputMode


@dataclass
class RunStats:
    cycles: list = field(default_factory=list)      # per executed instruction
    activity: list = field(default_factory=list)    # active (cell, pixel) pairs per instruction,
    #                                                 an int or an array [B] per image
    error: IsaError | None = None

    @property
    def total_cycles(self) -> int:
        return sum(self.cycles)


class Machine:
    """The accelerator's memories and decoder state, for `batch` images side by side."""

    def __init__(self, cfg: ArrayConfig, batch: int = 1):
        self.cfg = cfg
        self.batch = batch
        self.imem = np.zeros(cfg.imem_depth, dtype=object)
        self.wmem = np.zeros((cfg.wdepth, cfg.cols), dtype=np.uint8)
        self.bmem = np.zeros(cfg.bdepth, dtype=np.int32)
        self.smem = np.full((cfg.sdepth, cfg.cols * 8), sac.SHIFT_IDENTITY, dtype=np.uint8)
        self.dbuf = np.zeros((batch, cfg.cmax, cfg.ddepth), dtype=np.uint8)
        self.pbuf = np.zeros((batch, cfg.rows, cfg.pdepth), dtype=np.int32)
        self.cells = np.zeros((cfg.rows, cfg.cols), dtype=np.uint8)
        self.bias = np.zeros(cfg.rows, dtype=np.int32)
        self.window_dirs = np.full(cfg.cols * 8, sac.SHIFT_IDENTITY, dtype=np.uint8)

    # -- host side ---------------------------------------------------------------------------
    def load_program(self, prog: Program) -> None:
        if prog.config != self.cfg:
            raise ValueError(f"program compiled for {prog.config}, machine is {self.cfg}")
        self.imem[:] = 0
        self.imem[:len(prog.words)] = prog.words
        self.wmem[:len(prog.wmem)] = prog.wmem
        self.bmem[:len(prog.bmem)] = prog.bmem
        self.smem[:len(prog.smem)] = prog.smem

    def write_tensor(self, pl: Placement, x: np.ndarray) -> None:
        """Write a batch [B, C, H, W] (uint8) into its data-buffer region."""
        scatter(pl, self.dbuf, x)

    def read_tensor(self, pl: Placement) -> np.ndarray:
        return gather(pl, self.dbuf, self.pbuf, self.cfg.rows)

    # -- execution ---------------------------------------------------------------------------
    def run(self, start_pc: int = 0) -> RunStats:
        """Execute from `start_pc` until HALT or an error (which halts, writing nothing)."""
        stats, state = RunStats(), DecoderState()
        limit = self.cfg.imem_depth
        for pc in range(start_pc, limit):
            word = int(self.imem[pc])
            try:
                instr = decode(word, pc)
                check(instr, self.cfg, state, pc, word)
            except IsaError as exc:
                stats.error = exc
                stats.cycles.append(FETCH)
                stats.activity.append(0)
                return stats
            if isinstance(instr, Halt):
                stats.cycles.append(FETCH)
                stats.activity.append(0)
                return stats
            if isinstance(instr, LoadWeights):
                self._load_weights(instr)
                stats.cycles.append(lw_cycles(instr.rows))
                stats.activity.append(0)
            else:
                stats.activity.append(self._matmul(instr, state))
                stats.cycles.append(mm_cycles(self.cfg, instr.pixels, state.tile_rows, instr.mode))
        stats.error = IsaError(ErrorCode.PC_OVERFLOW, limit, None, "no HALT")
        stats.cycles.append(FETCH)
        stats.activity.append(0)
        return stats

    def _load_weights(self, lw: LoadWeights) -> None:
        self.cells[:] = 0
        self.bias[:] = 0
        self.cells[:lw.rows, :lw.cols] = self.wmem[lw.w_addr:lw.w_addr + lw.rows, :lw.cols]
        self.bias[:lw.rows] = self.bmem[lw.b_addr:lw.b_addr + lw.rows]
        self.window_dirs[:] = self.smem[lw.s_addr]

    def _matmul(self, m: Matmul, state: DecoderState):
        g = m.group
        rows, cols = state.tile_rows, state.tile_cols
        p = m.pixels
        # tile channel i = c*G + j (column c, slot j) comes from bank in_ch + i
        slots = cols * g
        data = self.dbuf[:, m.in_ch:m.in_ch + slots, m.in_addr:m.in_addr + p]
        if m.shift_en:
            # window entry i steers channel in_ch + i; codes 9..15 read as the identity
            dirs = sac.table_directions(self.window_dirs[:slots])
            data = sac.channel_shift(data.reshape(-1, slots, m.height, m.width), dirs,
                                     m.fill).reshape(-1, slots, p)
        dense = sac.array_weights(self.cells[:rows, :cols], g)
        init = self.pbuf[:, :rows, m.acc_addr:m.acc_addr + p] if m.acc_in else self.bias[:rows]
        acc = sac.dense_matmul(dense, data, init)
        out = sac.apply_mode(acc, m.mode)
        if m.mode in (OutputMode.RELU_QUANT, OutputMode.BINARY):
            self.dbuf[:, m.out_ch:m.out_ch + rows, m.out_addr:m.out_addr + p] = out
        elif m.mode == OutputMode.RAW:
            self.pbuf[:, :rows, m.out_addr:m.out_addr + p] = out
        else:
            self.pbuf[:, :rows, m.out_addr] = out
        counts = sac.count_active_per_image(dense, data)
        return counts if self.batch > 1 else int(counts[0])
