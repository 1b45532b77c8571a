"""The fused IntConv2d + Step kernel (int_conv_step_pack, cuda/int_conv.cu) against the golden
models: every int_conv case of the exactness matrix (uint8 and int32 input, 32/64-bit words,
channel counts that are and are not multiples of a word, padding 0/1, odd image sizes, batches
1, 2, 5, every configuration) with a Step after the conv, in the emulation visited in order,
reversed and shuffled, with its shared-memory checks on (no race may be reported), and with
blocks of whole, partial and sub-warp thread counts; the same kernel with its __syncthreads
removed is reported as a race. Seeds are fixed (layer_cases.case_seed) and printed with each
failing case; the orders' seeds are printed."""

import re

import numpy as np
import pytest

from gpu_kernels import CONFIGS, Runner, run_network
from gpu_kernels.build import kernel_emulation_library
from gpu_kernels.devices import EmulatedGpu, EmuLibrary
from gpu_kernels.errors import GpuKernelError, KernelFaultError
from gpu_kernels.kernel_table import CUDA_DIR, KERNELS
from gpu_kernels.layer_cases import (
    FUSED_FAMILIES,
    FUSED_THREADS,
    check_fused_case,
    fused_case_label,
    fused_cases,
    fused_family_cases,
    make_fused_case,
)
from gpu_kernels.layer_ops import FUSED_WEIGHT_WORDS
from models import golden, ir
from models.random_networks import cifar10_bnn, fashion_bnn, random_images
from tests.helpers import assert_same, needs_gxx
from tests.test_gpu_kernels import failures_of, report

pytestmark = needs_gxx

CASES = fused_cases(CONFIGS)
FUSED_CASES = 336  # 2 input kinds x 7 configurations x 2 word sizes x 2 channel variants x 2 pads x 3 batches
# threads per block, taken in turn by the cases: whole warps, a partial last warp (100 = 3 x 32
# + 4, 48 = 32 + 16) and fewer than a warp (the plan's own smaller blocks also occur)
THREADS = FUSED_THREADS


def fused_check(gpu, case: tuple, threads: int, family: str = "int_conv_step_pack", op_check=None):
    """A check of one case of a fused kernel family against golden (layer_cases.check_fused_case:
    the runner must take that family's kernel, and `op_check(op)` must hold when given)."""
    return fused_case_label(family, case, threads), lambda: check_fused_case(
        gpu, family, case, threads, op_check
    )


def test_the_cases_cover_the_int_conv_matrix():
    assert len(CASES) == FUSED_CASES
    assert {c[1] for c in CASES} == set(CONFIGS) and {c[0] for c in CASES} == {"int_conv_u8", "int_conv_i32"}
    # both signs common, so that equality means something
    net, x = make_fused_case("int_conv_u8", 32, "partial", 1, 5, 1)
    out = golden.run(net, x).outputs[1]
    assert 0.2 < (out == 1).mean() < 0.8


def test_the_emulation_checks_shared_memory():
    assert EmulatedGpu()._emu.checks_shared_memory


def test_fused_kernel_equals_golden_in_order():
    """Every case, in order, each with one of THREADS in turn."""
    gpu = EmulatedGpu("in-order")
    checks = [fused_check(gpu, c, THREADS[i % len(THREADS)]) for i, c in enumerate(CASES)]
    failed = failures_of(checks)
    assert not failed, report("int_conv_step_pack cases", len(checks), failed)


@pytest.mark.parametrize(
    "order, every, offset", [("reversed", 0, 3), ("shuffled:2024", 1, 3), ("shuffled:77", 2, 3)]
)
def test_fused_kernel_equals_golden_in_other_orders(order, every, offset):
    """A third of the cases per order (each with a thread count other than in-order's), blocks,
    warps and lanes reversed or shuffled: the result never depends on the order, and the
    shared-memory checks report nothing."""
    kind, _, seed = order.partition(":")
    print(f"order {order}")
    gpu = EmulatedGpu(kind, int(seed or 0))
    cases = CASES[every::offset]
    checks = [fused_check(gpu, c, THREADS[(i + 1) % len(THREADS)]) for i, c in enumerate(cases)]
    failed = failures_of(checks)
    assert not failed, report(f"int_conv_step_pack cases {order}", len(checks), failed)


AUTO_RUNS = {  # what fuse="auto" runs as one kernel: first layer -> (last layer, kernel family)
    "fashion_bnn": {
        0: (2, "int_conv_step_pool_pack"),
        3: (5, "bin_conv_step_pool_pack"),
        7: (8, "bin_dense_step_pack"),
    },
    "cifar10_bnn": {
        0: (1, "int_conv_step_pack"),
        2: (4, "bin_conv_step_pool_pack"),
        5: (6, "bin_conv_step_pack"),
        7: (9, "bin_conv_step_pool_pack"),
        10: (11, "bin_conv_step_pack"),
        12: (14, "bin_conv_step_pool_pack"),
        16: (17, "bin_dense_step_pack"),
    },
}


