"""The GPU exactness matrix: every BNN kernel in every configuration equal to the golden models,
on each backend of the `backend` fixture: `emulation` (the CPU emulation of the CUDA source,
built with g++) always, `cupy` (a real GPU through CuPy, marked `gpu`) where CuPy sees a CUDA
device, skipped with the reason elsewhere.

The cases are gpu_kernels/layer_cases.py's `all_cases(CONFIGS)`: layer type x configuration x
word size x channel count (multiple of the word size or not) x padding x batch size. One test
per backend x layer type loops over that layer type's cases (every configuration), compares
every launch with the golden model and fails with the list of every failing case (kind,
configuration, word size, channel variant, padding, batch, seed, shape and first mismatching
index); `test_the_matrix_loops_every_case_once` holds the loops to the generator, case for
case. The smaller checks loop over the configurations the same way.

tests/test_gpu_cupy.py holds the CuPy-only tests (whole networks, the compiled kernels' limits,
launch timing) and imports the matrix tests, so that scripts/gpu_check.sh, which runs that file
alone, runs the matrix on CuPy (tests/conftest.py runs each such case once when both files are
collected)."""

import itertools

import numpy as np
import pytest

from gpu_kernels import CONFIGS, Runner, cuda_available, run_network
from gpu_kernels.devices import EmuBuffer, get_gpu
from gpu_kernels.errors import GpuKernelError
from gpu_kernels.launch import Work, plan
from gpu_kernels.layer_cases import (
    FUSED_FAMILIES,
    LAYER_KINDS,
    WORD_BITS,
    all_cases,
    case_seed,
    family_px,
    make_case,
    make_fused_case,
)
from models import golden
from models.numerics import bnn
from tests.helpers import assert_same, mismatch, needs_gxx

CASES = all_cases(CONFIGS)
# The size of the matrix: a change to the generator (a layer kind, a shape, a configuration)
# changes this number with it, so that no loop can lose cases unnoticed
MATRIX_CASES = 1302

BACKENDS = [
    pytest.param("emulation", marks=needs_gxx),
    pytest.param(
        "cupy",
        marks=[
            pytest.mark.gpu,
            pytest.mark.skipif(
                not cuda_available(), reason="the cupy backend needs CuPy and a CUDA device (none here)"
            ),
        ],
    ),
]


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    """The backend the kernels run on: "emulation", or "cupy" where a GPU is present."""
    return request.param


def cases_of(kind: str) -> list[tuple]:
    """The matrix's cases of one layer type (every configuration), in the generator's order."""
    return [c for c in CASES if c[0] == kind]


def case_name(case: tuple) -> str:
    kind, config, bits, variant, pad, batch = case
    return f"{kind} {config} w{bits} {variant} pad{pad} n{batch}"


def failures_of(checks) -> list[str]:
    """Runs every (name, check) pair, a check being a callable that returns None or what
    differs, and returns the failures, each prefixed with its name. An exception is a failure
    of its case, so one bad case never hides the others."""
    failed = []
    for name, check in checks:
        try:
            diff = check()
        except Exception as exc:  # reported with its case, like a mismatch
            first_line = (str(exc).splitlines() or [""])[0][:300]
            diff = f"{type(exc).__name__}: {first_line}"
        if diff is not None:
            failed.append(f"{name}: {diff}")
    return failed


def report(what: str, total: int, failed: list[str]) -> str:
    return f"{len(failed)} of {total} {what} differ from the golden model:\n  " + "\n  ".join(failed)


def matrix_check(backend: str, case: tuple):
    """One launch of the matrix compared with the golden model: None, or what differs."""
    kind, config, bits, variant, pad, batch = case
    seed = case_seed(kind, bits, variant, pad, batch)

    def check():
        net, x = make_case(kind, bits, variant, pad, batch, seed)
        ref = golden.run(net, x).outputs[0]
        res = run_network(net, x, [config], backend=backend, word_bits=bits)
        if res.backend != backend or res.layers[0].impl != config:
            return f"ran on {res.backend} as {res.layers[0].impl}"
        return mismatch(res.outputs[0], ref)

    return f"{case_name(case)} seed {seed}", check


@pytest.mark.parametrize("kind", LAYER_KINDS)
def test_kernel_equals_golden(backend, kind):
    """Every case of one layer type, in every configuration: the kernel's output equals
    golden.run."""
    cases = cases_of(kind)
    assert {c[1] for c in cases} == set(CONFIGS), f"{kind}: not every configuration has cases"
    checks = [matrix_check(backend, c) for c in cases]
    failed = failures_of(checks)
    assert len(checks) == len(cases)
    assert not failed, report(f"{backend} cases of {kind}", len(cases), failed)


STEP_KINDS = ("step_spatial", "step_flat")
# threads per block for the warp step kernel: whole warps, a partial last warp (48 = 32 + 16,
# 100 = 3 x 32 + 4) and fewer than a warp (the plan's own smaller blocks also occur)
STEP_WARP_THREADS = (256, 100, 48, 20)


