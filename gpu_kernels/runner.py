"""Running a network layer by layer on the GPU (CuPy or emulation) and the CPU implementation,
following a per-layer mapping, with every layer's output in the golden format.

Data stays where the last layer left it: consecutive GPU layers hand device buffers to each
other, and a host<->device copy happens only where the mapping switches device, plus the
network input (which starts on the host) and the final scores (which end there). Those copies
are timed and listed in RunResult.transfers. Copies made only to return every layer's output
(keep_outputs=True) happen after the timed work and are not listed.

Times of a GPU layer: `seconds` = CUDA events around the kernel launch alone (its arguments are
prepared before the first event); `host_s` = the host's time to prepare and issue it (output
allocation, argument checks, CuPy's call), which overlaps earlier kernels while the GPU is
busy and sets the pace when it is not.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np

from gpu_kernels import launch as launch_mod
from gpu_kernels.configs import CPU, GPU, HOST, check_impl
from gpu_kernels.cpu_impl import cpu_impl
from gpu_kernels.devices import get_gpu
from gpu_kernels.errors import GpuKernelError, MappingError
from gpu_kernels.kernel_table import ANY_PX
from gpu_kernels.launch import KERNEL_MAX_THREADS
from gpu_kernels.layer_ops import (
    ArgmaxOp,
    FusedOp,
    Op,
    ReorderOp,
    blocked_px,
    check_int32_ranges,
    fused_op,
    fusion_refusal,
    prepare,
)
from gpu_kernels.progress import progress as show_progress
from models import golden
from models.onnx import load_network

DEFAULT_CONFIG = "X"


@dataclass
class LayerRecord:
    index: int
    layer: str  # describe() of the layer
    impl: str  # "cpu" or a configuration
    device: str  # "host" or "gpu"
    seconds: float = 0.0  # GPU layers: CUDA events around the launch; CPU layers: wall
    launch: dict | None = None  # grid/block of the first batch (GPU layers)
    host_s: float = 0.0  # GPU layers: host time to prepare and issue the launches


@dataclass
class Transfer:
    boundary: int  # tensor entering layer `boundary` (len(layers) = the network output)
    direction: str  # "h2d" or "d2h"
    tensor: str = "activation"  # "activation" or "predictions" (argmax of the scores)
    bytes: int = 0
    seconds: float = 0.0
    count: int = 0


@dataclass
class RunResult:
    outputs: list | None  # every layer's output in golden format (keep_outputs=True)
    scores: np.ndarray  # last layer's output, golden format
    predictions: np.ndarray | None
    layers: list  # LayerRecord per layer
    transfers: list  # Transfer per (boundary, direction) that happened
    backend: str  # "cupy", "emulation" or "cpu" (what actually ran GPU layers)
    device_name: str | None
    word_bits: int
    batch: int
    n_images: int
    wall_s: float  # first input copy to scores on the host, all batches
    timing: str = ""  # what the per-layer seconds are
    fused_gpu: list = field(default_factory=list)  # {"first", "last", "kernel"} of each run of
    #                                                layers computed by one fused GPU kernel

    @property
    def layer_s(self) -> list[float]:
        return [r.seconds for r in self.layers]

    @property
    def transfer_s(self) -> float:
        return sum(t.seconds for t in self.transfers)

    @property
    def gpu_kernel_s(self) -> float:
        """Sum of the GPU layers' event times (kernels alone)."""
        return sum(r.seconds for r in self.layers if r.device == GPU)

    @property
    def gpu_host_s(self) -> float:
        """Sum of the host's time to prepare and issue the GPU layers' launches."""
        return sum(r.host_s for r in self.layers if r.device == GPU)

    @property
    def impls(self) -> list[str]:
        return [r.impl for r in self.layers]

    def as_dict(self) -> dict:
        """JSON-serialisable summary (no tensors)."""
        return {
            "backend": self.backend,
            "device_name": self.device_name,
            "word_bits": self.word_bits,
            "batch": self.batch,
            "n_images": self.n_images,
            "wall_s": self.wall_s,
            "timing": self.timing,
            "layers": [asdict(r) for r in self.layers],
            "transfers": [asdict(t) for t in self.transfers],
            "fused_gpu": [dict(r) for r in self.fused_gpu],
        }

    def summary(self) -> str:
        lines = [
            f"backend {self.backend}"
            + (f" ({self.device_name})" if self.device_name else "")
            + f", {self.n_images} images in batches of {self.batch}, {self.word_bits}-bit words",
            f"{'#':>3} {'layer':34s} {'impl':>4} {'device':>6} {'ms':>10} {'host ms':>10}",
        ]
        for r in self.layers:
            host = f"{1e3 * r.host_s:10.3f}" if r.device == GPU else f"{'':10s}"
            lines.append(
                f"{r.index:3d} {r.layer:34s} {r.impl:>4} {r.device:>6} {1e3 * r.seconds:10.3f} {host}"
            )
        for t in self.transfers:
            lines.append(
                f"    transfer {t.direction} of the {t.tensor} at boundary {t.boundary}: "
                f"{t.count} x, "
                f"{t.bytes / 1e6:.3f} MB, {1e3 * t.seconds:.3f} ms"
            )
        lines.append(f"    wall {1e3 * self.wall_s:.3f} ms ({self.timing})")
        return "\n".join(lines)


