"""FPGA-path energy per image: operation counts of a run times per-operation energies.

Counts come from the program and the measured activity (RTL activity counter, or the golden
pair count for images that were not simulated); energies per operation are the 45 nm figures of
M. Horowitz, "Computing's energy problem (and what we can do about it)", ISSCC 2014 (see
docs/energy.md for the table and what is and is not included). They make the numbers comparable
between networks and array sizes, not an FPGA power measurement.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from fpga.compiler import Program
from fpga.isa import LoadWeights, Matmul
from models.numerics.sac import OutputMode

# picojoules per operation (Horowitz, ISSCC 2014, 45 nm, 0.9 V)
PJ_ADD32 = 0.1  # 32-bit integer add: one active (weight, datum) pair accumulates
PJ_SRAM_64BIT = 10.0  # 64-bit read from an 8 KB SRAM; writes taken as equal
PJ_SRAM_BYTE = PJ_SRAM_64BIT / 8
PJ_SRAM_WORD32 = PJ_SRAM_64BIT / 2


@dataclass
class EnergyCounts:
    active_pairs: float = 0  # zero-skipping: only these accumulate
    data_reads: int = 0  # bytes read from the data buffer
    data_writes: int = 0  # bytes written to the data buffer
    psum_accesses: int = 0  # 32-bit partial-sum reads and writes
    weight_bytes: int = 0  # packed cell bytes loaded
    bias_words: int = 0  # 32-bit biases loaded

    def picojoules(self) -> dict:
        parts = {
            "accumulate": self.active_pairs * PJ_ADD32,
            "data_buffer": (self.data_reads + self.data_writes) * PJ_SRAM_BYTE,
            "partial_sums": self.psum_accesses * PJ_SRAM_WORD32,
            "weights": self.weight_bytes * PJ_SRAM_BYTE + self.bias_words * PJ_SRAM_WORD32,
        }
        parts["total"] = sum(parts.values())
        return parts

    def as_dict(self) -> dict:
        return asdict(self)


def program_counts(prog: Program, activity_per_image: float) -> EnergyCounts:
    """Operation counts of one image through `prog` (memory traffic from the instructions,
    accumulations from the activity count)."""
    c = EnergyCounts(active_pairs=activity_per_image)
    rows = cols = 0
    for ins in prog.instructions:
        if isinstance(ins, LoadWeights):
            rows, cols = ins.rows, ins.cols
            c.weight_bytes += rows * cols
            c.bias_words += rows
        elif isinstance(ins, Matmul):
            p = ins.pixels
            c.data_reads += p * cols * ins.group
            if ins.acc_in:
                c.psum_accesses += p * rows
            if ins.mode in (OutputMode.RELU_QUANT, OutputMode.BINARY):
                c.data_writes += p * rows
            elif ins.mode == OutputMode.RAW:
                c.psum_accesses += p * rows
            else:
                c.psum_accesses += rows
    return c


def energy_uj_per_image(prog: Program, activity_per_image) -> tuple[float, dict]:
    """(microjoules per image, breakdown in pJ) for the mean activity over the images run."""
    counts = program_counts(prog, float(np.mean(activity_per_image)))
    parts = counts.picojoules()
    return parts["total"] * 1e-6, {"picojoules": parts, "counts": counts.as_dict()}
