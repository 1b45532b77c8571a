"""First step of scripts/gpu_check.sh: is this machine ready to run the kernels, and what did
the compiler make of them? Seconds, not minutes, and one clear line when the answer is no.

    python -m gpu_kernels.preflight --out DIR        # writes DIR/preflight.json

Prints, as soon as each is known: Python, numpy, CuPy, the CUDA driver's and runtime's versions,
NVRTC's version, the device; then compiles the kernel module once (NVRTC, through CuPy) and
prints every kernel's registers, local memory and largest block; then runs a smoke test (a
small network in every configuration, against the golden model, and one timed launch).

Exit status (scripts/gpu_check.sh passes it on):
  0  ready
  3  CuPy cannot be imported
  4  no usable CUDA device (none, a driver too old for CuPy's CUDA runtime, a failed init)
  5  NVRTC is missing or the kernel module does not compile
  6  the compiled kernels are unusable: a block of the default size does not fit, or the
     smoke test differs from the golden model or fails to launch
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import platform
import sys
import time
import traceback
from pathlib import Path

import numpy as np

from safeio import write_text_atomic

EXIT_OK, EXIT_NO_CUPY, EXIT_NO_DEVICE, EXIT_NO_NVRTC, EXIT_KERNELS = 0, 3, 4, 5, 6
SMOKE_SEED = 5


class Stop(Exception):
    """A reason to stop, with its exit status."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def say(msg: str) -> None:
    print(f"[preflight] {msg}", flush=True)


def cuda_version(v) -> str:
    """13000 -> "13.0", 12040 -> "12.4" (CUDA's major * 1000 + minor * 10)."""
    try:
        v = int(v)
    except (TypeError, ValueError):
        return str(v)
    return f"{v // 1000}.{v % 1000 // 10}" if v > 0 else "none"


def _try(fn):
    """(value, None) or (None, "ExceptionType: message")."""
    try:
        return fn(), None
    except Exception as exc:  # a probe: every failure becomes one line of the report
        return None, f"{type(exc).__name__}: {str(exc).strip()}"


def versions(report: dict):
    """Import CuPy and read every version; returns the cupy module."""
    report["python"] = platform.python_version()
    report["numpy"] = np.__version__
    say(f"python {report['python']} ({sys.executable}), numpy {report['numpy']}")
    try:
        import cupy as cp
    except Exception as exc:  # ImportError, or a CuPy that fails while loading
        raise Stop(
            EXIT_NO_CUPY,
            f"CuPy cannot be imported ({type(exc).__name__}: {exc}); "
            f"install cupy-cuda13x (the GPU machine's image has it)",
        ) from None
    try:
        rt = cp.cuda.runtime
    except Exception as exc:  # a CuPy without its CUDA part
        raise Stop(
            EXIT_NO_CUPY, f"CuPy has no usable CUDA runtime module ({type(exc).__name__}: {exc})"
        ) from None
    report["cupy"] = getattr(cp, "__version__", "?")
    driver, driver_err = _try(lambda: rt.driverGetVersion())
    runtime, runtime_err = _try(lambda: rt.runtimeGetVersion())
    nvrtc, nvrtc_err = _try(lambda: cp.cuda.nvrtc.getVersion())
    report.update(
        cuda_driver=driver,
        cuda_driver_error=driver_err,
        cuda_runtime=runtime,
        cuda_runtime_error=runtime_err,
        nvrtc=".".join(map(str, nvrtc)) if nvrtc else None,
        nvrtc_error=nvrtc_err,
    )
    say(
        f"CuPy {report['cupy']}, CUDA driver {cuda_version(driver) if driver_err is None else driver_err}"
        f" ({driver}), CUDA runtime {cuda_version(runtime) if runtime_err is None else runtime_err}"
        f" ({runtime}), NVRTC {report['nvrtc'] or nvrtc_err}"
    )
    return cp


