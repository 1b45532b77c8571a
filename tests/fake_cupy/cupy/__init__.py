"""A stand-in for CuPy, for the tests of scripts/gpu_check.sh and gpu_kernels.preflight on a
machine without a GPU (tests/test_gpu_check.py puts tests/fake_cupy on the PYTHONPATH of a
subprocess; nothing else imports it). It offers the part of CuPy's API the GPU path uses, with
the same names, and FAKE_CUPY_MODE chooses the machine it pretends to be:

  ok             a working GPU: the kernels run in the CPU emulation (gpu_kernels' g++ build),
                 launches above a kernel's max_threads_per_block fail as on a GPU, and an int
                 argument that is not a numpy scalar is refused (CuPy would pass it as 64 bits)
  no_nvrtc       libnvrtc missing: nvrtc.getVersion and compiling raise
  old_driver     a driver for CUDA 12.4 under CuPy's 13.0 runtime: device calls raise
  no_device      a driver but no device
  compile_error  NVRTC rejects the source
  few_threads    the compiled bin_conv3x3 allows only 128 threads per block
  wrong_results  every launch flips a bit in each buffer it is given
  slow_compile   compiling never ends (for the phase timeouts)
"""

import ctypes
import time

import numpy as np

from cupy import cuda
from cupy._fake import NVRTC_MISSING, mode

__version__ = "14.2.0+fake"


def _emu():
    from gpu_kernels.devices import EmuBuffer

    return EmuBuffer


class ndarray(_emu()):
    pass


def asarray(a):
    a = np.asarray(a)
    return ndarray(a.shape, a.dtype, a)


def asnumpy(d):
    return d.array.copy()


def empty(shape, dtype=np.float64):
    return ndarray(shape, dtype)


def show_config():
    print(
        f"CuPy Version          : {__version__}\nCUDA Runtime Version  : 13000\n"
        f"NVRTC Version         : {cuda.nvrtc.getVersion() if mode() != 'no_nvrtc' else 'missing'}\n"
        f"Device 0 Name         : NVIDIA H200 (fake)"
    )


REGISTERS = {"bin_conv3x3": 80, "int_conv3x3": 70}


class RawKernel:
    def __init__(self, lib, name, symbol):
        from gpu_kernels.launch import KERNEL_MAX_THREADS

        self.name, base = name, name.split("<")[0]
        self._fn = getattr(lib, symbol) if symbol else None
        if self._fn is not None:
            self._fn.restype = ctypes.c_int
        self.num_regs = REGISTERS.get(base, 8 if base == "busy_wait_ns" else 40)
        self.max_threads_per_block = (
            128 if mode() == "few_threads" and base == "bin_conv3x3" else KERNEL_MAX_THREADS
        )
        self.local_size_bytes = self.shared_size_bytes = self.const_size_bytes = 0
        self.binary_version = self.ptx_version = 90

    def __call__(self, grid, block, args, **kwargs):
        if int(np.prod(block)) > self.max_threads_per_block:
            raise cuda.driver.CUDADriverError(
                "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: too many resources requested for launch"
            )
        if self._fn is None:  # the busy-wait helper: nothing to emulate
            return
        holders = []
        for a in args:
            if isinstance(a, ndarray):
                holders.append(ctypes.c_void_p(a.pointer()))
            elif isinstance(a, np.int32):
                holders.append(ctypes.c_int32(int(a)))
            else:
                raise TypeError(
                    f"{self.name}: argument {a!r} of type {type(a).__name__}: the fake "
                    f"takes device arrays and numpy.int32 only"
                )
        params = (ctypes.c_void_p * len(holders))(
            *[ctypes.cast(ctypes.pointer(h), ctypes.c_void_p) for h in holders]
        )
        status = self._fn((ctypes.c_uint * 6)(*grid, *block), params)
        if status != 0:
            raise cuda.driver.CUDADriverError(f"CUDA_ERROR_LAUNCH_FAILED (emulation status {status})")
        if mode() == "wrong_results":
            for a in args:
                if isinstance(a, ndarray) and a.array.size:
                    a.array.reshape(-1).view(np.uint8)[0] ^= 2


class RawModule:
    def __init__(self, *, code=None, options=(), name_expressions=None, **kwargs):
        self.code, self.options = code, tuple(options)
        self.name_expressions = tuple(name_expressions or ())
        self._lib = None

    def _compile(self):
        if self._lib is not None:
            return self._lib
        m = mode()
        if m == "no_nvrtc":
            raise RuntimeError(NVRTC_MISSING)
        if m == "compile_error":
            raise cuda.compiler.CompileException('kern.cu(12): error: identifier "foo" is undefined')
        if m == "slow_compile":
            time.sleep(3600)
        from gpu_kernels import build

        self._lib = ctypes.CDLL(str(build.emulation_library()))
        return self._lib

    def get_function(self, name):
        lib = self._compile()
        if name not in self.name_expressions:
            raise cuda.driver.CUDADriverError(f"CUDA_ERROR_NOT_FOUND: named symbol not found ({name})")
        from gpu_kernels.kernel_table import KERNELS, TIMING_KERNEL

        symbol = {s.expr: s.symbol for s in KERNELS.values()}.get(name)
        if symbol is None and name != TIMING_KERNEL:
            raise cuda.driver.CUDADriverError(f"CUDA_ERROR_NOT_FOUND: {name}")
        return RawKernel(lib, name, symbol)
