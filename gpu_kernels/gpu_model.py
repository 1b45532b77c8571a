"""A modelled GPU profile for the compare job on machines without a GPU.

Without a CUDA device the compare job still runs the CUDA kernels (in the CPU emulation) to
check them bit for bit, but the emulation's wall times say nothing about a GPU, and choosing a
mapping from them made the report's GPU column change between identical runs. So there the
mapping and the GPU times come from this model instead: deterministic, and labelled "modelled"
wherever they are shown. On a machine with a GPU the compare job measures as before.

The model is a simple occupancy model of one kernel launch per layer on an H200 (sm_90), from
the launch geometry the runner really uses (gpu_kernels.launch.plan):
* a block's threads share its outputs: each thread computes ceil(outputs per block / threads)
  outputs, each costing the kernel's inner-loop trips (a 3x3 conv: 9 x input words or
  channels; a dense layer: input words; a step: the channels packed into a word; a 2x2 max
  pool: 4 reads; a flatten: one read per bit it gathers);
* blocks run in waves of SMS x resident blocks (resident: thread and block limits of an SM);
  a wave takes the longer of its latency-bound time (trips x LATENCY_PER_TRIP cycles) and its
  issue-bound time (the SM issues ISSUE_PER_CYCLE thread-instructions per cycle,
  INSTR_PER_TRIP per trip);
* plus LAUNCH_S per kernel; the host needs HOST_ISSUE_S to issue it; a copy costs
  COPY_LATENCY_S + bytes / COPY_BYTES_PER_S.
It ranks configurations by their parallelism and balance. Its absolute times came out 5-12x too
short against the first H200 measurements (2026-12-04), so each kernel family's time is scaled
by `CALIBRATION`: the geometric mean of measured over modelled seconds of that family's launches
in `docs/measurements/h200_2026-12-04/layer_times.json` (593 layer times: both benchmark shapes
at 32- and 64-bit words and the zoo Fashion BNN, every mapping the benchmark ran), refitted by
`fit_calibration` and printed by `benchmarks/gpu_model_accuracy.py`. The scale is per family,
so it does not change which configuration the model prefers for a layer; it brings whole-run
times to within 0.6-1.5x of the measured ones. They are still estimates, not measurements
(docs: README "What the compare job reports").
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

from gpu_kernels.configs import CONFIGS
from gpu_kernels.errors import LaunchError
from gpu_kernels.kernel_table import BLOCKED_PX
from gpu_kernels.launch import plan
from gpu_kernels.layer_ops import (
    ConvOp,
    DenseOp,
    FlattenOp,
    FusedDenseStepOp,
    FusedOp,
    MaxPoolOp,
    StepOp,
    blocked_px,
    fusable_groups,
    fused_op,
    prepare,
)
from gpu_kernels.profiling import Profile, fused_key
from models import ir

DEVICE = "H200 (sm_90)"
SMS = 132  # streaming multiprocessors
CLOCK_HZ = 1.98e9  # boost clock
MAX_THREADS_PER_SM = 2048
MAX_BLOCKS_PER_SM = 32
ISSUE_PER_CYCLE = 128  # 4 schedulers x 32 lanes
INSTR_PER_TRIP = 6  # loads, xor/popc or multiply-add, loop
LATENCY_PER_TRIP = 24  # cycles of a dependent trip (an L1 hit and the arithmetic)
LAUNCH_S = 4e-6
HOST_ISSUE_S = 6e-6
COPY_LATENCY_S = 10e-6
COPY_BYTES_PER_S = 20e9  # pageable host memory over PCIe Gen5

# measured / modelled seconds per kernel family on the H200 (see the module's note; a test
# refits these from the stored measurements and fails if they drift)
CALIBRATION = {
    "int_conv3x3": 10.01,
    "bin_conv3x3": 7.58,
    "step_pack": 8.72,
    "maxpool2x2": 2.54,
    "flatten_packed": 4.65,
    "bin_dense": 3.06,
}
CALIBRATION_OTHER = 5.64  # families not measured yet: the mean over every launch measured
# the fused kernels have not run on a GPU: int_conv_step_pack and int_conv_step_pool_pack get
# the factor of int_conv3x3, whose inner loop (9C loads and adds per output channel) they share,
# bin_conv_step_pack and bin_conv_step_pool_pack that of bin_conv3x3 (9 x input words of
# xor/popcount per output channel), bin_dense_step_pack that of bin_dense (input words of
# xor/popcount per neuron): assumptions until measured
CALIBRATION_AS = {
    "int_conv_step_pack": "int_conv3x3",
    "int_conv_step_pool_pack": "int_conv3x3",
    "bin_conv_step_pack": "bin_conv3x3",
    "bin_conv_step_pool_pack": "bin_conv3x3",
    "bin_dense_step_pack": "bin_dense",
    # the register-blocked binary kernels: the same loop, blocked (BLOCKED_TRIP_PTX)
    **{f"{family}_px{px}": "bin_conv3x3" for family, pxs in BLOCKED_PX.items() for px in pxs},
}
# The register-blocked binary kernels (cuda/bin_conv.cu, PX output pixels of a row per warp):
# their inner trip is one kernel row ky and input word j for the RX conv pixels of a row a warp
# computes (RX = PX; 2 PX per conv row when pooled): 3 weight and RX + 2 activation loads, 3 RX
# xor/popc/select/add, one loop; the unblocked kernel's trip is one conv pixel, tap and word: a
# weight and an activation load, xor, popc, add, the loop. Their cost relative to each other is
# what the model takes from nvcc 13.0's PTX for sm_90 (the word loop without the last word's
# mask, both word sizes alike; PTX, not SASS, and not measured): the unblocked trip is
# UNBLOCKED_TRIP_PTX instructions, a blocked trip BLOCKED_TRIP_PTX[RX] (for 3 RX pixel-taps).
UNBLOCKED_TRIP_PTX = 17  # 2 loads, 8 of address arithmetic, xor, popc, add, 4 of loop
BLOCKED_TRIP_PTX = {2: 68, 4: 106}  # 7 and 9 loads; per pixel-tap 11.3 and 8.8 instructions
CALIBRATION_DATA = (
    Path(__file__).resolve().parent.parent / "docs" / "measurements" / "h200_2026-12-04" / "layer_times.json"
)


def trips_per_output(op) -> int:
    """Inner-loop trips of one output of the op's kernel (a fused kernel: of one lane of the
    warp that computes an output word: per 32 of the word's channels, 9C (conv), 4 x 9C (conv
    with the 2x2 pooling: four conv pixels per output) or the input words (dense); a
    register-blocked one's output is a group of PX words, its trips counted in unblocked trips
    by their PTX instructions, BLOCKED_TRIP_PTX)."""
    if isinstance(op, FusedOp):
        rounds = -(-min(op.fout.word_bits, op.parts[1].fout.channels) // 32)
        if isinstance(op, FusedDenseStepOp):  # per lane: the input words
            return op.fin.words * rounds
        pooled = op.pool is not None
        if op.px > 1:  # per lane: 3 kernel rows x input words per conv row, each a blocked trip
            rx = 2 * op.px if pooled else op.px
            trips = 3 * op.fin.words * rounds * (2 if pooled else 1)
            return math.ceil(trips * BLOCKED_TRIP_PTX[rx] / UNBLOCKED_TRIP_PTX)
        # per lane: 9 x input channels (int) or words (binary), at 4 conv pixels when pooled
        per_channel = 9 * (op.fin.words if op.binary else op.fin.channels)
        return per_channel * rounds * (4 if pooled else 1)
    if isinstance(op, ConvOp):
        return 9 * (op.fin.words if op.fin.kind == "binary" else op.fin.channels)
    if isinstance(op, DenseOp):
        return op.fin.words
    if isinstance(op, StepOp):
        return min(op.fout.word_bits, op.fin.channels)
    if isinstance(op, MaxPoolOp):
        return 4
    if isinstance(op, FlattenOp):
        return op.fout.word_bits if op.fout.kind == "binary" else 1
    raise LaunchError(f"no model for {type(op).__name__}")


def fused_conv_loads(op, n: int) -> dict:
    """Counted, not measured: the loads a fused BinConv2d kernel's lanes make for `n` images,
    per output channel (a lane each; lanes past the last channel not counted), and its xor /
    popcount / add triples: {"weight": words, "activation": words, "popcounts": triples}. The
    unblocked kernel loads a weight and an activation word per in-frame tap, input word and conv
    pixel; a register-blocked one (op.px > 1) per in-frame kernel row, input word and group of
    RX conv pixels of a row: 3 weight words and the in-frame ones of the RX + 2 activation
    columns, and popcounts 3 RX pairs less those of out-of-frame columns, pixels past a row's
    tail included (computed, never stored)."""
    if not getattr(op, "binary", False):
        raise LaunchError(f"{op.label}: not a fused BinConv2d kernel")
    _, h, w = op.fin.shape
    pad, nw, f = op.layer.padding, op.fin.words, op.conv.fout.channels
    pooled = op.pool is not None
    _, ho, wo = op.fout.shape  # the pooled pixels when pooled
    rows = [2 * y + dy for y in range(ho) for dy in range(2)] if pooled else list(range(ho))
    rx = (2 if pooled else 1) * op.px  # conv pixels of a row per warp output
    starts = [rx * g for g in range(-(-wo // op.px))]  # first conv column of each group
    in_rows = [sum(0 <= y + ky - pad < h for ky in range(3)) for y in rows]  # per conv row
    col_in = lambda c: 0 <= c - pad < w  # noqa: E731  (conv column c's tap kx reads c + kx - pad)
    weight = act = pops = 0
    for r in in_rows:
        for x0 in starts:
            cols = [col_in(x0 + c) for c in range(rx + 2)]
            if op.px > 1:
                weight += r * 3 * nw
                act += r * sum(cols) * nw
            pix = sum(sum(cols[x + kx] for kx in range(3)) for x in range(rx))  # in-frame taps
            pops += r * pix * nw
            if op.px == 1:
                weight += r * pix * nw
                act += r * pix * nw
    return {k: v * n * f for k, v in (("weight", weight), ("activation", act), ("popcounts", pops))}


def kernel_family(op) -> str:
    """The kernel without its format suffix: 'bin_conv3x3/w64' -> 'bin_conv3x3'."""
    return op.kernel.split("/")[0]


def calibration(family: str) -> float:
    """Measured / modelled seconds for a kernel family (CALIBRATION_OTHER if never measured)."""
    return CALIBRATION.get(CALIBRATION_AS.get(family, family), CALIBRATION_OTHER)


def kernel_s(op, batch: int, config: str) -> float | None:
    """Modelled seconds of one launch of `op` over `batch` images, calibrated; None if it
    cannot launch."""
    raw = raw_kernel_s(op, batch, config)
    if raw is None or op.kernel is None:
        return raw
    return raw * calibration(kernel_family(op))


def raw_kernel_s(op, batch: int, config: str) -> float | None:
    """The occupancy model's seconds of one launch, before calibration."""
    if op.kernel is None:  # a no-op layer (flatten of a flat tensor)
        return 0.0
    try:
        launch = plan(op.work(batch), config, what=op.label)
    except LaunchError:
        return None
    threads = launch.threads
    per_block = math.prod(launch.chunks)
    # a thread per output, or (a fused kernel) a warp per output word
    workers = math.ceil(threads / 32) if isinstance(op, FusedOp) else threads
    per_thread = math.ceil(per_block / workers) * trips_per_output(op)
    warps_threads = math.ceil(threads / 32) * 32
    resident = max(1, min(MAX_BLOCKS_PER_SM, MAX_THREADS_PER_SM // warps_threads))
    waves = math.ceil(launch.blocks / (SMS * resident))
    busy = min(resident, math.ceil(launch.blocks / SMS))  # blocks an SM runs at once
    wave_cycles = max(
        per_thread * LATENCY_PER_TRIP, busy * warps_threads * per_thread * INSTR_PER_TRIP / ISSUE_PER_CYCLE
    )
    return LAUNCH_S + waves * wave_cycles / CLOCK_HZ


# ---------------------------------------------------------------- calibration
# A sample is one layer of one measured run: {"net": a network spec (models.random_networks:
# 'fashion', 'cifar10' or an .onnx path relative to the repository), "word_bits", "images",
# "batch", "layer" (index), "impl" (configuration), "seconds" (measured, all batches)}.


def load_samples(path: Path = CALIBRATION_DATA) -> list[dict]:
    data = json.loads(Path(path).read_text())
    return [dict(zip(data["fields"], row, strict=True)) for row in data["rows"]]


@lru_cache(maxsize=16)
def _ops(spec: str, word_bits: int):
    from models.random_networks import SHAPES, network_from_spec

    path = spec if spec in SHAPES or Path(spec).is_absolute() else str(CALIBRATION_DATA.parents[3] / spec)
    return prepare(network_from_spec(path), word_bits)


def raw_sample_s(sample: dict) -> tuple[str, float]:
    """(kernel family, raw modelled seconds) of a sample: the model before calibration over the
    run's batches (the last one partial, as the runner splits them). Calibrated, it is this
    times `calibration(family)`."""
    op = _ops(sample["net"], sample["word_bits"])[sample["layer"]]
    n, b = sample["images"], sample["batch"]
    sizes = [b] * (n // b) + ([n % b] if n % b else [])
    return kernel_family(op), sum(raw_kernel_s(op, size, sample["impl"]) for size in sizes)


def fit_calibration(
    samples: list[dict], raw: list[tuple[str, float]] | None = None
) -> tuple[dict[str, float], float]:
    """Per kernel family, and over all samples, the geometric mean of measured / raw modelled
    seconds (rounded to 2 decimals, as CALIBRATION holds them). `raw`: the samples'
    `raw_sample_s`, when the caller has them already."""
    logs: dict[str, list[float]] = {}
    for smp, (family, raw_s) in zip(samples, raw or map(raw_sample_s, samples), strict=True):
        logs.setdefault(family, []).append(math.log(smp["seconds"] / raw_s))
    every = [v for vs in logs.values() for v in vs]
    geo = lambda vs: round(math.exp(sum(vs) / len(vs)), 2)  # noqa: E731
    return {f: geo(vs) for f, vs in logs.items()}, geo(every)


def copy_s(nbytes: int) -> float:
    return COPY_LATENCY_S + nbytes / COPY_BYTES_PER_S


class ModelledProfile:
    """A profile source (gpu_kernels.mapper) from the model above, for the seven GPU
    configurations."""

    source = (
        f"modelled: {DEVICE}, {SMS} SMs at {CLOCK_HZ / 1e9:.2f} GHz (occupancy model, "
        f"gpu_kernels/gpu_model.py; not measured)"
    )

    def __init__(self, word_bits: int = 32, fused: bool = False):
        self.word_bits = word_bits
        # also model the fused kernels for every run of layers they can compute
        # (layer_ops.fusable_groups: conv + Step, conv + Step + MaxPool2d, BinDense + Step; a
        # BinConv2d run's register-blocked kernels too), in meta["fused_gpu"], which the
        # mapper's DP weighs against the separate kernels
        self.fused = fused

    def profile(self, net: ir.Network, batch_sizes, ops=None) -> Profile:
        """`ops`: `prepare(net, word_bits)`, when the caller has it already."""
        ops = prepare(net, self.word_bits) if ops is None else ops
        fmts = [op.fin for op in ops] + [ops[-1].fout]
        layer_s, host_s, copies = {}, {}, {}
        for b in batch_sizes:
            layer_s[b] = [[kernel_s(op, b, c) for c in CONFIGS] for op in ops]
            host_s[b] = [
                [None if t is None else (HOST_ISSUE_S if op.kernel else 0.0) for t in row]
                for op, row in zip(ops, layer_s[b], strict=True)
            ]
            copies[b] = [copy_s(f.nbytes(b)) for f in fmts]
        fused = {}
        for first, last in fusable_groups(ops) if self.fused else ():
            for px in blocked_px(ops, first, last):  # a BinConv2d run's blocked kernels too
                op = fused_op(ops, first, last, px)
                rows = {str(b): [kernel_s(op, b, c) for c in CONFIGS] for b in batch_sizes}
                fused[fused_key(first, last, px)] = {
                    "kernel": op.kernel,
                    "layer_s": rows,
                    "host_s": {b: [None if t is None else HOST_ISSUE_S for t in r] for b, r in rows.items()},
                }
        return Profile(
            net.name,
            [layer.describe() for layer in net.layers],
            list(batch_sizes),
            layer_s,
            copies,
            {b: list(v) for b, v in copies.items()},
            list(CONFIGS),
            self.source,
            {
                "word_bits": self.word_bits,
                "time_of": "one batch of b images",
                "model": {
                    "device": DEVICE,
                    "sms": SMS,
                    "clock_hz": CLOCK_HZ,
                    "launch_s": LAUNCH_S,
                    "host_issue_s": HOST_ISSUE_S,
                    "copy_latency_s": COPY_LATENCY_S,
                    "copy_bytes_per_s": COPY_BYTES_PER_S,
                },
                **({"fused_gpu": fused} if fused else {}),
            },
            host_s,
        )
