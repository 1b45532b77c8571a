"""Bit-exactness check of every kernel without pytest (for a GPU machine whose Python lacks
it): the matrix of tests/test_gpu_kernels.py (the Step cases also with step_pack_warp), every
fused kernel on the matrix of the layer it starts with (tests/test_gpu_fused*.py: conv + Step,
conv + Step + MaxPool2d, BinDense + Step), and whole networks (also with every run of layers
fused), on a chosen backend, against the golden executor. On the emulation it can visit
blocks, warps and threads reversed or shuffled and run the AddressSanitizer build (this
process re-executes itself with the ASan runtime preloaded). A fault the emulation reports (a
malformed warp collective, a divergent barrier, a shared-memory race) fails its case, with
the report's line; so does any other exception a case raises (a kernel that writes set padding
bits makes the golden unpacking raise NumericsError; on CuPy a faulting kernel raises CuPy's
CUDA errors), except that a backend that cannot start (BackendError, BuildError) stops the run.

    python -m gpu_kernels.selfcheck --backend cupy [--json results.json] [--maxfail 3]
    python -m gpu_kernels.selfcheck --backend emulation --order shuffled:7 --asan --every 5
    python -m gpu_kernels.selfcheck --backend emulation --asan --part fused --every 7

Exit status: 0 every check equal to the golden model, 1 a check failed (a mismatch, or an
exception of the case), 2 bad arguments, 3 the backend cannot start (no CuPy or GPU, a failed
build).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from gpu_kernels.configs import CONFIGS
from gpu_kernels.devices import EmulatedGpu, get_gpu, parse_order
from gpu_kernels.errors import BackendError, BuildError, GpuKernelError
from gpu_kernels.layer_cases import (
    FUSED_FAMILIES,
    FUSED_THREADS,
    all_cases,
    case_seed,
    check_fused_case,
    fused_case_label,
    fused_family_cases,
    make_case,
)
from gpu_kernels.progress import progress
from gpu_kernels.runner import Runner, run_network
from models import golden
from models.random_networks import cifar10_bnn, fashion_bnn, random_images
from safeio import write_json_atomic

MIXED = ["cpu", "XYZ", "Y", "Z", "XY", "XZ", "YZ", "cpu", "X", "XYZ"]
WARP_STEP_THREADS = (256, 48)  # step_pack_warp's blocks: whole warps, a partial last warp
ASAN_MARK = "GPU_KERNELS_SELFCHECK_ASAN"  # set once the process runs under the ASan runtime
PARTS = ("matrix", "fused", "networks")  # what a run checks (--part; all by default)


def _equal(res, ref, inside=frozenset()) -> bool:
    """Every output equal to golden, except the layers in `inside` (inside a fused kernel, not
    its last layer: Runner.inside_fused), whose outputs must be None (never written). A None
    output of any other layer is a failure."""
    return all(
        (a is None) if i in inside else (a is not None and a.dtype == b.dtype and np.array_equal(a, b))
        for i, (a, b) in enumerate(zip(res.outputs, ref.outputs, strict=True))
    )


def _case_error(exc: Exception) -> str:
    """A case's exception as one line: GpuKernelError's own message (it names the kernel and the
    problem), the type's name before any other's."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return text if isinstance(exc, GpuKernelError) else f"{type(exc).__name__}: {text}"


