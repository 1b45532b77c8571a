"""Timing sources for the mapper: per layer x implementation x batch size seconds, the host's
time to issue each GPU layer, and the host<->device copy time of every tensor between layers.

A source is anything with ``profile(net, batch_sizes) -> Profile``:
* MeasuredProfile runs the layers. A GPU configuration gets two numbers: the kernel's time
  (CUDA events around back-to-back launches that a busy-wait kernel queued ahead keeps from
  waiting on the host: devices.CupyGpu.time_launches) and the host's time to prepare and issue
  one launch (perf_counter, as the runner does it). The CPU implementation is timed with
  perf_counter. Medians of `repeats`. With the emulation backend the "GPU" numbers are
  emulation wall times, useful only to exercise the pipeline (the profile says so). With a
  `deadline`, batch sizes (smallest first) whose profiling would end after it are left out.
* JsonProfile reads a saved profile (Profile.to_json), so the search is tested without a GPU.

The mapper charges a GPU layer max(kernel, host) per batch (Profile.cost_s): the host issues
launches while the GPU runs earlier ones, so the slower of the two sets the pace.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gpu_kernels.configs import CONFIGS, CPU, IMPLS
from gpu_kernels.errors import GpuKernelError, LaunchError
from gpu_kernels.layer_ops import Fmt, blocked_px, fusable_groups, fused_op
from gpu_kernels.progress import progress
from gpu_kernels.runner import Runner
from models import ir
from models.onnx import load_network


def fused_key(first: int, last: int, px: int = 1) -> str:
    """The key of a run of layers first..last computed by one fused kernel in a profile's
    meta["fused_gpu"]: 'first-last' (the mapper reads a bare 'i' of older profiles as the pair
    i, i + 1); 'first-last/pxN' for its register-blocked kernel of N output pixels per warp."""
    return f"{first}-{last}" + (f"/px{px}" if px != 1 else "")


@dataclass
class Profile:
    """Seconds per batch of `b` images, for each batch size b."""

    network: str
    layers: list  # describe() of each layer
    batch_sizes: list
    layer_s: dict  # b -> [layer][impl] seconds (None: cannot run, e.g. launch limits)
    h2d_s: dict  # b -> [boundary 0..L] seconds to copy that tensor to the device
    d2h_s: dict  # b -> [boundary 0..L] seconds to copy it back
    impls: list = field(default_factory=lambda: list(IMPLS))
    source: str = "unknown"
    meta: dict = field(default_factory=dict)
    host_s: dict = field(default_factory=dict)  # b -> [layer][impl] host seconds to issue a GPU
    #                                               layer's launch (None: CPU or not launchable);
    #                                               missing batch sizes count as 0

    def host_row(self, b: int, i: int) -> list:
        rows = self.host_s.get(b)
        return rows[i] if rows is not None else [None] * len(self.impls)

    def cost_s(self, b: int) -> list:
        """[layer][impl] seconds the mapper charges per batch of b: the CPU's time, or for a GPU
        configuration max(kernel, host issue time); None where it cannot run."""
        out = []
        for i, row in enumerate(self.layer_s[b]):
            host = self.host_row(b, i)
            out.append(
                [
                    t if t is None or m == CPU or h is None else max(t, h)
                    for m, t, h in zip(self.impls, row, host, strict=True)
                ]
            )
        return out

    def to_json(self) -> dict:
        key = lambda d: {str(b): v for b, v in d.items()}  # noqa: E731
        return {
            "network": self.network,
            "layers": self.layers,
            "impls": self.impls,
            "batch_sizes": self.batch_sizes,
            "layer_s": key(self.layer_s),
            "host_s": key(self.host_s),
            "h2d_s": key(self.h2d_s),
            "d2h_s": key(self.d2h_s),
            "source": self.source,
            "meta": self.meta,
        }

    @classmethod
    def from_json(cls, d: dict) -> Profile:
        try:
            unkey = lambda m: {int(b): v for b, v in m.items()}  # noqa: E731
            p = cls(
                network=d["network"],
                layers=list(d["layers"]),
                impls=list(d["impls"]),
                batch_sizes=[int(b) for b in d["batch_sizes"]],
                layer_s=unkey(d["layer_s"]),
                h2d_s=unkey(d["h2d_s"]),
                d2h_s=unkey(d["d2h_s"]),
                source=d.get("source", "json"),
                meta=d.get("meta", {}),
                host_s=unkey(d.get("host_s", {})),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise GpuKernelError(f"malformed profile JSON: {exc!r}") from None
        p.validate()
        return p

    def validate(self) -> None:
        n = len(self.layers)
        bad_impls = [m for m in self.impls if m not in IMPLS]
        if bad_impls:
            raise GpuKernelError(f"profile names unknown implementations {bad_impls}")
        for b in self.batch_sizes:
            for what, table, rows in (
                ("layer_s", self.layer_s, n),
                ("h2d_s", self.h2d_s, n + 1),
                ("d2h_s", self.d2h_s, n + 1),
            ):
                if b not in table or len(table[b]) != rows:
                    raise GpuKernelError(f"profile {what} for batch {b} must have {rows} entries")
            for i, row in enumerate(self.layer_s[b]):
                if len(row) != len(self.impls):
                    raise GpuKernelError(
                        f"profile layer {i}, batch {b}: {len(row)} times for "
                        f"{len(self.impls)} implementations"
                    )
                if all(t is None for t in row):
                    raise GpuKernelError(f"profile layer {i}, batch {b}: no implementation can run")
            if b in self.host_s and (
                len(self.host_s[b]) != n or any(len(r) != len(self.impls) for r in self.host_s[b])
            ):
                raise GpuKernelError(
                    f"profile host_s for batch {b} must have {n} rows of {len(self.impls)} entries"
                )


class JsonProfile:
    """A saved profile (a path, a JSON string's parsed dict, or a Profile)."""

    def __init__(self, src):
        if isinstance(src, Profile):
            self._p = src
        elif isinstance(src, dict):
            self._p = Profile.from_json(src)
        else:
            path = Path(src)
            try:
                d = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError) as exc:
                raise GpuKernelError(f"cannot read profile {path}: {exc}") from None
            self._p = Profile.from_json(d.get("profile", d))  # a mapping JSON holds one too
            self._p.source = f"json: {path}"

    def profile(self, net: ir.Network, batch_sizes) -> Profile:
        p = self._p
        if len(p.layers) != len(net.layers) or any(
            a != b.describe() for a, b in zip(p.layers, net.layers, strict=True)
        ):
            raise GpuKernelError(
                f"the profile is of a different network ({p.network}: "
                f"{len(p.layers)} layers) than {net.name} ({len(net.layers)} layers)"
            )
        missing = [b for b in batch_sizes if b not in p.layer_s]
        if missing:
            raise GpuKernelError(
                f"the profile has no times for batch sizes {missing} (it has {sorted(p.layer_s)})"
            )
        return Profile(
            p.network,
            p.layers,
            list(batch_sizes),
            {b: p.layer_s[b] for b in batch_sizes},
            {b: p.h2d_s[b] for b in batch_sizes},
            {b: p.d2h_s[b] for b in batch_sizes},
            p.impls,
            p.source,
            p.meta,
            {b: p.host_s[b] for b in batch_sizes if b in p.host_s},
        )


