"""Costs of sampled architectures, each computed by the workbench's own tools and cached by
architecture (BSN: "the cost may be anything measured after the forward pass"). The table of
costs, their units and how each is computed is in docs/search.md:

params, flops     counted on the network description (SAC, BNN) or the PyTorch module (fabric)
cycles            fpga.compiler.compile_network for --array + the exact cycle model (through
                  network_cycles: the same compilation, each op shape's tiles timed once)
latency_ms        cycles at --clock-mhz
                  (with --device CHIP, the joint search: cycles, latency and energy are those of
                  the fastest candidate array that fits the chip, at its modelled clock;
                  workbench/search/hardware.py)
energy            fpga.energy: the compiled program's memory traffic + the example's active
                  (weight, datum) pairs (per example: a stochastic cost)
gpu               BNN: the mapper's transfer-aware DP latency (workbench/search/gpu_cost.py)
parallel          steps to compute the module graph on --processors processors
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from fpga.clock import PAPER_MHZ
from fpga.compiler import CompileError, compile_network, network_cycles, roomy_config
from fpga.energy import PJ_ADD32, program_counts
from models import ir
from workbench.search.errors import CostError  # noqa: F401 - where users import it from

COSTS = ("params", "flops", "cycles", "latency_ms", "energy", "gpu", "parallel")
UNITS = {
    "params": "parameters",
    "flops": "mult-adds per image",
    "cycles": "cycles per image",
    "latency_ms": "ms per image",
    "energy": "uJ per image",
    "gpu": "GPU ms per image",
    "parallel": "steps",
}


# Networks and compiled programs kept per cost model, least recently used dropped first. A
# program of a large space is megabytes (the zoo Fashion SAC space: about 2 MB, 8,000
# instructions) and nearly every sampled architecture is new, so keeping them all grew a
# Fashion search past the machine's memory within its first epoch. The costs themselves (one
# float per architecture and cost) are all kept.
OBJECTS_KEPT = 64


@dataclass(frozen=True)
class CostSettings:
    array: str = "8x8"  # SAC array ROWSxCOLS for cycles, latency and energy
    cmax: int = 64  # data-buffer banks
    clock_mhz: float | None = None  # for latency_ms; None: the seed paper's 170 MHz on --array,
    #                                   each candidate's modelled clock in the joint search
    processors: int = 2  # for the parallel cost
    gpu_profile: str | None = None  # reference profile JSON for the gpu cost (see gpu_cost.py)
    gpu_batch: int = 64
    # the joint search (hardware.py): the chip whose candidate arrays are searched (None: the
    # fixed --array), the share of it a design may take, the candidates ("8x8:64,16x16:128";
    # None: hardware.default_shapes())
    fpga_device: str | None = None
    utilisation: float = 0.8
    arrays: str | None = None

    @property
    def joint(self) -> bool:
        return self.fpga_device is not None

    @property
    def fixed_mhz(self) -> float:
        """The clock of the fixed --array: --clock-mhz, else the seed paper's."""
        return PAPER_MHZ if self.clock_mhz is None else self.clock_mhz

    @cached_property
    def rows_cols(self) -> tuple[int, int]:
        try:
            r, c = (int(v) for v in self.array.lower().split("x"))
        except ValueError:
            raise CostError(f"--array must look like ROWSxCOLS (e.g. 8x8), got {self.array!r}") from None
        if not (1 <= r <= 255 and 1 <= c <= 255):
            raise CostError(f"--array {self.array}: rows and columns must be 1..255")
        return r, c


# ---------------------------------------------------------------------------------------------
# costs of a network description (SAC and BNN families)
# ---------------------------------------------------------------------------------------------
def network_params(net: ir.Network) -> int:
    n = 0
    for layer in net.layers:
        if isinstance(layer, ir.PointwiseConv):
            n += layer.weights.packed.size + layer.bias.size
        elif isinstance(layer, (ir.IntConv2d, ir.BinConv2d, ir.BinDense)):
            n += layer.weight.size + layer.bias.size
        elif isinstance(layer, ir.Step):
            n += layer.threshold.size
    return int(n)