def step_warp_check(backend, case: tuple, threads: int):
    kind, config, bits, variant, pad, batch = case
    seed = case_seed(kind, bits, variant, pad, batch)

    def check():
        net, x = make_case(kind, bits, variant, pad, batch, seed)
        ref = golden.run(net, x).outputs[0]
        runner = Runner(net, [config], backend, bits, threads=threads, step_kernel="warp")
        assert runner.ops[0].kernel == f"step_pack_warp/w{bits}"
        return mismatch(runner.run(x).outputs[0], ref)

    return f"{case_name(case)} seed {seed} threads {threads}", check


def test_step_warp_kernel_equals_golden(backend):
    """step_pack_warp (a warp per packed word, __ballot_sync) on every case of both step layer
    types, every configuration, with blocks of whole and partial warps."""
    cases = [c for kind in STEP_KINDS for c in cases_of(kind)]
    checks = [step_warp_check(backend, c, t) for c in cases for t in STEP_WARP_THREADS]
    failed = failures_of(checks)
    assert not failed, report(f"{backend} cases of step_pack_warp", len(checks), failed)


def test_the_matrix_loops_every_case_once():
    """The tests' loops (one per layer type) cover the generator's cases exactly once each, and
    the generator still makes the whole matrix."""
    looped = [c for kind in LAYER_KINDS for c in cases_of(kind)]
    assert len(CASES) == MATRIX_CASES, f"all_cases makes {len(CASES)} cases, not {MATRIX_CASES}"
    assert len(looped) == len(CASES) == len(set(CASES))
    assert sorted(looped) == sorted(CASES)


# what the garbage-padding test feeds: the binary conv and dense layers alone, and each fused
# kernel family whose input is packed words (its first layer's case kind, with pool or not; the
# register-blocked ones too)
PADDING_KINDS = (
    "bin_conv",
    "dense",
    "bin_conv_step_pack",
    "bin_conv_step_pool_pack",
    "bin_dense_step_pack",
    "bin_conv_step_pack_px2",
    "bin_conv_step_pack_px4",
    "bin_conv_step_pool_pack_px2",
)


def test_padding_bits_never_count(backend):
    """Input words whose padding bits are set (as HEP-BNN's xnor produced) still give the golden
    result: the kernels mask the last word. Binary conv and dense, and the fused kernels that
    read packed words (BinConv2d + Step, with MaxPool2d, BinDense + Step), both word sizes,
    every configuration."""

    def padding_check(config, kind, bits):
        seed = case_seed("garbage padding", kind, bits)

        def check():
            if kind in FUSED_FAMILIES:  # the fused kernel's net, its layers as one kernel
                (first_kind, *_), pool = FUSED_FAMILIES[kind]
                # a blocked kernel's rows of 7 pixels end in a tail (PX 2 and 4, pooled 3)
                width = 7 if family_px(kind) > 1 else 6
                net, x = make_fused_case(first_kind, bits, "partial", 1, 3, seed, pool, width)
                last = len(net.layers) - 1
                runner = Runner(
                    net,
                    config,
                    backend=backend,
                    word_bits=bits,
                    fuse=[(0, last)],
                    fused_px={0: family_px(kind)},
                )
                op = runner.fused[0]
                assert op.family == kind, op.kernel
            else:
                net, x = make_case(kind, bits, "partial", 1, 3, seed)
                runner = Runner(net, config, backend=backend, word_bits=bits)
                op = runner.ops[0]
            words = op.fin.from_golden(x)
            c = op.fin.channels
            assert c % bits, "the case needs a partial last word"
            garbage = ~np.array(0, dtype=words.dtype) << np.array(c % bits, dtype=words.dtype)
            words[..., -1] |= garbage  # every bit past channel c set
            out = runner.run_op_gpu(op, runner.gpu.upload(words), config)
            got = op.fout.to_golden(runner.gpu.download(out), net.shapes[-1][1])
            return mismatch(got, golden.run(net, x).outputs[-1])

        return f"{kind} {config} w{bits} garbage padding seed {seed}", check

    checks = [padding_check(*key) for key in itertools.product(CONFIGS, PADDING_KINDS, WORD_BITS)]
    failed = failures_of(checks)
    assert not failed, report(f"{backend} garbage-padding cases", len(checks), failed)


def test_cases_are_not_degenerate():
    """The inputs make outputs that vary (both signs for binary outputs), so equality means
    something."""
    flat = []
    for kind in LAYER_KINDS:
        net, x = make_case(kind, 32, "partial", 1, 5, case_seed(kind, "degenerate"))
        out = golden.run(net, x).outputs[0]
        if out.dtype == np.int8:
            if not 0.05 < (out == 1).mean() < 0.95:
                flat.append(f"{kind}: {(out == 1).mean():.2f} of the outputs are +1")
        elif len(np.unique(out)) <= 10:
            flat.append(f"{kind}: {len(np.unique(out))} distinct outputs")
    assert not flat, "degenerate cases:\n" + "\n".join(flat)


