"""Launch geometry of the seven configurations, CUDA's limits and the kernels' own limit on
threads per block (their __launch_bounds__, or a GPU's compiled max_threads_per_block)."""

import numpy as np
import pytest

from gpu_kernels import CONFIGS, LaunchError, Runner
from gpu_kernels.devices import EmulatedGpu
from gpu_kernels.launch import (
    KERNEL_MAX_THREADS,
    MAX_BLOCK_DIM,
    MAX_GRID_DIM,
    Work,
    max_threads_for_registers,
    plan,
)
from gpu_kernels.layer_ops import prepare
from models.random_networks import cifar10_bnn, fashion_bnn
from tests.helpers import needs_gxx

CONV = Work(n=100, p=14 * 14, f=64, row=14)  # the second Fashion conv, batch 100


@pytest.mark.parametrize(
    "config, grid, chunks",
    [
        ("X", (100, 1, 1), (1, 196, 64)),  # one image per block
        ("Y", (1, 14, 1), (100, 14, 64)),  # one window (an output row) per block
        ("Z", (1, 1, 64), (100, 196, 1)),  # one neuron per block
        ("XY", (100, 14, 1), (1, 14, 64)),
        ("XZ", (100, 1, 64), (1, 196, 1)),
        ("YZ", (1, 14, 64), (100, 14, 1)),
        ("XYZ", (100, 14, 64), (1, 14, 1)),
    ],
)
def test_grid_spreads_exactly_the_configured_axes(config, grid, chunks):
    launch = plan(CONV, config)
    assert launch.grid == grid and launch.chunks == chunks
    assert launch.threads <= 256


def test_block_threads_go_to_window_pixels_then_neurons():
    assert plan(CONV, "X").block == (64, 4, 1)  # 64 neurons x 4 pixels
    assert plan(CONV, "Y").block == (18, 14, 1)  # the 14 pixels of the window, then neurons
    assert plan(CONV, "XYZ").block == (1, 14, 1)  # HEP-BNN XYZ: threads = pixels of a row
    assert plan(CONV, "Z").block == (1, 196, 1)
    assert plan(CONV, "YZ", threads=1024, max_threads=1024).block == (1, 14, 64)  # then images,
    assert plan(Work(5000, 1, 3), "Y", threads=1024, max_threads=1024).block == (3, 1, 64)  # z <= 64


def test_window_option():
    launch = plan(CONV, "Y", window=49)
    assert launch.grid == (1, 4, 1) and launch.chunks[1] == 49


@pytest.mark.parametrize("net", [fashion_bnn(0), cifar10_bnn(0)], ids=["fashion", "cifar10"])
@pytest.mark.parametrize("batch", [1, 256, 10_000])
def test_every_layer_maps_in_every_configuration(net, batch):
    for op in prepare(net, 32):
        if op.kernel is None:
            continue
        for config in CONFIGS:
            launch = plan(op.work(batch), config, what=op.label)
            assert all(b <= m for b, m in zip(launch.block, MAX_BLOCK_DIM, strict=True))
            assert all(g <= m for g, m in zip(launch.grid, MAX_GRID_DIM, strict=True))
            assert launch.threads <= 1024
            # the blocks' chunks cover every output
            for g, c, e in zip(
                launch.grid, launch.chunks, (launch.work.n, launch.work.p, launch.work.f), strict=True
            ):
                assert g * c >= e and (g - 1) * c < e


def test_unmappable_launches_raise_clear_errors():
    wide = Work(n=8, p=1, f=70_000)  # a dense layer with 70,000 neurons
    with pytest.raises(
        LaunchError,
        match=r"layer 7 \(BinDense\) in configuration Z: 70000 "
        r"neurons need gridDim.z = 70000 blocks, above "
        r"CUDA's limit of 65535",
    ):
        plan(wide, "Z", what="layer 7 (BinDense)")
    for config in ("X", "Y", "XY"):
        assert plan(wide, config).grid[2] == 1  # fine without Z
    tall = Work(n=2, p=4096 * 4096, f=8, row=16)  # 2^20 windows of 16 pixels
    with pytest.raises(LaunchError, match="gridDim.y"):
        plan(tall, "Y")
    with pytest.raises(LaunchError, match="1025 threads per block requested; CUDA allows 1..1024"):
        plan(CONV, "X", threads=1025)
    with pytest.raises(LaunchError, match="window of 0 pixels"):
        plan(CONV, "Y", window=0)
    with pytest.raises(LaunchError, match="'cpu' is not a GPU configuration"):
        plan(CONV, "cpu")


