"""The clock a latency, a throughput or an energy per second is computed at, and where it comes
from, so that no report states a speed the RTL does not reach.

Three sources, in this order:
  * `given`: the user's `--clock-mhz`;
  * `routed`: the Fmax that place and route measured for this configuration (`make timing` or
    `make synth` records it in build/timing/ecp5_top_<ROWS>x<COLS>[_cmax<CMAX>].json, with every HDL
    parameter of the routed top and a digest of rtl/). A record is used while rtl/ is what was
    routed (any edit makes it stale) and ROWS, COLS and CMAX (the array, the
    crossbar, the banks) equal the configuration's and every memory depth is at most the routed
    one: the compare job fits the depths to its network, and smaller memories mean fewer block
    RAMs and narrower addresses, so the routed Fmax is the conservative figure;
  * `paper`: the seed paper's 170 MHz, labelled as such and "not routed".

A fourth, `model`, is not one of `clock_for`'s: fpga/devices.py's `modelled_clock` gives it, the
clock an ECP5 top is modelled to reach at a size nobody has routed (docs/area_model.md).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from fpga.arch import MAX_CLOCK_MHZ, MIN_CLOCK_MHZ, ArrayConfig
from safeio import write_text_atomic

PAPER_MHZ = 170.0  # the seed design's clock on its Virtex-7 (its paper, not this RTL)
FMAX_DIR = Path(__file__).resolve().parents[1] / "build" / "timing"


@dataclass(frozen=True)
class Clock:
    mhz: float
    source: str  # "given", "routed" or "paper" (clock_for); "model" (fpga/devices.py)
    note: str  # where the number comes from, for the reader of a report

    @property
    def label(self) -> str:
        return f"{self.mhz:.4g} MHz ({self.note})"

    def as_dict(self) -> dict:
        return {**asdict(self), "label": self.label}


RTL = Path(__file__).resolve().parents[1] / "rtl"


def rtl_digest(rtl: Path | None = None) -> str:
    """sha256 over rtl/'s Verilog files (names and contents): what a routed Fmax was measured on."""
    h = hashlib.sha256()
    for path in sorted((rtl or RTL).glob("*.v")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def top_tag(config: ArrayConfig) -> str:
    """The name of a routed top's files: ecp5_top_<ROWS>x<COLS>, plus _cmax<CMAX> when its bank
    count is not ArrayConfig's default (so a 32x16 top with 128 banks and one with 64 keep
    separate records)."""
    tag = f"ecp5_top_{config.rows}x{config.cols}"
    return tag if config.cmax == ArrayConfig().cmax else f"{tag}_cmax{config.cmax}"


def record_path(config: ArrayConfig, folder: Path | None = None) -> Path:
    """Where `make timing` records the routed Fmax of `config`'s top (`top_tag`)."""
    return (folder or FMAX_DIR) / f"{top_tag(config)}.json"


def record_fmax(
    config: ArrayConfig,
    fmax_mhz: float,
    device: str,
    command: str,
    folder: Path | None = None,
    rtl_sha256: str | None = None,
) -> Path:
    """Record a routed Fmax of the top at `config` (written whole or not at all); `rtl_sha256`:
    rtl_digest() taken when the run read rtl/ (default: now)."""
    path = record_path(config, folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    rec = {
        "fmax_mhz": fmax_mhz,
        "device": device,
        "command": command,
        "date": datetime.date.today().isoformat(),
        "hdl_parameters": config.hdl_parameters(),
        "rtl_sha256": rtl_sha256 or rtl_digest(),
    }
    write_text_atomic(path, json.dumps(rec, indent=1) + "\n")
    return path


STRUCTURE = ("ROWS", "COLS", "CMAX")  # must equal the routed top's; the depths may be smaller


def covers(routed: dict, wanted: dict) -> bool:
    """Whether a top routed with parameters `routed` stands for one with `wanted`."""
    if set(routed) != set(wanted):
        return False
    return all(routed[k] == v if k in STRUCTURE else int(v) <= int(routed[k]) for k, v in wanted.items())


def routed_clock(config: ArrayConfig, folder: Path | None = None) -> Clock | None:
    """The recorded Fmax of this configuration, or None (none recorded, another configuration's,
    routed before rtl/ last changed, or a file that does not read as a record: never a guess)."""
    path = record_path(config, folder)
    try:
        rec = json.loads(path.read_text())
        mhz = float(rec["fmax_mhz"])
        same = covers(rec["hdl_parameters"], config.hdl_parameters()) and rec["rtl_sha256"] == rtl_digest()
        device, command, date = str(rec["device"]), str(rec["command"]), str(rec["date"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not same or not (math.isfinite(mhz) and MIN_CLOCK_MHZ <= mhz <= MAX_CLOCK_MHZ):
        return None
    return Clock(mhz, "routed", f"routed Fmax on the {device.split(' (')[0]}, {command}, {date}")


def clock_for(
    config: ArrayConfig | None, given_mhz: float | None = None, folder: Path | None = None
) -> Clock:
    """The clock to report `config`'s latency at (see the module docstring)."""
    if given_mhz is not None:
        return Clock(float(given_mhz), "given", "--clock-mhz")
    routed = routed_clock(config, folder) if config is not None else None
    return routed or Clock(PAPER_MHZ, "paper", "the seed paper's clock, not routed")