def device(cp, report: dict) -> None:
    rt = cp.cuda.runtime
    runtime_error = getattr(rt, "CUDARuntimeError", RuntimeError)
    try:
        count = rt.getDeviceCount()
    except runtime_error as exc:
        driver, runtime = report.get("cuda_driver"), report.get("cuda_runtime")
        if isinstance(driver, int) and isinstance(runtime, int) and driver < runtime:
            raise Stop(
                EXIT_NO_DEVICE,
                f"the CUDA driver supports CUDA {cuda_version(driver)}, older "
                f"than CuPy's runtime (CUDA {cuda_version(runtime)}): update "
                f"the driver or use a CuPy built for CUDA "
                f"{cuda_version(driver)} ({exc})",
            ) from None
        raise Stop(EXIT_NO_DEVICE, f"no usable CUDA device: {exc}") from None
    if count < 1:
        raise Stop(EXIT_NO_DEVICE, "CuPy sees no CUDA device")
    dev = cp.cuda.Device()
    props = rt.getDeviceProperties(dev.id)
    name = props.get("name", b"?")
    name = name.decode() if isinstance(name, bytes) else str(name)
    report["device"] = {
        "name": name,
        "count": count,
        "id": dev.id,
        "compute_capability": str(
            getattr(dev, "compute_capability", f"{props.get('major')}{props.get('minor')}")
        ),
        "memory_gib": round(props.get("totalGlobalMem", 0) / 2**30, 1),
        "multiprocessors": props.get("multiProcessorCount"),
        "regs_per_block": props.get("regsPerBlock"),
        "max_threads_per_block": props.get("maxThreadsPerBlock"),
    }
    d = report["device"]
    say(
        f"device {d['id']} of {count}: {name}, compute capability {d['compute_capability']}, "
        f"{d['memory_gib']} GiB, {d['multiprocessors']} SMs"
    )


def compile_module(report: dict):
    """CupyGpu(): NVRTC compiles the module once; returns the device object."""
    from gpu_kernels.devices import get_gpu  # noqa: PLC0415
    from gpu_kernels.errors import BackendError, BuildError  # noqa: PLC0415

    if report.get("nvrtc_error"):
        raise Stop(
            EXIT_NO_NVRTC,
            f"NVRTC is not usable ({report['nvrtc_error']}): CuPy compiles "
            f"the kernels with it (install the CUDA runtime libraries, e.g. "
            f"cupy-cuda13x[ctk] or nvidia-cuda-nvrtc)",
        )
    say("compiling the kernel module (NVRTC, once; CuPy caches it on disk)")
    t0 = time.perf_counter()
    try:
        gpu = get_gpu("cupy")
    except BuildError as exc:
        raise Stop(EXIT_NO_NVRTC, f"the kernel module does not compile: {exc}") from None
    except BackendError as exc:
        raise Stop(EXIT_NO_DEVICE, str(exc)) from None
    report["compile_s"] = round(time.perf_counter() - t0, 3)
    say(f"compiled in {report['compile_s']:.1f} s")
    return gpu


def resources(gpu, report: dict) -> None:
    from gpu_kernels.launch import DEFAULT_THREADS, KERNEL_MAX_THREADS  # noqa: PLC0415

    res = gpu.kernel_resources()
    report["kernels"] = res
    warnings = report.setdefault("warnings", [])
    say(f"{'kernel':24s} {'registers':>9s} {'local B':>8s} {'max block':>9s} {'shared B':>8s} {'sm':>4s}")
    for key, r in res.items():
        say(
            f"{key:24s} {r.get('num_regs', '?'):>9} {r.get('local_size_bytes', '?'):>8} "
            f"{r.get('max_threads_per_block', '?'):>9} {r.get('shared_size_bytes', '?'):>8} "
            f"{r.get('binary_version', '?'):>4}"
        )
        limit = r.get("max_threads_per_block", KERNEL_MAX_THREADS)
        if limit < KERNEL_MAX_THREADS:
            warnings.append(
                f"{key}: at most {limit} threads per block, below the launch bound "
                f"{KERNEL_MAX_THREADS}; the runner plans with {limit}"
            )
        if r.get("local_size_bytes", 0) > 0:
            warnings.append(
                f"{key}: {r['local_size_bytes']} bytes of local memory per thread "
                f"(register spills or a stack)"
            )
    for w in warnings:
        say(f"warning: {w}")
    short = [k for k, r in res.items() if r.get("max_threads_per_block", DEFAULT_THREADS) < DEFAULT_THREADS]
    if short:
        raise Stop(
            EXIT_KERNELS,
            f"{', '.join(short)} cannot run blocks of the default {DEFAULT_THREADS} threads on this device",
        )