def network_flops(net: ir.Network) -> int:
    n = 0
    for i, layer in enumerate(net.layers):
        (c, *spatial), _ = net.shapes[i]
        out_shape = net.shapes[i + 1][0]
        if isinstance(layer, ir.PointwiseConv):
            n += layer.weights.packed.size * int(np.prod(spatial))
        elif isinstance(layer, (ir.IntConv2d, ir.BinConv2d)):
            n += layer.weight.size * int(np.prod(out_shape[1:]))
        elif isinstance(layer, ir.BinDense):
            n += layer.weight.size
    return int(n)


def chain_modules(net: ir.Network) -> int:
    """Compute modules of a chain network (convolutions and dense layers)."""
    return sum(
        isinstance(layer, (ir.PointwiseConv, ir.IntConv2d, ir.BinConv2d, ir.BinDense)) for layer in net.layers
    )


def parallel_steps(preds: dict, processors: int) -> int:
    """Steps to compute a DAG of unit-time modules on `processors` processors: greedy list
    scheduling, longest remaining path first (Hu's priority). preds: module -> modules it
    needs. A chain takes one step per module whatever the processors."""
    if processors < 1:
        raise CostError(f"--processors must be at least 1, got {processors}")
    succ: dict = {m: [] for m in preds}
    for m, ps in preds.items():
        for p in ps:
            succ[p].append(m)
    level: dict = {}

    def height(m):
        if m not in level:
            level[m] = 1 + max((height(s) for s in succ[m]), default=0)
        return level[m]

    done, steps = set(), 0
    while len(done) < len(preds):
        ready = [m for m in preds if m not in done and all(p in done for p in preds[m])]
        ready.sort(key=lambda m: -height(m))
        done.update(ready[:processors])
        steps += 1
    return steps


ARRAY_COSTS = ("cycles", "latency_ms", "energy")  # the ones that depend on the array


class Infeasible(CostError):
    """An architecture that fits no candidate array on the joint search's chip."""


