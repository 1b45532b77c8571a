"""Cycle model of the bit-serial SAC accelerator, per instruction.

The RTL (rtl/accelerator.v) is held to this model exactly: tb/test_accelerator.py compares the
cycle at which every instruction retires with :func:`program_timeline`. docs/microarchitecture.md
derives each term from the pipeline; in short:

    FETCH        = 2                       imem read + decode/check
    LOAD_WEIGHTS = FETCH + rows + 1        one tile row per cycle, one cycle of read latency
    MATMUL       = FETCH + 8*P + 24 + COLS + rows + 4 (+1 in pixel-sum mode)
    HALT         = FETCH

For MATMUL, 8*P is one 8-bit input vector every 8 cycles; 24 = 32 - 8 covers the last pixel's
32-bit accumulator word still streaming after its last data bit; COLS is the column skew and
the row's partial-sum pipeline, rows the row skew of the last used row; 4 is the data-buffer
read, the serializer load and the data feeder's two registers (FEEDER_REGISTERS: they keep the
block RAMs' clock-to-out and the bit crossbar in separate cycles) before the first bit enters
the array; pixel-sum mode adds the
output accumulator's register. Weight loading is not overlapped with multiplication
(single-buffered cell weights), like the seed design.
"""

from __future__ import annotations

from dataclasses import dataclass

from fpga.arch import ArrayConfig
from fpga.isa import Halt, LoadWeights, Matmul
from models.numerics.sac import OutputMode

FETCH = 2
LW_LATENCY = 1
LANE_WORD_TAIL = 32 - 8
FEEDER_REGISTERS = 2  # rtl/data_feeder.v: the serializers' byte, the shifter's outputs
FEED_LATENCY = 2 + FEEDER_REGISTERS  # + the data-buffer read and the serializers' load


def lw_cycles(rows: int) -> int:
    return FETCH + rows + LW_LATENCY


def mm_cycles(cfg: ArrayConfig, pixels: int, rows: int, mode: OutputMode) -> int:
    extra = 1 if mode == OutputMode.PIXEL_SUM else 0  # an IntEnum or its int value
    return FETCH + cfg.data_bits * pixels + LANE_WORD_TAIL + cfg.cols + rows + FEED_LATENCY + extra


@dataclass
class Step:
    index: int
    instr: object
    start: int  # cycle the instruction is fetched (0 = the cycle after `start`)
    cycles: int

    @property
    def end(self) -> int:
        return self.start + self.cycles


def instruction_cycles(instructions, cfg: ArrayConfig):
    """Cycles of every instruction of a (checked) program, in order, up to and including HALT
    (a MATMUL's cycles depend on the rows of the tile loaded before it)."""
    # Only read by a MATMUL, which a checked program never has before its LOAD_WEIGHTS
    # (isa.check_program: NOWEIGHTS): any start value gives the same cycles.
    tile_rows = 0  # pragma: no mutate
    for ins in instructions:
        if isinstance(ins, LoadWeights):
            tile_rows = ins.rows
            yield lw_cycles(ins.rows)
        elif isinstance(ins, Matmul):
            yield mm_cycles(cfg, ins.height * ins.width, tile_rows, ins.mode)
        elif isinstance(ins, Halt):
            yield FETCH
            return
        else:
            raise TypeError(f"not an instruction: {ins!r}")


def program_timeline(instructions, cfg: ArrayConfig) -> list[Step]:
    """Start cycle and length of every instruction of a (checked) program, HALT included."""
    steps, t = [], 0
    for i, (ins, n) in enumerate(zip(instructions, instruction_cycles(instructions, cfg), strict=True)):
        steps.append(Step(i, ins, t, n))
        t += n
    return steps


def total_cycles(instructions, cfg: ArrayConfig) -> int:
    """Cycles from the program's start to the end of its HALT (or of its last instruction)."""
    return sum(instruction_cycles(instructions, cfg))


def seed_tile_cycles(pixels: int, width: int, height: int) -> int:
    """The seed design's per-tile estimate (8*P + W + H + 22), weight loading not overlapped."""
    return 8 * pixels + width + height + 22
