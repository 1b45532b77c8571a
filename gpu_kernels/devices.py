"""The two ways to run the CUDA kernels: CuPy on a real GPU, or the CPU emulation.

Both expose the same small interface (upload, download, empty, prepare/launch, the kernels'
thread limits, timing events, timed back-to-back launches), so the runner (runner.py) never
knows which one it drives. "auto" picks CuPy when a CUDA device is usable and the emulation
otherwise.

A launch is prepared first (arguments checked and converted, the kernel looked up) and then
issued: the runner and the profiler put CUDA events around the issue alone, and time the
preparation on the host separately.
"""

from __future__ import annotations

import ctypes
import functools
import os
import time

import numpy as np

from gpu_kernels import build
from gpu_kernels.errors import BackendError, BuildError, GpuKernelError, KernelFaultError, LaunchError
from gpu_kernels.kernel_table import (
    KERNELS,
    NVRTC_OPTIONS,
    TIMING_KERNEL,
    gpu_name_expressions,
    translation_unit,
)
from gpu_kernels.launch import KERNEL_MAX_THREADS, MAX_BLOCK_DIM, MAX_GRID_DIM, Launch
from models.checks import INT32_MAX, INT32_MIN


def _int_arg(value, spec, i) -> int:
    v = int(value)
    if not INT32_MIN <= v <= INT32_MAX:
        raise GpuKernelError(f"{spec.expr}: argument {i} = {v} does not fit a 32-bit int")
    return v


def _kernel_args(key: str, launch: Launch, args, max_threads: int) -> tuple:
    """(spec, [(kind, value), ...]) of a launch: the six split integers, then `args`, checked
    against the kernel's parameter list, its thread limit and CUDA's limits."""
    spec = KERNELS[key]
    _check_limits(launch, spec, max_threads)
    values = list(launch.split_args()) + list(args)
    kinds = ("i",) * 6 + spec.params
    if len(values) != len(kinds):
        raise GpuKernelError(f"{spec.expr} takes {len(kinds)} arguments, got {len(values)}")
    return spec, [
        (k, v if k == "p" else _int_arg(v, spec, i))
        for i, (k, v) in enumerate(zip(kinds, values, strict=True))
    ]


def _check_limits(launch: Launch, spec, max_threads: int) -> None:
    """Last line of defence (launch.plan already refuses these with a better message)."""
    if launch.threads > max_threads:
        raise LaunchError(
            f"{spec.expr}: a block of {launch.threads} threads; the compiled kernel "
            f"allows at most {max_threads}"
        )
    if (
        any(b > m for b, m in zip(launch.block, MAX_BLOCK_DIM, strict=True))
        or any(g > m for g, m in zip(launch.grid, MAX_GRID_DIM, strict=True))
        or min(launch.grid + launch.block) < 1
    ):
        raise LaunchError(f"{spec.expr}: grid {launch.grid} / block {launch.block} exceed CUDA's limits")


# ---------------------------------------------------------------------------------------------
# CPU emulation
# ---------------------------------------------------------------------------------------------
ORDERS = ("in-order", "reversed", "shuffled")  # emu_launch.h: IN_ORDER, REVERSED, SHUFFLED
ORDER_ENV = "GPU_KERNELS_EMU_ORDER"  # e.g. "reversed" or "shuffled:7"


def parse_order(spec: str | None) -> tuple[str, int]:
    """ "in-order" | "reversed" | "shuffled[:SEED]" -> (order, seed); None or "" = in order."""
    if not spec:
        return "in-order", 0
    name, _, seed = spec.partition(":")
    if name not in ORDERS or (seed and not seed.isdigit()):
        raise GpuKernelError(
            f"emulation order {spec!r}: use one of {', '.join(ORDERS)} (shuffled may take a seed: shuffled:7)"
        )
    return name, int(seed or 0)


class _Asan:
    """The ASan runtime's poisoning calls, found in the process (LD_PRELOAD) or None."""

    poison = unpoison = None

    @classmethod
    def load(cls) -> None:
        try:
            rt = ctypes.CDLL(None)
            # getattr: a double-underscore name in a class body would be mangled
            poison = getattr(rt, "__asan_poison_memory_region")
            unpoison = getattr(rt, "__asan_unpoison_memory_region")
        except (OSError, AttributeError):
            raise BuildError(
                f"the AddressSanitizer emulation runs only in a process started with "
                f"LD_PRELOAD={build.asan_runtime()} and ASAN_OPTIONS=detect_leaks=0 "
                f"(python -m gpu_kernels.selfcheck --asan does that)"
            ) from None
        for fn in (poison, unpoison):
            fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_size_t], None
        cls.poison, cls.unpoison = poison, unpoison


