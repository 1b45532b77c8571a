"""The CPU implementation of every layer (cpu/bnn_cpu.cpp through ctypes): the mapper's "cpu"
choice. It uses the GPU kernels' data formats, so switching device is a plain copy."""

from __future__ import annotations

import ctypes
import functools
import os

import numpy as np

from gpu_kernels import build
from gpu_kernels.errors import GpuKernelError
from models.checks import INT32_MAX, INT32_MIN

_P, _I, _L = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64
_CONV = [_P, _P, _P, _P, _I, _I, _I, _I, _I, _I]
_SIGNATURES = {
    "cpu_int_conv3x3_u8": _CONV,
    "cpu_int_conv3x3_i32": _CONV,
    "cpu_bin_conv3x3_w32": _CONV,
    "cpu_bin_conv3x3_w64": _CONV,
    "cpu_step_pack_w32": [_P, _P, _P, _P, _L, _I],
    "cpu_step_pack_w64": [_P, _P, _P, _P, _L, _I],
    "cpu_maxpool2x2_int": [_P, _P, _I, _I, _I, _I],
    "cpu_maxpool2x2_w32": [_P, _P, _I, _I, _I, _I],
    "cpu_maxpool2x2_w64": [_P, _P, _I, _I, _I, _I],
    "cpu_flatten_int": [_P, _P, _I, _I, _I],
    "cpu_flatten_packed_w32": [_P, _P, _I, _I, _I],
    "cpu_flatten_packed_w64": [_P, _P, _I, _I, _I],
    "cpu_bin_dense_w32": [_P, _P, _P, _P, _I, _I, _I],
    "cpu_bin_dense_w64": [_P, _P, _P, _P, _I, _I, _I],
    "cpu_argmax_scores": [_P, _P, _I, _I],
    "cpu_set_threads": [_I],
    "cpu_max_threads": [],
    # the fused network (FusedCpuNetwork)
    "cpu_fused_int_conv": [_P, _P, _P, _P, _P, _I, _I, _I, _I, _I, _I, _I],
    "cpu_fused_bin_conv": [_P, _P, _P, _P, _P, _P, _I, _I, _I, _I, _I, _I, _I],
    "cpu_fused_dense": [_P, _P, _P, _P, _P, _P, _I, _I, _I, _I],
}


class CpuImpl:
    def __init__(self, portable: bool = False):
        # Idle OpenMP threads sleep instead of spinning: on a shared (oversubscribed) machine a
        # spinning thread takes the core the working one needs, which made two threads several
        # times slower than one. Read by libgomp when it loads, i.e. with this library.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        self._lib = ctypes.CDLL(str(build.cpu_library(portable)))
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(self._lib, name)
            fn.argtypes = argtypes
            fn.restype = ctypes.c_int if name == "cpu_max_threads" else None

    def call(self, name: str, *args) -> None:
        conv = []
        for a in args:
            if isinstance(a, np.ndarray):
                assert a.flags.c_contiguous, f"{name}: arrays must be C-contiguous"
                conv.append(a.ctypes.data)
            else:
                conv.append(int(a))
        getattr(self._lib, name)(*conv)

    def set_threads(self, n: int) -> None:
        """OpenMP threads of the CPU implementation (default: all cores)."""
        self._lib.cpu_set_threads(int(n))

    @property
    def max_threads(self) -> int:
        return int(self._lib.cpu_max_threads())


@functools.lru_cache(maxsize=2)
def cpu_impl(portable: bool = False) -> CpuImpl:
    """The CPU implementation built for this machine (or, portable=True, without AVX-512)."""
    return CpuImpl(portable)


# ---------------------------------------------------------------------------------------------
# The fused network: a whole HEP-BNN-pattern network on the CPU, every Step inside the layer
# before it and every max pooling after a Step inside it too (cpu/bnn_cpu.cpp, "fused").
# ---------------------------------------------------------------------------------------------
_FB, _FQ = 16, 8  # filters per vector register: int32 and uint64 lanes


