"""Errors of the GPU path. All are ValueErrors except BackendError, so that callers can catch
"bad request" separately from "this machine cannot do it"."""


class GpuKernelError(ValueError):
    """A request the GPU path refuses (names the layer, configuration and the problem)."""


class LaunchError(GpuKernelError):
    """A launch that does not fit CUDA's limits (threads per block, grid dimensions)."""


class KernelFaultError(GpuKernelError):
    """A kernel broke a rule the CPU emulation checks: a malformed warp collective, a divergent
    barrier, a shared-memory race or a read of shared memory no thread wrote (the message is one
    line naming the kernel, the threads and the address)."""


class MappingError(GpuKernelError):
    """A per-layer mapping that is malformed (unknown implementation, wrong length, ...)."""


class BuildError(RuntimeError):
    """A compiler is missing or failed."""


class BackendError(RuntimeError):
    """The requested backend is not available on this machine (no CuPy, no CUDA device)."""