def resolve_mapping(mapping, n_layers: int) -> tuple[list[str], int | None]:
    """Per-layer implementation names and the mapping's batch size (if it has one).

    Accepted: None (every layer DEFAULT_CONFIG), one name for every layer, a list of names, a
    dict {layer index: name} (others DEFAULT_CONFIG), a mapper Choice (impls + batch) or a
    mapper Mapping (its transfer-aware "dp" choice)."""
    batch = None
    if hasattr(mapping, "dp") and hasattr(mapping, "algorithm1"):
        mapping = mapping.dp
    if hasattr(mapping, "impls") and hasattr(mapping, "batch"):
        mapping, batch = list(mapping.impls), int(mapping.batch)
    if mapping is None:
        impls = [DEFAULT_CONFIG] * n_layers
    elif isinstance(mapping, str):
        impls = [check_impl(mapping)] * n_layers
    elif isinstance(mapping, dict):
        bad = [k for k in mapping if not isinstance(k, (int, np.integer)) or not 0 <= k < n_layers]
        if bad:
            raise MappingError(f"mapping names layers {bad}; the network has layers 0..{n_layers - 1}")
        impls = [check_impl(mapping.get(i, DEFAULT_CONFIG)) for i in range(n_layers)]
    else:
        impls = [check_impl(m) for m in mapping]
        if len(impls) != n_layers:
            raise MappingError(f"mapping has {len(impls)} entries for {n_layers} layers")
    return impls, batch


