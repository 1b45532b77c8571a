"""Network layers prepared for the kernels: data formats, constant tensors in kernel layout,
the output index space of each kernel, its arguments, and the matching CPU-implementation call.

Formats (identical on the GPU and in the CPU implementation):
  int spatial    int32 NHWC [N, H, W, C]   (uint8 NHWC only for a uint8 input feeding IntConv2d)
  int flat       int32 [N, K]
  binary spatial packed NHWC words [N, H, W, ceil(C / B)]  (models.numerics.bnn.pack_nchw)
  binary flat    packed words [N, ceil(K / B)], flat index k in NCHW order (bnn.pack_bits)
Packing, unpacking and padding rules are those of models/numerics/bnn.py, reused here.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from gpu_kernels.errors import GpuKernelError
from gpu_kernels.kernel_table import BLOCKED_PX, bin_fused_weight_bytes, fused_weight_words
from gpu_kernels.launch import Work
from models import ir
from models.checks import INT32_MAX, INT32_MIN
from models.numerics import bnn


@dataclass(frozen=True)
class Fmt:
    """How one tensor of the network is held by the kernels."""

    kind: str  # "int" (int32), "uint8" (network input only) or "binary" (packed)
    shape: tuple  # per image: (C, H, W) or (K,)
    word_bits: int

    @property
    def spatial(self) -> bool:
        return len(self.shape) == 3

    @property
    def channels(self) -> int:
        return self.shape[0]

    @property
    def words(self) -> int:
        return bnn.words_for(self.shape[0], self.word_bits)

    @property
    def dtype(self):
        if self.kind == "binary":
            return bnn.WORD_DTYPES[self.word_bits]
        return np.uint8 if self.kind == "uint8" else np.int32

    def host_shape(self, n: int) -> tuple:
        last = self.words if self.kind == "binary" else self.shape[0]
        return (n, *self.shape[1:], last)

    def nbytes(self, n: int) -> int:
        return int(np.prod(self.host_shape(n), dtype=np.int64)) * np.dtype(self.dtype).itemsize

    @property
    def reorder_on_device(self) -> bool:
        """An integer image batch is copied as it comes (NCHW) and reordered to NHWC on the
        device (cuda/layout.cu) when the first layer runs there."""
        return self.spatial and self.kind != "binary" and self.channels > 1

    def from_golden(self, x: np.ndarray) -> np.ndarray:
        """Golden-format batch (NCHW or [N, K]) -> kernel format."""
        if self.kind == "binary":
            packed = bnn.pack_nchw(x, self.word_bits) if self.spatial else bnn.pack_bits(x, self.word_bits)
            return np.ascontiguousarray(packed)
        a = x.transpose(0, 2, 3, 1) if self.spatial else x
        return np.ascontiguousarray(a, dtype=self.dtype)

    def to_golden(self, a: np.ndarray, golden_kind: str) -> np.ndarray:
        """Kernel format -> golden format (unpacking refuses set padding bits)."""
        if self.kind == "binary":
            return bnn.unpack_nhwc(a, self.channels) if self.spatial else bnn.unpack_bits(a, self.channels)
        out = a.transpose(0, 3, 1, 2) if self.spatial else a
        return np.ascontiguousarray(out).astype(ir.KIND_DTYPE[golden_kind], copy=False)


def step_bounds(threshold, direction) -> tuple[np.ndarray, np.ndarray]:
    """int32 [lo, hi] per channel such that lo <= x <= hi exactly where the golden step is +1
    for every int32 x (x >= t for direction +1, x <= t for -1). Thresholds outside int32 give an
    always-on range [INT32_MIN, INT32_MAX] or the empty range [1, 0]."""
    t = np.asarray(threshold, dtype=np.int64)
    up = np.asarray(direction) > 0
    lo = np.where(up, np.clip(t, INT32_MIN, None), INT32_MIN)
    hi = np.where(up, INT32_MAX, np.clip(t, None, INT32_MAX))
    never = np.where(up, t > INT32_MAX, t < INT32_MIN)
    lo = np.where(never, 1, lo)
    hi = np.where(never, 0, hi)
    return lo.astype(np.int32), hi.astype(np.int32)


@dataclass
class Op(ABC):
    """One layer ready to run. `consts` are host arrays uploaded once per device."""

    index: int
    layer: ir.Layer
    fin: Fmt
    fout: Fmt
    consts: dict = field(default_factory=dict)
    kernel: str | None = None  # kernel_table key; None for a no-op (flatten of a flat tensor)

    @property
    def label(self) -> str:
        return self.layer.label(self.index)

    @abstractmethod
    def work(self, n: int) -> Work:
        """The kernel's output index space for a batch of n images."""

    @abstractmethod
    def kernel_args(self, x, out, c: dict) -> list:
        """The kernel's arguments after SPLIT_PARAMS."""

    def run_cpu(self, lib, x: np.ndarray, out: np.ndarray, c: dict) -> None:
        """The CPU implementation's version of this layer (every layer op has one; the
        device-side reorder of the input does not)."""
        raise GpuKernelError(f"{type(self).__name__} runs only on the GPU")


