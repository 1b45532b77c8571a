"""The CPU implementation of every layer (cpu/bnn_cpu.cpp through ctypes): the mapper's "cpu"
choice. It uses the GPU kernels' data formats, so switching device is a plain copy."""
from __future__ import annotations

import ctypes
import functools
import os

import numpy as np

from gpu_kernels import build

_P, _I, _L = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64
_CONV = [_P, _P, _P, _P, _I, _I, _I, _I, _I, _I]
_SIGNATURES = {
    "cpu_int_conv3x3_u8": _CONV, "cpu_int_conv3x3_i32": _CONV,
    "cpu_bin_conv3x3_w32": _CONV, "cpu_bin_conv3x3_w64": _CONV,
    "cpu_step_pack_w32": [_P, _P, _P, _P, _L, _I], "cpu_step_pack_w64": [_P, _P, _P, _P, _L, _I],
    "cpu_maxpool2x2_int": [_P, _P, _I, _I, _I, _I],
    "cpu_maxpool2x2_w32": [_P, _P, _I, _I, _I, _I], "cpu_maxpool2x2_w64": [_P, _P, _I, _I, _I, _I],
    "cpu_flatten_int": [_P, _P, _I, _I, _I],
    "cpu_flatten_packed_w32": [_P, _P, _I, _I, _I], "cpu_flatten_packed_w64": [_P, _P, _I, _I, _I],
    "cpu_bin_dense_w32": [_P, _P, _P, _P, _I, _I, _I],
    "cpu_bin_dense_w64": [_P, _P, _P, _P, _I, _I, _I],
    "cpu_argmax_scores": [_P, _P, _I, _I],
    "cpu_set_threads": [_I], "cpu_max_threads": [],
}


class CpuImpl:
    def __init__(self, portable: bool = False):
        # Idle OpenMP threads sleep instead of spinning: on a shared (oversubscribed) machine a
        # spinning thread takes the core the working one needs, which made two threads several
        # times slower than one. Read by libgomp when it loads, i.e. with this library.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        self._lib = ctypes.CDLL(str(build.cpu_library(portable)))
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(self._lib, name)
            fn.argtypes = argtypes
            fn.restype = ctypes.c_int if name == "cpu_max_threads" else None

    def call(self, name: str, *args) -> None:
        conv = []
        for a in args:
            if isinstance(a, np.ndarray):
                assert a.flags.c_contiguous, f"{name}: arrays must be C-contiguous"
                conv.append(a.ctypes.data)
            else:
                conv.append(int(a))
        getattr(self._lib, name)(*conv)

    def set_threads(self, n: int) -> None:
        """OpenMP threads of the CPU implementation (default: all cores)."""
        self._lib.cpu_set_threads(int(n))

    @property
    def max_threads(self) -> int:
        return int(self._lib.cpu_max_threads())


@functools.lru_cache(maxsize=2)
def cpu_impl(portable: bool = False) -> CpuImpl:
    """The CPU implementation built for this machine (or, portable=True, without AVX-512)."""
    return CpuImpl(portable)