@pytest.mark.parametrize("make, seed", [(fashion_bnn, 5), (cifar10_bnn, 6)])
def test_whole_network_with_every_run_fused(make, seed):
    """The Fashion and CIFAR-10 shapes with fuse="auto": every conv + Step (+ MaxPool2d) and
    BinDense + Step run as one kernel (the longest run at each layer), shuffled: the output of
    each run's last layer and of every other layer golden, the layers inside a run without an
    output or a time, the kernel's time on the run's last layer."""
    print(f"network seed {seed}, images seed {seed + 100}, order shuffled:{seed}")
    net = make(seed)
    x = random_images(seed + 100, 2, net.input_shape)
    ref = golden.run(net, x)
    runner = Runner(net, "XY", EmulatedGpu("shuffled", seed), 64, fuse="auto")
    runs = {i: (op.last, op.family) for i, op in runner.fused.items()}
    assert runs == AUTO_RUNS[make.__name__]
    res = runner.run(x)
    filters = net.layers[0].weight.shape[0]  # 64 (Fashion), 128 (CIFAR-10)
    assert res.layers[0].launch["work"]["f"] == filters // 64  # output words per pixel
    inside = {j for i, (last, _) in runs.items() for j in range(i, last)}
    for i in range(len(ref.outputs)):
        if i in inside:
            assert res.outputs[i] is None and res.layers[i].seconds == 0.0, f"layer {i}"
            assert res.layers[i].launch is None or i in runs, f"layer {i}"
        else:
            assert_same(res.outputs[i], ref.outputs[i], f"layer {i}")
            assert res.layers[i].seconds > 0 or net.layers[i].__class__ is ir.Flatten, f"layer {i}"
    assert np.array_equal(res.predictions, ref.predictions)


def _two_layer_net(c: int, f: int) -> ir.Network:
    rng = np.random.default_rng(9)
    w = np.where(rng.random((f, c, 3, 3)) < 0.5, -1, 1).astype(np.int8)
    conv = ir.IntConv2d(weight=w, bias=np.zeros(f, np.int64), padding=1)
    step = ir.Step(threshold=np.zeros(f, np.int64), direction=np.ones(f, np.int8))
    return ir.Network((c, 4, 4), "uint8", [conv, step])


def test_fusing_what_cannot_be_fused_is_one_clear_error():
    net = fashion_bnn(1)
    with pytest.raises(
        GpuKernelError,
        match=r"^cannot fuse layers 2 and 3: layer 2 \(MaxPool2d[^)]*\) is not an IntConv2d, a BinConv2d "
        r"or a BinDense$",
    ):
        Runner(net, "X", "emulation", fuse=[2])
    with pytest.raises(GpuKernelError, match="mapped to X and XY, not one GPU configuration"):
        Runner(net, ["X", "XY"] + ["X"] * 8, "emulation", fuse=[0])
    with pytest.raises(
        GpuKernelError, match=r"^cannot fuse layers 3, 4 and 5: layers 3, 4 and 5 are mapped to "
    ):
        Runner(net, ["X"] * 5 + ["XZ"] + ["X"] * 4, "emulation", fuse=[(3, 5)])
    with pytest.raises(GpuKernelError, match="mapped to cpu and cpu"):
        Runner(net, "cpu", "emulation", fuse=[0])
    with pytest.raises(GpuKernelError, match="fuse names layer 9; a fused pair starts at one of 0..8"):
        Runner(net, "X", "emulation", fuse=[9])
    with pytest.raises(GpuKernelError, match=r"fuse names \(3, 9, 1\); name a first layer i .* <= 9$"):
        Runner(net, "X", "emulation", fuse=[(3, 9, 1)])
    with pytest.raises(GpuKernelError, match="a fused kernel runs 2 or 3 layers .*, not layers 3..6$"):
        Runner(net, "X", "emulation", fuse=[(3, 6)])
    with pytest.raises(
        GpuKernelError, match=r"layer 7 \(BinDense[^)]*\): a BinDense fuses with its Step only"
    ):
        Runner(net, "X", "emulation", fuse=[(7, 9)])
    with pytest.raises(
        GpuKernelError,
        match=r"^cannot fuse layers 0, 1 and 2: layer 1 \(Step[^)]*\) is not followed by a MaxPool2d$",
    ):
        Runner(cifar10_bnn(1), "X", "emulation", fuse=[(0, 2)])  # IntConv2d, Step, BinConv2d
    with pytest.raises(
        GpuKernelError, match="^fuse names layers 3, 4 and 5 and layers 3 and 4: a layer is in one"
    ):
        Runner(net, "X", "emulation", fuse=[(3, 5), 3])
    with pytest.raises(GpuKernelError, match="fuse 'yes': use 'auto'"):
        Runner(net, "X", "emulation", fuse="yes")
    # 9 x 128 x ceil(300 / 32) words do not fit the shared tile: refused, and "auto" skips it
    big = _two_layer_net(128, 300)
    assert FUSED_WEIGHT_WORDS < 9 * 128 * 10
    with pytest.raises(
        GpuKernelError, match=f"need 11520 words of shared memory .* holds {FUSED_WEIGHT_WORDS}"
    ):
        Runner(big, "X", "emulation", fuse=[0])
    assert Runner(big, "X", "emulation", fuse="auto").fused == {}
    assert Runner(net, "cpu", "cpu", fuse=[0]).fused == {}  # nothing runs on a GPU


