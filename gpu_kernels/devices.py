"""The two ways to run the CUDA kernels: CuPy on a real GPU, or the CPU emulation.

Both expose the same small interface (upload, download, empty, launch, timing events), so the
runner (runner.py) never knows which one it drives. "auto" picks CuPy when a CUDA device is
usable and the emulation otherwise.
"""
from __future__ import annotations

import ctypes
import functools
import time

import numpy as np

from gpu_kernels import build
from gpu_kernels.errors import BackendError, GpuKernelError, LaunchError
from gpu_kernels.kernel_table import KERNELS, translation_unit
from gpu_kernels.launch import MAX_BLOCK_DIM, MAX_GRID_DIM, MAX_THREADS_PER_BLOCK, Launch
from models.checks import INT32_MAX, INT32_MIN


def _int_arg(value, spec, i) -> int:
    v = int(value)
    if not INT32_MIN <= v <= INT32_MAX:
        raise GpuKernelError(f"{spec.expr}: argument {i} = {v} does not fit a 32-bit int")
    return v


def _kernel_args(key: str, launch: Launch, args) -> tuple:
    """(spec, [(kind, value), ...]) of a launch: the six split integers, then `args`, checked
    against the kernel's parameter list and CUDA's limits."""
    spec = KERNELS[key]
    _check_limits(launch, spec)
    values = list(launch.split_args()) + list(args)
    kinds = ("i",) * 6 + spec.params
    if len(values) != len(kinds):
        raise GpuKernelError(f"{spec.expr} takes {len(kinds)} arguments, got {len(values)}")
    return spec, [(k, v if k == "p" else _int_arg(v, spec, i))
                  for i, (k, v) in enumerate(zip(kinds, values))]


def _check_limits(launch: Launch, spec) -> None:
    """Last line of defence (launch.plan already refuses these with a better message)."""
    if launch.threads > MAX_THREADS_PER_BLOCK or any(
            b > m for b, m in zip(launch.block, MAX_BLOCK_DIM)) or any(
            g > m for g, m in zip(launch.grid, MAX_GRID_DIM)) or min(launch.grid + launch.block) < 1:
        raise LaunchError(f"{spec.expr}: grid {launch.grid} / block {launch.block} exceed CUDA's "
                          f"limits")


# ---------------------------------------------------------------------------------------------
# CPU emulation
# ---------------------------------------------------------------------------------------------
class EmuBuffer:
    """A "device" buffer of the emulation: a numpy array between two guard zones. Fresh buffers
    are filled with a sentinel byte so that an output element no thread wrote shows up as
    garbage, and the guards catch a kernel that writes outside its buffer."""
    GUARD = 64
    FILL = 0xA5

    def __init__(self, shape, dtype, data: np.ndarray | None = None):
        dtype = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        self._raw = np.full(nbytes + 2 * self.GUARD, self.FILL, dtype=np.uint8)
        self.array = self._raw[self.GUARD:self.GUARD + nbytes].view(dtype).reshape(shape)
        if data is not None:
            self.array[...] = data

    @property
    def shape(self):
        return self.array.shape

    @property
    def dtype(self):
        return self.array.dtype

    @property
    def nbytes(self):
        return self.array.nbytes

    def pointer(self) -> int:
        return self.array.ctypes.data

    def guards_intact(self) -> bool:
        g = self.GUARD
        return bool((self._raw[:g] == self.FILL).all() and (self._raw[-g:] == self.FILL).all())