class EmuBuffer:
    """A "device" buffer of the emulation: a numpy array between two guard zones. Fresh buffers
    are filled with a sentinel byte so that an output element no thread wrote shows up as
    garbage, and the guards catch a kernel that writes outside its buffer. Under the
    AddressSanitizer build the guards are poisoned (larger, and ASan reports any read or write
    of them at the faulting instruction; ASan tracks 8-byte granules, so the last bytes of a
    buffer whose size is not a multiple of 8 share their granule with the buffer)."""

    GUARD = 64
    ASAN_GUARD = 512
    FILL = 0xA5

    def __init__(self, shape, dtype, data: np.ndarray | None = None):
        dtype = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        self._poisoned = _Asan.poison is not None
        g = self.guard = self.ASAN_GUARD if self._poisoned else self.GUARD
        self._raw = np.full(nbytes + 2 * g, self.FILL, dtype=np.uint8)
        self.array = self._raw[g : g + nbytes].view(dtype).reshape(shape)
        if data is not None:
            self.array[...] = data
        if self._poisoned:
            base = self._raw.ctypes.data
            _Asan.poison(base, g)
            _Asan.poison(base + g + nbytes, g)

    def __del__(self):
        # numpy may hand this memory to another array without freeing it: unpoison first
        if getattr(self, "_poisoned", False) and _Asan.unpoison is not None:
            _Asan.unpoison(self._raw.ctypes.data, self._raw.nbytes)

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
        if self._poisoned:  # ASan reports any access to the guards itself
            return True
        g = self.guard
        return bool((self._raw[:g] == self.FILL).all() and (self._raw[-g:] == self.FILL).all())


# emu_launch.h / emu_runtime.h: emu::Status
EMU_OK, EMU_TOO_MANY_THREADS, EMU_BAD_ORDER, EMU_KERNEL_FAULT, EMU_NO_MEMORY = range(5)


