#!/usr/bin/env python3
"""GPU benchmark of the BNN path: the HEP-BNN Fashion-MNIST and CIFAR-10 shapes (or ONNX
models), 10,000 images each, on CuPy: a measured profile (every layer in the CPU implementation
and the seven configurations, batch sizes 2^bl..2^bu; kernel times and host issue times
separately), Algorithm 1 and the transfer-aware DP mapping, then full runs of both mappings,
every uniform configuration (all layers X, ..., all XYZ) and CPU only, most important first.
Every run's outputs are checked against the golden executor on the first images; with real
data (--data) its accuracy over all images is reported beside its time. Writes JSON (and the
mapper's table, mapping JSON and heatmap) into --out, after every step, so that a run cut short
leaves what it measured.

Time budget: each shape gets --budget-s seconds: its profile may use --profile-share of them
(batch sizes that would end later are left out), then runs start only while their predicted
time fits what is left. scripts/gpu_check.sh runs one shape per invocation, each with its own
budget, so the CIFAR-10 shape is never the one squeezed out.

Targets on an H200 for 10,000 images: Fashion-MNIST shape under 20 ms, CIFAR-10 shape under
200 ms (HEP-BNN: 2.23 s and 42.44 s). Wall time = first input copy to scores on the host.

    python benchmarks/gpu_bnn.py --backend cupy --out results/
    python benchmarks/gpu_bnn.py --backend cupy --shapes fashion --data fashion --out results/
    python benchmarks/gpu_bnn.py --backend cupy --step-kernel warp --out results-warp/
    python benchmarks/gpu_bnn.py --backend cupy --fused --out results/
    python benchmarks/gpu_bnn.py --backend emulation --images 8 --fashion-exp 1 2 --shapes fashion \\
        --out /tmp/x

With --fused the profile also times every fused kernel (each run of layers one kernel can
compute: conv + Step, conv + Step + MaxPool2d, BinDense + Step) in every configuration, after a
check that the network with every run fused equals the golden model (in a child process, so
that a faulting fused kernel's sticky CUDA error cannot stop this one; a failure is recorded
and the shape goes on unfused); the DP may then run layers fused ("dp"), a "dp-unfused" run maps
the same profile without them, and `fused_kernels` in the JSON compares each fused kernel's time
with its layers' separate kernels at every batch size.

Exit status: 0 every run equal to the golden model, 1 a run differs, 2 bad arguments or data,
3 the backend cannot run here, 130 interrupted (SIGINT, e.g. `timeout -s INT`; JSON written).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from gpu_kernels.configs import CONFIGS, CPU, IMPLS
from gpu_kernels.devices import get_gpu
from gpu_kernels.errors import BackendError, BuildError, GpuKernelError
from gpu_kernels.layer_ops import STEP_KERNELS
from gpu_kernels.mapper import batch_range, dp_mapping, evaluate, fused_gpu_variants, map_network
from gpu_kernels.mapper_report import format_table, write_heatmap
from gpu_kernels.nvml_energy import ENERGY_WINDOW_S, NO_READING, energy_per_call, gpu_energy_j
from gpu_kernels.profiling import MeasuredProfile, Profile, fused_key
from gpu_kernels.runner import Runner
from models import golden
from models.datasets import DatasetError, load_for_network
from models.random_networks import SHAPES, network_from_spec, random_images
from safeio import write_text_atomic

TARGET_S = {"fashion": 0.020, "cifar10": 0.200}
TARGET_IMAGES = 10_000
NET_SEED, DATA_SEED = 2024, 7
# The order full runs are tried in: what the issue reports first (the mapping vs all-XYZ).
PRIORITY = (
    "dp",
    "all-XYZ",
    "dp-unfused",  # --fused: the DP mapping of the same profile without the fused kernels
    "algorithm1",
    "all-X",
    "all-XY",
    "all-XZ",
    "all-YZ",
    "all-Y",
    "all-Z",
    "cpu-only",
)
RUN_OVERHEAD_S = 0.5  # Runner set-up, weight upload, exactness check, per run


def best_uniform_batch(impls, prof, n_images):
    """Batch size at which a fixed per-layer mapping is predicted cheapest (with copies)."""
    best = None
    for b in prof.batch_sizes:
        try:
            t = evaluate(impls, prof, b, n_images)[2]
        except GpuKernelError:  # some layer cannot run so at this batch size
            continue
        if best is None or t < best[1]:
            best = (b, t)
    return best


def fused_kernel_times(prof) -> dict:
    """{"first-last": {"kernel", "layers", "batch": {b: ...}}}: each fused kernel the profile
    timed (meta["fused_gpu"]; a register-blocked one as "first-last/pxN") against its layers'
    separate kernels, kernel times alone: the fastest configuration of the fused kernel
    (`fused_s`, `fused_config`), the sum of each layer's fastest configuration (`unfused_s`),
    the layers' sum in the fused kernel's configuration (`unfused_same_config_s`), and
    unfused_s / fused_s (`speedup`)."""
    out = {}
    for (first, last, px), entry in sorted(fused_gpu_variants(prof).items()):
        rows = {}
        for b in prof.batch_sizes:
            row = (entry.get("layer_s") or {}).get(str(b))
            if row is None:
                continue
            fused = [(t, m) for t, m in zip(row, prof.impls, strict=True) if t is not None and m != CPU]
            layers = [
                [t for t, m in zip(prof.layer_s[b][i], prof.impls, strict=True) if t is not None and m != CPU]
                for i in range(first, last + 1)
            ]
            if not fused or not all(layers):
                continue
            best_t, best_m = min(fused)
            unfused = sum(min(ts) for ts in layers)
            j = prof.impls.index(best_m)
            same = [prof.layer_s[b][i][j] for i in range(first, last + 1)]
            rows[str(b)] = {
                "fused_s": best_t,
                "fused_config": best_m,
                "unfused_s": unfused,
                "unfused_same_config_s": None if None in same else sum(same),
                "speedup": unfused / best_t if best_t > 0 else None,
            }
        out[fused_key(first, last, px)] = {
            "kernel": entry.get("kernel"),
            "layers": prof.layers[first : last + 1],
            "batch": rows,
        }
    return out


def fused_lines(times: dict, time_of: str) -> list[str]:
    """The fused kernels against their layers' kernels, one line per kernel and batch size."""
    lines = [f"fused kernels against their layers' separate kernels ({time_of}; kernel times):"]
    for key, e in times.items():
        for b, r in e["batch"].items():
            lines.append(
                f"  layers {key:>5} {e['kernel']:<34} batch {b:>5}: fused {1e3 * r['fused_s']:9.3f} ms "
                f"({r['fused_config']}), separate {1e3 * r['unfused_s']:9.3f} ms"
                + (f", {r['speedup']:.2f}x" if r["speedup"] else "")
            )
    return lines