def _round_up(v: int, m: int) -> int:
    return -(-v // m) * m


def _pop_bounds(base: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """[plo, phi] of popcounts p with lo <= base - 2 p <= hi (int64; empty where lo > hi)."""
    base, lo, hi = (np.asarray(a, dtype=np.int64) for a in (base, lo, hi))
    return -((hi - base) // 2), (base - lo) // 2  # ceil((base - hi) / 2), floor(...)


def _pack_rows(pm1_rows: np.ndarray) -> np.ndarray:
    """+-1 [F, K] -> uint64 words [F, ceil(K / 64)] (a -1 is a 0 bit, as padding is)."""
    from models.numerics import bnn

    return bnn.pack_bits(pm1_rows, 64)


class _Stage:
    """One fused kernel: a conv or dense layer with the Step (and max pooling) after it."""

    kind = ""
    macs_per_image = 0
    last = 0  # golden index of the layer whose output this stage writes

    def label(self, net) -> str:
        names = [net.layers[i].describe() for i in range(self.first, self.last + 1)]
        return " + ".join(names)


class _IntConvStage(_Stage):
    kind = "int"

    def __init__(self, first, conv, step, pool, in_shape):
        from gpu_kernels.layer_ops import step_bounds

        c, h, w = in_shape
        f = conv.weight.shape[0]
        if 255 * 9 * c >= INT32_MAX:
            raise GpuKernelError(f"layer {first}: {c} channels are too many for the fused kernel")
        self.first, self.last = first, first + 1 + bool(pool)
        self.c, self.h, self.w, self.f, self.pad, self.pool = c, h, w, f, conv.padding, pool
        # per window row ky: its 3 * C bytes (kx, c) rounded up to groups of 4, zero weights on
        # the bytes past them; [3][groups][Fp][4] (4 bytes of one filter in one 32-bit lane)
        r4, fp = _round_up(3 * c, 4), _round_up(f, _FB)
        wk = np.zeros((3, r4, fp), dtype=np.int8)
        wk[:, : 3 * c, :f] = conv.weight.transpose(2, 3, 1, 0).reshape(3, 3 * c, f)
        self.wq = np.ascontiguousarray(wk.reshape(3, r4 // 4, 4, fp).transpose(0, 1, 3, 2))
        lo, hi = step_bounds(step.threshold, step.direction)
        b = conv.bias.astype(np.int64)
        # the sum sits well inside int32, so clipping keeps every comparison (and empty ranges
        # empty)
        self.dlo = np.clip(lo - b, INT32_MIN, INT32_MAX).astype(np.int32)
        self.dhi = np.clip(hi - b, INT32_MIN, INT32_MAX).astype(np.int32)
        ho, wo = h + 2 * conv.padding - 2, w + 2 * conv.padding - 2
        self.out_shape = (f, ho // 2, wo // 2) if pool else (f, ho, wo)
        self.macs_per_image = ho * wo * f * 9 * c

    def run(self, lib, x):
        n = x.shape[0]
        f, hq, wq = self.out_shape
        out = np.empty((n, hq, wq, -(-f // 64)), dtype=np.uint64)
        lib.call(
            "cpu_fused_int_conv",
            x,
            self.wq,
            self.dlo,
            self.dhi,
            out,
            n,
            self.h,
            self.w,
            self.c,
            f,
            self.pad,
            int(self.pool),
        )
        return out


class _BinConvStage(_Stage):
    kind = "bin"

    def __init__(self, first, conv, step, pool, in_shape):
        from gpu_kernels.layer_ops import step_bounds
        from models.numerics import bnn

        c, h, w = in_shape
        f, pad = conv.weight.shape[0], conv.padding
        self.first, self.last = first, first + 1 + bool(pool)
        self.c, self.h, self.w, self.f, self.pad, self.pool = c, h, w, f, pad, pool
        nw, fq = -(-c // 64), _round_up(f, _FQ)
        packed = bnn.pack_bits(conv.weight.transpose(2, 3, 0, 1), 64)  # [3, 3, F, nw]
        wt = np.zeros((9, nw, fq), dtype=np.uint64)
        wt[:, :, :f] = packed.reshape(9, f, nw).transpose(0, 2, 1)
        self.wt = np.ascontiguousarray(wt)
        ho, wo = h + 2 * pad - 2, w + 2 * pad - 2
        # pixels with the same in-frame taps share bounds: the border's zero words add the
        # popcount of the weights of the missing taps, which the bounds take back
        ys, xs = np.mgrid[0:ho, 0:wo]
        inside = np.stack(
            [
                ((ys + ky - pad >= 0) & (ys + ky - pad < h) & (xs + kx - pad >= 0) & (xs + kx - pad < w))
                for ky in range(3)
                for kx in range(3)
            ]
        )
        masks, cls = np.unique(inside.reshape(9, -1).T, axis=0, return_inverse=True)
        self.cls = np.ascontiguousarray(cls.reshape(-1), dtype=np.int32)
        wpop = bnn.popcount(packed.reshape(9, f, nw)).sum(axis=2).astype(np.int64)  # [9, F]
        lo, hi = step_bounds(step.threshold, step.direction)
        plo = np.zeros((len(masks), fq), dtype=np.int64)
        phi = np.full((len(masks), fq), -1, dtype=np.int64)
        for k, mask in enumerate(masks):
            base = conv.bias.astype(np.int64) + int(mask.sum()) * c + 2 * wpop[~mask].sum(axis=0)
            plo[k, :f], phi[k, :f] = _pop_bounds(base, lo, hi)
        self.plo, self.phi = plo, phi
        self.out_shape = (f, ho // 2, wo // 2) if pool else (f, ho, wo)
        self.macs_per_image = ho * wo * f * 9 * c

    def run(self, lib, x):
        n = x.shape[0]
        f, hq, wq = self.out_shape
        out = np.empty((n, hq, wq, -(-f // 64)), dtype=np.uint64)
        lib.call(
            "cpu_fused_bin_conv",
            x,
            self.wt,
            self.plo,
            self.phi,
            self.cls,
            out,
            n,
            self.h,
            self.w,
            self.c,
            f,
            self.pad,
            int(self.pool),
        )
        return out


class _DenseStage(_Stage):
    kind = "bin"

    def __init__(self, first, dense, step, flat_from):
        """flat_from: (C, H, W) when the input is a Flatten of packed NHWC words (the
        weights are reordered to that bit order), else None (features in order)."""
        from gpu_kernels.layer_ops import step_bounds

        f, k = dense.weight.shape
        self.first = first - (flat_from is not None)
        self.last = first + (step is not None)
        self.f, self.step = f, step is not None
        if flat_from is not None:
            c, h, w = flat_from
            nw = -(-c // 64)
            # bit b of word j of pixel s is channel 64 j + b: flat feature c * H * W + s
            s, j, b = np.meshgrid(np.arange(h * w), np.arange(nw), np.arange(64), indexing="ij")
            ch = (64 * j + b).reshape(-1)
            feat = np.where(ch < c, ch * h * w + s.reshape(-1), -1)
            rows = np.where(feat >= 0, dense.weight[:, np.maximum(feat, 0)], -1)
        else:
            rows = dense.weight
        words = _pack_rows(rows.astype(np.int8))  # [F, kw]
        self.kw = words.shape[1]
        fq = _round_up(f, _FQ)
        wt = np.zeros((self.kw, fq), dtype=np.uint64)
        wt[:, :f] = words.T
        self.wt = np.ascontiguousarray(wt)
        base = dense.bias.astype(np.int64) + k
        self.base = np.clip(base, INT32_MIN, INT32_MAX).astype(np.int32)
        self.plo = np.zeros(fq, dtype=np.int64)
        self.phi = np.full(fq, -1, dtype=np.int64)
        if step is not None:
            lo, hi = step_bounds(step.threshold, step.direction)
            self.plo[:f], self.phi[:f] = _pop_bounds(base, lo, hi)
        self.out_shape = (f,)
        self.macs_per_image = f * k

    def run(self, lib, x):
        n = x.shape[0]
        x = np.ascontiguousarray(x.reshape(n, -1))
        assert x.shape[1] == self.kw, (x.shape, self.kw)
        out = (
            np.empty((n, -(-self.f // 64)), dtype=np.uint64)
            if self.step
            else np.empty((n, self.f), dtype=np.int32)
        )
        lib.call(
            "cpu_fused_dense",
            x,
            self.wt,
            self.plo,
            self.phi,
            self.base,
            out,
            n,
            self.kw,
            self.f,
            int(self.step),
        )
        return out


class FusedCpuNetwork:
    """A BNN of the HEP-BNN pattern ([IntConv2d|BinConv2d, Step, MaxPool2d?]*, Flatten,
    [BinDense, Step]*, BinDense) on the CPU in a few fused kernels: every Step is computed
    inside the conv or dense layer before it (bounds on the popcount or sum), every max pooling
    after a Step inside the conv too (OR of packed words), the Flatten folded into the next
    layer's weight order. Only the fused kernels' outputs exist; each equals the golden output
    of its last layer. Other networks raise GpuKernelError (the per-layer Runner runs them)."""

    def __init__(self, net, portable: bool = False):
        self.net = net
        self.stages = plan_stages(net)  # refuses other networks before anything is built
        self.lib = cpu_impl(portable)

    @property
    def kernels(self) -> list[tuple[int, int]]:
        """(first, last) golden layer index of what each fused kernel computes; only the last
        one's output exists."""
        return [(st.first, st.last) for st in self.stages]

    def _input(self, x: np.ndarray) -> np.ndarray:
        from models.numerics import bnn

        first = self.net.layers[0]
        from models import ir

        if isinstance(first, ir.IntConv2d):
            return np.ascontiguousarray(x.transpose(0, 2, 3, 1), dtype=np.uint8)
        if isinstance(first, ir.BinConv2d):
            return bnn.pack_nchw(x, 64)
        return bnn.pack_bits(x, 64)

    def run(self, x, threads: int | None = None, keep_outputs: bool = False):
        """Run the batch; returns FusedResult. `keep_outputs`: every stage's output in golden
        format (unpacked), by the golden index of its last layer."""
        import time

        from gpu_kernels.layer_ops import check_int32_ranges
        from models import golden
        from models.numerics import bnn

        x = golden.check_input(self.net, x)
        check_int32_ranges(self.net, x)
        if threads:
            self.lib.set_threads(threads)
        cur, seconds, outputs = self._input(x), [], {}
        for st in self.stages:
            t0 = time.perf_counter()
            cur = st.run(self.lib, cur)
            seconds.append(time.perf_counter() - t0)
            if keep_outputs or st is self.stages[-1]:
                outputs[st.last] = self._golden_format(st, cur, bnn)
        return FusedResult(
            outputs[self.stages[-1].last],
            outputs,
            seconds,
            [st.label(self.net) for st in self.stages],
            [st.macs_per_image for st in self.stages],
            [st.kind for st in self.stages],
        )

    def time(self, x, repeats: int = 3, warmup: int = 0, threads: int | None = None) -> FusedTiming:
        """Run the batch `repeats` times (after `warmup` untimed runs), without keeping the
        intermediate outputs, and return the run of median wall time (statistics.median_low:
        of an even count, the faster of the two middle runs, since a run's time is one run's,
        its kernels' times with it): its seconds (perf_counter around `run`: the input's checks
        and layout and every kernel), its kernels' seconds and its scores."""
        import time

        for _ in range(warmup):
            self.run(x, threads)
        runs = []
        for _ in range(max(1, repeats)):
            t0 = time.perf_counter()
            res = self.run(x, threads)
            runs.append((time.perf_counter() - t0, res))
        wall, res = sorted(runs, key=lambda r: r[0])[(len(runs) - 1) // 2]  # median_low
        return FusedTiming(wall, list(res.stage_s), res.scores, self.lib.max_threads, self.kernels)

    @staticmethod
    def _golden_format(st, out, bnn):
        if out.dtype == np.int32:
            return out
        if len(st.out_shape) == 1:
            return bnn.unpack_bits(out, st.out_shape[0])
        return bnn.unpack_nhwc(out, st.out_shape[0])


def plan_stages(net) -> list:
    """The fused kernels of `net` (FusedCpuNetwork's plan), or GpuKernelError naming the first
    layer outside the pattern."""
    from models import ir

    layers = net.layers
    if net.input_kind != "uint8" and not isinstance(layers[0], (ir.BinConv2d, ir.BinDense)):
        raise GpuKernelError(f"the fused CPU network takes uint8 or binary input, not {net.input_kind}")
    stages, i, flat_from = [], 0, None
    while i < len(layers):
        layer, shape = layers[i], net.shapes[i][0]
        nxt = layers[i + 1] if i + 1 < len(layers) else None
        if isinstance(layer, (ir.IntConv2d, ir.BinConv2d)):
            if not isinstance(nxt, ir.Step):
                raise GpuKernelError(
                    f"{layer.label(i)}: the fused CPU network needs a Step after every convolution"
                )
            pool = i + 2 < len(layers) and isinstance(layers[i + 2], ir.MaxPool2d)
            if isinstance(layer, ir.IntConv2d):
                if i != 0:
                    raise GpuKernelError(f"{layer.label(i)}: an integer convolution must be the first layer")
                stages.append(_IntConvStage(i, layer, nxt, pool, shape))
            else:
                stages.append(_BinConvStage(i, layer, nxt, pool, shape))
            i += 3 if pool else 2
        elif isinstance(layer, ir.Flatten) and isinstance(nxt, ir.BinDense):
            flat_from = shape
            i += 1
        elif isinstance(layer, ir.BinDense):
            step = nxt if isinstance(nxt, ir.Step) else None
            stages.append(_DenseStage(i, layer, step, flat_from))
            flat_from = None
            i += 2 if step is not None else 1
        else:
            raise GpuKernelError(
                f"{layer.label(i)}: not in the fused CPU network's pattern "
                f"(conv + Step [+ MaxPool], Flatten, dense [+ Step])"
            )
    return stages


def fused_support(net) -> str | None:
    """None when FusedCpuNetwork runs `net`, else why not (one line, for reports)."""
    from gpu_kernels.layer_ops import supports

    if not supports(net):
        from gpu_kernels.layer_ops import SUPPORTED_LAYERS

        i, layer = next((i, la) for i, la in enumerate(net.layers) if type(la) not in SUPPORTED_LAYERS)
        return f"the fused CPU network runs BNN layers only; layer {i} is a {layer.type_name}"
    try:
        plan_stages(net)
    except GpuKernelError as exc:
        return str(exc)
    return None


def _random_input(net, n: int, rng: np.random.Generator) -> np.ndarray:
    """A batch of `n` valid inputs of `net` (uint8 pixels or +-1), for timing."""
    shape = (n, *net.input_shape)
    if net.input_kind == "uint8":
        return rng.integers(0, 256, size=shape, dtype=np.uint8)
    return np.where(rng.random(shape) < 0.5, -1, 1).astype(np.int8)


def measure_fused(
    net, batch_sizes, repeats: int = 5, warmup: int = 2, threads: int | None = None, seed: int = 0
) -> dict:
    """The fused CPU network's measured time for a batch of b images, for each batch size:
    the mapper's whole-network CPU candidate (gpu_kernels.mapper, `fused_cpu`). A JSON-ready
    dict: `batch_s` {b: seconds per batch} (the median run's wall time: input checks and
    layout, every kernel; FusedCpuNetwork.time), `layer_s` {b: seconds per layer}
    (FusedTiming.layer_s), `kernels` [[first, last]], `threads`, `source`; or only `reason`
    when the fused network cannot run `net`."""
    reason = fused_support(net)
    if reason is not None:
        return {"reason": reason}
    fused = FusedCpuNetwork(net)
    rng = np.random.default_rng(seed)
    batch_s, layer_s = {}, {}
    for b in sorted({int(b) for b in batch_sizes}):
        t = fused.time(_random_input(net, b, rng), repeats, warmup, threads)
        batch_s[str(b)], layer_s[str(b)] = t.wall_s, t.layer_s(len(net.layers))
    return {
        "source": f"measured: fused CPU network (gpu_kernels/cpu_impl.py), {t.threads} threads, "
        + ("one run" if repeats <= 1 else f"median of {repeats} runs" + _LOWER[repeats % 2 == 0]),
        "threads": t.threads,
        "repeats": max(1, repeats),
        "warmup": warmup,
        "kernels": [list(k) for k in fused.kernels],
        "batch_s": batch_s,
        "layer_s": layer_s,
    }


_LOWER = {False: "", True: " (the faster middle one)"}  # median_low of an even count


class FusedTiming:
    def __init__(self, wall_s, stage_s, scores, threads, kernels):
        self.wall_s = wall_s  # one run: the input's checks and layout, every kernel
        self.stage_s = stage_s  # seconds per fused kernel in that run
        self.scores = scores  # that run's output, golden format
        self.threads = threads  # OpenMP threads
        self.kernels = kernels  # (first, last) layer of each fused kernel

    def layer_s(self, n_layers: int) -> list[float]:
        """The run's seconds spread onto the network's `n_layers` layers: each fused kernel's
        time on the last layer it computes, 0 on the layers computed inside it; the rest of
        the wall time (the input's checks and layout, before the first kernel) is charged to
        the first kernel, on its last layer. The layers add up to `wall_s`."""
        per_layer = [0.0] * n_layers
        for (_, last), s in zip(self.kernels, self.stage_s, strict=True):
            per_layer[last] += s
        per_layer[self.kernels[0][1]] += max(0.0, self.wall_s - sum(self.stage_s))
        return per_layer


class FusedResult:
    def __init__(self, scores, outputs, stage_s, labels, macs_per_image, kinds):
        self.scores = scores  # the network's output, golden format
        self.outputs = outputs  # golden layer index -> output (keep_outputs)
        self.stage_s = stage_s  # seconds per fused kernel
        self.labels = labels
        self.macs_per_image = macs_per_image  # per fused kernel
        self.kinds = kinds  # "int" (integer x +-1) or "bin" (xor-popcount)

    @property
    def predictions(self) -> np.ndarray:
        from models.numerics import bnn

        return bnn.argmax(self.scores.reshape(len(self.scores), -1))
