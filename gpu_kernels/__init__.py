"""GPU path for binarized networks: CUDA kernels in HEP-BNN's seven configurations, run through
CuPy or a CPU emulation, a vectorised CPU implementation, and the layer-to-device mapper.
See docs/gpu.md."""

from gpu_kernels.configs import CONFIGS, CPU, IMPLS
from gpu_kernels.devices import cuda_available
from gpu_kernels.errors import BackendError, BuildError, GpuKernelError, LaunchError, MappingError
from gpu_kernels.runner import Runner, RunResult, run_network

__all__ = [
    "CONFIGS",
    "CPU",
    "IMPLS",
    "cuda_available",
    "BackendError",
    "BuildError",
    "GpuKernelError",
    "LaunchError",
    "MappingError",
    "RunResult",
    "Runner",
    "run_network",
    "map_network",
]


def map_network(*args, **kwargs):
    """gpu_kernels.mapper.map_network (imported on first use)."""
    from gpu_kernels.mapper import map_network as _map  # noqa: PLC0415

    return _map(*args, **kwargs)