class CostModel:
    """The costs of one family's architectures under one set of settings, cached by
    architecture. `family` provides structure(arch) -> ir.Network (SAC, BNN) or, for the
    fabric, params(arch) / flops(arch) / dag(arch).

    `budget` (a trial's): in the joint search, what a sampled architecture that fits no array
    on the chip costs at least, times how far it is over the chip (`per_example`), so that
    the budget's penalty steers the search away from it."""

    def __init__(
        self, family, settings: CostSettings, input_shape: tuple, classes: int, budget: float | None = None
    ):
        self.family = family
        self.settings = settings
        self.input_shape = tuple(input_shape)
        self.classes = classes
        self.budget = budget
        self._costs: dict = {}  # (cost, arch) -> float, all kept
        self._objects: OrderedDict = OrderedDict()  # ("network" | "program", arch) -> object
        self._seen: set = set()  # architectures costed or built
        self._op_cycles: dict = {}  # fpga.compiler.network_cycles' memo
        self._gpu = None
        self._hardware = None  # the joint search's HardwareSpace
        self._picks: dict = {}  # arch -> Pick, or the Infeasible it raised

    def check(self, name: str) -> None:
        if name not in COSTS:
            raise CostError(f"unknown cost {name!r} (choose from {', '.join(COSTS)})")
        if name not in self.family.COSTS:
            raise CostError(
                f"cost {name!r} is not defined for the {self.family.NAME} family "
                f"(it has {', '.join(self.family.COSTS)})"
            )
        if name in ARRAY_COSTS:
            if self.settings.joint:
                self.hardware_space()  # validates the chip and the candidates
            else:
                self.settings.rows_cols  # noqa: B018 (validates --array)
        if name == "gpu":
            self.gpu_model()  # a CUDA device or a profile, or one clear error

    # -- per architecture -------------------------------------------------------------------
    def network(self, arch) -> ir.Network:
        self._seen.add(arch)
        return self._kept(
            ("network", arch), lambda: self.family.structure(arch, self.input_shape, self.classes)
        )

    def _compiled(self, arch, compile_step, *args, **kwargs):
        """compile_step(network, the array's roomy config, ...), with a CompileError turned into
        the CostError that names the architecture and the array (joint search: the array picked
        for the architecture)."""
        if self.settings.joint:
            cfg = self.hardware(arch).config
            rows, cols, cmax = cfg.rows, cfg.cols, cfg.cmax
        else:
            (rows, cols), cmax = self.settings.rows_cols, self.settings.cmax
        try:
            return compile_step(self.network(arch), roomy_config(rows, cols, cmax), *args, **kwargs)
        except CompileError as exc:
            raise CostError(
                f"architecture {arch.describe()} does not compile for a {rows}x{cols} array: {exc}"
            ) from None

    # -- the joint search: the array is picked per architecture ------------------------------
    def hardware_space(self):
        if self._hardware is None:
            from workbench.search.hardware import HardwareSpace, parse_shapes

            s = self.settings
            try:
                shapes = parse_shapes(s.arrays) if s.arrays else None
            except ValueError as exc:
                raise CostError(str(exc)) from None
            self._hardware = HardwareSpace(s.fpga_device, s.utilisation, shapes, s.clock_mhz)
        return self._hardware

    def hardware(self, arch):
        """The array the architecture gets on the chip (hardware.Pick); Infeasible when it
        fits none."""
        if arch not in self._picks:
            try:
                self._picks[arch] = self.pick_network(self.network(arch), f"architecture {arch.describe()}")
            except Infeasible as exc:
                self._picks[arch] = str(exc)  # the message: a kept exception would grow its
                #                               traceback (and keep its frames) at every raise
        pick = self._picks[arch]
        if isinstance(pick, str):
            raise Infeasible(pick)
        return pick

    def feasible(self, arch) -> bool:
        """Whether the architecture fits an array on the chip (always, without a chip)."""
        if not self.settings.joint:
            return True
        try:
            self.hardware(arch)
        except Infeasible:
            return False
        return True

    def pick_network(self, net: ir.Network, what: str = "the network"):
        try:
            return self.hardware_space().pick(net, what)
        except CostError as exc:
            raise Infeasible(str(exc)) from None

    def over_chip(self, name: str, arch) -> float:
        """What an architecture that fits no array costs in the search: its cost on the array
        it comes closest to fitting (device ignored) times how far that is over the limit
        (the largest share / the utilisation limit, > 1), and at least the trial's budget times
        that factor: always over a budget, more so the further over the chip."""

        def compute():
            pick, over = self.hardware_space().closest(self.network(arch), f"architecture {arch.describe()}")
            if name == "cycles":
                c = float(pick.cycles)
            elif name == "latency_ms":
                c = pick.latency_ms
            else:
                prog = compile_network(
                    self.network(arch),
                    roomy_config(pick.config.rows, pick.config.cols, pick.config.cmax),
                    encode_words=False,
                )
                c = program_counts(prog, 0.0).picojoules()["total"] * 1e-6
            return max(c, self.budget or 0.0) * over

        return self._cached(("over_chip", name, arch), compute)

    def program(self, arch):
        """The compiled program of the architecture (instructions and memory plan; the words
        are not encoded, which does not change a cycle)."""
        return self._kept(
            ("program", arch), lambda: self._compiled(arch, compile_network, encode_words=False)
        )

    def _cycles(self, arch) -> int:
        """compile_network + the cycle model, each op shape's tiles emitted once (a program
        of the zoo Fashion space has 8,000 instructions, and nearly every sample is new)."""
        return self._compiled(arch, network_cycles, self._op_cycles)

    def static(self, name: str, arch) -> float:
        """The cost `name` of `arch` that does not depend on the example (energy: without the
        accumulations, which the example's activity adds)."""

        def compute():
            if self.family.NAME == "resnet-fabric":
                return float(self.family.static_cost(name, arch, self.settings.processors))
            if name == "params":
                return float(network_params(self.network(arch)))
            if name == "flops":
                return float(network_flops(self.network(arch)))
            if name == "cycles":
                if self.settings.joint:
                    return float(self.hardware(arch).cycles)
                return float(self._cycles(arch))
            if name == "latency_ms":
                if self.settings.joint:
                    return self.hardware(arch).latency_ms
                return self.static("cycles", arch) / (self.settings.fixed_mhz * 1e3)
            if name == "energy":
                counts = program_counts(self.program(arch), 0.0)
                return counts.picojoules()["total"] * 1e-6
            if name == "parallel":
                n = chain_modules(self.network(arch))
                return float(
                    parallel_steps({k: [k - 1] if k else [] for k in range(n)}, self.settings.processors)
                )
            if name == "gpu":
                return self.gpu_model().ms_per_image(self.network(arch))
            raise CostError(f"unknown cost {name!r}")

        return self._cached((name, arch), compute)

    def of(self, name: str, arch, activity: float = 0.0) -> float:
        """The cost of one example computed by `arch` with `activity` active pairs (joint
        search: an architecture that fits no array on the chip costs `over_chip`)."""
        try:
            c = self.static(name, arch)
        except Infeasible:
            return self.over_chip(name, arch)
        if name == "energy":
            c += activity * PJ_ADD32 * 1e-6
        return c

    def per_example(self, name: str, archs: list, activity: torch.Tensor | None) -> torch.Tensor:
        act = activity.detach().tolist() if activity is not None else [0.0] * len(archs)
        return torch.tensor(
            [self.of(name, a, x) for a, x in zip(archs, act, strict=True)], dtype=torch.float32
        )

    def available(self, name: str) -> bool:
        """Whether cost `name` can be computed here: the gpu cost needs a CUDA device or a
        saved profile; the others always can."""
        if name != "gpu" or self.settings.gpu_profile:
            return True
        from gpu_kernels import cuda_available

        return cuda_available()

    def all_static(self, arch) -> dict:
        """Every cost of the family that can be computed here (the searched one is checked to
        be computable before the search starts)."""
        return {n: self.static(n, arch) for n in self.family.COSTS if self.available(n)}

    def gpu_model(self):
        if self._gpu is None:
            from workbench.search.gpu_cost import GpuLatencyModel

            self._gpu = GpuLatencyModel.from_settings(self.settings)
        return self._gpu

    def cache(self) -> dict:
        """The costs computed so far and the architectures seen (an interrupted super
        network's checkpoint keeps them: a resumed run then counts and reuses them)."""
        return {"costs": dict(self._costs), "seen": set(self._seen)}

    def load_cache(self, cache: dict) -> None:
        self._costs.update(cache["costs"])
        self._seen.update(cache["seen"])

    def _cached(self, key, fn):
        if key not in self._costs:
            self._costs[key] = fn()
        return self._costs[key]

    def _kept(self, key, fn):
        """fn() for key, from the last OBJECTS_KEPT networks and programs when it is there."""
        if key in self._objects:
            self._objects.move_to_end(key)
            return self._objects[key]
        obj = fn()
        self._objects[key] = obj
        if len(self._objects) > OBJECTS_KEPT:
            self._objects.popitem(last=False)
        return obj

    @property
    def objects_kept(self) -> int:
        """Networks and programs held now (at most OBJECTS_KEPT)."""
        return len(self._objects)

    @property
    def cached_architectures(self) -> int:
        """Distinct architectures costed or built so far."""
        return len(self._seen)