class Runner:
    """A network prepared once (weights packed and resident on the device) and run many times."""

    def __init__(
        self,
        net,
        mapping=None,
        backend: str = "auto",
        word_bits: int = 32,
        batch: int | None = None,
        *,
        threads: int = launch_mod.DEFAULT_THREADS,
        window: int | None = None,
        step_kernel: str = "thread",
        fuse=None,
        fused_px=None,
    ):
        self.net = load_network(net)
        self.impls, mapping_batch = resolve_mapping(mapping, len(self.net.layers))
        if fuse is None:  # a mapper Mapping / Choice brings its fused runs and their kernels
            choice = mapping.dp if hasattr(mapping, "dp") and hasattr(mapping, "algorithm1") else mapping
            fuse = getattr(choice, "fused_gpu", None) or ()
            if fused_px is None:  # {"first-last": px} -> {first: px}
                chosen = getattr(choice, "fused_px", None) or {}
                fused_px = {int(k.split("-")[0]): v for k, v in chosen.items()} if chosen else None
        self.batch = batch if batch is not None else mapping_batch
        if self.batch is not None and (not isinstance(self.batch, (int, np.integer)) or self.batch < 1):
            raise GpuKernelError(f"batch must be a positive integer, got {self.batch!r}")
        self.word_bits = word_bits
        self.ops: list[Op] = prepare(self.net, word_bits, step_kernel)
        self.gpu = get_gpu(backend)
        if self.gpu is None:
            self.impls = [CPU] * len(self.ops)
        self.backend = self.gpu.backend if self.gpu is not None else "cpu"
        self.threads, self.window = threads, window
        self._dev_consts: dict[tuple, dict] = {}
        self._host_out: dict[int, np.ndarray] = {}
        self._plans: dict[tuple, launch_mod.Launch] = {}
        self.argmax = ArgmaxOp(len(self.ops), self.ops[-1].fout)
        self.reorder = ReorderOp(self.ops[0].fin)
        self.fused = self._fused_ops(fuse)
        self._block(fused_px)

    def _block(self, fused_px) -> None:
        """Give the fused runs the register-blocked kernels `fused_px` names (output pixels of a
        row per warp, layer_ops.blocked_px): None, 1 (every run unblocked), an int (every run
        that has a kernel with that many pixels per warp; the others unblocked) or {first layer
        of a run: pixels per warp} (each key a run's first layer, each value one its kernel
        takes; else a one-line GpuKernelError)."""
        if fused_px is None:
            return
        if isinstance(fused_px, dict):
            for first in fused_px:
                if not _index(first) or int(first) not in self.fused:
                    runs = ", ".join(f"{i}-{op.last}" for i, op in sorted(self.fused.items())) or "none"
                    raise GpuKernelError(
                        f"fused_px names layer {first!r}, the first layer of no fused run (runs: {runs})"
                    )
            wanted = {int(first): px for first, px in fused_px.items()}
            for first, px in wanted.items():
                if not _index(px):
                    raise GpuKernelError(
                        f"fused_px {{{first}: {px!r}}}: pixels per warp must be a whole number (1, 2, 4)"
                    )
        elif _index(fused_px):
            if int(fused_px) not in ANY_PX:
                raise GpuKernelError(
                    f"fused_px {fused_px!r}: no fused kernel takes that many pixels per warp "
                    f"({', '.join(map(str, ANY_PX))})"
                )
            wanted = {
                i: int(fused_px)
                for i, op in self.fused.items()
                if fused_px in blocked_px(self.ops, i, op.last)
            }
        else:
            raise GpuKernelError(
                f"fused_px {fused_px!r}: use pixels per warp (1, 2, 4) or {{first layer of a run: pixels}}"
            )
        for i, px in wanted.items():
            last = self.fused[i].last
            if px != self.fused[i].px:
                try:
                    self.fused[i] = fused_op(self.ops, i, last, px)
                except GpuKernelError as exc:
                    raise GpuKernelError(f"{_layers(i, last)}: {exc}") from None

    def _fused_ops(self, fuse) -> dict[int, FusedOp]:
        """{first layer index: fused op} for the runs of layers `fuse` names (_fused_runs):
        "auto" (at each layer, from the first, the longest run one fused kernel can compute
        whose layers are all mapped to one GPU configuration: conv + Step + MaxPool2d before
        conv + Step), one run (first, last), or a list of runs, each (first, last) or a first
        layer i (layers i and i + 1); each run one layer_ops.fusion_refusal accepts, mapped to
        one GPU configuration (else GpuKernelError)."""
        n, out = len(self.ops), {}
        runs = None if isinstance(fuse, str) and fuse == "auto" else _fused_runs(fuse, n)
        if self.gpu is None:  # every layer on the CPU: nothing to fuse
            return out
        if runs is None:  # "auto"
            i = 0
            while i < n - 1:
                run = next(
                    ((i, j) for j in (i + 2, i + 1) if j < n and self._fusion_refusal(i, j) is None),
                    None,
                )
                if run is None:
                    i += 1
                    continue
                out[i] = fused_op(self.ops, *run)
                i = run[1] + 1
            return out
        taken: dict[int, tuple] = {}  # layer -> the run it is in
        one_run = _is_run(fuse)
        for first, last in runs:
            why = self._fusion_refusal(first, last)
            if why is not None:
                hint = (
                    f" (fuse={fuse!r} is one run, layers {first}..{last}; name several runs as a "
                    f"list of runs, e.g. [({first}, {first + 1}), ({last}, {last + 1})])"
                    if one_run and last >= first + 2
                    else ""
                )
                raise GpuKernelError(f"cannot fuse {_layers(first, last)}: {why}{hint}")
            clash = next((taken[j] for j in range(first, last + 1) if j in taken), None)
            if clash is not None:
                raise GpuKernelError(
                    f"fuse names {_layers(*clash)} and {_layers(first, last)}: a layer is in one "
                    f"fused kernel at most"
                )
            taken.update({j: (first, last) for j in range(first, last + 1)})
            out[first] = fused_op(self.ops, first, last)
        return out

    def _fusion_refusal(self, first: int, last: int) -> str | None:
        """Why layers first..last cannot run as one kernel here (their types, or a mapping
        that does not put them all on one GPU configuration), or None."""
        why = fusion_refusal(self.ops, first, last)
        impls = self.impls[first : last + 1]
        if why is None and (impls[0] == CPU or len(set(impls)) > 1):
            why = f"{_layers(first, last)} are mapped to {_and(impls)}, not one GPU configuration"
        return why

    @property
    def inside_fused(self) -> frozenset:
        """The layers computed inside a fused kernel whose outputs it never writes (every layer
        of a run but its last): their `outputs` are None."""
        return frozenset(j for i, f in self.fused.items() for j in range(i, f.last))

    @property
    def cpu(self):
        """The CPU implementation, compiled on first use (a GPU-only run needs no g++)."""
        return cpu_impl()

    # -- planning ---------------------------------------------------------------------------
    def plan(self, op: Op, n: int, config: str) -> launch_mod.Launch | None:
        if op.kernel is None:
            return None
        key = (op.index, op.kernel, n, config)
        if key not in self._plans:
            limit = self.gpu.max_threads(op.kernel) if self.gpu is not None else KERNEL_MAX_THREADS
            self._plans[key] = launch_mod.plan(
                op.work(n), config, threads=self.threads, window=self.window, what=op.label, max_threads=limit
            )
        return self._plans[key]

    def consts_on_gpu(self, op: Op) -> dict:
        key = (op.index, op.kernel)  # a fused op runs as its first layer's index
        if key not in self._dev_consts:
            self._dev_consts[key] = {k: self.gpu.upload(v) for k, v in op.consts.items()}
        return self._dev_consts[key]

    # -- one layer --------------------------------------------------------------------------
    def prepare_op_gpu(self, op: Op, x, config: str):
        """(output buffer, the call that launches the layer's kernel on device buffer x);
        (x, None) for a layer with no kernel."""
        n = x.shape[0]
        if op.kernel is None:
            return x, None
        out = self.gpu.empty(op.fout.host_shape(n), op.fout.dtype)
        go = self.gpu.prepare(
            op.kernel, self.plan(op, n, config), op.kernel_args(x, out, self.consts_on_gpu(op))
        )
        return out, go

    def run_op_gpu(self, op: Op, x, config: str):
        """Launch one layer's kernel on device buffer x; returns the output buffer."""
        out, go = self.prepare_op_gpu(op, x, config)
        if go is not None:
            go()
        return out

    def _timed_gpu(self, op: Op, x, config: str, pending: list, record) -> object:
        """Run one layer on the GPU with events around the launch alone; the host's time to
        prepare and issue it goes to record.host_s (when record is a LayerRecord)."""
        t0 = time.perf_counter()
        out, go = self.prepare_op_gpu(op, x, config)
        e0 = self.gpu.event()
        if go is not None:
            go()
        pending.append((record, e0, self.gpu.event()))
        if isinstance(record, LayerRecord):
            record.host_s += time.perf_counter() - t0
        return out

    def run_op_cpu(self, op: Op, x: np.ndarray, reuse: bool = False) -> np.ndarray:
        """Run one layer on the CPU implementation. With `reuse`, the output buffer of the
        previous batch is written again: fresh large arrays cost a page fault per 4 KiB on
        first touch, which for a conv layer's int32 output takes longer than the layer."""
        if op.kernel is None:
            return x
        shape = op.fout.host_shape(x.shape[0])
        out = self._host_out.get(op.index) if reuse else None
        if out is None or out.shape != shape:
            out = np.empty(shape, op.fout.dtype)
            if reuse:
                self._host_out[op.index] = out
        op.run_cpu(self.cpu, x, out, op.consts)
        return out

    # -- whole network ----------------------------------------------------------------------
    def run(
        self, x, *, keep_outputs: bool = True, predictions: bool = True, progress: bool = False
    ) -> RunResult:
        net = self.net
        x = golden.check_input(net, x)
        n_images = x.shape[0]
        if n_images < 1:
            raise GpuKernelError("the batch is empty")
        check_int32_ranges(net, x)
        batch = self.batch or n_images
        devices = [HOST if m == CPU else GPU for m in self.impls]
        # layer -> the first layer of the fused kernel that computes it, for the later layers
        inside = {j: i for i, f in self.fused.items() for j in range(i + 1, f.last + 1)}
        for op, impl in zip(self.ops, self.impls, strict=True):  # refuse unmappable launches up front
            if impl != CPU and op.index not in inside:
                self.plan(self.fused.get(op.index, op), min(batch, n_images), impl)
        records = [
            LayerRecord(op.index, op.layer.describe(), impl, dev)
            for op, impl, dev in zip(self.ops, self.impls, devices, strict=True)
        ]
        for op, rec in zip(self.ops, records, strict=True):
            if rec.device == GPU and op.kernel is not None and op.index not in inside:
                rec.launch = self.plan(self.fused.get(op.index, op), min(batch, n_images), rec.impl).as_dict()
        transfers: dict[tuple, Transfer] = {}
        outputs = [[] for _ in self.ops] if keep_outputs else None
        scores_parts, pred_parts = [], []
        want_pred = predictions and self.ops[-1].fout.kind == "int" and not self.ops[-1].fout.spatial
        gpu = self.gpu

        def move(cur, where, to, boundary, pending, tensor="activation"):
            if where == to:
                return cur
            direction = "h2d" if to == GPU else "d2h"
            t = transfers.setdefault((boundary, direction, tensor), Transfer(boundary, direction, tensor))
            t.count += 1
            t.bytes += int(cur.nbytes)
            e0 = gpu.event()
            cur = gpu.upload(cur) if to == GPU else gpu.download(cur)
            pending.append((t, e0, gpu.event()))
            return cur

        chunks = range(0, n_images, batch)
        if progress:
            chunks = show_progress(chunks, f"{net.name} ({self.backend})", "batch")
        if gpu is not None:
            gpu.synchronize()
        t_start = time.perf_counter()
        fin0 = self.ops[0].fin
        for s in chunks:
            pending = []  # (record, start event, end event), read after a sync
            where = HOST
            if records[0].device == GPU and fin0.reorder_on_device:
                # copy the images as they are, reorder on the device: one transfer record
                t = transfers.setdefault((0, "h2d", "activation"), Transfer(0, "h2d"))
                raw = np.ascontiguousarray(x[s : s + batch], dtype=fin0.dtype)
                t.count += 1
                t.bytes += int(raw.nbytes)
                e0 = gpu.event()
                cur = self.run_op_gpu(self.reorder, gpu.upload(raw), DEFAULT_CONFIG)
                pending.append((t, e0, gpu.event()))  # copy + reorder: one record
                where = GPU
            else:
                cur = fin0.from_golden(x[s : s + batch])
            for op, rec in zip(self.ops, records, strict=True):
                if op.index in inside:  # computed inside an earlier layer's kernel
                    if keep_outputs:  # only the kernel's last layer has an output
                        last = self.fused[inside[op.index]].last == op.index
                        outputs[op.index].append(("dev", cur) if last else None)
                    continue
                cur = move(cur, where, rec.device, op.index, pending)
                where = rec.device
                if op.index in self.fused:
                    # the kernel's time goes to its last layer, as the fused CPU network's
                    fop = self.fused[op.index]
                    cur = self._timed_gpu(fop, cur, rec.impl, pending, records[fop.last])
                    if keep_outputs:
                        outputs[op.index].append(None)
                    continue
                if where == GPU:
                    cur = self._timed_gpu(op, cur, rec.impl, pending, rec)
                else:
                    t0 = time.perf_counter()
                    cur = self.run_op_cpu(op, cur, reuse=not keep_outputs)
                    rec.seconds += time.perf_counter() - t0
                if keep_outputs:
                    outputs[op.index].append(cur if where == HOST else ("dev", cur))
            if want_pred:
                if where == GPU:
                    pred = self._timed_gpu(self.argmax, cur, DEFAULT_CONFIG, pending, None)
                    pred = move(pred, GPU, HOST, len(self.ops), pending, "predictions")
                else:
                    pred = self.run_op_cpu(self.argmax, cur)
                pred_parts.append(pred)
            cur = move(cur, where, HOST, len(self.ops), pending)
            scores_parts.append(cur.copy() if not keep_outputs and where == HOST else cur)
            for rec, e0, e1 in pending:
                if rec is not None:
                    rec.seconds += gpu.elapsed_s(e0, e1)
        if gpu is not None:
            gpu.synchronize()
        wall = time.perf_counter() - t_start

        def golden_format(i, parts):
            if parts and parts[0] is None:  # the int32 tensor a fused kernel never wrote
                return None
            arrays = [gpu.download(p[1]) if isinstance(p, tuple) else p for p in parts]
            return self.ops[i].fout.to_golden(np.concatenate(arrays), net.shapes[i + 1][1])

        outs = [golden_format(i, parts) for i, parts in enumerate(outputs)] if keep_outputs else None
        last = len(self.ops) - 1
        scores = (
            outs[last]
            if keep_outputs
            else self.ops[last].fout.to_golden(np.concatenate(scores_parts), net.shapes[-1][1])
        )
        preds = np.concatenate(pred_parts).reshape(-1).astype(np.int64) if want_pred else None
        timing = (
            "GPU layers: CUDA events around each launch (host_s: host time to prepare and "
            "issue it); CPU layers and wall: perf_counter"
            if self.backend == "cupy"
            else "perf_counter (emulated GPU layers: NOT GPU timings)"
            if self.backend == "emulation"
            else "perf_counter"
        )
        return RunResult(
            outputs=outs,
            scores=scores,
            predictions=preds,
            layers=records,
            transfers=sorted(transfers.values(), key=lambda t: (t.boundary, t.direction)),
            backend=self.backend,
            device_name=getattr(gpu, "device_name", None),
            word_bits=self.word_bits,
            batch=batch,
            n_images=n_images,
            wall_s=wall,
            timing=timing,
            fused_gpu=[
                {"first": i, "last": f.last, "kernel": f.kernel} for i, f in sorted(self.fused.items())
            ],
        )