def smoke(gpu, report: dict) -> None:
    """A small network in every configuration (both word sizes) equal to the golden model,
    and one back-to-back timing of a launch (the busy-wait kernel and CUDA events)."""
    from gpu_kernels.configs import CONFIGS  # noqa: PLC0415
    from gpu_kernels.runner import Runner  # noqa: PLC0415
    from models import golden  # noqa: PLC0415
    from models.random_networks import fashion_bnn, random_images  # noqa: PLC0415

    net = fashion_bnn(SMOKE_SEED)
    x = random_images(SMOKE_SEED + 1, 3, net.input_shape)
    ref = golden.run(net, x)
    t0 = time.perf_counter()
    checked = []
    for bits in (32, 64):
        for config in CONFIGS:
            label = f"fashion shape, all layers {config}, {bits}-bit words"
            try:
                res = Runner(net, config, backend=gpu, word_bits=bits, batch=2).run(x)
            except Exception as exc:  # a launch failure, whatever CuPy raises
                raise Stop(
                    EXIT_KERNELS, f"smoke test ({label}) failed to run: {type(exc).__name__}: {exc}"
                ) from None
            for i, (a, b) in enumerate(zip(res.outputs, ref.outputs, strict=True)):
                if a.shape != b.shape or not np.array_equal(a, b):
                    bad = int((a != b).sum()) if a.shape == b.shape else "all"
                    raise Stop(
                        EXIT_KERNELS,
                        f"smoke test ({label}): layer {i} ({net.layers[i].describe()}) "
                        f"differs from the golden model in {bad} values",
                    )
            checked.append(label)
    runner = Runner(net, "X", backend=gpu)
    op = runner.ops[3]
    xd = gpu.upload(runner.ops[2].fout.from_golden(ref.outputs[2]))
    _, go = runner.prepare_op_gpu(op, xd, "X")
    try:
        kernel_s, host_s = gpu.time_launches(go, 4)
    except Exception as exc:
        raise Stop(
            EXIT_KERNELS, f"timing launches back to back failed: {type(exc).__name__}: {exc}"
        ) from None
    # the fused kernels last, after everything else this check needs from the device: on a GPU
    # a fused kernel that faults (an out-of-bounds access) leaves a sticky CUDA error, after
    # which every CUDA call of this process fails, so run earlier it would stop the preflight
    # instead of being a warning
    fused = fused_smoke(gpu, net, x, ref, Runner)
    report["smoke"] = {
        "checks": checked,
        "fused_checks": fused["checks"],
        "fused_problems": fused["problems"],
        "seconds": round(time.perf_counter() - t0, 3),
        "timed_kernel": f"layer 3 ({op.layer.describe()}), 3 images, X",
        "kernel_us": round(kernel_s * 1e6, 2),
        "host_issue_us": round(host_s * 1e6, 2),
        "timing_note": getattr(gpu, "timing_note", None),
    }
    # a warning, not a stop: the later phases run in their own processes; there the exactness
    # phase's fused tests fail (the check ends with exit 1), and each benchmark's own fused
    # check (a child process) records fused_error and benchmarks its shape without the fused
    # kernels
    for problem in fused["problems"]:
        report.setdefault("warnings", []).append(problem)
        say(f"warning: {problem}")
    if report["smoke"]["timing_note"]:
        report.setdefault("warnings", []).append(report["smoke"]["timing_note"])
        say(f"warning: {report['smoke']['timing_note']}")
    say(
        f"smoke test: {len(checked)} runs equal to the golden model ({len(fused['checks'])} of 4 "
        f"more with the fused kernels); one BinConv2d launch "
        f"{kernel_s * 1e6:.1f} us on the GPU, {host_s * 1e6:.1f} us to issue "
        f"({report['smoke']['seconds']:.1f} s)"
    )