def test_runner_refuses_unmappable_layer_before_running():
    import numpy as np

    from gpu_kernels import run_network
    from models import ir

    net = ir.Network(
        (16,), "binary", [ir.BinDense(weight=np.ones((70_000, 16), np.int8), bias=np.zeros(70_000, np.int32))]
    )
    with pytest.raises(LaunchError, match="gridDim.z = 70000"):
        run_network(net, np.ones((1, 16), np.int8), "XZ", backend="emulation")


def test_docs_launch_table_is_current():
    from pathlib import Path

    from gpu_kernels.launch_report import launch_table

    doc = (Path(__file__).resolve().parents[1] / "docs" / "gpu.md").read_text()
    embedded = doc.split("<!-- launch-table:begin -->\n")[1].split("\n<!-- launch-table:end -->")[0]
    assert embedded == launch_table(fashion_bnn(0), 256)


def test_registers_decide_the_largest_block():
    """sm_90: 64K registers per block, given to warps in units of 256 (the issue's numbers)."""
    assert max_threads_for_registers(72) == 896
    assert max_threads_for_registers(80) == 800
    assert max_threads_for_registers(64) == 1024
    assert max_threads_for_registers(255) == 256
    assert max_threads_for_registers(80) >= KERNEL_MAX_THREADS > max_threads_for_registers(88)


def test_kernel_thread_limit_is_checked_before_launching():
    """Blocks above the kernel's limit are refused by plan, naming the limit, whether it comes
    from the launch bound (the default) or from a GPU's compiled kernel."""
    assert KERNEL_MAX_THREADS == 768
    assert plan(CONV, "X", threads=KERNEL_MAX_THREADS).threads <= KERNEL_MAX_THREADS
    with pytest.raises(
        LaunchError, match="1024 threads per block requested; the kernel can be launched with at most 768"
    ):
        plan(CONV, "X", threads=1024)
    with pytest.raises(LaunchError, match="at most 640"):  # a GPU reporting fewer
        plan(CONV, "X", threads=700, max_threads=640)


class _FewThreadsGpu(EmulatedGpu):
    """The emulation, reporting a lower compiled limit for one kernel (as a GPU whose NVRTC
    used more registers would)."""

    def max_threads(self, key):
        return 96 if key.startswith("bin_conv3x3") else super().max_threads(key)


@needs_gxx
def test_runner_plans_with_the_devices_limit():
    from models.random_networks import fashion_bnn, random_images

    net = fashion_bnn(3)
    x = random_images(4, 2, net.input_shape)
    with pytest.raises(LaunchError, match=r"layer 3 \(BinConv2d .*at most 96"):
        Runner(net, "X", backend=_FewThreadsGpu(), threads=128).run(x)
    res = Runner(net, "X", backend=_FewThreadsGpu(), threads=96).run(x)
    assert max(np.prod(r.launch["block"]) for r in res.layers if r.launch) <= 96


@needs_gxx
def test_emulation_refuses_blocks_above_the_launch_bound():
    """The emulated launcher refuses what the driver would (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES):
    Python's checks first, and the C entry point itself when they are bypassed."""
    import ctypes

    from gpu_kernels.launch import Launch

    gpu = EmulatedGpu()
    big = Launch(grid=(1, 1, 1), block=(1024, 1, 1), chunks=(1, 1, 1024), work=Work(1, 1, 1024), config="X")
    buf = gpu.empty((1, 1024), np.int32)
    with pytest.raises(LaunchError, match="allows at most 768"):
        gpu.launch("flatten_int", big, [buf, buf, 1, 1024])
    dims = (ctypes.c_uint * 6)(1, 1, 1, 1024, 1, 1)
    params = (ctypes.c_void_p * 10)()  # never read: the launcher refuses before the kernel
    assert gpu._entry["flatten_int"](dims, params) == 1
    dims = (ctypes.c_uint * 6)(1, 1, 1, 768, 1, 1)
    x, out = gpu.upload(np.arange(768, dtype=np.int32).reshape(1, 768)), gpu.empty((1, 768), np.int32)
    gpu.launch("flatten_int", plan(Work(1, 1, 768), "X", threads=768), [x, out, 1, 768])
    assert np.array_equal(out.array, x.array)