def _layers(first: int, last: int) -> str:
    """'layers 3 and 4', 'layers 3, 4 and 5'."""
    return "layers " + _and([str(j) for j in range(first, last + 1)])


def _and(items) -> str:
    items = [str(x) for x in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _index(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _is_run(fuse) -> bool:
    """`fuse` is one run (first, last): a tuple or list of exactly two layer indices."""
    return isinstance(fuse, (tuple, list)) and len(fuse) == 2 and all(_index(v) for v in fuse)


def _fused_runs(fuse, n: int) -> list[tuple[int, int]]:
    """The (first, last) runs `fuse` names (anything but "auto"): a tuple or list of two layer
    indices is ONE run (first, last) (`fuse=(0, 2)`: layers 0, 1 and 2); any other tuple or list
    is a list of runs, each a (first, last) pair or a first layer i (layers i and i + 1), so
    `[(0, 2), (3, 5)]`, `[0, 3, 7]` or `[(0, 1), (3, 4)]`; None or empty: none. Anything else is
    a one-line GpuKernelError."""
    if fuse is None:
        return []
    if _is_run(fuse):
        return [_fused_run(fuse, n)]
    if isinstance(fuse, (tuple, list)):
        return [_fused_run(entry, n) for entry in fuse]
    raise GpuKernelError(
        f"fuse {fuse!r}: use 'auto', one run (first, last), or a list of runs, each (first, last) or "
        f"a first layer i (layers i and i + 1)"
    )


def _fused_run(entry, n: int) -> tuple[int, int]:
    """An entry of `fuse`: i (layers i and i + 1) or (first, last), checked against n layers."""
    index = _index
    if index(entry):
        if not 0 <= entry < n - 1:
            raise GpuKernelError(f"fuse names layer {entry!r}; a fused pair starts at one of 0..{n - 2}")
        return int(entry), int(entry) + 1
    if isinstance(entry, (tuple, list)) and len(entry) == 2 and all(index(v) for v in entry):
        first, last = int(entry[0]), int(entry[1])
        if 0 <= first < last < n:
            return first, last
    raise GpuKernelError(
        f"fuse names {entry!r}; name a first layer i (layers i and i + 1) or a (first, last) pair, "
        f"0 <= first < last <= {n - 1}"
    )


def run_network(
    net,
    x,
    mapping=None,
    backend: str = "auto",
    word_bits: int = 32,
    batch: int | None = None,
    *,
    keep_outputs: bool = True,
    predictions: bool = True,
    threads: int = launch_mod.DEFAULT_THREADS,
    window: int | None = None,
    progress: bool = False,
    step_kernel: str = "thread",
    fuse=None,
    fused_px=None,
) -> RunResult:
    """Run `net` (ir.Network, .onnx path or onnx.ModelProto) on the batch `x` (golden input
    format, [N, *net.input_shape]).

    mapping: None (every layer on configuration "X"), "cpu" or a configuration for every layer,
    a list with one per layer, {layer index: impl}, or a mapper Mapping / Choice.
    backend: "auto" (CuPy if a CUDA device is usable, else the emulation), "cupy", "emulation",
    or "cpu" (every layer on the CPU implementation, whatever the mapping says).
    batch: images per pass (default: the mapping's, else all at once).
    step_kernel: "thread" (step_pack, a thread per packed word) or "warp" (step_pack_warp, a
    warp per word, __ballot_sync) for the Step layers on the GPU.
    fuse: runs of layers to compute in one kernel (IntConv2d or BinConv2d + Step (+ MaxPool2d),
    BinDense + Step; layer_ops.FUSED_PATTERNS): one run (first, last) (a tuple or list of two
    layer indices: `(0, 2)` is layers 0..2), a list of runs, each (first, last) or a first
    layer i (layers i and i + 1): `[(0, 2), (3, 5)]`, `[0, 3]` is NOT two pairs but the run 0..3
    (write `[(0, 1), (3, 4)]`); "auto" (the longest such runs mapped to one GPU configuration),
    or None (the mapping's fused runs, if it is a mapper Choice/Mapping; else none). Only a
    run's last layer has an output: the others' entries in `outputs` are None.
    fused_px: output pixels of a row per warp of the fused BinConv2d runs (the register-blocked
    kernels, same results): an int for every run that has such a kernel, {first layer of a
    run: pixels}, or None (the mapping's choice, if it is a mapper Choice/Mapping whose runs are
    taken; else 1, the unblocked kernels).
    Returns a RunResult: every layer's output in golden format (keep_outputs), scores,
    predictions (first max), per-layer seconds, the host<->device transfers, the backend used.
    """
    runner = Runner(
        net,
        mapping,
        backend,
        word_bits,
        batch,
        threads=threads,
        window=window,
        step_kernel=step_kernel,
        fuse=fuse,
        fused_px=fused_px,
    )
    return runner.run(x, keep_outputs=keep_outputs, predictions=predictions, progress=progress)
