"""Compiling the kernel source for the CPU emulation (plain, or with AddressSanitizer) and the
nvcc check, and the CPU implementation, with a cache.

Each artefact lands in build/gpu_kernels/ (git-ignored) under a name keyed by a hash of its
sources, flags and compiler version, so the test suite compiles each variant once and pytest-xdist
workers share it (a file lock keeps two workers from compiling the same thing at once).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

from gpu_kernels.errors import BuildError
from gpu_kernels.kernel_table import (
    CUDA_DIR,
    CUPY_APPENDED_OPTIONS,
    KERNELS,
    NVRTC_OPTIONS,
    TIMING_KERNEL,
    source_files,
    translation_unit,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
CPU_SOURCE = Path(__file__).resolve().parent / "cpu" / "bnn_cpu.cpp"
TAPS_HEADER = CUDA_DIR / "taps.h"  # shared with the CUDA kernels

# The emulation is compiled with GCC's ThreadSanitizer instrumentation but linked without its
# runtime: every load and store calls a __tsan_* hook that emu_runtime.h defines, which checks
# the kernels' accesses to shared memory (races between threads of a block, reads of bytes no
# thread wrote). -z defs: a hook the compiler calls but the runtime lacks fails the build.
EMU_FLAGS = (
    "-std=c++17",
    "-O2",
    "-fPIC",
    "-fvisibility=hidden",
    "-fsanitize=thread",
    "--param=tsan-instrument-func-entry-exit=0",
    # memcpy/memset/memmove as calls (not expanded inline, not fortified into __*_chk), which
    # EMU_LINK_FLAGS route through emu_runtime.h's checking wrappers
    "-fno-builtin-memcpy",
    "-fno-builtin-memset",
    "-fno-builtin-memmove",
    "-U_FORTIFY_SOURCE",
    # a frame larger than a page touches each page on its way down, so that one larger than the
    # fiber's stack (CUDA allows 512 KiB of local memory) faults at the guard page instead of
    # jumping over it into another fiber's stack (emu_runtime.h, reserve_stacks)
    "-fstack-clash-protection",
    # the kernels' __popc as one instruction (x86-64 has had it since 2008), not a libgcc call
    *(("-mpopcnt",) if platform.machine() in ("x86_64", "AMD64") else ()),
)
EMU_LINK_FLAGS = ("-shared", "-fPIC", "-Wl,-z,defs", "-Wl,--wrap=memcpy,--wrap=memset,--wrap=memmove")
# The AddressSanitizer build of the emulation: every load and store of the kernels is checked
# against ASan's shadow memory, where EmuBuffer poisons its guard zones, so an out-of-bounds
# read is caught as well as a write. The library needs the ASan runtime loaded first
# (LD_PRELOAD=asan_runtime(), see devices.EmulatedGpu and selfcheck --asan). ASan and the
# ThreadSanitizer instrumentation exclude each other: this build checks warps and barriers but
# not shared memory.
EMU_ASAN_FLAGS = (
    "-std=c++17",
    "-O1",
    "-g",
    "-fno-omit-frame-pointer",
    "-fsanitize=address",
    "-fPIC",
    "-fvisibility=hidden",
    "-fstack-clash-protection",  # as in EMU_FLAGS
)
EMU_ASAN_LINK_FLAGS = ("-shared", "-fPIC", "-fsanitize=address")
# -march=native: the CPU implementation is built on the machine that runs it (never shipped),
# and AVX-512 VPOPCNTDQ, where present, turns the popcount loops into vector instructions.
CPU_FLAGS = ("-std=c++17", "-O3", "-march=native", "-fopenmp", "-shared", "-fPIC")
NVCC_ARCH = "sm_90"
# What CuPy compiles, with NVRTC's options (kernel_table.NVRTC_OPTIONS and what CuPy appends),
# the H200's architecture, and ptxas's resource report.
NVCC_FLAGS = (*NVRTC_OPTIONS, *CUPY_APPENDED_OPTIONS, f"-arch={NVCC_ARCH}", "-cubin", "-Xptxas", "-v")


def build_dir() -> Path:
    d = Path(os.environ.get("GPU_KERNELS_BUILD_DIR", REPO_ROOT / "build" / "gpu_kernels"))
    d.mkdir(parents=True, exist_ok=True)
    return d


@functools.cache
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
    with open(target.with_suffix(target.suffix + ".lock"), "w") as lock:  # scratch: a lock
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


def compile_emulation(
    source: Path, out: Path, sanitize: bool = False, what: str = "the kernel emulation library"
) -> None:
    """g++ `source` (C++ including emu_shim.h, the kernels and emu_launch.h) into the shared
    library `out`: compiled with EMU_FLAGS (or EMU_ASAN_FLAGS), then linked."""
    flags, link = (EMU_ASAN_FLAGS, EMU_ASAN_LINK_FLAGS) if sanitize else (EMU_FLAGS, EMU_LINK_FLAGS)
    obj = out.with_name(out.name + ".o")
    label = f"{what}{' with AddressSanitizer' if sanitize else ''} (g++)"
    try:
        _run(["g++", *flags, f"-I{CUDA_DIR}", "-c", str(source), "-o", str(obj)], label)
        _run(["g++", *link, str(obj), "-o", str(out)], f"{label}, linking")
    finally:
        obj.unlink(missing_ok=True)


def emulation_library(sanitize: bool = False) -> Path:
    """Shared library with every kernel instantiation compiled for the CPU emulation; with
    `sanitize`, built with AddressSanitizer (see EMU_ASAN_FLAGS)."""
    wrapper = emulation_wrapper()
    flags = (EMU_ASAN_FLAGS + EMU_ASAN_LINK_FLAGS) if sanitize else (EMU_FLAGS + EMU_LINK_FLAGS)
    key = _key(_tool_version("g++"), flags, wrapper, _sources_digest(source_files()))
    d = build_dir()
    name = "emu-asan" if sanitize else "emu"

    def produce(tmp: Path):
        src = d / f"{name}-{key}.cpp"
        src.write_text(wrapper)  # scratch: the compiler's input, under the lock
        compile_emulation(src, tmp, sanitize)

    return _cached(d / f"{name}-{key}.so", produce)


def kernel_emulation_library(
    source: Path, kernels: list[str], sanitize: bool = False, defines: tuple = ()
) -> Path:
    """Shared library of other CUDA source (a file of plain __global__ kernels, e.g. the tests'
    fixtures) for the emulation: exports emu_<name> for each kernel name of `kernels`; `defines`
    are -D options (e.g. "EMU_FORCE_UCONTEXT"). Cached like emulation_library."""
    source = Path(source).resolve()
    wrapper = (
        "\n".join(
            [f"#define {d}" for d in defines]
            + ['#include "emu_shim.h"', f'#include "{source}"', '#include "emu_launch.h"']
            + [f"EMU_EXPORT(emu_{k}, {k})" for k in kernels]
        )
        + "\n"
    )
    flags = (EMU_ASAN_FLAGS + EMU_ASAN_LINK_FLAGS) if sanitize else (EMU_FLAGS + EMU_LINK_FLAGS)
    key = _key(_tool_version("g++"), flags, wrapper, source.read_bytes(), _sources_digest(source_files()))
    d = build_dir()
    name = f"{source.stem}{'-asan' if sanitize else ''}"

    def produce(tmp: Path):
        src = d / f"{name}-{key}.cpp"
        src.write_text(wrapper)  # scratch: the compiler's input, under the lock
        compile_emulation(src, tmp, sanitize, f"{source.name} for the emulation")

    return _cached(d / f"{name}-{key}.so", produce)


def asan_runtime() -> Path:
    """The AddressSanitizer runtime g++ links against (what LD_PRELOAD must name)."""
    try:
        out = subprocess.run(
            ["g++", "-print-file-name=libasan.so"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        raise BuildError(f"g++ is needed to find the AddressSanitizer runtime: {exc}") from None
    path = Path(out)
    if not path.is_absolute() or not path.exists():
        raise BuildError("g++ has no AddressSanitizer runtime (libasan.so) here")
    return path.resolve()


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
        _run(
            ["g++", *flags, str(CPU_SOURCE), "-o", str(tmp)],
            f"the CPU implementation{' (portable)' if portable else ''} (g++)",
        )

    return _cached(d / f"{name}-{key}.so", produce)


def nvcc_instantiation_source() -> str:
    """The translation unit CuPy hands NVRTC (kernel_table.translation_unit), plus a table that
    takes the address of every kernel NVRTC is asked to name, which makes nvcc emit device code
    for each of them (NVRTC does the same for its name expressions)."""
    lines = [translation_unit(), "", "void* gpu_kernels_instantiations[] = {"]
    lines += [f"    (void*)&{s.expr}," for s in KERNELS.values()]
    lines += [f"    (void*)&{TIMING_KERNEL},", "};", ""]
    return "\n".join(lines)


def nvcc_check() -> tuple[Path, str]:
    """Compile what CuPy compiles (same text, NVRTC's options) for sm_90 with nvcc; return the
    cubin and ptxas's report (registers, stack, spills) of every kernel."""
    if not have_tool("nvcc"):
        raise BuildError("nvcc is not on PATH")
    text = nvcc_instantiation_source()
    key = _key(_tool_version("nvcc"), NVCC_FLAGS, text)
    d = build_dir()
    log = d / f"nvcc-{key}.log"

    def produce(tmp: Path):
        src = d / f"nvcc-{key}.cu"
        src.write_text(text)  # scratch: the compiler's input, under the lock
        proc = _run(
            ["nvcc", *NVCC_FLAGS, "-diag-suppress", "177", str(src), "-o", str(tmp)],
            f"every kernel instantiation for {NVCC_ARCH} (nvcc, NVRTC's options)",
        )
        log.write_text(proc.stdout + proc.stderr)  # log: nvcc's resource report

    cubin = _cached(d / f"nvcc-{key}.cubin", produce)
    return cubin, log.read_text()


_PTXAS_ENTRY = re.compile(r"Compiling entry function '(\w+)' for '(\w+)'")
_PTXAS_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_REGS = re.compile(r"Used (\d+) registers")


def ptxas_resources(log: str) -> dict[str, dict]:
    """Per kernel (demangled name without its parameter list, e.g. "bin_conv3x3<unsigned int>"):
    registers, stack bytes, spill stores and loads, from ptxas's -v report."""
    found, current = {}, None
    for line in log.splitlines():
        m = _PTXAS_ENTRY.search(line)
        if m:
            current = found.setdefault(m.group(1), {"arch": m.group(2)})
            continue
        if current is None:
            continue
        m = _PTXAS_STACK.search(line)
        if m:
            current.update(
                stack_bytes=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3))
            )
        m = _PTXAS_REGS.search(line)
        if m:
            current["registers"] = int(m.group(1))
    names = _demangle(list(found))
    return {names[k]: v for k, v in found.items()}


def _demangle(symbols: list[str]) -> dict[str, str]:
    """mangled -> "name<template args>" (c++filt, from binutils, next to every nvcc)."""
    if not symbols:
        return {}
    try:
        out = subprocess.run(
            ["c++filt"], input="\n".join(symbols), capture_output=True, text=True, check=True
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError) as exc:
        raise BuildError(f"c++filt is needed to read ptxas's report: {exc}") from None
    return {s: n.split("(")[0].removeprefix("void ").strip() for s, n in zip(symbols, out, strict=True)}