class EmulatedGpu:
    """Runs the kernels compiled by g++ (build.emulation_library) block by block, thread by
    thread, on the CPU. Exact, slow, and what CI uses to check every configuration."""
    backend = "emulation"
    is_real_gpu = False

    def __init__(self):
        self._lib = ctypes.CDLL(str(build.emulation_library()))
        self._entry = {}
        for key, spec in KERNELS.items():
            fn = getattr(self._lib, spec.symbol)
            fn.argtypes = [ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_void_p)]
            fn.restype = None
            self._entry[key] = fn

    def upload(self, a: np.ndarray) -> EmuBuffer:
        return EmuBuffer(a.shape, a.dtype, a)

    def download(self, d: EmuBuffer) -> np.ndarray:
        return d.array.copy()

    def empty(self, shape, dtype) -> EmuBuffer:
        return EmuBuffer(shape, dtype)

    def launch(self, key: str, launch: Launch, args) -> None:
        spec, checked = _kernel_args(key, launch, args)
        holders, buffers = [], []
        for i, (kind, v) in enumerate(checked):
            if kind == "p":
                if not isinstance(v, EmuBuffer):
                    raise GpuKernelError(f"{spec.expr}: argument {i} must be a device buffer")
                holders.append(ctypes.c_void_p(v.pointer()))
                buffers.append(v)
            else:
                holders.append(ctypes.c_int32(v))
        params = (ctypes.c_void_p * len(holders))(
            *[ctypes.cast(ctypes.pointer(h), ctypes.c_void_p) for h in holders])
        dims = (ctypes.c_uint * 6)(*launch.grid, *launch.block)
        self._entry[key](dims, params)
        for b in buffers:
            if not b.guards_intact():
                raise GpuKernelError(f"{spec.expr} wrote outside a buffer of shape {b.shape} "
                                     f"(grid {launch.grid}, block {launch.block})")

    # timing: wall clock, the emulation is synchronous
    def event(self):
        return time.perf_counter()

    def elapsed_s(self, start, end) -> float:
        return end - start

    def synchronize(self) -> None:
        pass


# ---------------------------------------------------------------------------------------------
# CuPy
# ---------------------------------------------------------------------------------------------
class CupyGpu:
    """Runs the kernels on a CUDA device through CuPy's RawModule (NVRTC)."""
    backend = "cupy"
    is_real_gpu = True

    def __init__(self):
        cp = _import_cupy()
        self.cp = cp
        exprs = [s.expr for s in KERNELS.values()]
        self._module = cp.RawModule(code=translation_unit(), options=("-std=c++17",),
                                    name_expressions=exprs)
        self._fn = {key: self._module.get_function(s.expr) for key, s in KERNELS.items()}
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        self.device_name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]

    def upload(self, a: np.ndarray):
        return self.cp.asarray(a)

    def download(self, d) -> np.ndarray:
        return self.cp.asnumpy(d)

    def empty(self, shape, dtype):
        return self.cp.empty(shape, dtype=dtype)

    def launch(self, key: str, launch: Launch, args) -> None:
        spec, checked = _kernel_args(key, launch, args)
        conv = []
        for i, (kind, v) in enumerate(checked):
            if kind == "p":
                if not isinstance(v, self.cp.ndarray):
                    raise GpuKernelError(f"{spec.expr}: argument {i} must be a device array")
                conv.append(v)
            else:
                conv.append(np.int32(v))    # CuPy would pass a Python int as 64 bits
        self._fn[key](launch.grid, launch.block, tuple(conv))

    def event(self):
        ev = self.cp.cuda.Event()
        ev.record()
        return ev

    def elapsed_s(self, start, end) -> float:
        end.synchronize()
        return self.cp.cuda.get_elapsed_time(start, end) / 1000.0

    def synchronize(self) -> None:
        self.cp.cuda.Device().synchronize()


def _import_cupy():
    try:
        import cupy as cp
    except ImportError as exc:
        raise BackendError(f"CuPy is not installed ({exc}); use backend='emulation' or 'cpu'") from None
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            raise BackendError("CuPy found no CUDA device")
    except cp.cuda.runtime.CUDARuntimeError as exc:
        raise BackendError(f"no usable CUDA device: {exc}") from None
    return cp


@functools.lru_cache(maxsize=1)
def cuda_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        _import_cupy()
        return True
    except BackendError:
        return False


BACKENDS = ("auto", "cupy", "emulation", "cpu")


@functools.lru_cache(maxsize=None)
def _device(name: str):
    return CupyGpu() if name == "cupy" else EmulatedGpu()


def get_gpu(backend: str = "auto"):
    """The device for GPU layers: CuPy, the emulation, or None for backend "cpu"."""
    if backend not in BACKENDS:
        raise GpuKernelError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    if backend == "cpu":
        return None
    if backend == "auto":
        backend = "cupy" if cuda_available() else "emulation"
    return _device(backend)