def _wsuffix(bits: int) -> str:
    return f"w{bits}"


class ConvOp(Op):
    def __init__(self, index, layer, fin, fout):
        super().__init__(index, layer, fin, fout)
        w = layer.weight  # +-1 int8 [F, C, 3, 3]
        f, c = w.shape[:2]
        if isinstance(layer, ir.BinConv2d):
            packed = bnn.pack_bits(w.transpose(2, 3, 0, 1), fin.word_bits)  # [3, 3, F, nw]
            self.consts["w"] = np.ascontiguousarray(packed.transpose(0, 1, 3, 2).reshape(9, -1, f))
            self.kernel = f"bin_conv3x3/{_wsuffix(fin.word_bits)}"
            self._cpu = f"cpu_bin_conv3x3_{_wsuffix(fin.word_bits)}"
        else:
            self.consts["w"] = np.ascontiguousarray(w.transpose(2, 3, 1, 0).reshape(9, c, f), dtype=np.int8)
            suffix = "u8" if fin.kind == "uint8" else "i32"
            self.kernel = f"int_conv3x3/{suffix}"
            self._cpu = f"cpu_int_conv3x3_{suffix}"
        self.consts["bias"] = np.ascontiguousarray(layer.bias, dtype=np.int32)

    def work(self, n):
        f, ho, wo = self.fout.shape
        return Work(n, ho * wo, f, row=wo)

    def kernel_args(self, x, out, c):
        cin, h, w = self.fin.shape
        return [x, c["w"], c["bias"], out, h, w, cin, self.layer.padding, self.fout.shape[2]]

    def run_cpu(self, lib, x, out, c):
        cin, h, w = self.fin.shape
        lib.call(
            self._cpu,
            x,
            c["w"],
            c["bias"],
            out,
            x.shape[0],
            h,
            w,
            cin,
            self.fout.shape[0],
            self.layer.padding,
        )


# The Step layer's two kernels (cuda/step.cu), the same result: "thread" = step_pack, a thread
# per output word; "warp" = step_pack_warp, a warp per output word packed by __ballot_sync from
# contiguous loads.
STEP_KERNELS = {"thread": "step_pack", "warp": "step_pack_warp"}


class StepOp(Op):
    def __init__(self, index, layer, fin, fout, step_kernel: str = "thread"):
        super().__init__(index, layer, fin, fout)
        self.consts["lo"], self.consts["hi"] = step_bounds(layer.threshold, layer.direction)
        self.kernel = f"{STEP_KERNELS[step_kernel]}/{_wsuffix(fout.word_bits)}"

    def _pixels(self):
        return int(np.prod(self.fin.shape[1:], dtype=np.int64)) if self.fin.spatial else 1

    def work(self, n):
        return Work(n, self._pixels(), self.fout.words, row=self.fin.shape[2] if self.fin.spatial else 1)

    def kernel_args(self, x, out, c):
        return [x, c["lo"], c["hi"], out, self.fin.channels]

    def run_cpu(self, lib, x, out, c):
        lib.call(
            f"cpu_step_pack_{_wsuffix(self.fout.word_bits)}",
            x,
            c["lo"],
            c["hi"],
            out,
            x.shape[0] * self._pixels(),
            self.fin.channels,
        )


