"""One model, every path: golden executor, GPU kernels and the FPGA path, layer by layer.

`run(options)` is what scripts/compare_gpu_fpga.py does:

* golden: models.golden on all N images (the reference);
* GPU (BNNs): gpu_kernels with the mapper's per-layer choice, on CuPy when a CUDA device is
  usable (mapping and times measured), else on the CPU emulation of the same CUDA source (the
  report says which). Without a GPU the emulation checks the CUDA kernels bit for bit, and the
  mapping and the GPU times come from a modelled profile (gpu_kernels/gpu_model.py: an occupancy
  model of an H200, labelled "modelled"), never from the emulation's noisy wall times, so the
  GPU column is the same in every run;
* CPU (BNNs of the HEP-BNN pattern): the fused CPU network (gpu_kernels/cpu_impl.py:
  FusedCpuNetwork, every step and pooling inside the conv or dense layer before it) on all N
  images in one call, its wall time measured (median of CPU_REPEATS runs); only each fused
  kernel's last layer exists to compare;
* FPGA: the network compiled for the SAC array (BNNs lowered onto it, fpga/lowering.py); the
  first n images run on the RTL top under cocotb (tb/rtl_job.py), the rest on the
  instruction-level interpreter (exact cycle model + golden arithmetic). RTL cycles must equal
  the cycle model;
* every layer a path materialises is compared with golden: mismatching elements per layer and
  path, the first differing index printed. Any mismatch makes the run fail (exit 1). Where a
  path has no output for a layer, the report says why (`absent`: the path did not run and why,
  or the layer is computed inside layer N's kernel or array operation).

The input scale S (`--input-scale`, else the model's `workbench.input_scale` metadata;
models/onnx/input_scale.py) multiplies the data's 0..255 pixels before the network: folded into
the network's first convolution and step where it can be (every path then takes the pixels),
else applied to the images. A run in which some layer gives every image the same output gets a
warning (report["warnings"]): the likely cause is an input scale the model does not expect.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fpga.arch import MAX_CLOCK_MHZ, MIN_CLOCK_MHZ
from fpga.clock import clock_for
from fpga.compiler import CompileError, Program, compile_network, fitted_config
from fpga.energy import energy_uj_per_image
from fpga.execute import interpret
from models import golden, ir
from models.checks import NumericsError
from models.datasets import DatasetError, load_for_network
from models.numerics import bnn
from models.onnx.input_scale import (
    META_SCALE,
    check_scale,
    fold_input_scale,
    input_range_for,
    scale_pixels,
)
from models.resources import available_memory_bytes, gib
from safeio import atomic_path
from workbench.cluster import AddressError, check_address


class CompareError(Exception):
    """A user error (bad option, missing file, unsupported model): one clear line."""


class RtlFailure(CompareError):
    """The RTL simulator could not be built, a simulation failed, ran past its wall-clock limit
    or was stopped: one line, exit status 3; `log` holds the simulator's output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


@dataclass
class Options:
    model: Path
    data: str = "digits"
    images: int = 100
    rtl_images: int = 2
    sim: str = "verilator"
    array: str = "8x8"
    clock_mhz: float | None = None  # None: the routed Fmax, else the paper's (fpga/clock.py)
    batch: int = 64
    out: Path = Path("out/compare")
    save_outputs: bool = False
    cmax: int = 64
    seed: int = 0
    inject_fault: str | None = None  # "gpu" or "fpga": self-test of the mismatch report
    rtl_jobs: int | None = None  # simulator processes for the RTL images (None: cores)
    address: str | None = None  # Ray cluster for them ("local": start one here)
    progress: bool = True
    rtl_timeout: float | None = None  # wall-clock seconds per RTL shard (None: from the
    #                                     cycle model's estimate, workbench/rtl_shards.py)
    input_scale: float | None = None  # pixels x S into the network (None: the model's own)


@dataclass
class PathResult:
    outputs: dict  # layer index -> [N, ...] golden format
    info: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------------