@needs_gxx
def test_argmax_kernel_first_max():
    """Final scores -> class: the first index of the maximum, with many ties; every
    configuration."""
    from gpu_kernels.layer_ops import ArgmaxOp, Fmt

    gpu = get_gpu("emulation")
    op = ArgmaxOp(0, Fmt("int", (10,), 32))

    def argmax_check(config):
        seed = case_seed("argmax", config)

        def check():
            scores = np.random.default_rng(seed).integers(-2, 3, size=(9, 10)).astype(np.int32)
            out = gpu.empty((9, 1), np.int32)
            gpu.launch(op.kernel, plan(op.work(9), config), op.kernel_args(gpu.upload(scores), out, {}))
            return mismatch(out.array[:, 0], bnn.argmax(scores).astype(out.array.dtype))

        return f"argmax {config} seed {seed}", check

    failed = failures_of([argmax_check(config) for config in CONFIGS])
    assert not failed, report("argmax configurations", len(CONFIGS), failed)


@needs_gxx
def test_dense_with_more_than_1024_neurons():
    """HEP-BNN gave such a layer an illegal block size; here threads stride over neurons, in
    every configuration."""
    from models import ir

    def wide_dense_check(config):
        seed = case_seed("wide dense", config)

        def check():
            rng = np.random.default_rng(seed)
            w = np.where(rng.random((1100, 40)) < 0.5, -1, 1)
            net = ir.Network((40,), "binary", [ir.BinDense(weight=w, bias=rng.integers(-3, 4, 1100))])
            x = np.where(rng.random((3, 40)) < 0.5, -1, 1).astype(np.int8)
            res = run_network(net, x, config, backend="emulation")
            if res.layers[0].launch["block"][0] > 1024:
                return f"block {res.layers[0].launch['block']}"
            return mismatch(res.outputs[0], golden.run(net, x).outputs[0])

        return f"dense 1100 {config} seed {seed}", check

    failed = failures_of([wide_dense_check(config) for config in CONFIGS])
    assert not failed, report("wide dense configurations", len(CONFIGS), failed)


@needs_gxx
def test_emulation_catches_writes_outside_a_buffer():
    """A launch whose work exceeds the output buffer trips the emulation's guard zones."""
    gpu = get_gpu("emulation")
    x = gpu.upload(np.zeros((4, 3), np.uint32))
    w = gpu.upload(np.zeros((3, 8), np.uint32))
    bias = gpu.upload(np.zeros(8, np.int32))
    out = gpu.empty((4, 8), np.int32)
    bad = plan(Work(6, 1, 8), "X")  # 6 images into a buffer of 4
    with pytest.raises(GpuKernelError, match="wrote outside"):
        gpu.launch("bin_dense/w32", bad, [x, w, bias, out, 70])


@needs_gxx
def test_unwritten_outputs_show_up():
    """Fresh emulated buffers hold a sentinel, so an output no thread writes cannot pass as 0."""
    buf = EmuBuffer((5,), np.int32)
    assert (buf.array != 0).all()


@needs_gxx
def test_runner_reuses_prepared_weights_across_runs():
    net, x = make_case("bin_conv", 64, "partial", 1, 2, 11)
    runner = Runner(net, "XZ", backend="emulation", word_bits=64)
    a = runner.run(x).outputs[0]
    b = runner.run(x[::-1]).outputs[0]
    assert_same(a, b[::-1], "second run")
    assert_same(a, golden.run(net, x).outputs[0], "first run")


@needs_gxx
def test_input_reorder_kernel():
    """NCHW -> NHWC of the network input on the device equals the host-side layout (uint8 and
    int inputs, every configuration)."""
    from gpu_kernels.layer_ops import Fmt, ReorderOp

    gpu = get_gpu("emulation")

    def reorder_check(config, kind):
        def check():
            rng = np.random.default_rng(case_seed("reorder", config, kind))
            fmt = Fmt(kind, (5, 3, 7), 32)
            x = rng.integers(0, 256 if kind == "uint8" else 10**6, size=(4, 5, 3, 7)).astype(fmt.dtype)
            op = ReorderOp(fmt)
            out = gpu.empty(fmt.host_shape(4), fmt.dtype)
            gpu.launch(op.kernel, plan(op.work(4), config), op.kernel_args(gpu.upload(x), out, {}))
            return mismatch(out.array, fmt.from_golden(x))

        return f"reorder {kind} {config}", check

    keys = list(itertools.product(CONFIGS, ("uint8", "int")))
    failed = failures_of([reorder_check(*key) for key in keys])
    assert not failed, report("input reorder cases", len(keys), failed)
