"""The kernel instantiations, listed once, and what the GPU compiles.

Every backend reads this table: the CuPy module asks NVRTC for exactly these name expressions
(plus the GPU-only timing helper), the CPU emulation exports one C symbol per entry, and the
nvcc check instantiates each of them from the same translation unit with NVRTC's options. A
kernel's parameters are the six work-split integers of common.cuh (added by the launcher)
followed by the ones listed here: "p" a pointer to a device buffer, "i" an int.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

CUDA_DIR = Path(__file__).resolve().parent / "cuda"
ENTRY_SOURCE = CUDA_DIR / "kernels.cu"  # every BNN kernel (all three backends)
GPU_ENTRY_SOURCE = CUDA_DIR / "gpu_module.cu"  # + the GPU-only timing helper (NVRTC, nvcc)

# What CuPy hands NVRTC for our module: our options, then what CuPy appends itself
# (cupy/cuda/compiler.py: "-ftz=true", then the architecture, "-arch=sm_XY" where NVRTC can
# emit a cubin for the device). The nvcc check compiles with the same ones.
NVRTC_OPTIONS = ("-std=c++17",)
CUPY_APPENDED_OPTIONS = ("-ftz=true",)
# GPU-only kernels of gpu_module.cu (name expressions for NVRTC, not emulated)
TIMING_KERNEL = "busy_wait_ns"

WORD_TYPES = {32: "unsigned int", 64: "unsigned long long"}
# Output pixels of a row per warp of the register-blocked binary conv kernels (cuda/bin_conv.cu),
# per unblocked kernel; px 1 is the unblocked kernel itself. The pooled one stops at 2: at 4 its
# 8 conv pixels per row (10 activation words, 8 counters) spilled 164-272 bytes at the
# launch bound's 80 registers (sm_90).
BLOCKED_PX = {"bin_conv_step_pack": (2, 4), "bin_conv_step_pool_pack": (2,)}
# every pixels-per-warp some fused kernel takes (1: the unblocked ones)
ANY_PX = tuple(sorted({1, *(px for pxs in BLOCKED_PX.values() for px in pxs)}))


@dataclass(frozen=True)
class KernelSpec:
    key: str  # how Python code names it, e.g. "bin_conv3x3/w64"
    expr: str  # the C++ name expression, e.g. "bin_conv3x3<unsigned long long>"
    params: tuple  # "p" (device pointer) or "i" (int32), after the six split integers

    @property
    def symbol(self) -> str:
        """C symbol of the emulation's entry point."""
        return "emu_" + re.sub(r"[^0-9A-Za-z]+", "_", self.expr).strip("_")


def _specs() -> dict[str, KernelSpec]:
    conv = ("p", "p", "p", "p", "i", "i", "i", "i", "i")  # x, w, bias, out, H, W, C, pad, Wo
    # x, weight bits, lo, hi, out, H, W, C, pad, Wo, F (int_conv.cu: int_conv_step_pack; and
    # bin_conv.cu: bin_conv_step_pack, its weights the packed words of bin_conv3x3; their
    # *_step_pool_pack twins take the pooled width as Wo)
    fused = ("p", "p", "p", "p", "p", "i", "i", "i", "i", "i", "i")
    fused_dense = ("p", "p", "p", "p", "p", "i", "i")  # x, w, lo, hi, out, K, F (dense.cu)
    out = [
        KernelSpec("int_conv3x3/u8", "int_conv3x3<unsigned char>", conv),
        KernelSpec("int_conv3x3/i32", "int_conv3x3<int>", conv),
        KernelSpec("maxpool2x2/int", "maxpool2x2<int, false>", ("p", "p", "i", "i", "i")),
        KernelSpec("flatten_int", "flatten_int", ("p", "p", "i", "i")),
        KernelSpec("argmax_scores", "argmax_scores", ("p", "p", "i")),
        KernelSpec("nchw_to_nhwc/u8", "nchw_to_nhwc<unsigned char>", ("p", "p")),
        KernelSpec("nchw_to_nhwc/i32", "nchw_to_nhwc<int>", ("p", "p")),
    ]
    for bits, word in WORD_TYPES.items():
        out += [
            KernelSpec(f"bin_conv3x3/w{bits}", f"bin_conv3x3<{word}>", conv),
            KernelSpec(f"bin_conv_step_pack/w{bits}", f"bin_conv_step_pack<{word}>", fused),
            KernelSpec(f"int_conv_step_pack/u8/w{bits}", f"int_conv_step_pack<unsigned char, {word}>", fused),
            KernelSpec(f"int_conv_step_pack/i32/w{bits}", f"int_conv_step_pack<int, {word}>", fused),
            KernelSpec(f"bin_conv_step_pool_pack/w{bits}", f"bin_conv_step_pool_pack<{word}>", fused),
            KernelSpec(
                f"int_conv_step_pool_pack/u8/w{bits}",
                f"int_conv_step_pool_pack<unsigned char, {word}>",
                fused,
            ),
            KernelSpec(
                f"int_conv_step_pool_pack/i32/w{bits}", f"int_conv_step_pool_pack<int, {word}>", fused
            ),
            *(
                KernelSpec(f"{name}_px{px}/w{bits}", f"{name}_px<{word}, {px}>", fused)
                for name, pxs in BLOCKED_PX.items()
                for px in pxs
            ),
            KernelSpec(f"bin_dense_step_pack/w{bits}", f"bin_dense_step_pack<{word}>", fused_dense),
            KernelSpec(f"step_pack/w{bits}", f"step_pack<{word}>", ("p", "p", "p", "p", "i")),
            KernelSpec(f"step_pack_warp/w{bits}", f"step_pack_warp<{word}>", ("p", "p", "p", "p", "i")),
            KernelSpec(f"maxpool2x2/w{bits}", f"maxpool2x2<{word}, true>", ("p", "p", "i", "i", "i")),
            KernelSpec(f"flatten_packed/w{bits}", f"flatten_packed<{word}>", ("p", "p", "i", "i")),
            KernelSpec(f"bin_dense/w{bits}", f"bin_dense<{word}>", ("p", "p", "p", "p", "i")),
        ]
    return {s.key: s for s in out}


