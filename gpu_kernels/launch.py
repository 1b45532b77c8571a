"""Launch geometry: which block and thread computes which output, for every configuration.

A kernel's outputs form a 3-D index space (n, p, f): image, output pixel (window position)
and neuron (see cuda/common.cuh). Fixed axes: blockIdx.x/threadIdx.z <-> n,
blockIdx.y/threadIdx.y <-> p, blockIdx.z/threadIdx.x <-> f. For a configuration:

* an axis the configuration spreads across blocks gets one unit per block: X one image,
  Y one window of `window` consecutive output pixels (default: one output row, as HEP-BNN),
  Z one neuron; its grid dimension is ceil(extent / unit);
* an axis it does not spread is owned whole by every block (grid dimension 1); the block's
  threads stride over it.

Threads of a block (at most `threads`, default 256) go first to the window's pixels when Y is
spread (HEP-BNN: the pixels of a window are the block's threads), then to the neurons (threadIdx.x,
so that a warp reads consecutive weights and writes consecutive outputs), then to pixels, then
to images. CUDA's limits are checked here, and so is the kernel's own limit on threads per
block (its __launch_bounds__, KERNEL_MAX_THREADS in cuda/common.cuh, or on a GPU the compiled
kernel's max_threads_per_block, which the registers it uses decide); a launch that does not fit
raises LaunchError naming the layer, the configuration and the limit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gpu_kernels.configs import CPU, axes, check_impl
from gpu_kernels.errors import LaunchError
from gpu_kernels.kernel_table import kernel_max_threads

MAX_THREADS_PER_BLOCK = 1024  # CUDA's limit for any kernel
MAX_BLOCK_DIM = (1024, 1024, 64)  # x, y, z
MAX_GRID_DIM = (2**31 - 1, 65535, 65535)  # x, y, z
DEFAULT_THREADS = 256
KERNEL_MAX_THREADS = kernel_max_threads()  # the kernels' __launch_bounds__ (cuda/common.cuh)

# sm_90 (H100/H200) register file: what decides how many threads of a kernel fit in a block
REGISTERS_PER_BLOCK = 65536
REGISTER_ALLOCATION_UNIT = 256  # registers are given to a warp in units of 256
WARP_SIZE = 32


def max_threads_for_registers(registers: int) -> int:
    """Largest block (a multiple of the warp size) a kernel using `registers` per thread can be
    launched with on sm_90: 72 registers -> 896 threads, 80 -> 800, 64 or fewer -> 1024."""
    if registers < 1:
        return MAX_THREADS_PER_BLOCK
    per_warp = -(-registers * WARP_SIZE // REGISTER_ALLOCATION_UNIT) * REGISTER_ALLOCATION_UNIT
    return min(MAX_THREADS_PER_BLOCK, REGISTERS_PER_BLOCK // per_warp * WARP_SIZE)


@dataclass(frozen=True)
class Work:
    """Output index space of one kernel call: images, pixels, neurons, and the length of an
    output row (the default window of Y)."""

    n: int
    p: int
    f: int
    row: int = 1


@dataclass(frozen=True)
class Launch:
    grid: tuple  # (x, y, z)
    block: tuple  # (x, y, z)
    chunks: tuple  # (n, p, f) extent of each axis one block owns
    work: Work
    config: str

    def split_args(self) -> tuple:
        """The six leading kernel arguments (SPLIT_PARAMS of common.cuh)."""
        return (self.work.n, self.work.p, self.work.f) + self.chunks

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def as_dict(self) -> dict:
        d = asdict(self)
        d["work"] = asdict(self.work)
        return d


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def plan(
    work: Work,
    config: str,
    *,
    threads: int = DEFAULT_THREADS,
    window: int | None = None,
    what: str = "kernel",
    max_threads: int = KERNEL_MAX_THREADS,
) -> Launch:
    """Grid and block for `work` in `config`; `what` names the layer in error messages.
    `max_threads` is the kernel's own limit on threads per block (default: its launch bound;
    a GPU backend passes the compiled kernel's max_threads_per_block)."""
    config = check_impl(config)
    if config == CPU:
        raise LaunchError(f"{what}: 'cpu' is not a GPU configuration")
    if min(work.n, work.p, work.f) < 1:
        raise LaunchError(f"{what}: nothing to compute (work {work})")
    if not 1 <= threads <= MAX_THREADS_PER_BLOCK:
        raise LaunchError(
            f"{what}: {threads} threads per block requested; CUDA allows 1..{MAX_THREADS_PER_BLOCK}"
        )
    if threads > max_threads:
        raise LaunchError(
            f"{what}: {threads} threads per block requested; the kernel can be "
            f"launched with at most {max_threads} (the registers it was compiled "
            f"with; KERNEL_MAX_THREADS = {KERNEL_MAX_THREADS} in cuda/common.cuh)"
        )
    spread = axes(config)
    win = work.row if window is None else window
    if win < 1:
        raise LaunchError(f"{what}: window of {win} pixels; it must be at least 1")
    win = min(win, work.p)

    cn = 1 if "X" in spread else work.n
    cp = win if "Y" in spread else work.p
    cf = 1 if "Z" in spread else work.f
    grid = (_ceil_div(work.n, cn), _ceil_div(work.p, cp), _ceil_div(work.f, cf))
    for g, limit, axis, name in zip(
        grid, MAX_GRID_DIM, ("images", "windows", "neurons"), ("x", "y", "z"), strict=True
    ):
        if g > limit:
            raise LaunchError(
                f"{what} in configuration {config}: {g} {axis} need gridDim.{name} = {g} blocks, "
                f"above CUDA's limit of {limit}; choose a configuration that does not spread "
                f"{axis} across blocks, a smaller batch, or the CPU"
            )

    budget = threads
    by = 1
    if "Y" in spread:  # the window's pixels are the block's threads
        by = min(cp, budget)
        budget //= by
    bx = min(cf, budget, MAX_BLOCK_DIM[0])
    budget //= bx
    if "Y" not in spread:
        by = min(cp, budget, MAX_BLOCK_DIM[1])
        budget //= by
    bz = min(cn, budget, MAX_BLOCK_DIM[2])
    block = (bx, by, bz)
    assert bx * by * bz <= MAX_THREADS_PER_BLOCK
    return Launch(grid=grid, block=block, chunks=(cn, cp, cf), work=work, config=config)