def test_fuse_names_runs_unambiguously():
    """`fuse`: a tuple or list of two layer indices is ONE run (first, last); any other list is
    a list of runs, each (first, last) or a first layer i (the pair i, i + 1). Two ints are never
    read as two pairs (a two-pair reading that the runner could run is never a run it could:
    the run is refused, with a hint); anything but "auto", None or such lists is one line."""
    net = fashion_bnn(1)
    runs = lambda r: sorted((i, op.last) for i, op in r.fused.items())  # noqa: E731
    assert runs(Runner(net, "X", "emulation", fuse=(0, 2))) == [(0, 2)]  # the pooled kernel
    assert runs(Runner(net, "X", "emulation", fuse=[0, 2])) == [(0, 2)]
    assert runs(Runner(net, "X", "emulation", fuse=(7, 8))) == [(7, 8)]
    assert runs(Runner(net, "X", "emulation", fuse=[(0, 2), (3, 5)])) == [(0, 2), (3, 5)]
    assert runs(Runner(net, "X", "emulation", fuse=[(0, 1), (3, 4)])) == [(0, 1), (3, 4)]
    assert runs(Runner(net, "X", "emulation", fuse=[0, 3, 7])) == [(0, 1), (3, 4), (7, 8)]
    assert runs(Runner(net, "X", "emulation", fuse=[3])) == [(3, 4)]
    assert runs(Runner(net, "X", "emulation", fuse=[[0, 2]])) == [(0, 2)]
    assert runs(Runner(net, "X", "emulation", fuse=(np.int64(3), np.int64(5)))) == [(3, 5)]
    assert runs(Runner(net, "X", "emulation", fuse=[])) == []
    with pytest.raises(GpuKernelError) as info:  # the pairs 0-1 and 3-4 are written [(0, 1), (3, 4)]
        Runner(net, "X", "emulation", fuse=[0, 3])
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("cannot fuse layers 0, 1, 2 and 3: a fused kernel runs 2 or 3 ")
    assert msg.endswith(
        "(fuse=[0, 3] is one run, layers 0..3; name several runs as a list of runs, e.g. [(0, 1), (3, 4)])"
    )
    with pytest.raises(
        GpuKernelError, match=r"^cannot fuse layers 0, 1 and 2: .* \(fuse=\(0, 2\) is one run"
    ):
        Runner(cifar10_bnn(1), "X", "emulation", fuse=(0, 2))  # IntConv2d, Step, BinConv2d
    for fuse in (5, True, 0, 2.0, {0: 2}, "0-2"):
        with pytest.raises(GpuKernelError) as info:
            Runner(net, "X", "emulation", fuse=fuse)
        msg = str(info.value)
        assert "\n" not in msg and msg.startswith(
            f"fuse {fuse!r}: use 'auto', one run (first, last), or a list"
        ), msg
    with pytest.raises(GpuKernelError, match=r"^fuse names \(0, 2, 3\); name a first layer i"):  # in a list
        Runner(net, "X", "emulation", fuse=[(0, 2, 3)])
    with pytest.raises(GpuKernelError, match=r"^fuse names True; name a first layer i"):
        Runner(net, "X", "emulation", fuse=[True, 3])
    with pytest.raises(GpuKernelError, match=r"^fuse names \(4, 2\); name a first layer i"):
        Runner(net, "X", "emulation", fuse=[(4, 2)])


def test_the_result_records_the_fused_runs():
    """RunResult.fused_gpu and as_dict() name each run computed by one fused kernel."""
    import json

    net = fashion_bnn(1)
    x = random_images(2, 1, net.input_shape)
    print("seeds: network 1, images 2")
    res = run_network(net, x, "X", backend="emulation", fuse=[(0, 2), 7])
    want = [
        {"first": 0, "last": 2, "kernel": "int_conv_step_pool_pack/u8/w32"},
        {"first": 7, "last": 8, "kernel": "bin_dense_step_pack/w32"},
    ]
    assert res.fused_gpu == want
    assert json.loads(json.dumps(res.as_dict()))["fused_gpu"] == want
    assert run_network(net, x, "X", backend="emulation").as_dict()["fused_gpu"] == []