KERNELS: dict[str, KernelSpec] = _specs()


def kernel_max_threads(header: Path = CUDA_DIR / "common.cuh") -> int:
    """KERNEL_MAX_THREADS of common.cuh: the __launch_bounds__ of every kernel (the number is
    written once, there)."""
    m = re.search(r"^#define KERNEL_MAX_THREADS (\d+)\s*$", header.read_text(), re.M)
    if m is None:
        raise RuntimeError(f"{header}: no '#define KERNEL_MAX_THREADS <n>' line")
    return int(m.group(1))


def fused_weight_words(source: Path = CUDA_DIR / "int_conv.cu") -> int:
    """FUSED_WEIGHT_WORDS of int_conv.cu: the 32-bit words of weight bits int_conv_step_pack
    holds in shared memory (9 * C * ceil(F / 32) at most; the number is written once, there)."""
    m = re.search(r"^#define FUSED_WEIGHT_WORDS (\d+)\b", source.read_text(), re.M)
    if m is None:
        raise RuntimeError(f"{source}: no '#define FUSED_WEIGHT_WORDS <n>' line")
    return int(m.group(1))


def bin_fused_weight_bytes(source: Path = CUDA_DIR / "bin_conv.cu") -> int:
    """BIN_FUSED_WEIGHT_BYTES of bin_conv.cu: the bytes of packed weights bin_conv_step_pack
    holds in shared memory (9 * nw * F words; larger layers read global memory)."""
    m = re.search(r"^#define BIN_FUSED_WEIGHT_BYTES (\d+)\b", source.read_text(), re.M)
    if m is None:
        raise RuntimeError(f"{source}: no '#define BIN_FUSED_WEIGHT_BYTES <n>' line")
    return int(m.group(1))


def gpu_name_expressions() -> list[str]:
    """Every kernel NVRTC must instantiate and name: the table's, then the timing helper."""
    return [s.expr for s in KERNELS.values()] + [TIMING_KERNEL]


def source_files() -> list[Path]:
    """Every file of the kernel source (what the build caches hash)."""
    return sorted(p for p in CUDA_DIR.iterdir() if p.suffix in (".cu", ".cuh", ".h"))


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$')


def translation_unit(entry: Path = GPU_ENTRY_SOURCE) -> str:
    """gpu_module.cu with its local includes inlined (each file once): the text NVRTC compiles
    (CuPy's kernel cache keys on the source text, so headers must be part of it) and the nvcc
    check compiles."""
    seen: set[Path] = set()
    lines: list[str] = []

    def add(path: Path):
        path = path.resolve()
        if path in seen:
            return
        seen.add(path)
        lines.append(f"// ---- {path.name}")
        for line in path.read_text().splitlines():
            m = _INCLUDE.match(line)
            if m:
                add(path.parent / m.group(1))
            elif line.strip() != "#pragma once":
                lines.append(line)

    add(entry)
    return "\n".join(lines) + "\n"