def random_tensor(fmt: Fmt, n: int, rng: np.random.Generator) -> np.ndarray:
    """A batch in kernel format with valid contents (zero padding bits), for timing."""
    shape = fmt.host_shape(n)
    if fmt.kind == "binary":
        words = rng.integers(0, np.iinfo(fmt.dtype).max, size=shape, dtype=fmt.dtype, endpoint=True)
        rem = fmt.channels - (fmt.words - 1) * fmt.word_bits
        if rem < fmt.word_bits:
            words[..., -1] &= fmt.dtype((1 << rem) - 1)
        return words
    if fmt.kind == "uint8":
        return rng.integers(0, 256, size=shape, dtype=np.uint8)
    # drawn as int8 (several times faster for the 100M-element tensors of large batches)
    return rng.integers(-64, 64, size=shape, dtype=np.int8).astype(np.int32)


class MeasuredProfile:
    """Times every layer in every implementation on this machine."""

    def __init__(
        self,
        backend="auto",
        word_bits: int = 32,
        repeats: int = 5,
        warmup: int = 2,
        impls=IMPLS,
        threads: int | None = None,
        window: int | None = None,
        progress: bool = False,
        seed: int = 0,
        slow_s: float = 0.05,
        launches: int = 4,
        deadline: float | None = None,
        step_kernel: str = "thread",
        fused: bool = False,
    ):
        self.backend, self.word_bits = backend, word_bits
        # also time the fused kernels for every run of layers they can compute
        # (layer_ops.fusable_groups: conv + Step, conv + Step + MaxPool2d, BinDense + Step; a
        # BinConv2d run's register-blocked kernels too, layer_ops.blocked_px), in
        # meta["fused_gpu"], which the mapper's DP weighs against the separate kernels
        self.fused = fused
        self.step_kernel = step_kernel  # the Step layers' kernel (layer_ops.STEP_KERNELS)
        self.repeats, self.warmup = max(1, repeats), max(0, warmup)
        self.impls = list(impls)
        self.launch_kw = {k: v for k, v in (("threads", threads), ("window", window)) if v is not None}
        self.progress, self.seed, self.slow_s = progress, seed, slow_s
        self.launches = max(1, launches)  # back-to-back launches per GPU timing
        self.deadline = deadline  # perf_counter() time profiling must end by

    def _median(self, fn) -> float:
        """Median of `repeats` timed runs after `warmup` untimed ones; a run slower than
        `slow_s` is measured once (the profile of a slow configuration needs no precision and
        would otherwise dominate the profiling time)."""
        for i in range(self.warmup):
            t = fn()
            if i == 0 and t > self.slow_s:
                break
        first = fn()
        if first > self.slow_s:
            return first
        return statistics.median([first] + [fn() for _ in range(self.repeats - 1)])

    def profile(self, net, batch_sizes) -> Profile:
        net = load_network(net)
        runner = Runner(
            net,
            "X",
            backend=self.backend,
            word_bits=self.word_bits,
            step_kernel=self.step_kernel,
            **self.launch_kw,
        )
        gpu, rng = runner.gpu, np.random.default_rng(self.seed)
        if gpu is None and any(m != CPU for m in self.impls):
            raise GpuKernelError(
                "a measured profile of GPU configurations needs backend 'cupy' or 'emulation'"
            )
        L = len(runner.ops)
        layer_s, host_s, h2d_s, d2h_s = {}, {}, {}, {}
        sizes, skipped = sorted(batch_sizes), []
        steps = [(b, i) for b in sizes for i in range(L)]
        if self.progress:
            steps = progress(steps, f"profiling {net.name}", "layer")
        started, prev = {}, None  # batch size -> start time; last finished
        fused = {}  # meta["fused_gpu"]
        runs = {}  # first layer -> the fused runs starting there
        for first, last in fusable_groups(runner.ops):
            runs.setdefault(first, []).append((first, last))
        for b, i in steps:
            if b in skipped:
                continue
            now = time.perf_counter()
            if i == 0:
                started[b] = now
                if self.deadline is not None and prev is not None:
                    # a batch size costs about its images' share of the last one's time
                    guess = (started[b] - started[prev]) * b / prev
                    if started[b] + guess > self.deadline:
                        skipped += [s for s in sizes if s >= b]
                        continue
            elif self.deadline is not None and prev is not None and now > self.deadline:
                skipped += [s for s in sizes if s >= b]  # give up this one half-profiled
                continue
            op = runner.ops[i]
            layer_s.setdefault(b, [None] * L)
            host_s.setdefault(b, [None] * L)
            x = random_tensor(op.fin, b, rng)
            row, hrow = [], []
            for impl in self.impls:
                if impl == CPU:
                    row.append(self._time_cpu(runner, op, x))
                    hrow.append(None)
                else:
                    kernel, host = self._time_gpu(runner, op, x, impl)
                    row.append(kernel)
                    hrow.append(host)
            layer_s[b][i], host_s[b][i] = row, hrow
            for first, last in runs.get(i, ()) if self.fused and gpu is not None else ():
                for px in blocked_px(runner.ops, first, last):  # the unblocked kernel first
                    fop = fused_op(runner.ops, first, last, px)
                    entry = fused.setdefault(
                        fused_key(first, last, px), {"kernel": fop.kernel, "layer_s": {}, "host_s": {}}
                    )
                    times = [
                        (None, None) if m == CPU else self._time_gpu(runner, fop, x, m) for m in self.impls
                    ]
                    entry["layer_s"][str(b)] = [t for t, _ in times]
                    entry["host_s"][str(b)] = [h for _, h in times]
            if i == L - 1:  # every boundary tensor of batch b
                fmts = [o.fin for o in runner.ops] + [runner.ops[-1].fout]
                tensors = [random_tensor(f, b, rng) for f in fmts]
                h2d_s[b] = [self._time_copy(gpu, t, "h2d") for t in tensors]
                d2h_s[b] = [self._time_copy(gpu, t, "d2h") for t in tensors]
                prev = b
        done = [b for b in sizes if b not in skipped]
        if not done:
            raise GpuKernelError("no batch size could be profiled before the deadline")
        if gpu is None:
            zero = {b: [0.0] * (L + 1) for b in done}
            h2d_s, d2h_s = zero, dict(zero)
        source = (
            f"measured: {gpu.backend}"
            + (f" ({gpu.device_name})" if gpu.is_real_gpu else " (emulation wall times, NOT GPU timings)")
            if gpu is not None
            else "measured: cpu only"
        )
        return Profile(
            net.name,
            [layer.describe() for layer in net.layers],
            done,
            {b: layer_s[b] for b in done},
            {b: h2d_s[b] for b in done},
            {b: d2h_s[b] for b in done},
            self.impls,
            source,
            {
                "word_bits": self.word_bits,
                "step_kernel": self.step_kernel,
                "repeats": self.repeats,
                "warmup": self.warmup,
                "slow_s": self.slow_s,
                "launches": self.launches,
                "statistic": "median",
                "time_of": "one batch of b images",
                "gpu_timer": (
                    (
                        getattr(gpu, "timing_note", None)
                        or "CUDA events around back-to-back launches queued behind a busy-wait kernel"
                    )
                    if gpu is not None and gpu.is_real_gpu
                    else "perf_counter"
                ),
                "host_timer": "perf_counter: prepare + issue one launch",
                "cpu_timer": "perf_counter",
                "batch_sizes_left_out": skipped,
                "cpu_threads": runner.cpu.max_threads if CPU in self.impls else None,
                **(
                    {
                        "fused_gpu": {
                            k: {
                                **e,
                                **{t: {str(b): e[t][str(b)] for b in done} for t in ("layer_s", "host_s")},
                            }
                            for k, e in fused.items()
                        }
                    }
                    if fused
                    else {}
                ),
            },
            {b: host_s[b] for b in done},
        )

    def _time_cpu(self, runner, op, x) -> float:
        def once():
            t0 = time.perf_counter()
            runner.run_op_cpu(op, x, reuse=True)
            return time.perf_counter() - t0

        return self._median(once)

    def _time_gpu(self, runner, op, x, config) -> tuple[float | None, float | None]:
        """(kernel seconds, host seconds to prepare and issue it) of one batch, or (None, None)
        when the configuration cannot launch it."""
        if config not in CONFIGS:
            raise GpuKernelError(f"{config!r} is not a GPU configuration")
        try:
            if op.kernel is not None:
                runner.plan(op, x.shape[0], config)
        except LaunchError:
            return None, None
        gpu = runner.gpu
        xd = gpu.upload(x)
        _, go = runner.prepare_op_gpu(op, xd, config)
        if go is None:  # a no-op layer (flatten of a flat tensor)
            return 0.0, 0.0

        def host_once():
            t0 = time.perf_counter()
            _, again = runner.prepare_op_gpu(op, xd, config)
            gpu.event()  # what the runner records per launch
            again()
            gpu.event()
            t = time.perf_counter() - t0
            gpu.synchronize()
            return t

        first, _ = gpu.time_launches(go, 1)
        if first > self.slow_s:
            return first, host_once()
        kernel = statistics.median(
            [first] + [gpu.time_launches(go, self.launches)[0] for _ in range(self.repeats - 1)]
        )
        host = statistics.median([host_once() for _ in range(self.repeats)])
        return kernel, host

    def _time_copy(self, gpu, t: np.ndarray, direction: str) -> float:
        if gpu is None:
            return 0.0
        dev = gpu.upload(t)

        def once():
            e0 = gpu.event()
            if direction == "h2d":
                gpu.upload(t)
            else:
                gpu.download(dev)
            e1 = gpu.event()
            return gpu.elapsed_s(e0, e1)

        return self._median(once)
