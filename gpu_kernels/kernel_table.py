"""The kernel instantiations, listed once.

Every backend reads this table: the CuPy module asks NVRTC for exactly these name expressions,
the CPU emulation exports one C symbol per entry, and the nvcc check instantiates each of them
for sm_90. A kernel's parameters are the six work-split integers of common.cuh (added by the
launcher) followed by the ones listed here: "p" a pointer to a device buffer, "i" an int.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

CUDA_DIR = Path(__file__).resolve().parent / "cuda"
ENTRY_SOURCE = CUDA_DIR / "kernels.cu"

WORD_TYPES = {32: "unsigned int", 64: "unsigned long long"}


@dataclass(frozen=True)
class KernelSpec:
    key: str            # how Python code names it, e.g. "bin_conv3x3/w64"
    expr: str           # the C++ name expression, e.g. "bin_conv3x3<unsigned long long>"
    params: tuple       # "p" (device pointer) or "i" (int32), after the six split integers

    @property
    def symbol(self) -> str:
        """C symbol of the emulation's entry point."""
        return "emu_" + re.sub(r"[^0-9A-Za-z]+", "_", self.expr).strip("_")


def _specs() -> dict[str, KernelSpec]:
    conv = ("p", "p", "p", "p", "i", "i", "i", "i", "i")      # x, w, bias, out, H, W, C, pad, Wo
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
            KernelSpec(f"step_pack/w{bits}", f"step_pack<{word}>", ("p", "p", "p", "p", "i")),
            KernelSpec(f"maxpool2x2/w{bits}", f"maxpool2x2<{word}, true>", ("p", "p", "i", "i", "i")),
            KernelSpec(f"flatten_packed/w{bits}", f"flatten_packed<{word}>", ("p", "p", "i", "i")),
            KernelSpec(f"bin_dense/w{bits}", f"bin_dense<{word}>", ("p", "p", "p", "p", "i")),
        ]
    return {s.key: s for s in out}


KERNELS: dict[str, KernelSpec] = _specs()


def source_files() -> list[Path]:
    """Every file of the kernel source (what the build caches hash)."""
    return sorted(p for p in CUDA_DIR.iterdir() if p.suffix in (".cu", ".cuh", ".h"))


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$')


def translation_unit(entry: Path = ENTRY_SOURCE) -> str:
    """kernels.cu with its local includes inlined (each file once), for NVRTC: CuPy's kernel
    cache keys on the source text, so headers must be part of it."""
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