FUSED_WEIGHT_WORDS = fused_weight_words()  # int_conv.cu: the shared-memory tile of weight bits
BIN_FUSED_WEIGHT_BYTES = bin_fused_weight_bytes()  # bin_conv.cu: the shared tile of packed weights

# What runs as one kernel (first layer .. last layer), by the layers' types:
#   IntConv2d, Step            int_conv_step_pack        (cuda/int_conv.cu)
#   IntConv2d, Step, MaxPool2d int_conv_step_pool_pack
#   BinConv2d, Step            bin_conv_step_pack        (cuda/bin_conv.cu)
#   BinConv2d, Step, MaxPool2d bin_conv_step_pool_pack
#   BinDense, Step             bin_dense_step_pack       (cuda/dense.cu)
# A BinConv2d run also has register-blocked kernels, PX output pixels of a row per warp
# (bin_conv_step_pack_px, bin_conv_step_pool_pack_px; kernel_table.BLOCKED_PX): the same result.
FUSED_PATTERNS = "IntConv2d or BinConv2d + Step (+ MaxPool2d), BinDense + Step"


@dataclass(frozen=True)
class FusionPart:
    """What the fusion rule (fusion_refusal) looks at of one layer: its type's name, its label
    for messages, and its channels in and out (an IntConv2d's decide whether its weight bits fit
    the shared tile)."""

    kind: str  # "IntConv2d", "BinConv2d", "Step", "MaxPool2d", "Flatten", "BinDense", ...
    label: str
    channels_in: int = 0
    channels_out: int = 0


def _op_part(op: Op) -> FusionPart:
    kind = op.layer.type_name
    if kind == "IntConv2d":
        return FusionPart(kind, op.label, op.fin.channels, op.fout.channels)
    return FusionPart(kind, op.label)


# describe() of each BNN layer type (models/ir.py) -> the type's name
_DESCRIBED_KINDS = {"MaxPool": "MaxPool2d"}


def _described_part(index: int, text: str) -> FusionPart:
    """A FusionPart from a layer's describe() (what a profile keeps of its network's layers:
    "IntConv2d 1->64 3x3 pad 1", "Step 64 ch", "MaxPool 2x2", "BinDense 3136->64", ...)."""
    words = str(text).split()
    kind = _DESCRIBED_KINDS.get(words[0], words[0]) if words else ""
    label = f"layer {index} ({text})"
    if kind == "IntConv2d" and len(words) > 1 and "->" in words[1]:
        c, _, f = words[1].partition("->")
        if c.isdigit() and f.isdigit():
            return FusionPart(kind, label, int(c), int(f))
    return FusionPart(kind, label)


def fusion_refusal(ops: list[Op], first: int, last: int) -> str | None:
    """Why layers first..last of `ops` cannot run as one kernel, or None when they can: a conv
    (IntConv2d or BinConv2d) and the Step after it, optionally with the 2x2 MaxPool2d after
    that, or a BinDense and the Step after it; an IntConv2d's weight bits, 9 * C * ceil(F / 32)
    words, must fit the kernel's shared tile (a BinConv2d's larger than its tile are read from
    global memory)."""
    return _run_refusal([_op_part(op) for op in ops], first, last)


def described_fusion_refusal(layers: list, first: int, last: int) -> str | None:
    """fusion_refusal for a network known only by its layers' describe() strings (a profile's
    `layers`): the same rule, on the types and channel counts those strings name."""
    return _run_refusal([_described_part(i, t) for i, t in enumerate(layers)], first, last)