def fused_smoke(gpu, net, x, ref, runner_cls) -> dict:
    """The smoke network with every run of layers fused (conv + Step + MaxPool2d, BinDense +
    Step), configurations X and XY, both word sizes: {"checks": labels equal to golden,
    "problems": one line each for the others}. A problem is a warning, not a stop: the fused
    kernels are new, the rest of the check does not depend on them."""
    checks, problems = [], []
    for bits in (32, 64):
        for config in ("X", "XY"):
            label = f"fashion shape, all layers {config}, every run fused, {bits}-bit words"
            try:
                runner = runner_cls(net, config, backend=gpu, word_bits=bits, batch=2, fuse="auto")
                res = runner.run(x)
            except Exception as exc:  # a launch failure, whatever CuPy raises
                problems.append(f"smoke test ({label}) failed to run: {type(exc).__name__}: {exc}"[:400])
                continue
            # the layers inside a fused kernel have no output (None); every other layer's is golden
            bad = [
                i
                for i, (a, b) in enumerate(zip(res.outputs, ref.outputs, strict=True))
                if (
                    (a is not None)
                    if i in runner.inside_fused
                    else (a is None or a.shape != b.shape or not np.array_equal(a, b))
                )
            ]
            if bad:
                problems.append(f"smoke test ({label}): layers {bad} differ from the golden model")
            else:
                checks.append(label)
    return {"checks": checks, "problems": problems}


def cupy_config(out: Path | None) -> None:
    if out is None:
        return
    buf = io.StringIO()
    try:
        import cupy as cp

        with contextlib.redirect_stdout(buf):
            cp.show_config()
    except Exception as exc:  # diagnostics only
        buf.write(f"cupy.show_config() failed: {type(exc).__name__}: {exc}\n")
    write_text_atomic(out / "cupy_config.txt", buf.getvalue())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    ap.add_argument("--out", type=Path, default=None, help="directory for preflight.json")
    ap.add_argument("--no-smoke", action="store_true", help="skip the smoke test")
    args = ap.parse_args(argv)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    report: dict = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "host": platform.node()}
    t0 = time.perf_counter()
    code = EXIT_OK
    try:
        cp = versions(report)
        device(cp, report)
        cupy_config(args.out)
        gpu = compile_module(report)
        resources(gpu, report)
        if not args.no_smoke:
            smoke(gpu, report)
        say("ready")
    except Stop as stop:
        code, report["error"] = stop.code, str(stop)
        say(f"STOP: {stop}")
    except Exception as exc:  # a bug here must still end in one line and a report
        code = EXIT_KERNELS
        report["error"] = f"{type(exc).__name__}: {exc}"
        report["traceback"] = traceback.format_exc()
        say(f"STOP: unexpected {report['error']} (traceback in preflight.json)")
    report["exit_code"], report["seconds"] = code, round(time.perf_counter() - t0, 3)
    report["status"] = "ready" if code == EXIT_OK else "failed"
    if args.out is not None:
        write_text_atomic(args.out / "preflight.json", json.dumps(report, indent=1, default=str))
    return code


if __name__ == "__main__":
    sys.exit(main())