def load_model(path: Path, input_scale: float | None = None) -> ir.Network:
    """The model imported for its input: `input_scale` (--input-scale) overrides the file's
    workbench.input_scale; net.meta["input_scale"] holds the scale in effect, if any."""
    from models.onnx.importer import import_onnx

    path = Path(path)
    if path.is_dir():
        raise CompareError(f"--model {path} is a directory; give an .onnx file")
    if not path.is_file():
        raise CompareError(f"model file {path} not found")
    try:
        return import_onnx(path, input_scale=input_scale)
    except (ValueError, OSError) as exc:
        msg = str(exc)
        msg = msg if str(path) in msg else f"{path}: {msg}"
        if input_scale is not None:  # imported for 0..255 * S: say so
            msg += f" (imported with --input-scale {input_scale:g})"
        raise CompareError(msg) from None


def random_seed(data: str, default: int = 0) -> int | None:
    """The seed of a `random[:SEED]` data spec, None for any other spec; a malformed one
    (random:abc, random:-1, randomx) raises CompareError."""
    if data != "random" and not data.startswith("random:"):
        if data.startswith("random") and not Path(data).exists():
            raise CompareError(f"--data {data!r}: random data is 'random' or 'random:SEED'")
        return None
    text = data.partition(":")[2]
    if not text:
        if ":" in data:
            raise CompareError("--data random: needs a seed after the colon (random:SEED)")
        return default
    if not text.isdigit():
        raise CompareError(f"--data {data!r}: the seed must be a whole number 0 or more, got {text!r}")
    return int(text)


# Memory of a compare run on four paths: golden, GPU and FPGA keep every layer they materialise,
# the CPU path every fused kernel's output, plus the arithmetic's temporaries. Measured (peak
# RSS, /usr/bin/time -v, --data fashion --rtl-images 0) with 2,000 and 4,000 images, the
# difference giving the bytes per image: bnn_fashion (zoo) 4.16 bytes for every byte of layer
# output an image has, HEP-BNN's Fashion model (tests/fixtures, --input-scale 255) 3.58 (its
# 10,000 images: 11.2 GiB, as the slope predicts); 4.5 leaves a margin above the larger. Then
# 9 bytes per input element while random images are drawn (int64, then cast), and the process
# itself (Python, numpy, onnx, the data set: 120-400 MB).
BYTES_PER_OUTPUT_BYTE = 4.5
BASE_BYTES = 512 << 20


def memory_estimate(net: ir.Network, images: int, random_images: bool) -> int:
    """Bytes a compare run of `images` images of `net` needs at its peak (see above)."""
    outputs = sum(math.prod(shape) * np.dtype(ir.KIND_DTYPE[kind]).itemsize for shape, kind in net.shapes[1:])
    inputs = math.prod(net.input_shape) * (9 if random_images else 4)
    return BASE_BYTES + math.ceil(images * (BYTES_PER_OUTPUT_BYTE * outputs + inputs))