def fused_self_check(net, x, args) -> str | None:
    """None when the network with every run of layers fused (all layers X) equals the golden
    model on `x`; else why not, in one line (the shape then goes on unfused). Runs in this
    process: bench_shape calls it in a child process (fused_self_check_isolated)."""
    try:
        ref = golden.run(net, x)
        runner = Runner(net, "X", backend=args.backend, word_bits=args.word_bits, fuse="auto")
        res = runner.run(x)
    except Exception as exc:  # whatever the backend raises: recorded, the benchmark goes on
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
    bad = _differing(res.outputs, ref.outputs, runner.inside_fused)
    return f"layers {bad} differ from the golden model" if bad else None


FUSED_CHECK_WORKER = "--fused-self-check-worker"  # main's hidden mode: SPEC X.npy BACKEND BITS
FUSED_CHECK_MARK = "fused self check: "  # the worker's result line: this, then JSON


def fused_check_command(spec: str, x_path: Path, args) -> list[str]:
    """The child process of fused_self_check_isolated: this script in its worker mode."""
    return [
        sys.executable,
        str(Path(__file__).resolve()),
        FUSED_CHECK_WORKER,
        spec,
        str(x_path),
        args.backend,
        str(args.word_bits),
    ]


def fused_self_check_isolated(spec: str, x, args, timeout_s: float) -> str | None:
    """fused_self_check of the shape `spec` on `x`, in a child process. Why not here: on a GPU
    a fused kernel that faults (an out-of-bounds access: cudaErrorIllegalAddress) leaves a
    sticky CUDA error, after which every CUDA call of the process fails, so a broken fused
    kernel checked in this process would stop the whole benchmark (the profile and every
    unfused run) instead of being recorded as fused_error. The child's context alone is lost;
    its death (a signal, an exit without a result, a timeout) is the one-line reason."""
    repo = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p))
    with tempfile.TemporaryDirectory(prefix="gpu_bnn_fused_") as tmp:
        x_path = Path(tmp) / "x.npy"
        np.save(x_path, np.ascontiguousarray(x))  # scratch: the child's input, in this call's temp dir
        try:
            proc = subprocess.run(
                fused_check_command(spec, x_path, args),
                capture_output=True,
                text=True,
                timeout=max(timeout_s, 1.0),
                env=env,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"the fused self check did not end within {timeout_s:.0f} s"
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(FUSED_CHECK_MARK) and proc.returncode == 0:
            try:
                return json.loads(line[len(FUSED_CHECK_MARK) :])["problem"]
            except (ValueError, KeyError, TypeError):
                break
    how = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
    tail = next((ln.strip() for ln in reversed(proc.stderr.splitlines()) if ln.strip()), "no message")
    return f"the fused self check's process ended with {how} and no result: {tail}"[:300]


def _fused_check_worker(argv) -> int:
    """The child of fused_self_check_isolated: prints FUSED_CHECK_MARK and {"problem": ...}."""
    spec, x_path, backend, bits = argv
    net = network_from_spec(spec, NET_SEED)
    args = argparse.Namespace(backend=backend, word_bits=int(bits))
    problem = fused_self_check(net, np.load(x_path), args)
    print(FUSED_CHECK_MARK + json.dumps({"problem": problem}), flush=True)
    return 0


def _differing(outputs, ref_outputs, inside) -> list[int]:
    """The layers whose output differs from golden. A layer inside a fused kernel (`inside`:
    Runner.inside_fused) must have none (None: never written); every other layer's output must
    be there and equal golden, so a None elsewhere is a difference."""
    return [
        i
        for i, (a, b) in enumerate(zip(outputs, ref_outputs, strict=True))
        if ((a is not None) if i in inside else (a is None or a.dtype != b.dtype or not np.array_equal(a, b)))
    ]


def shape_name(spec: str) -> str:
    return spec if spec in SHAPES else Path(spec).stem


def load_images(net, name: str, args) -> tuple[np.ndarray, np.ndarray | None, str]:
    """(images, labels or None, where they come from): the first --data spec whose images fit
    the network, else seeded random images."""
    notes = []
    for spec in args.data or ():
        try:
            x, y = load_for_network(spec, net)
        except DatasetError as exc:
            notes.append(str(exc))
            continue
        n = min(args.images, len(x))
        if n < args.images:
            print(
                f"{name}: {spec} holds {len(x)} test images, fewer than --images {args.images}: using {n}",
                flush=True,
            )
        return np.ascontiguousarray(x[:n]), y[:n], f"{spec} (test split, first {n} images)"
    if notes:
        print(f"{name}: no --data fits this network ({'; '.join(notes)}): random images", flush=True)
    return (random_images(DATA_SEED, args.images, net.input_shape), None, f"random (seed {DATA_SEED})")


class Recorder:
    """The shape's JSON, rewritten after every step."""

    def __init__(self, out: Path, name: str, summary: dict):
        self.path, self.summary = out / f"gpu_bnn_{name}.json", summary
        self.write()

    def write(self) -> None:
        write_text_atomic(self.path, json.dumps(self.summary, indent=1, default=str))


def bench_shape(spec: str, exps, args, budget_end: float) -> dict:
    name = shape_name(spec)
    t_start = time.perf_counter()
    net = network_from_spec(spec, NET_SEED)
    x, labels, data_source = load_images(net, name, args)
    n_images = len(x)
    out_dir = args.out
    print(
        f"\n=== {name}: {net.name}, {n_images} images ({data_source}; network seed {NET_SEED} "
        f"if random), {args.word_bits}-bit words, backend {args.backend}, budget "
        f"{budget_end - t_start:.0f} s",
        flush=True,
    )
    summary = {
        "shape": name,
        "network": net.name,
        "images": n_images,
        "data": data_source,
        "word_bits": args.word_bits,
        "step_kernel": args.step_kernel,
        "fused": args.fused,
        "budget_s": round(budget_end - t_start, 1),
        "target_s": TARGET_S.get(name),
        "status": "profiling",
        "runs": [],
    }
    rec = Recorder(out_dir, name, summary)
    impls = list(IMPLS)
    try:
        _ = Runner(net, "cpu", backend="cpu").cpu  # builds the CPU implementation
    except BuildError as exc:  # no g++ here: map among GPU configurations only
        print(f"CPU implementation unavailable ({exc}); mapping GPU configurations only")
        impls = list(CONFIGS)
    profile_deadline = t_start + args.profile_share * (budget_end - t_start)
    fused = args.fused
    if fused:  # in a child process: a faulting fused kernel must not take this one's CUDA context
        why = fused_self_check_isolated(
            spec, x[: min(args.check, n_images)], args, profile_deadline - time.perf_counter()
        )
        if why is not None:
            print(f"{name}: the fused kernels are left out: {why}", flush=True)
            summary["fused_error"] = why
            fused = False
    src = MeasuredProfile(
        backend=args.backend,
        word_bits=args.word_bits,
        repeats=args.repeats,
        warmup=args.warmup,
        impls=impls,
        progress=True,
        launches=args.launches,
        deadline=profile_deadline,
        step_kernel=args.step_kernel,
        fused=fused,
    )
    mapping = map_network(net, batch_range(*exps), src, n_images=n_images)
    profile_s = time.perf_counter() - t_start
    table = format_table(mapping)
    print(table, flush=True)
    mapping.save(out_dir / f"mapping_{name}.json")
    write_text_atomic(out_dir / f"mapping_{name}.txt", table + "\n")
    write_heatmap(mapping, out_dir / f"heatmap_{name}.png")
    prof = mapping.profile
    if fused:
        summary["fused_kernels"] = fused_kernel_times(prof)
        print("\n".join(fused_lines(summary["fused_kernels"], prof.source)), flush=True)
    left_out = prof.meta.get("batch_sizes_left_out", [])
    if left_out:
        print(f"{name}: profile budget used up: batch sizes {left_out} left out", flush=True)
    summary.update(
        status="running",
        batch_sizes=prof.batch_sizes,
        batch_sizes_left_out=left_out,
        profile_source=prof.source,
        profile_s=round(profile_s, 2),
    )
    rec.write()

    n_check = min(args.check, n_images)
    ref = golden.run(net, x[:n_check])
    # on CuPy with NVML each run also fills an energy window (the emulation's GPU energy is the
    # board idling, not the run's)
    nvml = args.backend == "cupy" and gpu_energy_j() is not None
    L = len(net.layers)
    plans = {f"all-{c}": [c] * L for c in CONFIGS if c in impls}
    if CPU in impls:
        plans["cpu-only"] = [CPU] * L
    choices = {ch.algorithm: ch for ch in (mapping.dp, mapping.algorithm1)}
    if fused:  # the same profile mapped without the fused kernels
        plain = Profile.from_json(prof.to_json())
        plain.meta = {k: v for k, v in plain.meta.items() if k != "fused_gpu"}
        choices["dp-unfused"] = dp_mapping(plain, n_images)
    candidates = {
        name_: {
            "impls": ch.impls,
            "batch": ch.batch,
            "fused_gpu": ch.fused_gpu,
            "fused_px": ch.fused_px,
            "predicted_s": ch.total_s,
            "predicted_gpu_kernel_s": ch.gpu_kernel_s,
            "predicted_gpu_host_s": ch.gpu_host_s,
        }
        for name_, ch in choices.items()
    }
    for plan_name, m in plans.items():
        best = best_uniform_batch(m, prof, n_images)
        candidates[plan_name] = (
            {"impls": m, "skipped": "cannot be launched at any batch size"}
            if best is None
            else {"impls": m, "batch": best[0], "predicted_s": best[1]}
        )
    runs = summary["runs"]
    for run_name in [p for p in PRIORITY if p in candidates]:
        run = {"name": run_name, **candidates[run_name]}
        runs.append(run)
        if "skipped" not in run:
            left = budget_end - time.perf_counter()
            # a run costs its prediction, plus a warm-up batch, plus the set-up and check, plus
            # the energy window (repeats of the run, at least one, when NVML reads energy)
            cost = (
                run["predicted_s"] * (1 + run["batch"] / n_images)
                + RUN_OVERHEAD_S
                + (max(ENERGY_WINDOW_S, run["predicted_s"]) if nvml else 0.0)
            )
            if run["predicted_s"] > args.max_run_s:
                run["skipped"] = f"predicted {run['predicted_s']:.1f} s > --max-run-s {args.max_run_s}"
            elif cost > left:
                run["skipped"] = f"predicted {cost:.1f} s, {max(left, 0):.1f} s of the budget left"
        if "skipped" in run:
            print(f"{run_name:>12}: skipped ({run['skipped']})", flush=True)
            rec.write()
            continue
        runner = Runner(
            net,
            run["impls"],
            backend=args.backend,
            word_bits=args.word_bits,
            batch=run["batch"],
            step_kernel=args.step_kernel,
            fuse=run.get("fused_gpu") or None,
            # the register-blocked kernels the choice took: {"first-last": px} -> {first: px}
            fused_px={int(k.split("-")[0]): v for k, v in (run.get("fused_px") or {}).items()} or None,
        )
        check = runner.run(x[:n_check])  # exactness, and the warm-up
        exact = not _differing(check.outputs, ref.outputs, runner.inside_fused) and np.array_equal(
            check.predictions, ref.predictions
        )
        runner.run(x[: run["batch"]], keep_outputs=False)  # warm-up at full batch size
        res = runner.run(x, keep_outputs=False)
        # energy over repeats of the same run: NVML's counter moves in steps (nvml_energy.py)
        energy = (
            energy_per_call(lambda runner=runner: runner.run(x, keep_outputs=False, predictions=False))
            if nvml
            else NO_READING
        )
        accuracy = (
            float(np.mean(res.predictions == labels))
            if labels is not None and res.predictions is not None
            else None
        )
        run.update(
            {
                "wall_s": res.wall_s,
                "gpu_kernel_s": res.gpu_kernel_s,
                "gpu_host_s": res.gpu_host_s,
                "transfer_s": res.transfer_s,
                "exact_on_first": n_check if exact else None,
                "exact": exact,
                "accuracy": accuracy,
                **energy.as_dict(),
                "result": res.as_dict(),
            }
        )
        print(
            f"{run_name:>12}: batch {run['batch']:>5}, wall {1e3 * res.wall_s:10.3f} ms "
            f"(predicted {1e3 * run['predicted_s']:10.3f} ms; GPU kernels {1e3 * res.gpu_kernel_s:.3f} ms, "
            f"host issue {1e3 * res.gpu_host_s:.3f} ms, copies {1e3 * res.transfer_s:.3f} ms), "
            f"exact on {n_check}: {exact}"
            + (f", accuracy {100 * accuracy:.2f}%" if accuracy is not None else "")
            + (
                f", {energy.joules_per_call:.2f} J ({energy.calls} runs in {energy.seconds:.1f} s)"
                if energy.joules_per_call is not None
                else ""
            ),
            flush=True,
        )
        rec.write()

    done = [r for r in runs if "wall_s" in r]
    best = min(done, key=lambda r: r["wall_s"]) if done else None
    walls = {r["name"]: r["wall_s"] for r in done}
    target = TARGET_S.get(name)
    verdict = (
        bool(best and best["wall_s"] < target)
        if args.backend == "cupy" and target is not None and n_images == TARGET_IMAGES
        else None
    )
    if not done:
        print(f"{name}: no full run fitted the budget", flush=True)
    summary.update(
        status="done",
        all_exact=all(r["exact"] for r in done) if done else None,
        best_run=best["name"] if best else None,
        best_wall_s=best["wall_s"] if best else None,
        dp_vs_all_xyz=(walls["all-XYZ"] / walls["dp"]) if {"dp", "all-XYZ"} <= set(walls) else None,
        dp_unfused_vs_dp=(walls["dp-unfused"] / walls["dp"]) if {"dp", "dp-unfused"} <= set(walls) else None,
        target_met=verdict,
        seconds=round(time.perf_counter() - t_start, 2),
    )
    rec.write()
    if best:
        print(
            f"{name}: best {best['name']} {1e3 * best['wall_s']:.3f} ms for {n_images} images"
            + (
                f" (target {1e3 * target:.0f} ms for {TARGET_IMAGES} on an H200"
                + (f": {'met' if verdict else 'NOT met'})" if verdict is not None else ")")
                if target is not None
                else ""
            )
            + ("" if args.backend == "cupy" else "; emulation: NOT GPU timings")
            + (
                f"; dp vs all-XYZ: all-XYZ takes {summary['dp_vs_all_xyz']:.2f}x the DP mapping's time"
                if summary["dp_vs_all_xyz"]
                else ""
            )
            + (
                f"; fused: dp-unfused takes {summary['dp_unfused_vs_dp']:.2f}x the fused DP mapping's time"
                if summary["dp_unfused_vs_dp"]
                else ""
            ),
            flush=True,
        )
    return summary


def _merge_json(path: Path, info: dict, shapes: dict, seconds: float, interrupted: bool) -> None:
    """gpu_bnn.json: every shape benchmarked into this directory (one invocation per shape adds
    its own)."""
    try:
        old = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        old = {}
    merged = {
        "info": info,
        "shapes": {**old.get("shapes", {}), **shapes},
        "seconds": {**old.get("seconds", {}), **{k: seconds for k in shapes}},
    }
    if interrupted:
        merged["interrupted"] = sorted(set(old.get("interrupted", [])) | set(shapes))
    write_text_atomic(path, json.dumps(merged, indent=1, default=str))


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == [FUSED_CHECK_WORKER]:
        return _fused_check_worker(argv[1:])
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    ap.add_argument("--backend", default="cupy", choices=("cupy", "emulation", "auto"))
    ap.add_argument(
        "--shapes",
        nargs="+",
        default=["fashion", "cifar10"],
        help="fashion, cifar10 (seeded random parameters) or .onnx files",
    )
    ap.add_argument(
        "--data",
        nargs="+",
        default=None,
        metavar="SPEC",
        help="real images instead of random ones: a dataset directory or file, or a "
        "name models.datasets knows (fashion); each shape takes the first that "
        "fits its input, the test split; accuracy is reported beside time",
    )
    ap.add_argument("--images", type=int, default=TARGET_IMAGES)
    ap.add_argument("--word-bits", type=int, default=64, choices=(32, 64))
    ap.add_argument(
        "--step-kernel",
        default="thread",
        choices=tuple(STEP_KERNELS),
        help="the Step layers' kernel: step_pack (a thread per word) or step_pack_warp (a warp per "
        "word, __ballot_sync)",
    )
    ap.add_argument(
        "--fused",
        action="store_true",
        help="also profile the fused kernels (conv + Step (+ MaxPool2d), BinDense + Step), let the DP "
        "run them, and run the DP mapping without them (dp-unfused) for comparison",
    )
    ap.add_argument("--fashion-exp", type=int, nargs=2, default=(6, 12), metavar=("BL", "BU"))
    ap.add_argument("--cifar10-exp", type=int, nargs=2, default=(6, 10), metavar=("BL", "BU"))
    ap.add_argument(
        "--exp",
        type=int,
        nargs=2,
        default=(6, 10),
        metavar=("BL", "BU"),
        help="batch exponents of ONNX shapes",
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--launches", type=int, default=4, help="back-to-back launches per GPU timing")
    ap.add_argument("--check", type=int, default=16, help="images checked against the golden model")
    ap.add_argument(
        "--max-run-s", type=float, default=10.0, help="skip a full run whose profile predicts more than this"
    )
    ap.add_argument(
        "--budget-s", type=float, default=150.0, help="seconds for each shape: profile, mapping and full runs"
    )
    ap.add_argument(
        "--profile-share", type=float, default=0.5, help="share of a shape's budget its profile may use"
    )
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    for spec in args.shapes:
        if spec not in SHAPES and not (spec.endswith(".onnx") and Path(spec).is_file()):
            print(
                f"gpu_bnn: --shapes {spec}: neither {' nor '.join(SHAPES)} nor an existing .onnx file",
                file=sys.stderr,
            )
            return 2
    if args.images < 1 or args.budget_s <= 0 or not 0 < args.profile_share <= 1:
        print("gpu_bnn: --images and --budget-s must be positive, --profile-share in (0, 1]", file=sys.stderr)
        return 2
    if args.data:
        fits = []
        for spec in args.shapes:
            net = network_from_spec(spec, NET_SEED)
            for d in args.data:
                try:
                    load_for_network(d, net)
                    fits.append(spec)
                    break
                except DatasetError as exc:
                    last = exc
        if not fits:
            print(
                f"gpu_bnn: --data {' '.join(args.data)} fits none of the shapes "
                f"{', '.join(args.shapes)} ({last})",
                file=sys.stderr,
            )
            return 2
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    try:
        gpu = get_gpu(args.backend)
    except (BackendError, BuildError) as exc:
        print(f"gpu_bnn: the {args.backend} backend cannot run here: {exc}", file=sys.stderr)
        return 3
    args.backend = gpu.backend
    info = {
        "backend": gpu.backend,
        "device": getattr(gpu, "device_name", None),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "host": platform.node(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    print(json.dumps(info), flush=True)
    shapes, interrupted = {}, False
    try:
        for _i, spec in enumerate(args.shapes):
            exps = {"fashion": args.fashion_exp, "cifar10": args.cifar10_exp}.get(spec, args.exp)
            budget_end = time.perf_counter() + args.budget_s
            shapes[shape_name(spec)] = bench_shape(spec, exps, args, budget_end)
    except KeyboardInterrupt:
        interrupted = True
        print("\ngpu_bnn: interrupted; the JSON holds what was measured", flush=True)
    seconds = time.perf_counter() - start
    _merge_json(args.out / "gpu_bnn.json", info, shapes, seconds, interrupted)
    print(f"\nwrote {args.out / 'gpu_bnn.json'} ({seconds:.0f} s)")
    if interrupted:
        return 130
    return 1 if any(s["all_exact"] is False for s in shapes.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
