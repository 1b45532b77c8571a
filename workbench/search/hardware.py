"""The array a network gets on a chip: the hardware half of the joint search of the array and
the network (`sacbench search --device XC7VX485T --latency-ms T`).

A candidate array is a shape (ROWS, COLS, CMAX); the instance built for a network has that
shape and the smallest power-of-two memories that hold the compiled network
(`fpga.compiler.Footprint.fitted`, what the compare job builds). It is feasible when the
network compiles for the shape and the instance fits the device within the utilisation limit
(`fpga.devices.fits`: LUTs, FFs and block RAMs each, from the area model). Its latency is the
exact cycle model's cycles per image at the clock the instance is modelled to reach there
(`fpga.devices.modelled_clock`; `--clock-mhz` overrides it for every shape).

The array is not a gate of the super network: it does not change what the network computes,
so for a sampled network the best array is found by trying every candidate (the fastest
feasible one; equal latencies go to the one using the smallest share of the device). A gate
for it would only learn that minimum, with the estimator's variance on top.
"""

from __future__ import annotations

from dataclasses import dataclass

from fpga.arch import ArrayConfig
from fpga.area_model import UNITS
from fpga.clock import Clock
from fpga.compiler import CompileError, network_footprint, roomy_config
from fpga.devices import DEFAULT_UTILISATION, Fit, UnknownDevice, clock_ceiling, device, fits
from models import ir
from workbench.search.errors import CostError

ROWS = (4, 8, 16, 32, 64, 128)
COLS = (4, 8, 16, 32, 64)
CMAX = (64, 128, 256, 512)


def default_shapes() -> tuple[tuple[int, int, int], ...]:
    """Power-of-two arrays from 4x4 to the seed paper's 128x64, no wider than tall, each with
    every CMAX from 64 to 512 that holds a tile window of its widest column group
    (CMAX >= 8 COLS: group 8 on every column, the paper's 128x64 with CMAX 512)."""
    return tuple((r, c, b) for r in ROWS for c in COLS if c <= r for b in CMAX if b >= 8 * c)


def parse_shapes(text: str) -> tuple[tuple[int, int, int], ...]:
    """'8x8,16x16:128' -> ((8, 8, 64), (16, 16, 128)): ROWSxCOLS[:CMAX], CMAX 64 when left out
    (ValueError naming the bad entry)."""
    shapes = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        shape, _, cmax = item.partition(":")
        try:
            cfg = ArrayConfig.parse(shape, cmax=int(cmax) if cmax else 64)
        except ValueError as exc:
            raise ValueError(f"--arrays entry {item!r}: {exc} (ROWSxCOLS or ROWSxCOLS:CMAX)") from None
        shapes.append((cfg.rows, cfg.cols, cfg.cmax))
    if not shapes:
        raise ValueError(f"--arrays names no array: {text!r}")
    return tuple(dict.fromkeys(shapes))


@dataclass(frozen=True)
class Pick:
    """The array chosen for one network on one device."""

    config: ArrayConfig  # its shape with the memories fitted to the network
    cycles: int  # per image, by the exact cycle model
    clock: Clock
    fit: Fit

    @property
    def latency_ms(self) -> float:
        return self.cycles / (self.clock.mhz * 1e3)

    @property
    def array(self) -> str:
        return f"{self.config.rows}x{self.config.cols}"

    def as_dict(self) -> dict:
        res = self.fit.resources
        return {
            "device": self.fit.device.name,
            "array": self.array,
            "cmax": self.config.cmax,
            "hdl_parameters": self.config.hdl_parameters(),
            "cycles": self.cycles,
            "latency_ms": self.latency_ms,
            "clock": self.clock.as_dict(),
            "resources": {"luts": res.luts, "ffs": res.ffs, "brams": res.brams},
            "units": list(UNITS[self.fit.device.family]),
            "used": dict(self.fit.used),
            "utilisation_limit": self.fit.utilisation,
            "note": self.fit.note,
        }

    def describe(self) -> str:
        dev = self.fit.device.name
        return f"{self.array} CMAX {self.config.cmax} at {self.clock.mhz:.4g} MHz on the {dev}"