def run(backend, every: int = 1, maxfail: int = 0, networks: bool = True, parts=PARTS) -> dict:
    """Every `every`-th case of the matrix and of each fused kernel's cases, and the whole
    networks (`parts`: which of PARTS; `networks=False` leaves those out too); stops after
    `maxfail` failures (0: never). The result's `fused` counts the checks of each fused kernel
    family."""
    failures, skipped, n = [], [], 0
    fused_counts = {}
    gpu = get_gpu(backend)
    name = gpu.describe() if hasattr(gpu, "describe") else str(backend)

    def stop():
        return maxfail and len(failures) >= maxfail

    cases = all_cases(CONFIGS)[::every] if "matrix" in parts else []
    # then the Step cases again with step_pack_warp, in blocks of whole warps and with a
    # partial last warp
    warp_steps = [
        (*c, threads) for c in cases if c[0] in ("step_spatial", "step_flat") for threads in WARP_STEP_THREADS
    ]
    for case in progress(cases + warp_steps, f"kernels on {name}", "case") if cases else ():
        kind, config, bits, variant, pad, batch = case[:6]
        net, x = make_case(kind, bits, variant, pad, batch, case_seed(kind, bits, variant, pad, batch))
        extra = {} if len(case) == 6 else {"step_kernel": "warp", "threads": case[6]}
        label = case if len(case) == 6 else (*case[:6], "warp", *case[6:])
        try:
            res = run_network(net, x, [config], backend=gpu, word_bits=bits, **extra)
            ok = _equal(res, golden.run(net, x))
        except (BackendError, BuildError):  # the backend cannot run: exit 3, not a failure
            raise
        except Exception as exc:  # a fault report, NumericsError from set padding bits, CuPy's
            ok = False  # CUDA errors, ...: this case fails, the others still run
            label = (*label, f"error: {_case_error(exc)}")
        n += 1
        if not ok:
            failures.append("-".join(map(str, label)))
            if stop():
                break
    # each fused kernel on its matrix, blocks of whole, partial and sub-warp thread counts
    fused = [
        (family, case, FUSED_THREADS[i % len(FUSED_THREADS)])
        for family in FUSED_FAMILIES
        for i, case in enumerate(fused_family_cases(family, CONFIGS)[::every])
    ]
    for family, case, threads in (
        progress(fused, f"fused kernels on {name}", "case") if "fused" in parts and not stop() else ()
    ):
        try:
            problem = check_fused_case(gpu, family, case, threads)
        except (BackendError, BuildError):
            raise
        except Exception as exc:  # as in the matrix: the case fails
            problem = f"error: {_case_error(exc)}"
        n += 1
        fused_counts[family] = fused_counts.get(family, 0) + 1
        if problem is not None:
            failures.append(f"{fused_case_label(family, case, threads)}: {problem}")
            if stop():
                break
    nets = (
        (
            ("fashion", fashion_bnn, 31, MIXED),
            ("fashion", fashion_bnn, 31, "XYZ"),
            ("cifar10", cifar10_bnn, 33, "X"),
        )
        if networks and "networks" in parts and not stop()
        else ()
    )
    # both shapes with every run of layers fused (fuse="auto": the pooled, pair and dense kernels)
    fused_nets = (
        (("fashion", fashion_bnn, 31, "XY", "auto"), ("cifar10", cifar10_bnn, 33, "XZ", "auto"))
        if networks and "fused" in parts and not stop()
        else ()
    )
    for net_name, make, shape_seed, mapping, *fuse in nets + fused_nets:
        if stop():
            break
        net = make(shape_seed)
        x = random_images(shape_seed + 1, 3, net.input_shape)
        ref = golden.run(net, x)
        for bits in (32, 64):
            label = f"{net_name}-{mapping if isinstance(mapping, str) else 'mixed'}-w{bits}" + (
                "-fused" if fuse else ""
            )
            try:
                runner = Runner(
                    net, mapping, backend=gpu, word_bits=bits, batch=2, fuse=fuse[0] if fuse else None
                )
                res = runner.run(x)
                ok = _equal(res, ref, runner.inside_fused)
                ok = ok and np.array_equal(res.predictions, ref.predictions)
            except BuildError as exc:  # a mapping with CPU layers needs g++
                skipped.append(f"{label}: {exc}")
                continue
            except BackendError:
                raise
            except Exception as exc:  # e.g. a fault the emulation reports: this check fails
                ok = False
                label = f"{label}-error: {_case_error(exc)}"
            n += 1
            if fuse:
                fused_counts["networks"] = fused_counts.get("networks", 0) + 1
            if not ok:
                failures.append(label)
                if stop():
                    break
    return {"backend": name, "checks": n, "failures": failures, "skipped": skipped, "fused": fused_counts}


def _reexec_under_asan(argv) -> int:
    """Run this module again with the ASan runtime preloaded (it must come first)."""
    from gpu_kernels.build import asan_runtime  # noqa: PLC0415

    env = dict(os.environ, LD_PRELOAD=str(asan_runtime()), **{ASAN_MARK: "1"})
    env["ASAN_OPTIONS"] = "detect_leaks=0:" + env.get("ASAN_OPTIONS", "")
    os.execve(sys.executable, [sys.executable, "-m", "gpu_kernels.selfcheck", *argv], env)
    return 3  # not reached


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    ap.add_argument("--backend", default="auto", choices=("auto", "cupy", "emulation"))
    ap.add_argument(
        "--order", default=None, help="emulation: in-order | reversed | shuffled[:SEED] (blocks and threads)"
    )
    ap.add_argument("--asan", action="store_true", help="emulation: the AddressSanitizer build")
    ap.add_argument("--every", type=int, default=1, help="check every n-th case of the matrix")
    ap.add_argument("--maxfail", type=int, default=0, help="stop after this many failures")
    ap.add_argument("--no-networks", action="store_true", help="leave the whole networks out")
    ap.add_argument(
        "--part",
        action="append",
        choices=PARTS,
        default=None,
        help="check only this part (repeatable): the layer matrix, the fused kernels' cases and "
        "fused networks, the whole networks; all by default",
    )
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if (args.order or args.asan) and args.backend != "emulation":
        print("selfcheck: --order and --asan apply to --backend emulation only", file=sys.stderr)
        return 2
    if args.every < 1 or args.maxfail < 0:
        print("selfcheck: --every must be >= 1 and --maxfail >= 0", file=sys.stderr)
        return 2
    try:
        if args.asan and not os.environ.get(ASAN_MARK):
            return _reexec_under_asan(argv)
        backend = args.backend
        if args.backend == "emulation" and (args.order or args.asan):
            order, seed = parse_order(args.order)
            backend = EmulatedGpu(order, seed, sanitize=args.asan)
        t0 = time.perf_counter()
        out = run(backend, args.every, args.maxfail, not args.no_networks, tuple(args.part or PARTS))
    except (BackendError, BuildError) as exc:
        print(f"selfcheck: the {args.backend} backend cannot run here: {exc}", file=sys.stderr)
        return 3
    except GpuKernelError as exc:
        print(f"selfcheck: {exc}", file=sys.stderr)
        return 2
    out["seconds"] = time.perf_counter() - t0
    print(
        f"{out['checks']} checks on {out['backend']}, {len(out['failures'])} failures "
        f"({out['seconds']:.1f} s)"
        + (
            "\n  fused kernels: " + ", ".join(f"{k}: {v} checks" for k, v in out["fused"].items())
            if out["fused"]
            else ""
        )
        + "".join(f"\n  FAIL {f}" for f in out["failures"])
    )
    if args.json:
        write_json_atomic(args.json, out, indent=1)
    return 1 if out["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