class EmuLibrary:
    """A library built by build.emulation_library or build.kernel_emulation_library: its entry
    points (one per kernel, emu_launch.h's EMU_EXPORT), the largest block it takes, the
    visiting order of the next launch and the launch's outcome, raised as the GPU path's
    errors."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(str(path))
        self.lib.emu_set_order.argtypes = [ctypes.c_int, ctypes.c_ulonglong]
        self.lib.emu_set_order.restype = None
        self.lib.emu_last_error.argtypes = []
        self.lib.emu_last_error.restype = ctypes.c_char_p
        self.lib.emu_checks_shared_memory.restype = ctypes.c_int
        self.checks_shared_memory = bool(self.lib.emu_checks_shared_memory())
        self.lib.emu_max_threads.restype = ctypes.c_int
        self.max_threads = int(self.lib.emu_max_threads())

    def entry(self, symbol: str):
        fn = getattr(self.lib, symbol)
        fn.argtypes = [ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_void_p)]
        fn.restype = ctypes.c_int
        return fn

    def call(self, fn, name: str, grid, block, params, order: str = "in-order", seed: int = 0) -> None:
        """Run entry point `fn` (kernel `name`) on grid x block with the cuLaunchKernel-style
        `params`; raise LaunchError, KernelFaultError (a rule the emulation checks was broken:
        its one-line report) or GpuKernelError."""
        self.lib.emu_set_order(ORDERS.index(order), seed)
        dims = (ctypes.c_uint * 6)(*grid, *block)
        status = fn(dims, params)
        if status == EMU_OK:
            return
        threads = block[0] * block[1] * block[2]
        if status == EMU_TOO_MANY_THREADS:
            raise LaunchError(
                f"{name}: a block of {threads} threads exceeds the "
                f"kernels' launch bound of {self.max_threads} (on a GPU: "
                f"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)"
            )
        if status == EMU_KERNEL_FAULT:
            raise KernelFaultError(self.lib.emu_last_error().decode(errors="replace"))
        if status == EMU_NO_MEMORY:
            raise GpuKernelError(f"{name}: no memory for the stacks of {threads} emulated threads")
        raise GpuKernelError(f"{name}: emulated launch failed (status {status})")


def emu_params(values) -> tuple:
    """cuLaunchKernel-style argument array of `values` (ctypes objects, which must outlive the
    launch: the second item holds them)."""
    params = (ctypes.c_void_p * len(values))(
        *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values]
    )
    return params, values


class EmulatedGpu:
    """Runs the kernels compiled by g++ (build.emulation_library) on the CPU, every thread a
    fiber: warps meet at their collectives, blocks at their barriers, and shared memory is
    checked for races (emu_runtime.h). Exact, slow, and what CI uses to check every
    configuration.

    order: "in-order", "reversed" or "shuffled" (blocks, the warps of a block, the lanes of a
    warp between collectives; the default comes from $GPU_KERNELS_EMU_ORDER, e.g.
    "shuffled:7"); seed: the first launch's shuffle seed (launch i uses seed + i). sanitize:
    load the AddressSanitizer build (the process must have the ASan runtime preloaded, see
    build.asan_runtime; that build does not check shared memory)."""

    backend = "emulation"
    is_real_gpu = False

    def __init__(self, order: str | None = None, seed: int | None = None, sanitize: bool = False):
        self.order, spec_seed = parse_order(order or os.environ.get(ORDER_ENV))
        self.seed = int(seed if seed is not None else spec_seed)
        self.sanitize = sanitize
        if sanitize:
            _Asan.load()
        self._emu = EmuLibrary(build.emulation_library(sanitize))
        self._launches = 0
        self._entry = {key: self._emu.entry(spec.symbol) for key, spec in KERNELS.items()}

    def describe(self) -> str:
        return (
            f"emulation ({self.order}"
            + (f", seed {self.seed}" if self.order == "shuffled" else "")
            + (", AddressSanitizer, shared memory unchecked" if self.sanitize else "")
            + ")"
        )

    def upload(self, a: np.ndarray) -> EmuBuffer:
        return EmuBuffer(a.shape, a.dtype, a)

    def download(self, d: EmuBuffer) -> np.ndarray:
        return d.array.copy()

    def empty(self, shape, dtype) -> EmuBuffer:
        return EmuBuffer(shape, dtype)

    def max_threads(self, key: str) -> int:
        """The emulated kernel's limit: the launch bound every kernel is compiled with."""
        return KERNEL_MAX_THREADS

    def kernel_resources(self) -> dict:
        return {key: {"max_threads_per_block": KERNEL_MAX_THREADS} for key in KERNELS}

    def prepare(self, key: str, launch: Launch, args):
        """Check and convert the arguments; returns the call that runs the kernel."""
        spec, checked = _kernel_args(key, launch, args, KERNEL_MAX_THREADS)
        holders, buffers = [], []
        for i, (kind, v) in enumerate(checked):
            if kind == "p":
                if not isinstance(v, EmuBuffer):
                    raise GpuKernelError(f"{spec.expr}: argument {i} must be a device buffer")
                holders.append(ctypes.c_void_p(v.pointer()))
                buffers.append(v)
            else:
                holders.append(ctypes.c_int32(v))
        params, holders = emu_params(holders)
        entry = self._entry[key]

        def go():
            seed = self.seed + self._launches
            self._launches += 1
            self._emu.call(entry, spec.expr, launch.grid, launch.block, params, self.order, seed)
            _ = holders  # the argument values must outlive the call
            for b in buffers:
                if not b.guards_intact():
                    raise GpuKernelError(
                        f"{spec.expr} wrote outside a buffer of shape {b.shape} "
                        f"(grid {launch.grid}, block {launch.block})"
                    )

        return go

    def launch(self, key: str, launch: Launch, args) -> None:
        self.prepare(key, launch, args)()

    def time_launches(self, go, count: int = 1) -> tuple[float, float]:
        """(seconds per launch, host seconds per launch): both wall clock here, the emulation
        is synchronous."""
        t0 = time.perf_counter()
        for _ in range(count):
            go()
        per = (time.perf_counter() - t0) / count
        return per, per

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
    """Runs the kernels on a CUDA device through CuPy's RawModule (NVRTC). The module is
    compiled once, here; a failure raises BuildError naming NVRTC's complaint."""

    backend = "cupy"
    is_real_gpu = True
    HEAD_START_NS = (20_000, 50_000_000)  # busy-wait bounds for time_launches
    timing_note = None  # set if launches had to be timed without it

    def __init__(self):
        cp = _import_cupy()
        self.cp = cp
        try:
            self._module = cp.RawModule(
                code=translation_unit(), options=NVRTC_OPTIONS, name_expressions=gpu_name_expressions()
            )
            self._fn = {key: self._module.get_function(s.expr) for key, s in KERNELS.items()}
            self._busy = self._module.get_function(TIMING_KERNEL)
        except Exception as exc:  # CompileException, NVRTCError, a missing libnvrtc, ...
            raise BuildError(
                f"NVRTC could not build the kernels ({type(exc).__name__}): {str(exc).strip()[:3000]}"
            ) from None
        self._max_threads = {key: int(fn.max_threads_per_block) for key, fn in self._fn.items()}
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        self.device_name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]

    def describe(self) -> str:
        return f"cupy ({self.device_name})"

    def upload(self, a: np.ndarray):
        return self.cp.asarray(a)

    def download(self, d) -> np.ndarray:
        return self.cp.asnumpy(d)

    def empty(self, shape, dtype):
        return self.cp.empty(shape, dtype=dtype)

    def max_threads(self, key: str) -> int:
        """The compiled kernel's max_threads_per_block on this device."""
        return self._max_threads[key]

    def kernel_resources(self) -> dict:
        """Per kernel: registers, local memory, maximum block size, ... as the driver reports
        them for the compiled module."""
        out = {}
        for key, fn in self._fn.items():
            out[key] = {
                a: int(getattr(fn, a))
                for a in (
                    "num_regs",
                    "local_size_bytes",
                    "max_threads_per_block",
                    "shared_size_bytes",
                    "const_size_bytes",
                    "binary_version",
                    "ptx_version",
                )
            }
        return out

    def prepare(self, key: str, launch: Launch, args):
        spec, checked = _kernel_args(key, launch, args, self._max_threads[key])
        conv = []
        for i, (kind, v) in enumerate(checked):
            if kind == "p":
                if not isinstance(v, self.cp.ndarray):
                    raise GpuKernelError(f"{spec.expr}: argument {i} must be a device array")
                conv.append(v)
            else:
                conv.append(np.int32(v))  # CuPy would pass a Python int as 64 bits
        fn, grid, block, conv = self._fn[key], launch.grid, launch.block, tuple(conv)
        return lambda: fn(grid, block, conv)

    def launch(self, key: str, launch: Launch, args) -> None:
        self.prepare(key, launch, args)()

    def time_launches(self, go, count: int = 1) -> tuple[float, float]:
        """(GPU seconds per launch, host seconds to issue one) of `count` back-to-back calls of
        `go`. A busy-wait kernel queued first keeps the GPU occupied until the host has issued
        them all, so the events around them time the kernels, not the host's pace; if the
        host was slower than the head start, it is doubled and the measurement repeated."""
        cp = self.cp
        go()  # warm, and a first guess of the host cost
        self.synchronize()
        t0 = time.perf_counter()
        go()
        guess = time.perf_counter() - t0
        head = int(min(max(3e9 * guess * count, self.HEAD_START_NS[0]), self.HEAD_START_NS[1]))
        for _ in range(4):
            if self._busy is not None:
                try:
                    self._busy((1, 1, 1), (1, 1, 1), (np.int64(head),))
                except Exception as exc:  # a timing aid: measure without it rather than fail
                    self._busy = None
                    self.timing_note = (
                        f"busy-wait kernel failed ({type(exc).__name__}: {exc}); "
                        f"launches timed without a head start (host pace included)"
                    )
            e0 = cp.cuda.Event()
            e0.record()
            t0 = time.perf_counter()
            for _ in range(count):
                go()
            issued = time.perf_counter() - t0
            e1 = cp.cuda.Event()
            e1.record()
            e1.synchronize()
            if issued * 1e9 < 0.8 * head or head >= self.HEAD_START_NS[1] or self._busy is None:
                break
            head = int(min(2e9 * issued, self.HEAD_START_NS[1]))
        return cp.cuda.get_elapsed_time(e0, e1) / 1000.0 / count, issued / count

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


@functools.cache
def _device_or_error(name: str):
    """(device, None) or (None, the error): a backend that failed to start (no NVRTC, a
    compile error) fails again at once instead of recompiling for every caller."""
    try:
        return (CupyGpu() if name == "cupy" else EmulatedGpu()), None
    except (BackendError, BuildError) as exc:
        return None, exc


def get_gpu(backend="auto"):
    """The device for GPU layers: CuPy, the emulation, or None for backend "cpu". A device
    object (an EmulatedGpu with a chosen order, ...) is returned as it is."""
    if not isinstance(backend, str) and hasattr(backend, "prepare"):
        return backend
    if backend not in BACKENDS:
        raise GpuKernelError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    if backend == "cpu":
        return None
    if backend == "auto":
        backend = "cupy" if cuda_available() else "emulation"
    device, error = _device_or_error(backend)
    if error is not None:
        raise type(error)(str(error))
    return device