class HardwareSpace:
    """The candidate arrays of one device, and the pick for a network (cached fits and clocks:
    few fitted instances recur among many sampled networks)."""

    def __init__(
        self,
        device_name: str,
        utilisation: float = DEFAULT_UTILISATION,
        shapes: tuple | None = None,
        clock_mhz: float | None = None,
    ):
        try:
            self.device = device(device_name)
        except UnknownDevice as exc:
            raise CostError(str(exc)) from None
        if not 0 < utilisation <= 1:
            raise CostError(f"--utilisation must be in (0, 1], got {utilisation}")
        self.utilisation = utilisation
        self.clock_mhz = clock_mhz
        self._fits: dict[ArrayConfig, Fit] = {}
        self._memo: dict = {}  # network_footprint's op-shape memo
        # a shape whose smallest instance (every memory at its minimum) does not fit cannot
        # fit with any network
        shapes = tuple(shapes or default_shapes())
        self.shapes = tuple(s for s in shapes if self._fit(_smallest(*s)))
        if not self.shapes:
            smallest = min(shapes, key=lambda s: s[0] * s[1] * s[2])
            raise CostError(
                f"no candidate array fits the {self.device.name}: {self._fit(_smallest(*smallest)).reason}"
            )

    def _fit(self, cfg: ArrayConfig) -> Fit:
        if cfg not in self._fits:
            self._fits[cfg] = fits(cfg, self.device, self.utilisation)
        return self._fits[cfg]

    def clock(self, fit: Fit) -> Clock:
        if self.clock_mhz is not None:
            return Clock(self.clock_mhz, "given", "--clock-mhz")
        return fit.clock

    def _footprints(self, net: ir.Network) -> tuple[list, list[str]]:
        """(shape, footprint) of every candidate shape `net` compiles for, and why the others
        refuse it."""
        out, refused = [], []
        for rows, cols, cmax in self.shapes:
            try:
                out.append(
                    ((rows, cols, cmax), network_footprint(net, roomy_config(rows, cols, cmax), self._memo))
                )
            except CompileError as exc:
                refused.append(f"{rows}x{cols} CMAX {cmax}: {exc}")
        return out, refused

    def _instance(self, shape: tuple, footprint) -> Pick:
        cfg = footprint.fitted(*shape)
        fit = self._fit(cfg)
        return Pick(cfg, footprint.cycles, self.clock(fit), fit)

    def pick(self, net: ir.Network, what: str = "the network") -> Pick:
        """The fastest feasible array for `net` (equal latencies: the smallest largest share of
        the chip); CostError when none is. The candidates are tried in the order of their
        latency at the chip's highest modelled clock, and the search stops at the first whose
        bound is slower than the best found: the same pick as trying all, with a fraction of
        the area model's evaluations."""
        prints, refused = self._footprints(net)
        ceiling = self.clock_mhz if self.clock_mhz is not None else clock_ceiling(self.device)
        best, over = None, []
        for shape, footprint in sorted(prints, key=lambda sf: sf[1].cycles):
            bound = footprint.cycles / (ceiling * 1e3)
            if best is not None and bound > best.latency_ms:
                break
            pick = self._instance(shape, footprint)
            if not pick.fit:
                over.append(pick.fit.reason)
                continue
            key = (pick.latency_ms, max(pick.fit.used.values()))
            if best is None or key < (best.latency_ms, max(best.fit.used.values())):
                best = pick
        if best is None:
            reasons = over + refused
            raise CostError(
                f"{what} fits no candidate array on the {self.device.name} within "
                f"{100 * self.utilisation:.0f} %: {reasons[0]}"
                + (f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else "")
            )
        return best

    def closest(self, net: ir.Network, what: str = "the network") -> tuple[Pick, float]:
        """(the instance that comes closest to fitting the chip, its largest share of the chip
        over the utilisation limit): what an infeasible network is priced on. CostError when
        the network compiles for no candidate shape."""
        prints, refused = self._footprints(net)
        if not prints:
            raise CostError(f"{what} compiles for no candidate array: {refused[0]}")
        picks = [self._instance(shape, footprint) for shape, footprint in prints]
        over = lambda p: max(p.fit.used.values()) / self.utilisation  # noqa: E731
        best = min(picks, key=lambda p: (over(p), p.latency_ms))
        return best, over(best)


def _smallest(rows: int, cols: int, cmax: int) -> ArrayConfig:
    """The shape's instance with every memory at the smallest size Footprint.fitted gives."""
    return ArrayConfig(rows, cols, cmax, ddepth=64, pdepth=64, wdepth=64, bdepth=64, sdepth=8, imem_depth=16)
