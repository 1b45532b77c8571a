"""Instruction-level interpreter of the SAC accelerator, for a batch of images at once.

It executes programs word by word on numpy copies of the accelerator's memories (one copy of
the data and partial-sum buffers per image), using the golden numerics for all arithmetic,
and counts cycles with the cycle model and activity with the golden activity count. Tests use
it to show that compiled programs compute what the golden executor computes; the RTL is held to
the same golden outputs and the same cycle model; the compare script uses it for the images it
does not simulate.

Vectorised across images: the buffers hold the image index innermost ([bank, entry, image]),
so the operand of a MATMUL over all images is one matrix [channels, pixels x images] and each
instruction is one matrix product for the whole batch, whatever its size. `dbuf` and `pbuf`
are the same memories seen batch first ([image, bank, entry]), the layout of
fpga.memory.gather/scatter.
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
    cycles: list = field(default_factory=list)  # per executed instruction
    activity: list = field(default_factory=list)  # active (cell, pixel) pairs per instruction,
    #                                                 an int or an array [B] per image
    error: IsaError | None = None

    @property
    def total_cycles(self) -> int:
        return sum(self.cycles)


# Multiply-accumulates of one step of a MATMUL (rows x channels x columns, a column being one
# pixel of one image): its operands and results stay in the caches, and the matrix product
# stays below the size at which OpenBLAS starts threads (on a busy machine those cost
# several times what they save on such skinny products).
BLOCK_MACS = 1 << 19


class Machine:
    """The accelerator's memories and decoder state, for `batch` images side by side."""

    def __init__(self, cfg: ArrayConfig, batch: int = 1):
        self.cfg = cfg
        self.batch = batch
        self.imem = np.zeros(cfg.imem_depth, dtype=object)
        self.wmem = np.zeros((cfg.wdepth, cfg.cols), dtype=np.uint8)
        self.bmem = np.zeros(cfg.bdepth, dtype=np.int32)
        self.smem = np.full((cfg.sdepth, cfg.cols * 8), sac.SHIFT_IDENTITY, dtype=np.uint8)
        # image innermost; .dbuf / .pbuf are batch-first views of the same memory
        self._dbuf = np.zeros((cfg.cmax, cfg.ddepth, batch), dtype=np.uint8)
        self._pbuf = np.zeros((cfg.rows, cfg.pdepth, batch), dtype=np.int32)
        self.dbuf = self._dbuf.transpose(2, 0, 1)
        self.pbuf = self._pbuf.transpose(2, 0, 1)
        self.cells = np.zeros((cfg.rows, cfg.cols), dtype=np.uint8)
        self.bias = np.zeros(cfg.rows, dtype=np.int32)
        self.window_dirs = np.full(cfg.cols * 8, sac.SHIFT_IDENTITY, dtype=np.uint8)
        # the same program runs for batch after batch: decoded words and the dense weights of
        # each loaded tile are kept (keyed by what they are computed from)
        self._decoded = {}  # pc -> (word, instruction)
        self._dense = {}  # (w_addr, rows, cols, group) -> sac.array_weights
        self._tile = None  # (w_addr, rows, cols) of the last LOAD_WEIGHTS

    def clear_buffers(self) -> None:
        """Zero the data and partial-sum buffers (a fresh machine's), keeping the program."""
        self._dbuf.fill(0)
        self._pbuf.fill(0)

    # -- host side ---------------------------------------------------------------------------
    def load_program(self, prog: Program) -> None:
        if prog.config != self.cfg:
            raise ValueError(f"program compiled for {prog.config}, machine is {self.cfg}")
        self._decoded.clear()
        self._dense.clear()
        self.imem[:] = 0
        self.imem[: len(prog.words)] = prog.words
        self.wmem[: len(prog.wmem)] = prog.wmem
        self.bmem[: len(prog.bmem)] = prog.bmem
        self.smem[: len(prog.smem)] = prog.smem

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
                cached = self._decoded.get(pc)
                if cached is None or cached[0] != word:
                    cached = self._decoded[pc] = (word, decode(word, pc))
                instr = cached[1]
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
        self.cells[: lw.rows, : lw.cols] = self.wmem[lw.w_addr : lw.w_addr + lw.rows, : lw.cols]
        self.bias[: lw.rows] = self.bmem[lw.b_addr : lw.b_addr + lw.rows]
        self.window_dirs[:] = self.smem[lw.s_addr]
        self._tile = (lw.w_addr, lw.rows, lw.cols)

    def _matmul(self, m: Matmul, state: DecoderState):
        g = m.group
        rows, cols = state.tile_rows, state.tile_cols
        p, b = m.pixels, self.batch
        # tile channel i = c*G + j (column c, slot j) comes from bank in_ch + i
        slots = cols * g
        data = self._dbuf[m.in_ch : m.in_ch + slots, m.in_addr : m.in_addr + p]  # [K, P, B]
        if m.shift_en:
            # window entry i steers channel in_ch + i; codes 9..15 read as the identity
            dirs = sac.table_directions(self.window_dirs[:slots])
            shifted = sac.channel_shift(
                data.reshape(slots, m.height, m.width, b).transpose(3, 0, 1, 2), dirs, m.fill
            )  # [B, K, H, W]
            data = np.ascontiguousarray(shifted.reshape(b, slots, p).transpose(1, 2, 0))
        # a checked MATMUL follows a LOAD_WEIGHTS of its run (error NO_WEIGHTS), which set _tile
        key = (*self._tile, g)
        dense = self._dense.get(key)
        if dense is None:
            dense = self._dense[key] = sac.array_weights(self.cells[:rows, :cols], g)
        if m.mode == OutputMode.PIXEL_SUM:  # sums over each image's pixels: all at once
            spans = [(0, p)]
        else:  # pixels are independent: cache-sized blocks
            step = max(1, BLOCK_MACS // (rows * slots * b))
            spans = [(q, min(p, q + step)) for q in range(0, p, step)]
        for q0, q1 in spans:
            n = q1 - q0
            x = data[:, q0:q1].reshape(slots, n * b)  # one operand for the whole batch
            init = (
                self._pbuf[:rows, m.acc_addr + q0 : m.acc_addr + q1].reshape(rows, n * b)
                if m.acc_in
                else self.bias[:rows]
            )
            acc = sac.dense_matmul(dense, x, init)  # [rows, n * B]
            if m.mode in (OutputMode.RELU_QUANT, OutputMode.BINARY):
                self._dbuf[m.out_ch : m.out_ch + rows, m.out_addr + q0 : m.out_addr + q1] = sac.apply_mode(
                    acc, m.mode
                ).reshape(rows, n, b)
            elif m.mode == OutputMode.RAW:
                self._pbuf[:rows, m.out_addr + q0 : m.out_addr + q1] = sac.apply_mode(acc, m.mode).reshape(
                    rows, n, b
                )
            else:  # per image over its pixels
                per_image = acc.reshape(rows, n, b).transpose(2, 0, 1)  # [B, rows, P]
                self._pbuf[:rows, m.out_addr] = sac.apply_mode(per_image, m.mode).T
        counts = sac.count_active_per_image(dense, data.transpose(2, 0, 1))  # [B, K, P]
        return counts if self.batch > 1 else int(counts[0])