def described_blocking_refusal(layers: list, first: int, last: int, px: int) -> str | None:
    """blocking_refusal for a run (one described_fusion_refusal accepts) of a network known only
    by its layers' describe() strings."""
    binary = _described_part(first, layers[first]).kind == "BinConv2d"
    return blocking_refusal(binary, last == first + 2, px)


def _run_refusal(parts: list[FusionPart], first: int, last: int) -> str | None:
    """The rule of fusion_refusal, on FusionParts."""
    if not 0 <= first < len(parts):
        return f"the network has no layer {first} (layers 0..{len(parts) - 1})"
    head = parts[first]
    if head.kind not in ("IntConv2d", "BinConv2d", "BinDense"):
        return f"{head.label} is not an IntConv2d, a BinConv2d or a BinDense"
    if last not in (first + 1, first + 2) or last >= len(parts):
        return f"a fused kernel runs 2 or 3 layers ({FUSED_PATTERNS}), not layers {first}..{last}"
    if parts[first + 1].kind != "Step":
        return f"{head.label} is not followed by a Step"
    if last == first + 2:
        if head.kind == "BinDense":
            return f"{head.label}: a BinDense fuses with its Step only, not with {parts[last].label}"
        if parts[last].kind != "MaxPool2d":
            return f"{parts[first + 1].label} is not followed by a MaxPool2d"
    if head.kind != "IntConv2d":
        return None
    c, f = head.channels_in, head.channels_out
    words = 9 * c * -(-f // 32)
    if words > FUSED_WEIGHT_WORDS:
        return (
            f"{head.label}: its weights need {words} words of shared memory "
            f"(9 x {c} channels x ceil({f} / 32)), int_conv_step_pack holds {FUSED_WEIGHT_WORDS}"
        )
    return None


def fused_conv_step_refusal(conv: Op, step: Op) -> str | None:
    """Why a (conv, Step) pair of ops cannot run as one kernel, or None when it can (the pair
    form of fusion_refusal: the Step must be the layer right after the conv)."""
    if not isinstance(conv, ConvOp):
        return f"{conv.label} is not an IntConv2d or a BinConv2d"
    if not isinstance(step, StepOp) or step.index != conv.index + 1:
        return f"{conv.label} is not followed by a Step"
    return fusion_refusal([conv, step], 0, 1)


def fusable_groups(ops: list[Op]) -> list[tuple[int, int]]:
    """Every (first, last) run of layers of `ops` one fused kernel can compute: each conv + Step
    pair, each conv + Step + MaxPool2d triple (both, where the pair is followed by a pool) and
    each BinDense + Step pair, by first layer."""
    return [
        (i, j)
        for i in range(len(ops) - 1)
        for j in (i + 1, i + 2)
        if j < len(ops) and fusion_refusal(ops, i, j) is None
    ]


def fusable_pairs(ops: list[Op]) -> list[int]:
    """First indices i of the (IntConv2d or BinConv2d, Step) pairs of `ops` that
    int_conv_step_pack / bin_conv_step_pack can run as one kernel (layers i and i + 1)."""
    return [i for i, j in fusable_groups(ops) if j == i + 1 and isinstance(ops[i], ConvOp)]


def _fused_bounds(bias, step: StepOp) -> tuple[np.ndarray, np.ndarray]:
    """The Step's [lo, hi] on the sum WITHOUT the bias, which moves into the threshold:
    sum + bias >= t  <=>  sum >= t - bias (<= alike). The subtraction must not wrap in int64 (a
    threshold near +-2^63): sum + bias is an int32 whenever a kernel runs (check_int32_ranges),
    so a threshold clipped to [INT32_MIN - 1, INT32_MAX + 1] and a bias clipped to +-2^32
    (larger ones are refused there) give the same comparisons, and t - bias stays far inside
    int64."""
    bias = np.clip(np.asarray(bias, dtype=np.int64), -(1 << 32), 1 << 32)
    thr = np.clip(np.asarray(step.layer.threshold, dtype=np.int64), INT32_MIN - 1, INT32_MAX + 1)
    return step_bounds(thr - bias, step.layer.direction)


class FusedOp(Op):
    """Layers first..last as one kernel (fusion_refusal says which runs can be). Runs as the
    first layer's index; its output is the last layer's; the tensors between them never
    exist."""

    first: int
    last: int
    parts: list
    px: int = 1  # output pixels of a row per warp (2 or 4: a register-blocked kernel)

    @property
    def label(self):
        return " + ".join(op.label for op in self.parts) + " (fused)"

    @property
    def family(self) -> str:
        """The kernel without its format suffix, e.g. 'bin_conv_step_pool_pack',
        'bin_conv_step_pack_px4'."""
        return self.kernel.split("/")[0]


class FusedConvStepOp(FusedOp):
    """An IntConv2d or BinConv2d and the Step after it (and the 2x2 MaxPool2d after that, when
    `pool` is given) as one kernel, int_conv_step_pack / int_conv_step_pool_pack
    (cuda/int_conv.cu) or bin_conv_step_pack / bin_conv_step_pool_pack (cuda/bin_conv.cu): the
    conv's sums are compared in registers and packed by __ballot_sync (the pooled kernels OR a
    channel's four comparisons first), so neither the int32 tensor nor the unpooled words
    exist."""

    def __init__(self, conv: ConvOp, step: StepOp, pool: MaxPoolOp | None = None, px: int = 1):
        parts = [conv, step] + ([pool] if pool is not None else [])
        why = fused_conv_step_refusal(conv, step)
        if why is None and pool is not None:
            ok = isinstance(pool, MaxPoolOp) and pool.index == step.index + 1
            why = None if ok else f"{step.label} is not followed by a MaxPool2d"
        if why is None:
            why = blocking_refusal(isinstance(conv.layer, ir.BinConv2d), pool is not None, px)
        if why is not None:
            raise GpuKernelError(f"cannot fuse: {why}")
        super().__init__(conv.index, conv.layer, conv.fin, parts[-1].fout)
        self.conv, self.step, self.pool, self.parts = conv, step, pool, parts
        self.first, self.last = conv.index, parts[-1].index
        w = np.asarray(conv.layer.weight)  # +-1 [F, C, 3, 3]
        f, c = w.shape[:2]
        self.binary = isinstance(conv.layer, ir.BinConv2d)
        name = "step_pool_pack" if pool is not None else "step_pack"
        if self.binary:
            # bin_conv3x3's packed weights [9, nw, F]; in shared memory when they fit the tile
            self.consts["w"] = conv.consts["w"]
            self.weights_in_shared = conv.consts["w"].nbytes <= BIN_FUSED_WEIGHT_BYTES
            blocked = f"_px{px}" if px > 1 else ""
            self.kernel = f"bin_conv_{name}{blocked}/{_wsuffix(step.fout.word_bits)}"
        else:
            bits = (w.transpose(2, 3, 1, 0).reshape(9 * c, f) > 0).astype(np.uint8)  # [tap * C + c, f]
            nc = -(-f // 32)
            padded = np.zeros((9 * c, nc * 32), np.uint8)
            padded[:, :f] = bits
            self.consts["wbits"] = np.ascontiguousarray(
                np.packbits(padded.reshape(9 * c, nc, 32), axis=-1, bitorder="little").view("<u4")[..., 0]
            ).astype(np.uint32)
            self.weights_in_shared = True
            suffix = "u8" if conv.fin.kind == "uint8" else "i32"
            self.kernel = f"int_conv_{name}/{suffix}/{_wsuffix(step.fout.word_bits)}"
        self.consts["lo"], self.consts["hi"] = _fused_bounds(conv.layer.bias, step)
        self.px = px

    def work(self, n):
        _, ho, wo = self.fout.shape  # the pooled pixels when pooled
        # register-blocked: p is a group of px pixels of a row, ceil(wo / px) groups per row
        groups = -(-wo // self.px)
        return Work(n, ho * groups, self.fout.words, row=groups)

    def kernel_args(self, x, out, c):
        cin, h, w = self.fin.shape
        f = self.conv.fout.shape[0]
        weights = c["w"] if self.binary else c["wbits"]
        return [x, weights, c["lo"], c["hi"], out, h, w, cin, self.layer.padding, self.fout.shape[2], f]


class FusedDenseStepOp(FusedOp):
    """A BinDense and the Step after it as one kernel, bin_dense_step_pack (cuda/dense.cu): each
    neuron's popcount sum is compared in registers and packed by __ballot_sync, so the int32
    scores between the two layers never exist."""

    def __init__(self, dense: DenseOp, step: StepOp):
        ok = isinstance(dense, DenseOp) and isinstance(step, StepOp) and step.index == dense.index + 1
        if not ok:
            raise GpuKernelError(f"cannot fuse: {dense.label} is not a BinDense followed by a Step")
        super().__init__(dense.index, dense.layer, dense.fin, step.fout)
        self.dense, self.step, self.parts = dense, step, [dense, step]
        self.first, self.last = dense.index, step.index
        self.consts["w"] = dense.consts["w"]  # bin_dense's packed weights [nw, F]
        self.weights_in_shared = False
        self.kernel = f"bin_dense_step_pack/{_wsuffix(step.fout.word_bits)}"
        self.consts["lo"], self.consts["hi"] = _fused_bounds(dense.layer.bias, step)

    def work(self, n):
        return Work(n, 1, self.fout.words)

    def kernel_args(self, x, out, c):
        return [x, c["w"], c["lo"], c["hi"], out, self.fin.channels, self.dense.fout.channels]


def _blocked_family(pool: bool) -> str:
    """The register-blocked kernel family of a BinConv2d + Step run (with or without the pool)."""
    return "bin_conv_step_pool_pack" if pool else "bin_conv_step_pack"


def px_choices(binary_conv: bool, pool: bool) -> tuple[int, ...]:
    """The output pixels per warp a fused conv run's kernels take: 1 (the unblocked kernel), and
    for a BinConv2d run its register-blocked kernels' (kernel_table.BLOCKED_PX)."""
    if not binary_conv:
        return (1,)
    return (1, *BLOCKED_PX[_blocked_family(pool)])


def blocking_refusal(binary_conv: bool, pool: bool, px: int) -> str | None:
    """Why a fused run cannot take `px` output pixels per warp, or None: 1 (the unblocked
    kernel) always can; 2 or 4 only a BinConv2d + Step run, 2 only with the MaxPool2d
    (px_choices)."""
    if isinstance(px, bool) or not isinstance(px, (int, np.integer)):
        return f"{px!r} pixels per warp: a whole number of output pixels (1, 2 or 4)"
    allowed = px_choices(binary_conv, pool)
    if px in allowed:
        return None
    if not binary_conv:
        return f"{px!r} pixels per warp: only a BinConv2d run has register-blocked kernels (1 here)"
    return f"{px!r} pixels per warp: {_blocked_family(pool)} takes {' or '.join(map(str, allowed))}"


def blocked_px(ops: list[Op], first: int, last: int) -> tuple[int, ...]:
    """The pixels per warp the fused kernel of layers first..last can take, (1,) for a run
    without register-blocked kernels (the run must be one fusion_refusal accepts)."""
    binary = isinstance(ops[first], ConvOp) and isinstance(ops[first].layer, ir.BinConv2d)
    return px_choices(binary, last == first + 2)


def fused_op(ops: list[Op], first: int, last: int, px: int = 1) -> FusedOp:
    """The one kernel that runs layers first..last of `ops` (GpuKernelError when none can);
    `px` output pixels of a row per warp (blocked_px says which a run can take)."""
    if not 0 <= first < last < len(ops):
        raise GpuKernelError(f"cannot fuse layers {first}..{last}: the network has layers 0..{len(ops) - 1}")
    why = fusion_refusal(ops, first, last)
    if why is not None:
        raise GpuKernelError(f"cannot fuse: {why}")
    if isinstance(ops[first], DenseOp):
        if px != 1:
            raise GpuKernelError(f"cannot fuse: {blocking_refusal(False, False, px)}")
        return FusedDenseStepOp(ops[first], ops[first + 1])
    return FusedConvStepOp(ops[first], ops[first + 1], ops[last] if last == first + 2 else None, px)


class MaxPoolOp(Op):
    def __init__(self, index, layer, fin, fout):
        super().__init__(index, layer, fin, fout)
        self.suffix = _wsuffix(fin.word_bits) if fin.kind == "binary" else "int"
        self.kernel = f"maxpool2x2/{self.suffix}"

    def _k(self):
        return self.fin.words if self.fin.kind == "binary" else self.fin.channels

    def work(self, n):
        _, ho, wo = self.fout.shape
        return Work(n, ho * wo, self._k(), row=wo)

    def kernel_args(self, x, out, c):
        _, h, w = self.fin.shape
        return [x, out, h, w, self.fout.shape[2]]

    def run_cpu(self, lib, x, out, c):
        _, h, w = self.fin.shape
        lib.call(f"cpu_maxpool2x2_{self.suffix}", x, out, x.shape[0], h, w, self._k())


class FlattenOp(Op):
    def __init__(self, index, layer, fin, fout):
        super().__init__(index, layer, fin, fout)
        if fin.spatial:
            self.kernel = (
                "flatten_int" if fin.kind != "binary" else f"flatten_packed/{_wsuffix(fin.word_bits)}"
            )

    def work(self, n):
        k = self.fout.words if self.fout.kind == "binary" else self.fout.channels
        return Work(n, 1, k)

    def kernel_args(self, x, out, c):
        cin, h, w = self.fin.shape
        return [x, out, cin, h * w]

    def run_cpu(self, lib, x, out, c):
        cin, h, w = self.fin.shape
        name = (
            "cpu_flatten_int"
            if self.fin.kind != "binary"
            else f"cpu_flatten_packed_{_wsuffix(self.fin.word_bits)}"
        )
        lib.call(name, x, out, x.shape[0], cin, h * w)


class DenseOp(Op):
    def __init__(self, index, layer, fin, fout):
        super().__init__(index, layer, fin, fout)
        packed = bnn.pack_bits(layer.weight, fin.word_bits)  # [F, nw]
        self.consts["w"] = np.ascontiguousarray(packed.T)  # [nw, F]
        self.consts["bias"] = np.ascontiguousarray(layer.bias, dtype=np.int32)
        self.kernel = f"bin_dense/{_wsuffix(fin.word_bits)}"

    def work(self, n):
        return Work(n, 1, self.fout.channels)

    def kernel_args(self, x, out, c):
        return [x, c["w"], c["bias"], out, self.fin.channels]

    def run_cpu(self, lib, x, out, c):
        lib.call(
            f"cpu_bin_dense_{_wsuffix(self.fin.word_bits)}",
            x,
            c["w"],
            c["bias"],
            out,
            x.shape[0],
            self.fin.channels,
            self.fout.channels,
        )


class ReorderOp(Op):
    """NCHW -> NHWC of the network input on the device; not a network layer."""

    def __init__(self, fin: Fmt):
        super().__init__(-1, ir.Flatten(name="input reorder"), fin, fin)
        self.kernel = "nchw_to_nhwc/" + ("u8" if fin.kind == "uint8" else "i32")

    @property
    def label(self):
        return "NCHW -> NHWC reorder of the input"

    def work(self, n):
        c, h, w = self.fin.shape
        return Work(n, h * w, c, row=w)

    def kernel_args(self, x, out, c):
        return [x, out]


class ArgmaxOp(Op):
    """Scores -> predicted class; not a network layer, run after the last one."""

    def __init__(self, index, fin):
        super().__init__(index, ir.Flatten(name="argmax"), fin, Fmt("int", (1,), fin.word_bits))
        self.kernel = "argmax_scores"

    @property
    def label(self):
        return "argmax of the scores"

    def work(self, n):
        return Work(n, 1, 1)

    def kernel_args(self, x, out, c):
        return [x, out, self.fin.channels]

    def run_cpu(self, lib, x, out, c):
        lib.call("cpu_argmax_scores", x, out, x.shape[0], self.fin.channels)


_OPS = {
    ir.IntConv2d: ConvOp,
    ir.BinConv2d: ConvOp,
    ir.Step: StepOp,
    ir.MaxPool2d: MaxPoolOp,
    ir.Flatten: FlattenOp,
    ir.BinDense: DenseOp,
}
SUPPORTED_LAYERS = tuple(_OPS)  # the layer types the GPU path runs (BNN layers)


def supports(net: ir.Network) -> bool:
    """Whether every layer of `net` has a GPU kernel."""
    return all(type(layer) in _OPS for layer in net.layers)


def input_format(net: ir.Network, word_bits: int) -> Fmt:
    """Format of the network input: uint8 stays uint8 only where IntConv2d reads it directly
    (a quarter of the bytes to copy); other integers are int32."""
    kind = net.input_kind
    if kind == "uint8" and not isinstance(net.layers[0], ir.IntConv2d):
        kind = "int"
    return Fmt(kind, net.input_shape, word_bits)


def prepare(net: ir.Network, word_bits: int, step_kernel: str = "thread") -> list[Op]:
    """One Op per layer; refuses layers the BNN kernels do not implement. `step_kernel`: which
    kernel Step layers use (STEP_KERNELS)."""
    if word_bits not in bnn.WORD_DTYPES:
        raise GpuKernelError(f"word size must be 32 or 64 bits, got {word_bits!r}")
    if step_kernel not in STEP_KERNELS:
        raise GpuKernelError(f"step kernel {step_kernel!r}: use one of {', '.join(STEP_KERNELS)}")
    ops = []
    fin = input_format(net, word_bits)
    for i, layer in enumerate(net.layers):
        cls = _OPS.get(type(layer))
        if cls is None:
            raise GpuKernelError(
                f"{layer.label(i)}: the BNN kernels implement IntConv2d, "
                f"BinConv2d, Step, MaxPool2d, Flatten and BinDense only"
            )
        shape, kind = net.shapes[i + 1]
        fout = Fmt("int" if kind == "uint8" else kind, shape, word_bits)
        ops.append(cls(i, layer, fin, fout, step_kernel) if cls is StepOp else cls(i, layer, fin, fout))
        fin = fout
    return ops


def check_int32_ranges(net: ir.Network, x: np.ndarray) -> None:
    """Refuse a network whose sums could leave int32 for this input (the golden models raise
    instead of wrapping; the kernels accumulate in int32, so they must never be asked to).
    A static bound: |conv| <= max|in| * 9 * C + max|bias|, |dense| <= K + max|bias|."""
    # max |x| from min and max: no int64 copy of the batch (that took longer than a layer)
    bound = max(abs(int(x.min(initial=0))), abs(int(x.max(initial=0)))) if net.input_kind != "binary" else 1
    for i, layer in enumerate(net.layers):
        if isinstance(layer, (ir.IntConv2d, ir.BinConv2d, ir.BinDense)):
            fan_in = layer.weight.shape[1] * (9 if layer.weight.ndim == 4 else 1)
            mag = bound if isinstance(layer, ir.IntConv2d) else 1
            bound = mag * fan_in + int(np.abs(layer.bias.astype(np.int64)).max(initial=0))
            if bound > INT32_MAX:
                raise GpuKernelError(
                    f"{layer.label(i)}: sums could reach {bound}, beyond int32 "
                    f"(the golden models refuse such results); refusing to run"
                )
        elif isinstance(layer, ir.Step):
            bound = 1