def test_exactness_skips_only_the_layers_inside_a_fused_run(monkeypatch):
    """selfcheck's and gpu_bnn's comparisons: a None output passes only for a layer inside a
    fused run (Runner.inside_fused), and such a layer must not have an output; a single-layer
    case returning None fails."""
    import types

    from gpu_kernels import selfcheck
    from tests.test_gpu_benchmarks import _gpu_bnn_module

    a = np.ones((2, 3), np.int8)
    ref = types.SimpleNamespace(outputs=[a, a])
    for outputs, inside, ok in (
        ([None, a], frozenset(), False),
        ([None, a], frozenset({0}), True),
        ([a, a], frozenset({0}), False),
        ([a, None], frozenset({0}), False),
        ([a, a], frozenset(), True),
    ):
        res = types.SimpleNamespace(outputs=outputs)
        assert selfcheck._equal(res, ref, inside) is ok, (outputs, inside)
        assert (not _gpu_bnn_module()._differing(outputs, ref.outputs, inside)) is ok, (outputs, inside)
    assert Runner(fashion_bnn(1), "X", "emulation", fuse="auto").inside_fused == {0, 1, 3, 4, 7}
    # a matrix case whose run returns None for its one layer: counted as a failure
    monkeypatch.setattr(selfcheck, "run_network", lambda *a, **k: types.SimpleNamespace(outputs=[None]))
    out = selfcheck.run("emulation", every=300, networks=False, parts=("matrix",))
    assert out["checks"] > 0 and len(out["failures"]) == out["checks"]


def test_selfcheck_counts_an_exception_of_a_case_as_its_failure(monkeypatch, capsys):
    """A kernel writing set padding bits makes the golden unpacking raise NumericsError (and on
    CuPy a faulting kernel raises CuPy's CUDA errors): in every part, selfcheck counts that case
    as failed, goes on, prints its summary and exits 1; a backend that cannot start still exits
    3."""
    from gpu_kernels import selfcheck
    from gpu_kernels.errors import BuildError
    from models.checks import NumericsError

    def padding_bits_set(*a, **k):
        raise NumericsError("unpack_bits: padding bits set\nsecond line")

    class CudaError(Exception):  # what CuPy raises: neither a GpuKernelError nor a NumericsError
        pass

    def illegal_address(*a, **k):
        raise CudaError("cudaErrorIllegalAddress: an illegal memory access was encountered")

    monkeypatch.setattr(selfcheck, "run_network", padding_bits_set)
    monkeypatch.setattr(selfcheck, "check_fused_case", illegal_address)
    monkeypatch.setattr(selfcheck, "Runner", padding_bits_set)
    assert selfcheck.main(["--backend", "emulation", "--every", "300"]) == 1
    text = capsys.readouterr().out
    print(text)
    head, *fails = text.strip().splitlines()
    checks = int(head.split()[0])
    assert head.startswith(f"{checks} checks on ") and f", {checks} failures (" in head
    fail_lines = [f for f in fails if f.startswith("  FAIL ")]
    assert len(fail_lines) == checks
    fused = sum(len(fused_family_cases(f, CONFIGS)[::300]) for f in FUSED_FAMILIES)  # one per family or more
    assert sum("error: CudaError: cudaErrorIllegalAddress" in f for f in fail_lines) == fused
    assert (
        sum("error: NumericsError: unpack_bits: padding bits set" in f for f in fail_lines) == checks - fused
    )
    assert any(f.startswith("  FAIL fashion-mixed-w32-error: NumericsError") for f in fail_lines)
    assert any(f.startswith("  FAIL cifar10-XZ-w64-fused-error: NumericsError") for f in fail_lines)
    assert "fused kernels: " in text and "networks: 4 checks" in text

    def no_compiler(*a, **k):
        raise BuildError("g++ not found")

    monkeypatch.setattr(selfcheck, "run_network", no_compiler)
    assert selfcheck.main(["--backend", "emulation", "--every", "300", "--part", "matrix"]) == 3


def barrier_removed_fault(tmp_path, order, cu_file, barrier, instance, key, fuse, fused_px=None):
    """The Fashion network with `instance` (a fused kernel's template instance) built from
    `cu_file` with `barrier` (its __syncthreads and the line after it) reduced to that line, run
    fused (`fuse`, `fused_px`) through the emulation in `order`; returns the KernelFaultError's
    message, which must be one line naming the kernel's copy ("<kernel>_no_sync") and its
    shared tile `wsh`."""
    text = (CUDA_DIR / cu_file).read_text()
    assert text.count(barrier) == 1 and text.count("__syncthreads();") == 1
    kernel = instance.split("<")[0]
    copy = tmp_path / f"{kernel}_no_sync.cu"
    copy.write_text(text.replace(barrier, barrier.split("\n", 1)[1]))
    src = tmp_path / "fused_no_sync.cu"
    src.write_text(f'#include "common.cuh"\n#include "{copy}"\nauto& {kernel}_no_sync = {instance};\n')
    lib = EmuLibrary(kernel_emulation_library(src, [f"{kernel}_no_sync"]))
    assert lib.checks_shared_memory
    gpu = EmulatedGpu(order)
    assert KERNELS[key].expr == instance
    gpu._emu, gpu._entry = lib, {**gpu._entry, key: lib.entry(f"emu_{kernel}_no_sync")}
    net = fashion_bnn(3)
    x = random_images(4, 2, net.input_shape)
    with pytest.raises(KernelFaultError) as info:
        run_network(net, x, "X", backend=gpu, fuse=fuse, fused_px=fused_px)
    msg = str(info.value)
    print(msg)
    assert "\n" not in msg
    assert msg.startswith(f"{kernel}_no_sync: thread (")
    assert "shared-memory race on" in msg or "which no thread of its block has written" in msg
    assert f"{instance}(" in msg and ")::wsh+" in msg
    return msg