def check_memory(net: ir.Network, images: int, random_images: bool) -> None:
    """Refuse (CompareError, exit 2) a run whose images need more memory than the machine has
    available now, with the estimate, before any of it is allocated."""
    need, have = memory_estimate(net, images, random_images), available_memory_bytes()
    if need > have:
        fit = max(0, (have - BASE_BYTES) // max(1, (need - BASE_BYTES) // images))
        raise CompareError(
            f"--images {images:,}: {net.name} needs about {gib(need)} for them "
            f"(every layer's outputs on four paths), this machine has {gib(have)} "
            f"available; give --images {fit:,} or fewer"
        )


def load_data(opts: Options, net: ir.Network, scale=None):
    """(images [N, ...], labels or None, description); the memory the run will need is checked
    before the images are drawn or kept (check_memory). `scale`: the images are pixels 0..255
    multiplied by it (scale_pixels), random ones too; None: as the network takes them."""
    n = opts.images
    seed = random_seed(opts.data, opts.seed)
    if seed is not None:
        check_memory(net, n, random_images=True)
        pixels = net.input_kind == "uint8" or scale is not None
        lo, hi = (0, 255) if pixels else (-128, 127)
        rng = np.random.default_rng(seed)
        x = rng.integers(lo, hi + 1, size=(n, *net.input_shape))
        if scale is not None:
            return scale_pixels(x, scale), None, f"random pixels (seed {seed})"
        return (
            x.astype(np.uint8 if net.input_kind == "uint8" else np.int32),
            None,
            f"random {net.input_kind} images (seed {seed})",
        )
    try:
        x, labels = load_for_network(opts.data, net, split="test")
    except DatasetError as exc:
        raise CompareError(str(exc)) from None
    check_memory(net, min(n, len(x)), random_images=False)
    if scale is not None:
        return scale_pixels(x[:n], scale), labels[:n], f"{opts.data} (test split)"
    return x[:n], labels[:n], f"{opts.data} (test split)"


def prepare_input(net: ir.Network, from_flag: bool) -> tuple[ir.Network, object, dict]:
    """(the network the paths run, the scale the images still need or None, the report's
    input_scale entry) for the scale in net.meta["input_scale"] (from --input-scale when
    `from_flag`, else the model's metadata). A whole scale in front of a first IntConv2d and
    Step is folded into them (every path takes the pixels; the array takes 0..255 only), any
    other scale multiplies the images, which must then stay in 0..255 (CompareError)."""
    scale = net.meta.get("input_scale")
    if scale is None:
        return net, None, {"scale": None, "source": None, "applied": None}
    entry = {"scale": scale, "source": "--input-scale" if from_flag else f"model metadata ({META_SCALE})"}
    folded = fold_input_scale(net, scale)
    if folded is not None:
        entry["applied"] = (
            "folded into layers 0 and 1 (conv bias 0, step thresholds / S): the paths take the pixels"
        )
        return folded, None, entry
    top = input_range_for(scale)[1]
    if top > 255:  # the array's data are bytes: refused now, not after golden and GPU ran
        raise CompareError(
            f"input scale {scale} ({entry['source']}): the scaled pixels reach {top:,}, but the SAC "
            "array takes 0..255 data; a scale above 1 is folded into the network only when it is a "
            "whole number and the network starts with an IntConv2d and a Step"
        )
    entry["applied"] = "images: pixels x S, rounded half up"
    return net, scale, entry


def _same_for_all(a: np.ndarray, chunk: int = 256) -> bool:
    """Whether every a[k] equals a[0], a chunk of images at a time (no copy of the whole)."""
    return all(
        np.array_equal(a[k : k + chunk], np.broadcast_to(a[:1], a[k : k + chunk].shape))
        for k in range(1, len(a), chunk)
    )


def first_constant_layer(outputs: dict, x: np.ndarray) -> int | None:
    """The first layer whose output is the same for every image, when the run has two or more
    images that differ (None otherwise). A layer that varies is seen in its first chunk."""
    if len(x) < 2 or _same_for_all(x):
        return None
    return next((i for i in sorted(outputs) if _same_for_all(np.asarray(outputs[i]))), None)


def constant_warning(net: ir.Network, layer: int, images: int, scale_entry: dict) -> str:
    """The one-line warning of a layer that gives every image the same output."""
    what = (
        f"layer {layer} ({net.layers[layer].describe()}) gives every one of the {images:,} "
        "images the same output"
    )
    if scale_entry["scale"] is None:
        return (
            f"{what}: the model may expect another input scale (--input-scale S multiplies the "
            "0..255 pixels by S, e.g. 255 for HEP-BNN's models)"
        )
    return f"{what}: check the input scale {scale_entry['scale']} ({scale_entry['source']})"


# ---------------------------------------------------------------------------------------------
# paths
# ---------------------------------------------------------------------------------------------
def run_golden(net: ir.Network, x: np.ndarray) -> PathResult:
    cur = golden.check_input(net, x)
    outputs, seconds = {}, []
    for i, layer in enumerate(net.layers):
        t0 = time.perf_counter()
        cur = golden.run_layer(layer, cur)
        seconds.append(time.perf_counter() - t0)
        outputs[i] = cur.astype(ir.KIND_DTYPE[net.shapes[i + 1][1]], copy=False)
    return PathResult(outputs, {"layer_s": seconds})


def run_gpu(net: ir.Network, x: np.ndarray, opts: Options) -> PathResult | None:
    """GPU kernels with the mapper's choice; None for networks with non-BNN layers."""
    from gpu_kernels.layer_ops import supports

    if not supports(net):
        return None
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from gpu_kernels import Runner, cuda_available, map_network
    from gpu_kernels.configs import CONFIGS, IMPLS
    from gpu_kernels.nvml_energy import NO_READING, energy_per_call
    from gpu_kernels.profiling import MeasuredProfile

    backend = "cupy" if cuda_available() else "emulation"
    batch = min(opts.batch, len(x))
    if backend == "cupy":
        impls = IMPLS
        profile = MeasuredProfile(backend, 32, repeats=3, warmup=2, impls=impls)
    else:  # emulation wall times cannot rank configurations: a deterministic model does
        from gpu_kernels.gpu_model import ModelledProfile

        impls, profile = CONFIGS, ModelledProfile(32)
    mapping = map_network(net, [batch], profile, n_images=len(x))
    choice = mapping.dp
    runner = Runner(net, mapping=choice, backend=backend, batch=batch)
    res = runner.run(x, progress=opts.progress)
    # board energy over repeats of the run (NVML's counter moves in steps; nvml_energy.py)
    energy = (
        energy_per_call(lambda: runner.run(x, keep_outputs=False, predictions=False))
        if backend == "cupy"
        else NO_READING
    )
    n_batches = -(-len(x) // batch)
    info = {
        "backend": res.backend,
        "device": res.device_name,
        "batch": batch,
        "energy_uj_per_image": (
            None if energy.joules_per_call is None else 1e6 * energy.joules_per_call / len(x)
        ),
        "impls": res.impls,
        "profile": mapping.profile.source,
        "mapping": {
            "algorithm1": mapping.algorithm1.as_dict(),
            "dp": choice.as_dict(),
            "candidates": list(impls),
        },
    }
    if backend == "cupy":  # measured on the GPU
        info.update(
            {
                "times": "measured",
                "latency_ms_per_batch": 1e3 * res.wall_s / n_batches,
                "images_per_s": len(x) / res.wall_s if res.wall_s > 0 else None,
                "wall_s": res.wall_s,
                "timing": res.timing,
                "layer_s": res.layer_s,
                "transfers": [t.__dict__ for t in res.transfers],
            }
        )
    else:  # the model's prediction for this mapping
        info.update(
            {
                "times": "modelled",
                "latency_ms_per_batch": 1e3 * choice.total_s / n_batches,
                "images_per_s": len(x) / choice.total_s if choice.total_s > 0 else None,
                "wall_s": choice.total_s,
                "timing": "modelled (gpu_kernels/gpu_model.py)",
                "layer_s": list(choice.layer_s),
                "transfers": choice.transfers,
                "emulation_wall_s": res.wall_s,
            }
        )
    # a fused pair's conv output (None) is not materialised: left out, as the FPGA path's
    return PathResult({i: o for i, o in enumerate(res.outputs) if o is not None}, info)


CPU_REPEATS = 3  # timed runs of the fused CPU network (after the checked one); median kept


def run_cpu(net: ir.Network, x: np.ndarray) -> tuple[PathResult | None, str | None]:
    """The fused CPU network on all images at once: (its outputs and measured time, None), or
    (None, why it does not run this network). The outputs compared are those of a run that keeps
    every fused kernel's output (golden format, by the last layer each computes), the last
    layer's those of the timed run of median wall time; the timed runs keep only the scores."""
    from gpu_kernels.cpu_impl import FusedCpuNetwork, fused_support

    reason = fused_support(net)
    if reason is not None:
        return None, reason
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    fused = FusedCpuNetwork(net)
    checked = fused.run(x, keep_outputs=True)
    timed = fused.time(x, repeats=CPU_REPEATS)
    outputs = dict(checked.outputs)
    outputs[fused.kernels[-1][1]] = timed.scores
    info = {
        "implementation": "fused CPU network (gpu_kernels/cpu_impl.py)",
        "times": "measured",
        "timing": f"perf_counter around one call on all {len(x):,} images (input checks and "
        f"layout, every kernel), median of {CPU_REPEATS} runs",
        "threads": timed.threads,
        "wall_s": timed.wall_s,
        "ms_per_image": 1e3 * timed.wall_s / len(x),
        "images_per_s": len(x) / timed.wall_s if timed.wall_s > 0 else None,
        "kernels": [
            {"first": first, "last": last, "label": label, "seconds": sec}
            for (first, last), label, sec in zip(fused.kernels, checked.labels, timed.stage_s, strict=True)
        ],
        "layer_s": timed.layer_s(len(net.layers)),  # input checks and layout: the first kernel's
    }
    return PathResult(outputs, info), None


def _rtl_run(prog: Program, images: np.ndarray, opts: Options, workdir: Path) -> dict:
    """Run images on the RTL top under cocotb, sharded over simulator processes (local or
    Ray); the speeds are simulated cycles per wall second: `sim_cycles_per_s` from `start` to
    `done` only (the simulator's own speed), `end_to_end_cycles_per_s` over each simulator
    process's whole job (program load, every image's transfers, host layers and runs)."""
    from workbench import rtl_shards  # cocotb and the simulators: imported when used

    workdir = workdir.resolve()  # the simulators run in directories of their own
    jobs = opts.rtl_jobs or rtl_shards.default_jobs()
    try:
        run = rtl_shards.run(
            prog, images, opts.sim, jobs, workdir, opts.address, opts.progress, opts.rtl_timeout
        )
    except rtl_shards.ShardError as exc:
        raise RtlFailure(str(exc), exc.log) from None
    results = run["results"]
    cycles = [sum(sum(c) for c, _ in r["segments"]) for r in results]
    total = sum(cycles)
    job_s = sum(sh["job_s"] for sh in run["shards"])
    sim_s = sum(sh["sim_s"] for sh in run["shards"])
    return {
        "results": results,
        "cycles": cycles,
        "jobs": run["jobs"],
        "address": opts.address,
        "shards": run["shards"],
        "wall_s": run["wall_s"],
        "images_per_s": len(images) / run["wall_s"],
        "sim_s_per_image": [r["wall_s"] for r in results],
        "sim_cycles_per_s": total / sim_s if sim_s > 0 else None,
        "end_to_end_cycles_per_s": total / job_s if job_s > 0 else None,
    }


def run_fpga(net: ir.Network, x: np.ndarray, opts: Options, workdir: Path) -> PathResult:
    rows, cols = _parse_array(opts.array)
    try:
        cfg = fitted_config(net, rows, cols, opts.cmax)
        prog = compile_network(net, cfg)
    except CompileError as exc:
        raise CompareError(f"cannot compile {net.name} for a {opts.array} array: {exc}") from None
    n_rtl = min(opts.rtl_images, len(x))
    t0 = time.perf_counter()
    interp = interpret(prog, x)
    interp_s = time.perf_counter() - t0
    outputs = {i: o.copy() for i, o in interp.outputs.items()}
    _, act_pc = interp.instruction_stats(prog)
    activity = sum(np.asarray(a, dtype=np.int64) * np.ones(len(x), np.int64) for a in act_pc)
    model_cycles = sum(st.total_cycles for st in interp.segments)  # the cycle model's count
    rtl = {"images": n_rtl, "sim": opts.sim if n_rtl else None}
    if n_rtl:
        rtl.update(_rtl_run(prog, x[:n_rtl], opts, workdir))
        results = rtl.pop("results")
        rtl["cycles_match_model"] = all(  # every instruction of every segment
            [c for c, _ in r["segments"]] == [st.cycles for st in interp.segments] for r in results
        )
        for k, r in enumerate(results):
            for i, o in r["outputs"].items():
                outputs[i][k] = o[0]
            activity[k] = sum(sum(a for a in acts) for _, acts in r["segments"])
    cycles_pc, _ = interp.instruction_stats(prog)
    kinds = [type(ins).__name__ for ins in prog.instructions]
    per_layer = []
    for lp in prog.layers:
        span = range(lp.first_instr, lp.first_instr + lp.n_instr)
        per_layer.append(
            {
                "layer": lp.layer_index,
                "first": lp.op.first,
                "tiles": lp.n_tiles * lp.k_tiles,
                "n_tiles": lp.n_tiles,
                "k_tiles": lp.k_tiles,
                "segment": lp.segment,
                "load_cycles": sum(cycles_pc[i] for i in span if kinds[i] == "LoadWeights"),
                "matmul_cycles": sum(cycles_pc[i] for i in span if kinds[i] == "Matmul"),
            }
        )
    halt_cycles = sum(cycles_pc[s.start_pc + s.n_instr - 1] for s in prog.segments)
    energy_uj, energy = energy_uj_per_image(prog, activity)
    clock = clock_for(cfg, opts.clock_mhz)
    latency_ms = model_cycles / (clock.mhz * 1e3)
    info = {
        "array": opts.array,
        "config": cfg.__dict__,
        "clock_mhz": clock.mhz,
        "clock": clock.as_dict(),
        "instructions": len(prog.words),
        "segments": len(prog.segments),
        "cycles_per_image": model_cycles,
        "latency_ms": latency_ms,
        "images_per_s": 1e3 / latency_ms,
        "energy_uj_per_image": energy_uj,
        "energy": energy,
        "activity_per_image": float(np.mean(activity)),
        "rtl": rtl,
        "host_layers": prog.host_layers,
        "layers": per_layer,
        "halt_cycles": halt_cycles,
        "interpreter_s": interp_s,
        "host_s": interp.host_seconds,
    }
    return PathResult(outputs, info)


def _parse_array(text: str) -> tuple[int, int]:
    try:
        rows, cols = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise CompareError(f"--array must look like ROWSxCOLS (e.g. 8x8), got {text!r}") from None
    if not (1 <= rows <= 255 and 1 <= cols <= 255):
        raise CompareError(f"--array {text}: rows and columns must be 1..255")
    return rows, cols


# ---------------------------------------------------------------------------------------------
# comparison
# ---------------------------------------------------------------------------------------------
def mismatches(ref: PathResult, path: PathResult | None, n_layers: int) -> list:
    """Per layer: None (path does not materialise it) or {count, first} against golden."""
    out = []
    for i in range(n_layers):
        if path is None or i not in path.outputs:
            out.append(None)
            continue
        got, want = np.asarray(path.outputs[i]), ref.outputs[i]
        if got.shape != want.shape:
            out.append(
                {"count": int(want.size), "first": None, "note": f"shape {got.shape} != golden {want.shape}"}
            )
            continue
        bad = got != want
        first = [int(v) for v in np.argwhere(bad)[0]] if bad.any() else None
        out.append(
            {
                "count": int(bad.sum()),
                "first": first,
                "got": None if first is None else int(got[tuple(first)]),
                "want": None if first is None else int(want[tuple(first)]),
            }
        )
    return out


def absent(n_layers: int, path: PathResult | None, not_run: str | None, fused_into: dict) -> list:
    """Per layer, why the path has no output to compare (None where it has one):
    {"not_run": why} when the path did not run, {"fused_into": N} when the layer is computed
    inside layer N's kernel or array operation (only N's output exists), else
    {"not_materialised": what}."""
    out = []
    for i in range(n_layers):
        if path is not None and i in path.outputs:
            out.append(None)
        elif path is None:
            out.append({"not_run": not_run or "the path did not run"})
        elif i in fused_into:
            out.append({"fused_into": int(fused_into[i])})
        else:
            out.append({"not_materialised": "the path keeps no output of this layer"})
    return out


def fpga_fused_into(fpga: PathResult) -> dict:
    """Layer -> the layer whose array operation computes it (a conv's Step, a shift's conv...)."""
    return {i: lay["layer"] for lay in fpga.info["layers"] for i in range(lay["first"], lay["layer"])}


def cpu_fused_into(cpu: PathResult | None) -> dict:
    """Layer -> the layer whose fused CPU kernel computes it."""
    kernels = cpu.info["kernels"] if cpu else []
    return {i: k["last"] for k in kernels for i in range(k["first"], k["last"])}


GPU_NOT_RUN = "the GPU kernels cover BNN layers only"


def _inject(path: PathResult | None, name: str) -> None:
    """Flip one element of the path's last output (self-test of the mismatch report)."""
    if path is None:
        raise CompareError(f"--inject-fault {name}: the {name} path did not run for this model")
    last = max(path.outputs)
    arr = path.outputs[last] = np.array(path.outputs[last], copy=True)
    flat = arr.reshape(-1)
    flat[0] = -flat[0] if arr.dtype == np.int8 else flat[0] + 1


def accuracy(scores, labels) -> float | None:
    if labels is None or scores is None:
        return None
    pred = bnn.argmax(np.asarray(scores).reshape(len(scores), -1))
    return float((pred == labels).mean())


def check_options(opts: Options) -> None:
    """Every option that can be checked before any work; raises CompareError (one line)."""
    if opts.images < 1:
        raise CompareError("--images must be at least 1")
    if opts.rtl_images < 0:
        raise CompareError("--rtl-images must be 0 or more")
    if opts.rtl_jobs is not None and opts.rtl_jobs < 1:
        raise CompareError("--rtl-jobs must be at least 1")
    if opts.address is not None and not opts.address.strip():
        raise CompareError("--address must name a Ray cluster (host:port, auto) or be local")
    if opts.address is not None:
        try:
            check_address(opts.address, allow_local=True)
        except AddressError as exc:
            raise CompareError(str(exc)) from None
    if opts.sim not in ("verilator", "icarus"):
        raise CompareError(f"--sim must be verilator or icarus, got {opts.sim!r}")
    if opts.clock_mhz is not None and not (
        math.isfinite(opts.clock_mhz) and MIN_CLOCK_MHZ <= opts.clock_mhz <= MAX_CLOCK_MHZ
    ):
        raise CompareError(
            f"--clock-mhz must lie in {MIN_CLOCK_MHZ:g}..{MAX_CLOCK_MHZ:g} (MHz), got {opts.clock_mhz}"
        )
    if opts.batch < 1:
        raise CompareError("--batch must be at least 1")
    if opts.rtl_timeout is not None and not (math.isfinite(opts.rtl_timeout) and opts.rtl_timeout > 0):
        raise CompareError(f"--rtl-timeout must be a positive number of seconds, got {opts.rtl_timeout}")
    if opts.input_scale is not None:
        try:
            check_scale(opts.input_scale, "--input-scale")  # the one check of a scale
        except ValueError as exc:
            raise CompareError(str(exc)) from None
    cap = os.environ.get("RTL_WATCHDOG_CYCLES", "").strip()
    if cap and not (cap.isdigit() and int(cap) > 0):
        raise CompareError(
            f"RTL_WATCHDOG_CYCLES (environment) must be a positive whole number of cycles, got {cap!r}"
        )
    _parse_array(opts.array)
    random_seed(opts.data, opts.seed)
    if not opts.data.strip():
        raise CompareError("--data is empty; give digits, a dataset path or random[:SEED]")


def run(opts: Options) -> tuple[dict, int]:
    """Run every path; returns (report, exit code: 0 all equal, 1 a mismatch). Writes
    opts.out/outputs/*.npy with save_outputs, and the RTL's scratch files in a temporary
    directory under opts.out (removed at the end, however it ends)."""
    check_options(opts)
    net, image_scale, scale_entry = prepare_input(
        load_model(opts.model, opts.input_scale), from_flag=opts.input_scale is not None
    )
    x, labels, data_desc = load_data(opts, net, image_scale)
    if scale_entry["scale"] is not None:
        data_desc += f", pixels x {scale_entry['scale']} ({scale_entry['source']})"
    opts.out.mkdir(parents=True, exist_ok=True)
    ref = run_golden(net, x)
    constant = first_constant_layer(ref.outputs, x)
    warnings = [] if constant is None else [constant_warning(net, constant, len(x), scale_entry)]
    try:
        gpu = run_gpu(net, x, opts)
        cpu, cpu_not_run = run_cpu(net, x)
        with tempfile.TemporaryDirectory(dir=opts.out) as tmp:
            fpga = run_fpga(net, x, opts, Path(tmp))
    except NumericsError as exc:
        raise CompareError(f"{net.name}: {exc}") from None
    if opts.inject_fault:
        _inject({"gpu": gpu, "cpu": cpu}.get(opts.inject_fault, fpga), opts.inject_fault)
    n_layers = len(net.layers)
    mm_gpu, mm_fpga = mismatches(ref, gpu, n_layers), mismatches(ref, fpga, n_layers)
    mm_cpu = mismatches(ref, cpu, n_layers)
    why = {
        "fpga": absent(n_layers, fpga, None, fpga_fused_into(fpga)),
        "gpu": absent(n_layers, gpu, GPU_NOT_RUN, {}),
        "cpu": absent(n_layers, cpu, cpu_not_run, cpu_fused_into(cpu)),
    }
    last = n_layers - 1
    report = {
        "model": str(opts.model),
        "network": net.name,
        "data": data_desc,
        "images": len(x),
        "rtl_images": fpga.info["rtl"]["images"],
        "input_scale": scale_entry,
        "warnings": warnings,
        "accuracy": {
            "golden": accuracy(ref.outputs[last], labels),
            "gpu": accuracy(gpu.outputs.get(last), labels) if gpu else None,
            "fpga": accuracy(fpga.outputs.get(last), labels),
            "cpu": accuracy(cpu.outputs.get(last), labels) if cpu else None,
        },
        "gpu_backend": gpu.info["backend"] if gpu else "n/a",
        "mismatches": {
            "gpu": sum(m["count"] for m in mm_gpu if m) if gpu else None,
            "fpga": sum(m["count"] for m in mm_fpga if m),
            "cpu": sum(m["count"] for m in mm_cpu if m) if cpu else None,
            "layers": [
                {
                    "index": i,
                    "layer": net.layers[i].describe(),
                    "gpu": mm_gpu[i],
                    "fpga": mm_fpga[i],
                    "cpu": mm_cpu[i],
                    "absent": {p: w[i] for p, w in why.items() if w[i] is not None},
                }
                for i in range(n_layers)
            ],
        },
        "fpga": fpga.info,
        "gpu": gpu.info
        if gpu
        else {
            "batch": None,
            "latency_ms_per_batch": None,
            "images_per_s": None,
            "energy_uj_per_image": None,
            "note": f"n/a: {GPU_NOT_RUN}",
        },
        "cpu": cpu.info if cpu else {"wall_s": None, "images_per_s": None, "note": f"n/a: {cpu_not_run}"},
        "golden": {"layer_s": ref.info["layer_s"]},
        "mapping": mapping_table(net, fpga, gpu, cpu),
    }
    fpga_bad = report["mismatches"]["fpga"] or not fpga.info["rtl"].get("cycles_match_model", True)
    code = 1 if (report["mismatches"]["gpu"] or report["mismatches"]["cpu"] or fpga_bad) else 0
    if opts.save_outputs:
        saved = {"golden": ref.outputs[last], "fpga": fpga.outputs[last]}
        if gpu:
            saved["gpu"] = gpu.outputs[last]
        for name, scores in saved.items():
            with atomic_path(opts.out / "outputs" / f"{name}.npy") as tmp:
                np.save(tmp, scores)
    return report, code


def mapping_table(
    net: ir.Network, fpga: PathResult, gpu: PathResult | None, cpu: PathResult | None = None
) -> list:
    """Where each layer runs on each path (the CPU path: the fused kernel that computes it)."""
    kernel = {
        i: k
        for k, lay in enumerate(cpu.info["kernels"] if cpu else [])
        for i in range(lay["first"], lay["last"] + 1)
    }
    on_array = {}
    for lay in fpga.info["layers"]:
        for i in range(lay["first"], lay["layer"] + 1):
            how = f"fused into layer {lay['layer']}" if i != lay["layer"] else f"tiles {lay['tiles']}"
            on_array[i] = f"array ({how})"
    rows = []
    for i, layer in enumerate(net.layers):
        rows.append(
            {
                "index": i,
                "layer": layer.describe(),
                "fpga": on_array.get(i, "host" if i in fpga.info["host_layers"] else "-"),
                "gpu": (gpu.info["impls"][i] if gpu else "n/a"),
                "cpu": f"kernel {kernel[i] + 1}" if i in kernel else "n/a",
            }
        )
    return rows
