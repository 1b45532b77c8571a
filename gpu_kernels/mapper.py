"""Layer-to-device mapping (HEP-BNN's Algorithm 1, and a transfer-aware improvement).

Both work on a Profile (profiling.py): seconds per batch of b images for every layer in every
implementation (the CPU and the seven GPU configurations), and the copy time of every tensor
between layers. A GPU layer costs max(kernel time, host time to issue it) (Profile.cost_s): at
small batches the host's launch overhead, not the kernel, sets the pace. Costs are for the
whole data set: n_images in ceil(n_images / b) batches.

* Algorithm 1, as published: for each batch size keep the fastest implementation of each layer
  and sum those times; pick the batch size with the lowest sum. It ignores the copies that its
  per-layer choices imply (HEP-BNN copied every tensor to and from the host around every GPU
  layer anyway).
* DP: for each batch size, dynamic programming over layers and the two devices (host, GPU):
  the cost of being on a device after layer i is the best of staying or paying one copy of the
  boundary tensor, plus the fastest implementation on that device. The input starts and the
  scores end on the host. Exact for this cost model, so never worse than Algorithm 1's
  mapping under it (both are reported with their true cost including copies).
* The fused CPU network (gpu_kernels/cpu_impl.py: FusedCpuNetwork, every Step and pooling inside
  the conv or dense layer before it) runs a whole network on the CPU in a few kernels, far
  faster than the per-layer CPU implementation, but only whole: where the profile holds its
  measured times (profile.meta["fused_cpu"], written by `map_network(..., fused_cpu=...)`), the
  DP also weighs running the whole network that way, per batch size, and takes it when it costs
  less than its best per-layer mapping (Choice.fused_cpu). A mixed mapping's CPU layers are the
  per-layer CPU implementation, whose formats the GPU kernels share.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gpu_kernels.configs import CPU, GPU, HOST
from gpu_kernels.errors import GpuKernelError
from gpu_kernels.layer_ops import described_blocking_refusal, described_fusion_refusal
from gpu_kernels.profiling import JsonProfile, MeasuredProfile, Profile, fused_key
from models.onnx import load_network
from safeio import write_json_atomic


def _device(impl: str) -> str:
    return HOST if impl == CPU else GPU


@dataclass
class Choice:
    algorithm: str  # "algorithm1" or "dp"
    batch: int
    impls: list  # one implementation per layer
    layer_s: list  # whole-data-set seconds of each chosen layer
    transfers: list  # [{"boundary", "direction", "seconds"}] the mapping implies
    objective_s: float  # what the algorithm minimised (Algorithm 1: layers only)
    total_s: float  # layers + implied copies (the honest prediction)
    per_batch_s: dict = field(default_factory=dict)  # objective at every batch size
    gpu_kernel_s: float = 0.0  # the GPU layers' kernel times alone (whole data set)
    gpu_host_s: float = 0.0  # the host's time to issue them (whole data set)
    fused_cpu: bool = False  # every layer on the CPU as the fused CPU network (its measured
    #                          times: layer_s has each kernel's on the last layer it computes)
    fused_gpu: list = field(default_factory=list)  # [first, last] of each run of layers the
    #                          choice computes in one fused GPU kernel (layer_ops.fused_op; a
    #                          conv + Step (+ MaxPool2d), a BinDense + Step); layer_s: its time on
    #                          the last layer, 0 on the others. A saved choice's bare i is [i, i + 1]
    fused_px: dict = field(default_factory=dict)  # {"first-last": N} of the runs of fused_gpu
    #                          taken as a register-blocked kernel of N output pixels per warp
    #                          (layer_ops.blocked_px); the others unblocked. Saved choices without it: {}

    def __post_init__(self):
        n = len(self.impls) if isinstance(self.impls, list) else None
        self.fused_gpu = checked_fused_runs(self.fused_gpu, n)
        self.fused_px = checked_fused_px(self.fused_px, self.fused_gpu)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["per_batch_s"] = {str(b): v for b, v in self.per_batch_s.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Choice:
        d = dict(d)
        d["per_batch_s"] = {int(b): v for b, v in d.get("per_batch_s", {}).items()}
        return cls(**d)


@dataclass
class Mapping:
    network: str
    n_images: int
    profile: Profile
    algorithm1: Choice
    dp: Choice

    def choice(self, algorithm: str = "dp") -> Choice:
        if algorithm not in ("dp", "algorithm1"):
            raise GpuKernelError(f"algorithm must be 'dp' or 'algorithm1', got {algorithm!r}")
        return self.dp if algorithm == "dp" else self.algorithm1

    def to_json(self) -> dict:
        return {
            "network": self.network,
            "n_images": self.n_images,
            "algorithm1": self.algorithm1.as_dict(),
            "dp": self.dp.as_dict(),
            "profile": self.profile.to_json(),
        }

    @classmethod
    def from_json(cls, d: dict) -> Mapping:
        try:
            return cls(
                d["network"],
                int(d["n_images"]),
                Profile.from_json(d["profile"]),
                Choice.from_dict(d["algorithm1"]),
                Choice.from_dict(d["dp"]),
            )
        except (KeyError, TypeError) as exc:
            raise GpuKernelError(f"malformed mapping JSON: {exc!r}") from None

    def save(self, path) -> Path:
        return write_json_atomic(path, self.to_json(), indent=1)

    def agree(self) -> bool:
        """Algorithm 1 and DP chose the same batch size and the same implementation per layer
        (the fused CPU network counts as an implementation of its own)."""
        a1, dp = self.algorithm1, self.dp
        key = lambda c: (c.batch, c.impls, c.fused_cpu, c.fused_gpu, c.fused_px)  # noqa: E731
        return key(a1) == key(dp)


def fused_cpu_meta(prof: Profile) -> dict:
    """The profile's measurement of the fused CPU network (meta["fused_cpu"]; {} when it has
    none), checked as a saved profile may hold anything: `kernels` [first, last] pairs of whole
    layer indices, 0 <= first <= last < the profile's layers; `batch_s` {batch size: seconds}
    and `layer_s` {batch size: seconds per layer} objects (each row is checked where it is
    used, fused_cpu_layer_s); `reason` a string. GpuKernelError (bad input) naming the field."""
    fused = prof.meta.get("fused_cpu") or {}
    where = "profile meta fused_cpu"
    if not isinstance(fused, dict):
        raise GpuKernelError(f"{where}: needs an object, got {fused!r}")
    kernels, n = fused.get("kernels", []), len(prof.layers)
    if not isinstance(kernels, list) or not all(
        isinstance(k, list)
        and len(k) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in k)
        and 0 <= k[0] <= k[1] < n
        for k in kernels
    ):
        raise GpuKernelError(
            f"{where}, kernels: needs [first, last] layer pairs, 0 <= first <= last < {n}, got {kernels!r}"
        )
    for key in ("batch_s", "layer_s"):
        if not isinstance(fused.get(key, {}), dict):
            raise GpuKernelError(f"{where}, {key}: needs an object (batch size: times), got {fused[key]!r}")
    bad = {b: t for b, t in fused.get("batch_s", {}).items() if not isinstance(t, (int, float)) or t < 0}
    if bad:
        raise GpuKernelError(f"{where}, batch_s: needs non-negative seconds, got {bad!r}")
    if not isinstance(fused.get("reason", ""), str):
        raise GpuKernelError(f"{where}, reason: needs a string, got {fused['reason']!r}")
    return fused


def fused_cpu_layer_s(prof: Profile, b: int) -> list | None:
    """Seconds per layer of the fused CPU network for one batch of b images (each kernel's time
    on the last layer it computes, 0 on the layers inside it), from the profile's
    meta["fused_cpu"] (checked: fused_cpu_meta); None where the profile has none for b."""
    fused = fused_cpu_meta(prof)
    row = fused.get("layer_s", {}).get(str(b))
    if row is None:
        return None
    if len(row) != len(prof.layers) or any(not isinstance(t, (int, float)) or t < 0 for t in row):
        raise GpuKernelError(
            f"profile meta fused_cpu, batch {b}: needs {len(prof.layers)} non-negative times, got {row!r}"
        )
    return [float(t) for t in row]


def fused_run(entry) -> list:
    """A fused run as [first, last]: from [first, last] (or a tuple), or a bare first layer i
    (the pair [i, i + 1]: what choices and profiles saved before runs of three layers)."""
    if isinstance(entry, int) and not isinstance(entry, bool):
        return [entry, entry + 1]
    if (
        isinstance(entry, (list, tuple))
        and len(entry) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in entry)
    ):
        return [int(entry[0]), int(entry[1])]
    raise GpuKernelError(f"a fused GPU run is [first layer, last layer], got {entry!r}")


def checked_fused_runs(runs, n: int | None = None) -> list:
    """A choice's fused runs as [first, last] lists (fused_run), checked: a list, every run
    0 <= first < last (< n, the choice's layers, when known), no layer in two runs; else a
    one-line GpuKernelError."""
    if not isinstance(runs, (list, tuple)):
        raise GpuKernelError(f"a choice's fused_gpu is a list of [first, last] runs, got {runs!r}")
    out = [fused_run(r) for r in runs]
    for first, last in out:
        if not 0 <= first < last or (n is not None and last >= n):
            bound = f" <= {n - 1}" if n is not None else ""
            raise GpuKernelError(
                f"a fused GPU run is [first, last] with 0 <= first < last{bound}, got {[first, last]}"
            )
    ordered = sorted(out)
    for a, b in zip(ordered, ordered[1:], strict=False):
        if b[0] <= a[1]:
            raise GpuKernelError(f"fused GPU runs {a} and {b} overlap: a layer is in one fused kernel only")
    return out


def checked_fused_px(fused_px, runs: list) -> dict:
    """A choice's fused_px ({"first-last": pixels per warp}) checked against its fused runs:
    every key names one of `runs`, every value an int >= 2 (1, the unblocked kernel, is left
    out); else a one-line GpuKernelError."""
    if not isinstance(fused_px, dict):
        raise GpuKernelError(f"a choice's fused_px is an object {{'first-last': pixels}}, got {fused_px!r}")
    names = {fused_key(first, last) for first, last in runs}
    for key, px in fused_px.items():
        if key not in names:
            have = ", ".join(sorted(names)) or "none"
            raise GpuKernelError(f"a choice's fused_px names {key!r}, none of its fused runs ({have})")
        if not isinstance(px, int) or isinstance(px, bool) or px < 1:
            raise GpuKernelError(
                f"a choice's fused_px gives {key!r} {px!r} pixels per warp; needs an int >= 1"
            )
    return {k: v for k, v in fused_px.items() if v != 1}


def _run_px(fused_px, first: int, last: int) -> int:
    """The pixels per warp a choice's fused_px gives the run first..last (1: unblocked)."""
    return (fused_px or {}).get(fused_key(first, last), 1)


def _key_error(key, n: int) -> GpuKernelError:
    return GpuKernelError(
        f"profile meta fused_gpu: needs {{'first-last' (0 <= first < last <= {n - 1}): object}} "
        f"('first-last/pxN' for a register-blocked kernel), got the key {key!r}"
    )


def _parse_fused_key(key, layers: list) -> tuple[int, int, int]:
    """(first, last, pixels per warp) of a meta["fused_gpu"] key ('first-last', a bare 'i' for
    the pair i, i + 1, or 'first-last/pxN' for a register-blocked kernel of N output pixels per
    warp) of a profile of `layers` (their describe()): a run and a kernel one fused kernel
    computes it with in that network (layer_ops.described_fusion_refusal and
    described_blocking_refusal, the runner's rules), else a one-line GpuKernelError naming the
    key."""
    where, n = "profile meta fused_gpu", len(layers)
    run, _, blocked = key.partition("/") if isinstance(key, str) else ("", "", "")
    parts = run.split("-")
    if not 1 <= len(parts) <= 2 or not all(p.isdigit() for p in parts):
        raise _key_error(key, n)
    px = 1
    if blocked:
        if not blocked.startswith("px") or not blocked[2:].isdigit() or len(parts) != 2:
            raise _key_error(key, n)
        px = int(blocked[2:])
    first = int(parts[0])
    last = int(parts[1]) if len(parts) == 2 else first + 1
    if not first < last < n:
        raise _key_error(key, n)
    # one spelling per kernel ('3-4', '3-4/px4'; the bare 'i' of older profiles), so that no two
    # keys of a profile name the same kernel and one silently replaces the other
    if key != (fused_key(first, last, px) if len(parts) == 2 else str(first)):
        raise _key_error(key, n)
    why = described_fusion_refusal(layers, first, last)
    if why is not None:
        raise GpuKernelError(f"{where}: the key {key!r} is no run one fused kernel computes: {why}")
    why = described_blocking_refusal(layers, first, last, px)
    if why is not None:
        raise GpuKernelError(f"{where}: the key {key!r} names no kernel of that run: {why}")
    return first, last, px


def fused_gpu_variants(prof: Profile) -> dict[tuple, dict]:
    """{(first, last, pixels per warp): entry} of the fused GPU kernels the profile holds
    (meta["fused_gpu"]: {"first-last": {"kernel", "layer_s": {b: row}, "host_s": {b: row}}},
    written by the measured and the modelled profiles; a bare "i" is the pair i, i + 1;
    "first-last/pxN" the run's register-blocked kernel of N pixels per warp). A malformed key,
    or one that names no run (or no kernel of it) a fused kernel computes in the profile's
    network, is a GpuKernelError naming it."""
    fused = prof.meta.get("fused_gpu") or {}
    where = "profile meta fused_gpu"
    if not isinstance(fused, dict):
        raise GpuKernelError(f"{where}: needs an object, got {fused!r}")
    out = {}
    for key, entry in fused.items():
        variant = _parse_fused_key(key, prof.layers)
        if not isinstance(entry, dict):
            raise GpuKernelError(f"{where}: the key {key!r} needs an object, got {entry!r}")
        out[variant] = entry
    return out


def fused_gpu_entries(prof: Profile) -> dict[tuple, dict]:
    """{(first, last): entry} of the unblocked fused GPU kernels the profile holds (the entries
    of fused_gpu_variants with one pixel per warp)."""
    return {(first, last): e for (first, last, px), e in fused_gpu_variants(prof).items() if px == 1}


def fused_gpu_cost(prof: Profile, b: int) -> dict[tuple, list]:
    """{(first, last, pixels per warp): [seconds per implementation of prof.impls, None where it
    cannot run or on the CPU]} of the fused GPU kernels the profile holds for batch b
    (fused_gpu_variants), charged as a layer is: max(kernel, host issue). A malformed entry is
    a GpuKernelError naming it."""
    where = "profile meta fused_gpu"
    out, m = {}, len(prof.impls)
    for (first, last, px), entry in fused_gpu_variants(prof).items():
        key = fused_key(first, last, px)
        row = (entry.get("layer_s") or {}).get(str(b))
        if row is None:
            continue
        host = (entry.get("host_s") or {}).get(str(b)) or [None] * m
        if (
            len(row) != m
            or len(host) != m
            or any(t is not None and (not isinstance(t, (int, float)) or t < 0) for t in [*row, *host])
        ):
            raise GpuKernelError(f"{where}, layers {key}, batch {b}: needs {m} non-negative times or nulls")
        out[(first, last, px)] = [
            None if t is None or impl == CPU else max(t, h or 0.0)
            for impl, t, h in zip(prof.impls, row, host, strict=True)
        ]
    return out


# ---------------------------------------------------------------------------------------------
# Cost model
# ---------------------------------------------------------------------------------------------
def n_batches(n_images: int, batch: int) -> int:
    return math.ceil(n_images / batch)


def transfers_of(impls, prof: Profile, batch: int, n_images: int) -> list[dict]:
    """The copies a per-layer mapping implies: input from the host, every device switch, the
    scores back to the host."""
    k = n_batches(n_images, batch)
    where, out = HOST, []
    for i, dev in enumerate([_device(m) for m in impls] + [HOST]):
        if dev != where:
            direction = "h2d" if dev == GPU else "d2h"
            table = prof.h2d_s if dev == GPU else prof.d2h_s
            out.append({"boundary": i, "direction": direction, "seconds": table[batch][i] * k})
            where = dev
    return out


def _fused_layers(prof: Profile, batch: int, fused, fused_px=None) -> tuple[dict, dict]:
    """({last layer: (first, last, pixels per warp)}, {earlier layer of a run: its last layer})
    of the fused runs `fused` (their kernels: `fused_px`, a choice's), each checked to be in
    the profile at `batch` (GpuKernelError)."""
    runs = [(*fused_run(r), _run_px(fused_px, *fused_run(r))) for r in fused]
    have = fused_gpu_cost(prof, batch) if runs else {}
    for run in runs:
        if run not in have:
            kernel = f" ({run[2]} pixels per warp)" if run[2] != 1 else ""
            raise GpuKernelError(
                f"layers {run[0]}..{run[1]} run fused{kernel}, but the profile holds no times of that "
                f"kernel at batch {batch}"
            )
    return {r[1]: r for r in runs}, {j: r[1] for r in runs for j in range(r[0], r[1])}


def evaluate(
    impls, prof: Profile, batch: int, n_images: int, fused=(), fused_px=None
) -> tuple[list, list, float]:
    """(per-layer seconds, copies, total seconds) of a mapping for the whole data set; `fused`:
    the [first, last] runs computed by one fused GPU kernel each (its time on the run's last
    layer, 0 on the others), `fused_px` their register-blocked kernels ({"first-last": pixels
    per warp}, as Choice.fused_px; others unblocked)."""
    k = n_batches(n_images, batch)
    cost = prof.cost_s(batch)
    ends, inside = _fused_layers(prof, batch, fused, fused_px)
    run_cost = fused_gpu_cost(prof, batch) if ends else {}
    layer_s = []
    for i, m in enumerate(impls):
        if i in inside:
            t = 0.0
        elif i in ends:
            t = run_cost[ends[i]][prof.impls.index(m)]
        else:
            t = cost[i][prof.impls.index(m)]
        if t is None:
            raise GpuKernelError(f"layer {i} cannot run as {m} at batch {batch}")
        layer_s.append(t * k)
    copies = transfers_of(impls, prof, batch, n_images)
    return layer_s, copies, sum(layer_s) + sum(c["seconds"] for c in copies)


def gpu_split(
    impls, prof: Profile, batch: int, n_images: int, fused=(), fused_px=None
) -> tuple[float, float]:
    """(kernel seconds, host issue seconds) of a mapping's GPU layers for the whole data set."""
    k = n_batches(n_images, batch)
    kernel = host = 0.0
    ends, inside = _fused_layers(prof, batch, fused, fused_px)
    entries = fused_gpu_variants(prof) if ends else {}
    for i, m in enumerate(impls):
        if m == CPU or i in inside:
            continue
        j = prof.impls.index(m)
        if i in ends:  # the fused kernel, on its last layer
            entry = entries[ends[i]]
            kernel += (entry["layer_s"][str(batch)][j] or 0.0) * k
            host += ((entry.get("host_s") or {}).get(str(batch), [0.0] * len(prof.impls))[j] or 0.0) * k
            continue
        kernel += (prof.layer_s[batch][i][j] or 0.0) * k
        host += (prof.host_row(batch, i)[j] or 0.0) * k
    return kernel, host


def _choice(algorithm, prof, batch, impls, objective, n_images, per_batch, fused=(), fused_px=None) -> Choice:
    layer_s, copies, total = evaluate(impls, prof, batch, n_images, fused, fused_px)
    kernel, host = gpu_split(impls, prof, batch, n_images, fused, fused_px)
    return Choice(
        algorithm,
        batch,
        impls,
        layer_s,
        copies,
        total if objective is None else objective,
        total,
        per_batch,
        kernel,
        host,
        fused_gpu=sorted(fused_run(r) for r in fused),
        fused_px=dict(fused_px or {}),
    )


def _fastest(row, impls, allowed) -> tuple[str | None, float]:
    best, best_t = None, math.inf
    for m, t in zip(impls, row, strict=True):
        if t is not None and m in allowed and t < best_t:
            best, best_t = m, t
    return best, best_t


def algorithm1(prof: Profile, n_images: int) -> Choice:
    """HEP-BNN Algorithm 1: fastest implementation per layer, lowest sum over batch sizes."""
    per_batch, picks = {}, {}
    for b in prof.batch_sizes:
        k = n_batches(n_images, b)
        cost = prof.cost_s(b)
        picks[b] = [_fastest(row, prof.impls, prof.impls)[0] for row in cost]
        per_batch[b] = sum(_fastest(row, prof.impls, prof.impls)[1] * k for row in cost)
    best = min(prof.batch_sizes, key=lambda b: per_batch[b])  # first on ties
    return _choice("algorithm1", prof, best, picks[best], per_batch[best], n_images, per_batch)


def dp_mapping(prof: Profile, n_images: int) -> Choice:
    """Transfer-aware mapping: DP over layers x {host, GPU}, or the whole network on the fused
    CPU network where the profile has its times and it costs less; then the best batch size."""
    gpu_impls = [m for m in prof.impls if m != CPU]
    host_impls = [CPU] if CPU in prof.impls else []
    per_batch, picks, fused_at, runs_at, px_at = {}, {}, {}, {}, {}
    for b in prof.batch_sizes:
        k = n_batches(n_images, b)
        L = len(prof.layers)
        layer_cost = prof.cost_s(b)
        run_cost = fused_gpu_cost(prof, b)
        cost = {HOST: 0.0, GPU: math.inf}
        # per layer: {device: (previous device, impl, first layer of a fused run or None, and
        # its kernel's pixels per warp)}
        back = []
        reached = []  # per layer: the cost of reaching each device before it
        for i in range(L):
            # the tensor entering layer i may be copied once, then the layer runs where it is
            reach = {HOST: (cost[HOST], HOST), GPU: (cost[GPU], GPU)}
            if cost[GPU] + prof.d2h_s[b][i] * k < reach[HOST][0]:
                reach[HOST] = (cost[GPU] + prof.d2h_s[b][i] * k, GPU)
            if cost[HOST] + prof.h2d_s[b][i] * k < reach[GPU][0]:
                reach[GPU] = (cost[HOST] + prof.h2d_s[b][i] * k, HOST)
            reached.append(reach)
            step, new = {}, {}
            for dev, allowed in ((HOST, host_impls), (GPU, gpu_impls)):
                m, t = _fastest(layer_cost[i], prof.impls, allowed)
                new[dev] = reach[dev][0] + t * k if m is not None else math.inf
                step[dev] = (reach[dev][1], m, None, 1)
            for (first, last, px), row in sorted(run_cost.items()):
                if last != i:
                    continue
                # layers first..i as one kernel, from the GPU before layer first (the unblocked
                # kernel before its blocked ones: a tie keeps it)
                m, t = _fastest(row, prof.impls, gpu_impls)
                if m is not None and reached[first][GPU][0] + t * k < new[GPU]:
                    new[GPU] = reached[first][GPU][0] + t * k
                    step[GPU] = (reached[first][GPU][1], m, first, px)
            cost = new
            back.append(step)
        end_host = cost[HOST]
        end_gpu = cost[GPU] + prof.d2h_s[b][L] * k
        dev = HOST if end_host <= end_gpu else GPU
        per_batch[b] = min(end_host, end_gpu)
        impls, runs, pxs, i = [None] * L, [], {}, L - 1
        while i >= 0:
            prev, m, first, px = back[i][dev]
            impls[i] = m
            if first is not None:
                impls[first:i] = [m] * (i - first)
                runs.append([first, i])
                if px != 1:
                    pxs[fused_key(first, i)] = px
                i = first
            dev = prev
            i -= 1
        picks[b], runs_at[b], px_at[b] = impls, runs, pxs
        fused = fused_cpu_layer_s(prof, b)
        if fused is not None and sum(fused) * k < per_batch[b]:
            per_batch[b], picks[b], fused_at[b] = sum(fused) * k, [CPU] * L, fused
    best = min(prof.batch_sizes, key=lambda b: per_batch[b])
    if math.isinf(per_batch[best]):
        raise GpuKernelError("no implementation of some layer can run at any batch size")
    if best in fused_at:  # no copies: input and scores stay on the host
        k = n_batches(n_images, best)
        layer_s = [t * k for t in fused_at[best]]
        total = sum(layer_s)
        return Choice("dp", best, picks[best], layer_s, [], total, total, per_batch, fused_cpu=True)
    return _choice("dp", prof, best, picks[best], None, n_images, per_batch, runs_at[best], px_at[best])


def _profile_source(src):
    if isinstance(src, (MeasuredProfile, JsonProfile)) or hasattr(src, "profile"):
        return src
    if isinstance(src, (Profile, dict)):
        return JsonProfile(src)
    if src == "measured":
        return MeasuredProfile()
    if isinstance(src, (str, Path)):
        return JsonProfile(src)
    raise GpuKernelError(
        f"profile source must be 'measured', a JSON path, a Profile or a "
        f"source object, got {type(src).__name__}"
    )


def batch_range(bl: int, bu: int) -> list[int]:
    """HEP-BNN's batch sizes 2^bl .. 2^bu."""
    if not 0 <= bl <= bu <= 20:
        raise GpuKernelError(f"batch exponents must satisfy 0 <= bl <= bu <= 20, got {bl}, {bu}")
    return [1 << e for e in range(bl, bu + 1)]


def map_network(
    net, batch_sizes, profile_source="measured", n_images: int = 10_000, fused_cpu=None
) -> Mapping:
    """Profile `net` (ir.Network or ONNX path) for each batch size and map it both ways.
    `fused_cpu`: a function (net, batch_sizes) -> dict measuring the fused CPU network
    (gpu_kernels.cpu_impl.measure_fused), kept in profile.meta["fused_cpu"] for the DP; None
    keeps what the profile holds (a saved profile's measurement, or none)."""
    net = load_network(net)
    batch_sizes = sorted({int(b) for b in batch_sizes})
    if not batch_sizes or batch_sizes[0] < 1:
        raise GpuKernelError(f"batch sizes must be positive integers, got {batch_sizes}")
    if n_images < 1:
        raise GpuKernelError(f"n_images must be positive, got {n_images}")
    prof = _profile_source(profile_source).profile(net, batch_sizes)
    prof.validate()
    if fused_cpu is not None:
        prof.meta = {**prof.meta, "fused_cpu": fused_cpu(net, batch_sizes)}
    return Mapping(net.name, n_images, prof, algorithm1(prof, n_images), dp_mapping(prof, n_images))