@pytest.mark.parametrize("order", ["in-order", "reversed"])
def test_removing_the_barrier_is_reported(tmp_path, order):
    """int_conv.cu with the fused kernels' __syncthreads deleted: threads read weight words
    other threads write in the same phase, and the emulation's shared-memory checks stop the
    launch with one line naming the kernel and the shared tile (a race, or a read of a word no
    thread has written yet, depending on who comes first)."""
    barrier_removed_fault(
        tmp_path,
        order,
        "int_conv.cu",
        INT_BARRIER,
        "int_conv_step_pack<unsigned char, unsigned int>",
        "int_conv_step_pack/u8/w32",
        [0],
    )


INT_BARRIER = "    __syncthreads();\n    const IntConvSum<T> sum"


def test_fused_op_counts():
    """The fused ops' work: one output word per pixel (pooled pixel) and word, the format of
    the run's last layer."""
    net = fashion_bnn(2)
    for bits in (32, 64):
        runner = Runner(net, "X", "emulation", bits, fuse=[0, (3, 5), 7])
        op = runner.fused[0]
        w = op.work(3)
        assert (w.n, w.p, w.f, w.row) == (3, 28 * 28, 64 // bits, 28)
        assert op.fout == runner.ops[1].fout and op.consts["wbits"].shape == (9, 2)
        pooled = runner.fused[3]
        w = pooled.work(3)
        assert (w.n, w.p, w.f, w.row) == (3, 7 * 7, 64 // bits, 7)
        assert pooled.fout == runner.ops[5].fout and pooled.family == "bin_conv_step_pool_pack"
        dense = runner.fused[7]
        w = dense.work(3)
        assert (w.n, w.p, w.f) == (3, 1, 64 // bits) and dense.fout == runner.ops[8].fout
        assert dense.kernel == f"bin_dense_step_pack/w{bits}" and dense.consts["w"].shape == (
            -(-3136 // bits),
            64,
        )


# ---------------------------------------------------------------- the mapper's fused choice
FASHION_RUNS = [[0, 2], [3, 5], [7, 8]]  # what the model's DP runs fused on the Fashion shape
FASHION_PX = {"3-5": 2}  # and which it runs register-blocked (32-bit words)


def _fused_mapping(scales=None, word_bits=32):
    """The Fashion shape mapped on the modelled profile with the fused kernels; `scales`:
    {"first-last": factor} applied to those kernels' times, as if measured so."""
    from gpu_kernels.gpu_model import ModelledProfile
    from gpu_kernels.mapper import map_network

    net = fashion_bnn(0)
    prof = ModelledProfile(word_bits, fused=True).profile(net, [256, 1024])
    for key, scale in (scales or {}).items():
        for rows in prof.meta["fused_gpu"][key]["layer_s"].values():
            rows[:] = [t * scale for t in rows]
    return net, map_network(net, [256, 1024], prof, n_images=10_000)


def test_modelled_mapper_chooses_the_fused_runs():
    """Without a GPU the choice follows the model: a fused kernel saves the Step's (and the
    pool's) launch and reads, so the DP takes the longest runs (conv + Step + MaxPool2d at
    0-2 and 3-5, BinDense + Step at 7-8), every layer of a run in one configuration, its time
    on the run's last row; the binary run's register-blocked kernel (2 pooled pixels per warp),
    whose modelled trips are fewer; without fused times (the default profile) nothing is
    fused."""
    from gpu_kernels.gpu_model import ModelledProfile
    from gpu_kernels.mapper import Mapping, map_network

    net, m = _fused_mapping()
    dp = m.dp
    assert dp.fused_gpu == FASHION_RUNS
    for first, last in dp.fused_gpu:
        assert len(set(dp.impls[first : last + 1])) == 1 and dp.impls[first] != "cpu"
        assert dp.layer_s[first:last] == [0.0] * (last - first) and dp.layer_s[last] > 0
    kernels = {k: e["kernel"] for k, e in m.profile.meta["fused_gpu"].items()}
    assert kernels == {
        "0-1": "int_conv_step_pack/u8/w32",
        "0-2": "int_conv_step_pool_pack/u8/w32",
        "3-4": "bin_conv_step_pack/w32",
        "3-4/px2": "bin_conv_step_pack_px2/w32",
        "3-4/px4": "bin_conv_step_pack_px4/w32",
        "3-5": "bin_conv_step_pool_pack/w32",
        "3-5/px2": "bin_conv_step_pool_pack_px2/w32",
        "7-8": "bin_dense_step_pack/w32",
    }
    assert dp.fused_px == FASHION_PX
    plain = map_network(net, [256, 1024], ModelledProfile(32), n_images=10_000)
    assert plain.dp.fused_gpu == [] and "fused_gpu" not in plain.profile.meta
    assert dp.total_s < plain.dp.total_s
    assert m.algorithm1.fused_gpu == []  # Algorithm 1 stays per layer, as published
    again = Mapping.from_json(m.to_json())
    assert again.dp.fused_gpu == FASHION_RUNS and again.dp.fused_px == FASHION_PX and not again.agree()


@pytest.mark.parametrize(
    "scales, fused, px",
    [
        ({"0-2": 100.0}, [[0, 1], [3, 5], [7, 8]], FASHION_PX),
        ({"0-1": 100.0, "0-2": 100.0}, [[3, 5], [7, 8]], FASHION_PX),
        ({"3-5": 100.0, "3-5/px2": 100.0, "7-8": 100.0}, [[0, 2], [3, 4]], {"3-4": 4}),
        ({"0-1": 0.01}, [[0, 1], [3, 5], [7, 8]], FASHION_PX),
        # the blocked kernels 100x slower: the unblocked pooled run; one 100x faster: it
        ({"3-5/px2": 100.0, "3-4/px2": 100.0, "3-4/px4": 100.0}, FASHION_RUNS, {}),
        ({"3-4/px2": 0.01}, [[0, 2], [3, 4], [7, 8]], {"3-4": 2}),
    ],
)
def test_mapper_follows_the_fused_kernels_times(scales, fused, px):
    """With times (measured ones, here the model's scaled) the DP follows them: a kernel 100x
    slower is not taken (the pair instead of the pooled run, the unblocked kernel instead of
    the blocked one, or no fusion), one 100x faster is (the pair and a separate pool rather than
    the pooled run); the others as modelled."""
    _, m = _fused_mapping(scales)
    assert m.dp.fused_gpu == fused and m.dp.fused_px == px


def test_runner_follows_a_fused_choice():
    """A Choice with fused runs runs them, each with the kernel it chose (the blocked one of
    its fused_px; emulation, shuffled): every other layer and each run's last layer golden, the
    tensors inside a run absent."""
    net, m = _fused_mapping()
    print("seeds: network 0, images 8, shuffled order 8")
    x = random_images(8, 3, net.input_shape)
    runner = Runner(net, m.dp, EmulatedGpu("shuffled", 8), batch=2)
    assert sorted([i, op.last] for i, op in runner.fused.items()) == FASHION_RUNS
    assert {f"{i}-{op.last}": op.px for i, op in runner.fused.items() if op.px > 1} == FASHION_PX
    assert runner.fused[3].kernel == "bin_conv_step_pool_pack_px2/w32"
    res = runner.run(x)
    ref = golden.run(net, x)
    inside = {j for first, last in FASHION_RUNS for j in range(first, last)}
    for i in range(len(ref.outputs)):
        if i in inside:
            assert res.outputs[i] is None, f"layer {i}"
        else:
            assert_same(res.outputs[i], ref.outputs[i], f"layer {i}")


def test_the_mapper_table_marks_the_fused_runs():
    """`sacbench map`'s table: a `fused gpu` column with each run's configuration and time on
    its last layer and `in N` on the others, the DP's marks there, and a line naming each run's
    kernel."""
    from gpu_kernels.mapper_report import format_table

    _, m = _fused_mapping()
    text = format_table(m)
    print(text)
    rows = {int(line.split()[0]): line for line in text.splitlines() if line[:4].strip().isdigit()}
    assert "fused gpu [ms]" in text
    assert rows[0].rstrip().endswith("in 2d") and rows[1].rstrip().endswith("in 2d")
    assert rows[2].split()[-2:][0] == m.dp.impls[2] and rows[2].rstrip().endswith("d")
    assert rows[6].rstrip().endswith("-")  # Flatten: not in a run
    impl = m.dp.impls
    assert (
        f"fused gpu: DP runs layers 0-2 as int_conv_step_pool_pack/u8/w32 in {impl[0]}; 3-5 as "
        f"bin_conv_step_pool_pack_px2/w32 in {impl[3]}; 7-8 as bin_dense_step_pack/w32 in {impl[7]}." in text
    )


def test_saved_pairs_read_as_runs():
    """A choice or profile saved when only pairs fused (a bare first layer i) reads as the run
    [i, i + 1]."""
    from gpu_kernels.mapper import Choice, dp_mapping

    d = _fused_mapping()[1].dp.as_dict()
    assert Choice.from_dict({**d, "fused_gpu": [0, 3], "fused_px": {}}).fused_gpu == [[0, 1], [3, 4]]
    _, m = _fused_mapping()
    meta = m.profile.meta["fused_gpu"]
    m.profile.meta["fused_gpu"] = {"0": meta["0-1"], "3": meta["3-4"]}
    assert dp_mapping(m.profile, 10_000).fused_gpu == [[0, 1], [3, 4]]


def test_a_choice_refuses_impossible_fused_runs():
    """Choice's fused_gpu: a run backwards or past the layers, two runs sharing a layer, or no
    list at all (a saved `null`) is a one-line GpuKernelError, also through Mapping.from_json."""
    from gpu_kernels.mapper import Choice, Mapping

    _, m = _fused_mapping()
    d = m.dp.as_dict()
    bad = {
        "[[5, 3]]": (
            [[5, 3]],
            r"^a fused GPU run is \[first, last\] with 0 <= first < last <= 9, got \[5, 3\]$",
        ),
        "[[3, 3]]": ([[3, 3]], r"got \[3, 3\]$"),
        "[[8, 10]]": ([[8, 10]], r"<= 9, got \[8, 10\]$"),
        "[[-1, 1]]": ([[-1, 1]], r"got \[-1, 1\]$"),
        "overlap": ([[0, 2], [2, 3]], r"^fused GPU runs \[0, 2\] and \[2, 3\] overlap: a layer is in one "),
        "the same run twice": ([[3, 5], [3, 5]], r"^fused GPU runs \[3, 5\] and \[3, 5\] overlap"),
        "a bare pair inside a run": ([[0, 2], 1], r"^fused GPU runs \[0, 2\] and \[1, 2\] overlap"),
        "null": (None, r"^a choice's fused_gpu is a list of \[first, last\] runs, got None$"),
        "a number": (3, r"^a choice's fused_gpu is a list of \[first, last\] runs, got 3$"),
        "a triple": ([[0, 1, 2]], r"^a fused GPU run is \[first layer, last layer\], got \[0, 1, 2\]$"),
    }
    for what, (runs, match) in bad.items():
        with pytest.raises(GpuKernelError, match=match):
            Choice.from_dict({**d, "fused_gpu": runs, "fused_px": {}})
        with pytest.raises(GpuKernelError, match=match):
            Mapping.from_json({**m.to_json(), "dp": {**d, "fused_gpu": runs, "fused_px": {}}})
        print(f"{what}: refused")
    assert Choice.from_dict({**d, "fused_gpu": [[7, 8], [0, 2]], "fused_px": {}}).fused_gpu == [
        [7, 8],
        [0, 2],
    ]
    # fused_px: an object naming the choice's runs, ints >= 1 (1 dropped); saved without it: {}
    bad_px = {
        "a run not taken": (
            {"3-4": 2},
            r"^a choice's fused_px names '3-4', none of its fused runs \(0-2, 3-5, 7-8\)$",
        ),
        "a list": ([2], r"^a choice's fused_px is an object \{'first-last': pixels\}, got \[2\]$"),
        "zero": ({"3-5": 0}, r"^a choice's fused_px gives '3-5' 0 pixels per warp; needs an int >= 1$"),
        "a string": ({"3-5": "2"}, r"gives '3-5' '2' pixels per warp"),
    }
    for what, (px, match) in bad_px.items():
        with pytest.raises(GpuKernelError, match=match):
            Choice.from_dict({**d, "fused_px": px})
        print(f"fused_px {what}: refused")
    assert Choice.from_dict({**d, "fused_px": {"3-5": 1}}).fused_px == {}
    assert Choice.from_dict({k: v for k, v in d.items() if k != "fused_px"}).fused_px == {}


def test_malformed_fused_times_are_one_clear_error():
    from gpu_kernels.mapper import dp_mapping, evaluate

    _, m = _fused_mapping()
    m.profile.meta["fused_gpu"]["0-2"]["layer_s"]["256"] = [1.0]
    with pytest.raises(GpuKernelError, match=r"^profile meta fused_gpu, layers 0-2, batch 256: needs 7 "):
        dp_mapping(m.profile, 10_000)
    for key in ("9", "3-3", "2-10", "a-b", "1-2-3"):
        m.profile.meta["fused_gpu"] = {key: {}}
        with pytest.raises(
            GpuKernelError,
            match=r"^profile meta fused_gpu: needs \{'first-last' \(0 <= first < last <= 9\): object\}",
        ):
            dp_mapping(m.profile, 10_000)
    # well-formed keys that name no run a fused kernel computes in the Fashion shape (the
    # runner's rule): Step + MaxPool2d, six layers, a conv + Step + BinConv2d's Step, a pool
    refused = {
        "1-2": r"layer 1 \(Step 64 ch\) is not an IntConv2d, a BinConv2d or a BinDense",
        "0-5": r"a fused kernel runs 2 or 3 layers .*, not layers 0..5",
        "6-7": r"layer 6 \(Flatten\) is not an IntConv2d",
        "7-9": r"layer 7 \(BinDense 3136->64\): a BinDense fuses with its Step only",
        "2": r"layer 2 \(MaxPool 2x2\) is not an IntConv2d",
    }
    for key, why in refused.items():
        m.profile.meta["fused_gpu"] = {key: {"kernel": "x", "layer_s": {}}}
        with pytest.raises(GpuKernelError) as info:
            dp_mapping(m.profile, 10_000)
        msg = str(info.value)
        assert "\n" not in msg and msg.startswith(
            f"profile meta fused_gpu: the key {key!r} is no run one fused kernel computes: "
        ), msg
        assert re.search(why, msg), msg
    # malformed blocked keys, and other spellings of a kernel's key (one key per kernel)
    for key in ("3/px2", "3-4/px", "3-4/2", "3-4/px2/px2", "3-4/px1", "3-4/px04", "03-4"):
        m.profile.meta["fused_gpu"] = {key: {}}
        with pytest.raises(
            GpuKernelError, match=r"^profile meta fused_gpu: needs \{'first-last' .* got the key"
        ):
            dp_mapping(m.profile, 10_000)
    # well-formed blocked keys naming no kernel of their run
    for key, why in (
        ("0-2/px2", "2 pixels per warp: only a BinConv2d run has register-blocked kernels"),
        ("3-5/px4", "4 pixels per warp: bin_conv_step_pool_pack takes 1 or 2"),
        ("3-4/px3", "3 pixels per warp: bin_conv_step_pack takes 1 or 2 or 4"),
        ("7-8/px2", "only a BinConv2d run"),
    ):
        m.profile.meta["fused_gpu"] = {key: {"kernel": "x", "layer_s": {}}}
        with pytest.raises(GpuKernelError) as info:
            dp_mapping(m.profile, 10_000)
        msg = str(info.value)
        assert msg.startswith(f"profile meta fused_gpu: the key {key!r} names no kernel of that run: "), msg
        assert why in msg, msg
    m.profile.meta["fused_gpu"] = {"0-2": 5}
    with pytest.raises(
        GpuKernelError, match=r"^profile meta fused_gpu: the key '0-2' needs an object, got 5$"
    ):
        dp_mapping(m.profile, 10_000)
    m.profile.meta["fused_gpu"] = {}
    with pytest.raises(
        GpuKernelError, match=r"^layers 3..5 run fused, but the profile holds no times of that kernel"
    ):
        evaluate(m.dp.impls, m.profile, 256, 10_000, [[3, 5]])
    m.profile.meta["fused_gpu"] = {"3-5": {"kernel": "x", "layer_s": {"256": [1.0] * 7}}}
    with pytest.raises(
        GpuKernelError,
        match=r"^layers 3..5 run fused \(2 pixels per warp\), but the profile holds no times of that kernel",
    ):
        evaluate(m.dp.impls, m.profile, 256, 10_000, [[3, 5]], {"3-5": 2})


@pytest.mark.parametrize("bias", [7, -7])
def test_thresholds_at_the_ends_of_int64_fold_without_wrapping(bias):
    """Thresholds of -2^63 and 2^63 - 1 (both directions) with a nonzero bias: folding the bias
    into the bounds must not wrap in int64 (always on stays always on, never on never on)."""
    rng = np.random.default_rng(31)
    print("seed 31")
    lo, hi = -(1 << 63), (1 << 63) - 1
    w = np.where(rng.random((4, 2, 3, 3)) < 0.5, -1, 1).astype(np.int8)
    conv = ir.IntConv2d(weight=w, bias=np.full(4, bias, np.int64), padding=1)
    step = ir.Step(
        threshold=np.array([lo, hi, lo, hi], np.int64), direction=np.array([1, 1, -1, -1], np.int8)
    )
    net = ir.Network((2, 4, 5), "uint8", [conv, step])
    x = rng.integers(0, 256, (2, 2, 4, 5)).astype(np.uint8)
    res = run_network(net, x, "X", backend="emulation", fuse=[0])
    assert_same(res.outputs[1], golden.run(net, x).outputs[1], "step")


def test_heatmap_marks_each_fused_run(tmp_path, monkeypatch):
    """The heatmap draws one bar per fused GPU run a choice takes, over exactly its layers, in
    the panel of the choice's batch size, and names the bars in the legend."""
    from gpu_kernels import mapper_report

    _, m = _fused_mapping()
    bars = []
    real = mapper_report._fused_bar

    def spy(ax, n, first, last, algorithm):
        bars.append((algorithm, first, last))
        real(ax, n, first, last, algorithm)

    monkeypatch.setattr(mapper_report, "_fused_bar", spy)
    assert mapper_report.write_heatmap(m, tmp_path / "h.png").stat().st_size > 1000
    want = [(ch.algorithm, a, b) for ch in (m.algorithm1, m.dp) for a, b in ch.fused_gpu]
    assert sorted(bars) == sorted(want) and ("dp", 0, 2) in bars
