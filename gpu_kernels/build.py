"""Compiling the kernel source for the CPU emulation and the nvcc check, and the CPU
implementation, with a cache.

Each artefact lands in build/gpu_kernels/ (git-ignored) under a name keyed by a hash of its
sources, flags and compiler version, so the test suite compiles each variant once and pytest-xdist
workers share it (a file lock keeps two workers from compiling the same thing at once).
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from gpu_kernels.errors import BuildError
from gpu_kernels.kernel_table import CUDA_DIR, KERNELS, source_files

REPO_ROOT = Path(__file__).resolve().parent.parent
CPU_SOURCE = Path(__file__).resolve().parent / "cpu" / "bnn_cpu.cpp"
TAPS_HEADER = CUDA_DIR / "taps.h"          # shared with the CUDA kernels

EMU_FLAGS = ("-std=c++17", "-O2", "-shared", "-fPIC")
# -march=native: the CPU implementation is built on the machine that runs it (never shipped),
# and AVX-512 VPOPCNTDQ, where present, turns the popcount loops into vector instructions.
CPU_FLAGS = ("-std=c++17", "-O3", "-march=native", "-fopenmp", "-shared", "-fPIC")
NVCC_ARCH = "sm_90"
NVCC_FLAGS = ("-std=c++17", f"-arch={NVCC_ARCH}", "-cubin", "-Xptxas", "-v")


def build_dir() -> Path:
    d = Path(os.environ.get("GPU_KERNELS_BUILD_DIR", REPO_ROOT / "build" / "gpu_kernels"))
    d.mkdir(parents=True, exist_ok=True)
    return d


@functools.lru_cache(maxsize=None)
def _tool_version(tool: str) -> str:
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise BuildError(f"{tool} is needed but not usable here: {exc}") from None
    return out.stdout.strip()


def have_tool(tool: str) -> bool:
    return shutil.which(tool) is not None


def _key(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else str(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def _cached(target: Path, produce) -> Path:
    """Run produce(tmp_path) unless `target` exists; atomic under concurrent workers."""
    if target.exists():
        return target
    with open(target.with_suffix(target.suffix + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            produce(tmp)
            os.replace(tmp, target)
    return target


def _run(cmd: list[str], what: str) -> subprocess.CompletedProcess:
    print(f"[gpu_kernels] compiling {what}", file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"compiling {what} failed ({' '.join(cmd)}):\n{proc.stderr[-4000:]}")
    return proc


def _sources_digest(paths) -> bytes:
    return b"".join(p.name.encode() + b"\0" + p.read_bytes() for p in paths)


def emulation_wrapper() -> str:
    """C++ of the emulation library: the kernel source under the shim plus one exported
    launcher per instantiation of kernel_table.KERNELS."""
    lines = ['#include "emu_shim.h"', '#include "kernels.cu"', '#include "emu_launch.h"', ""]
    lines += [f"EMU_EXPORT({s.symbol}, {s.expr})" for s in KERNELS.values()]
    return "\n".join(lines) + "\n"


def emulation_library() -> Path:
    """Shared library with every kernel instantiation compiled for the CPU emulation."""
    wrapper = emulation_wrapper()
    key = _key(_tool_version("g++"), EMU_FLAGS, wrapper, _sources_digest(source_files()))
    d = build_dir()

    def produce(tmp: Path):
        src = d / f"emu-{key}.cpp"
        src.write_text(wrapper)
        _run(["g++", *EMU_FLAGS, f"-I{CUDA_DIR}", str(src), "-o", str(tmp)],
             "the kernel emulation library (g++)")

    return _cached(d / f"emu-{key}.so", produce)


# The portable variant has no AVX-512 (AVX2 at most): it exercises the code paths a machine
# without AVX-512 runs, and the tests check it too.
PORTABLE_EXTRA = ("-mno-avx512f",)


def cpu_library(portable: bool = False) -> Path:
    """Shared library of the CPU implementation (gpu_kernels/cpu/bnn_cpu.cpp)."""
    flags = CPU_FLAGS + (PORTABLE_EXTRA if portable else ())
    key = _key(_tool_version("g++"), flags, _sources_digest([CPU_SOURCE, TAPS_HEADER]))
    d = build_dir()
    name = "cpu-portable" if portable else "cpu"

    def produce(tmp: Path):
        _run(["g++", *flags, str(CPU_SOURCE), "-o", str(tmp)],
             f"the CPU implementation{' (portable)' if portable else ''} (g++)")

    return _cached(d / f"{name}-{key}.so", produce)


def nvcc_instantiation_source() -> str:
    """kernels.cu plus a table that takes the address of every instantiation, which makes nvcc
    emit device code for each of them."""
    lines = ['#include "kernels.cu"', "", "void* gpu_kernels_instantiations[] = {"]
    lines += [f"    (void*)&{s.expr}," for s in KERNELS.values()]
    lines += ["};", ""]
    return "\n".join(lines)


def nvcc_check() -> tuple[Path, str]:
    """Compile every instantiation for sm_90 with nvcc; return the cubin and ptxas's report
    (registers, spills) of every kernel."""
    if not have_tool("nvcc"):
        raise BuildError("nvcc is not on PATH")
    text = nvcc_instantiation_source()
    key = _key(_tool_version("nvcc"), NVCC_FLAGS, text, _sources_digest(source_files()))
    d = build_dir()
    log = d / f"nvcc-{key}.log"

    def produce(tmp: Path):
        src = d / f"nvcc-{key}.cu"
        src.write_text(text)
        proc = _run(["nvcc", *NVCC_FLAGS, "-diag-suppress", "177", f"-I{CUDA_DIR}", str(src),
                     "-o", str(tmp)], f"every kernel instantiation for {NVCC_ARCH} (nvcc)")
        log.write_text(proc.stdout + proc.stderr)

    cubin = _cached(d / f"nvcc-{key}.cubin", produce)
    return cubin, log.read_text()
