"""The chips an accelerator instance may be built on, whether a configuration fits one, and the
clock it is modelled to run at there (fpga/area_model.py gives the resources).

Device numbers (each entry's `source`):
  * XC7VX485T (the VC707 board; the seed paper's device): Xilinx DS180, 7 Series FPGAs Data Sheet:
    Overview, Virtex-7 table: 75,900 slices x 4 LUT6 = 303,600 LUTs, 607,200 flip-flops,
    1,030 block RAM36 (37,080 Kb), 2,800 DSP48E1 slices;
  * LFE5U-85F and LFE5U-25F: Lattice FPGA-DS-02012, ECP5 and ECP5-5G Family Data Sheet, Table 1.1
    (84K / 24K LUTs, 208 / 56 sysMEM blocks of 18 Kb, 156 / 28 18x18 multipliers); the exact
    LUT4 site counts are nextpnr-ecp5's TRELLIS_COMB totals: 83,640 in this project's own routed
    runs (docs/measurements/timing_2026-12-05/), 24,288 for the 25F as nextpnr's utilisation
    report gives it in public logs of 25k designs (TRELLIS_COMB and TRELLIS_FF 24,288, DP16KD 56,
    MULT18X18D 28; not routed here), one flip-flop per LUT4 site.

The clock (`modelled_clock`, `source` "model"): on an ECP5, a fit of the routed tops' Fmax against
their size (an extrapolation outside what the routed tops cover, labelled as such); on a Xilinx
part, the seed paper's 170 MHz, labelled "not routed" (there is no Vivado here). A top routed at exactly the
configuration is fpga/clock.py's business (`clock_for`), which reports latencies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from fpga.arch import ArrayConfig
from fpga.area_model import UNITS, AreaModel, Resources, load_fit
from fpga.clock import PAPER_MHZ, Clock, covers

DEFAULT_UTILISATION = 0.8  # the share of a device a design may take and still place and route


@dataclass(frozen=True)
class Device:
    name: str
    family: str  # the area model's target: "xc7" or "ecp5"
    luts: int  # LUT6 on "xc7", LUT4 on "ecp5"
    ffs: int
    brams: int  # BRAM36 on "xc7", DP16KD (18 Kb) on "ecp5"
    dsps: int  # DSP48E1 / MULT18X18D (the top uses none on the 7-series, 5 on the ECP5)
    board: str
    source: str
    aliases: tuple[str, ...] = field(default=(), repr=False)

    def capacity(self) -> dict[str, int]:
        return {"luts": self.luts, "ffs": self.ffs, "brams": self.brams}


DEVICES = {
    d.name: d
    for d in (
        Device(
            "XC7VX485T",
            "xc7",
            303_600,
            607_200,
            1_030,
            2_800,
            "VC707",
            "Xilinx DS180 (7 Series FPGAs Data Sheet: Overview), Virtex-7 device table",
            aliases=("VC707", "XC7VX485T-2FFG1761"),
        ),
        Device(
            "LFE5U-85F",
            "ecp5",
            83_640,
            83_640,
            208,
            156,
            "e.g. ECP5 evaluation board",
            "Lattice FPGA-DS-02012 Table 1.1; LUT4 sites as nextpnr-ecp5 counts them (TRELLIS_COMB)",
            aliases=("ECP5-85F", "LFE5U-85"),
        ),
        Device(
            "LFE5U-25F",
            "ecp5",
            24_288,
            24_288,
            56,
            28,
            "e.g. ULX3S-25F",
            "Lattice FPGA-DS-02012 Table 1.1; LUT4 sites as nextpnr-ecp5 counts them (TRELLIS_COMB)",
            aliases=("ECP5-25F", "LFE5U-25"),
        ),
    )
}


class UnknownDevice(ValueError):
    """A device name the registry does not have; the message is one line naming the known ones."""


def device(name: str | Device) -> Device:
    """The device called `name` (its name or an alias, any case)."""
    if isinstance(name, Device):
        return name
    wanted = str(name).strip().upper()
    for d in DEVICES.values():
        if wanted == d.name.upper() or wanted in (a.upper() for a in d.aliases):
            return d
    raise UnknownDevice(f"unknown device {name!r}: known devices are {', '.join(DEVICES)}")


# ---------------------------------------------------------------- the modelled clock
def ecp5_clock_points() -> list[dict]:
    """The routed tops the ECP5 clock is fitted to (fpga/data/area_model.json, `ecp5_clock`)."""
    return load_fit()["ecp5_clock"]["points"]


def modelled_clock(config: ArrayConfig, dev: str | Device) -> Clock:
    """The clock `config` is modelled to reach on `dev` (`source` "model" on an ECP5).

    ECP5: the routed tops' critical paths are routing between structures spread over the die
    (the data-buffer banks, the decoder, the array's edges), so the clock period is modelled as
    growing with the logarithm of the design's size: period = a + b log2(LUT4), a line through
    the routed tops (8x8 and 16x16 at CMAX 64 on the LFE5U-85F, nextpnr seed 1). A configuration
    a routed top stands for by fpga/clock.py's rule (`covers`: the same ROWS, COLS and CMAX,
    every depth at most the routed one's) gets that top's routed Fmax, the conservative figure;
    any other is an extrapolation, labelled so, and never taken above the fastest routed top (a
    smaller design is not assumed to route faster than measured). The same fabric and speed
    grade are assumed on the 25F. When the fit was measured on another rtl/, the note says so.
    """
    d = device(dev)
    if d.family == "xc7":
        return Clock(PAPER_MHZ, "paper", f"the seed paper's clock on the {d.name}, not routed")
    fit = load_fit()
    clock = fit["ecp5_clock"]
    model = AreaModel("ecp5")
    wanted = config.hdl_parameters()
    routed = next((p for p in clock["points"] if covers(p["hdl_parameters"], wanted)), None)
    if routed is not None:
        mhz = routed["fmax_mhz"]
        where = "a routed size (fpga/clock.py reports its own routed Fmax)"
    else:
        lut4 = model.predict(config).luts
        period = clock["a_ns"] + clock["b_ns_per_doubling"] * math.log2(lut4)
        mhz = min(1e3 / period, max(p["fmax_mhz"] for p in clock["points"]))
        where = "extrapolated, not routed at this size"
    note = f"modelled from the routed ECP5 tops by size: {where}"
    return Clock(mhz, "model", f"{note}; {model.note}" if model.note else note)


def clock_ceiling(dev: str | Device) -> float:
    """The highest clock `modelled_clock` gives any configuration on `dev` (a search may skip
    a configuration whose latency at this clock is already too slow)."""
    d = device(dev)
    if d.family == "xc7":
        return PAPER_MHZ
    return max(p["fmax_mhz"] for p in ecp5_clock_points())


# ---------------------------------------------------------------- fits
@dataclass(frozen=True)
class Fit:
    """Whether a configuration fits a device within a utilisation budget; `reason` names every
    resource over it (empty when it fits). True in a boolean context when it fits."""

    ok: bool
    reason: str
    device: Device
    utilisation: float
    resources: Resources
    used: dict[str, float]  # resource -> share of the device
    clock: Clock
    note: str = ""  # the area model's: "" unless its points were measured on another rtl/

    def __bool__(self) -> bool:
        return self.ok


def fits(config: ArrayConfig, dev: str | Device, utilisation: float = DEFAULT_UTILISATION) -> Fit:
    """Whether `config`'s modelled resources stay within `utilisation` of `dev`'s LUTs, FFs and
    block RAMs (each one separately). `note`: as `Resources.note` (fpga/area_model.py)."""
    d = device(dev)
    ok_type = isinstance(utilisation, (int, float)) and not isinstance(utilisation, bool)
    if not (ok_type and 0 < utilisation <= 1):
        raise ValueError(f"utilisation must be in (0, 1], got {utilisation!r}")
    res = AreaModel(d.family).predict(config)
    have = {"luts": res.luts, "ffs": res.ffs, "brams": res.brams}
    used = {k: have[k] / v for k, v in d.capacity().items()}
    names = dict(zip(("luts", "ffs", "brams"), UNITS[d.family], strict=True))
    over = [
        f"{names[k]} {have[k]:,.0f} of {d.capacity()[k]:,} ({100 * used[k]:.1f} %)"
        for k in ("luts", "ffs", "brams")
        if used[k] > utilisation
    ]
    shape = f"{config.rows}x{config.cols} CMAX {config.cmax}"
    reason = (
        f"{shape} does not fit the {d.name} within {100 * utilisation:.0f} %: " + "; ".join(over)
        if over
        else ""
    )
    return Fit(not over, reason, d, utilisation, res, used, modelled_clock(config, d), res.note)
