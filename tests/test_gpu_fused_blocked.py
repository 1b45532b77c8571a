"""The register-blocked fused binary conv kernels (bin_conv_step_pack_px<W, PX>, PX = 2 and 4,
and bin_conv_step_pool_pack_px<W, 2>, cuda/bin_conv.cu: PX output pixels of a row per warp)
against the golden models: every bin_conv case of the exactness matrix (32/64-bit words, 2B,
B + 7 and 5 input channels, 37 filters, padding 0/1, batches 1, 2, 5, every configuration) with
a Step (and a MaxPool2d) after the conv, on 5 x 8, 5 x 9 and 5 x 6 images (by batch:
layer_cases.BLOCKED_WIDTHS), so that output rows end in a tail of fewer than PX pixels in some
cases and not in others; in the emulation visited in order (every case) and reversed and twice
shuffled (a third each, so every case once), blocks of whole, partial and sub-warp thread
counts, shared-memory checks on; garbage padding bits (tests/test_gpu_kernels.py); weights
beyond the shared tile (global path); both benchmark shapes with every run fused and blocked;
the kernels' and fused_px's choices and refusals. The source with the tail handling removed,
or with a pixel's tap taking a wrong weight or activation word from the registers, or without
its barrier, is reported. Seeds are fixed (layer_cases.fused_case_seed) and printed with each
failing case; the orders' seeds are printed."""

import numpy as np
import pytest

from gpu_kernels import CONFIGS, Runner, run_network
from gpu_kernels.build import kernel_emulation_library
from gpu_kernels.devices import EmulatedGpu, EmuLibrary
from gpu_kernels.errors import GpuKernelError
from gpu_kernels.kernel_table import BLOCKED_PX, CUDA_DIR, KERNELS
from gpu_kernels.layer_cases import (
    BLOCKED_WIDTHS,
    FUSED_FAMILIES,
    FUSED_THREADS,
    check_fused_case,
    family_px,
    fused_case_label,
    fused_case_width,
    fused_family_cases,
)
from models import golden, ir
from models.random_networks import cifar10_bnn, fashion_bnn, random_images
from tests.helpers import assert_same, needs_gxx
from tests.test_gpu_fused import barrier_removed_fault, fused_check
from tests.test_gpu_fused_bin import wide_bin_conv
from tests.test_gpu_kernels import failures_of, report

pytestmark = needs_gxx

FAMILIES = ("bin_conv_step_pack_px2", "bin_conv_step_pack_px4", "bin_conv_step_pool_pack_px2")
CASES = [(family, c) for family in FAMILIES for c in fused_family_cases(family, CONFIGS)]
BLOCKED_CASES = 3 * 252  # three kernel families x the 252 bin_conv cases
ORDERS = ["in-order", "reversed", "shuffled:2026", "shuffled:79"]


def out_width(family: str, case: tuple) -> int:
    """The output width of a case: the conv's (width - 2 + 2 pad), halved when pooled."""
    wo = fused_case_width(family, case) - 2 + 2 * case[4]
    return wo // 2 if FUSED_FAMILIES[family][1] else wo


def has_tail(family: str, case: tuple) -> bool:
    """The case's output rows end in fewer than PX pixels."""
    return out_width(family, case) % family_px(family) != 0


def test_the_cases_cover_the_blocked_kernels_and_row_tails():
    """Every blocked kernel the table has, on the whole bin_conv matrix; for every family,
    padding and word size both rows with a tail and rows without one."""
    have = {key.split("/")[0] for key in KERNELS if "_px" in key}
    assert have == {f"{f}_px{px}" for f, pxs in BLOCKED_PX.items() for px in pxs} == set(FAMILIES)
    assert set(FAMILIES) <= set(FUSED_FAMILIES) and len(CASES) == BLOCKED_CASES
    assert {c[1] for _, c in CASES} == set(CONFIGS) and {c[5] for _, c in CASES} == set(BLOCKED_WIDTHS)
    for family in FAMILIES:
        for pad in (0, 1):
            for bits in (32, 64):
                tails = {has_tail(f, c) for f, c in CASES if f == family and c[4] == pad and c[2] == bits}
                assert tails == {True, False}, (family, pad, bits)


@pytest.mark.parametrize(
    "order, every", [("in-order", 1), ("reversed", 3), ("shuffled:2026", 3), ("shuffled:79", 3)]
)
def test_blocked_kernels_equal_golden(order, every):
    """Every case in order, and a third of them (from different offsets, so each case once)
    reversed and in each shuffled order (blocks, warps and lanes reversed or shuffled); each
    case with one of the thread counts in turn (shifted per order): the result never depends on
    the order, and the shared-memory checks report nothing."""
    kind, _, seed = order.partition(":")
    print(f"order {order}")
    gpu = EmulatedGpu(kind, int(seed or 0))
    assert gpu._emu.checks_shared_memory
    shift = ORDERS.index(order)
    cases = CASES[max(0, shift - 1) :: every]
    checks = [
        fused_check(gpu, case, FUSED_THREADS[(i + shift) % len(FUSED_THREADS)], family)
        for i, (family, case) in enumerate(cases)
    ]
    failed = failures_of(checks)
    assert not failed, report(f"register-blocked cases {order}", len(checks), failed)


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("family", FAMILIES)
def test_blocked_weights_beyond_the_shared_tile(family, bits):
    """70 input channels, 310 filters on a 5 x 7 image (rows of 7 pixels, 3 when pooled: a
    tail at PX 2 and 4): the weights exceed the shared tile and are read from global memory,
    each word a lane loads serving the group's pixels; still golden (shuffled)."""
    seed = 61 + bits + family_px(family)
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    c, f = 70, 310
    conv, x, sums = wide_bin_conv(rng, c, f, 5, 7)
    pool = FUSED_FAMILIES[family][1]
    flat = np.sort(sums.transpose(1, 0, 2, 3).reshape(f, -1), axis=1)
    thr = flat[:, 50 if pool else 35].astype(np.int64)  # sums equal to a threshold occur
    step = ir.Step(threshold=thr, direction=np.ones(f, np.int8))
    net = ir.Network((c, 5, 7), "binary", [conv, step] + ([ir.MaxPool2d()] if pool else []))
    last = len(net.layers) - 1
    runner = Runner(
        net, "XY", EmulatedGpu("shuffled", seed), bits, fuse=[(0, last)], fused_px={0: family_px(family)}
    )
    assert runner.fused[0].family == family and not runner.fused[0].weights_in_shared
    res = runner.run(x)
    assert_same(res.outputs[last], golden.run(net, x).outputs[last], family)


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("family", FAMILIES)
def test_blocked_rows_narrower_than_a_group(family, bits):
    """Images 1 to 5 pixels wide (pooled: 2 to 7), padding 0 and 1: output rows of 1 to PX - 1
    pixels, where a group's first pixel is also its last in the row and frame columns are
    missing at both ends of the window; still golden (shuffled, a sub-warp block)."""
    px, pool = family_px(family), FUSED_FAMILIES[family][1]
    widths = range(2, 8) if pool else range(1, 6)
    for pad in (0, 1):
        for w in widths:
            wo = w - 2 + 2 * pad
            if (wo // 2 if pool else wo) < 1:
                continue
            seed = 900 + 10 * w + pad + bits + px
            rng = np.random.default_rng(seed)
            c, f, h = 37, 11, 4
            conv, x, sums = wide_bin_conv(rng, c, f, h, w)
            conv.padding = pad
            sums = golden.run(ir.Network((c, h, w), "binary", [conv]), x).outputs[0]
            thr = np.median(sums.transpose(1, 0, 2, 3).reshape(f, -1), axis=1).astype(np.int64)
            step = ir.Step(threshold=thr, direction=np.where(rng.random(f) < 0.5, -1, 1).astype(np.int8))
            net = ir.Network((c, h, w), "binary", [conv, step] + ([ir.MaxPool2d()] if pool else []))
            last = len(net.layers) - 1
            gpu = EmulatedGpu("shuffled", seed)
            runner = Runner(net, "XY", gpu, bits, fuse=[(0, last)], fused_px={0: px})
            assert runner.fused[0].family == family
            res = runner.run(x)
            label = f"{family} width {w} padding {pad} seed {seed}"
            assert_same(res.outputs[last], golden.run(net, x).outputs[last], label)


@pytest.mark.parametrize(
    "make, seed, px, blocked",
    [
        (fashion_bnn, 15, 2, {3: 2}),
        (cifar10_bnn, 16, 2, {2: 2, 5: 2, 7: 2, 10: 2, 12: 2}),
        (cifar10_bnn, 17, 4, {5: 4, 10: 4}),  # the pooled runs (2-4, 7-9, 12-14) stop at 2
    ],
    ids=["fashion-px2", "cifar10-px2", "cifar10-px4"],
)
def test_whole_networks_with_every_run_fused_and_blocked(make, seed, px, blocked):
    """fuse="auto" with fused_px=px: every BinConv2d run that has a kernel of px pixels per warp
    takes it, the others (IntConv2d and BinDense runs, pooled runs at 4) stay unblocked; every
    output golden (shuffled, 64-bit words)."""
    print(f"network seed {seed}, images seed {seed + 100}, order shuffled:{seed}")
    net = make(seed)
    x = random_images(seed + 100, 2, net.input_shape)
    runner = Runner(net, "XZ", EmulatedGpu("shuffled", seed), 64, fuse="auto", fused_px=px)
    assert {i: op.px for i, op in runner.fused.items() if op.px > 1} == blocked
    res = runner.run(x)
    ref = golden.run(net, x)
    for i in range(len(ref.outputs)):
        if i not in runner.inside_fused:
            assert_same(res.outputs[i], ref.outputs[i], f"layer {i}")
    assert np.array_equal(res.predictions, ref.predictions)


def test_blocked_ops_work_and_choices():
    """A blocked op's work: p is a group of px pixels of a row, ceil(Wo / px) groups per row,
    the same output format; fused_px as an int, a dict, and one-line refusals."""
    net = fashion_bnn(2)
    runner = Runner(net, "X", "emulation", 32, fuse=[(0, 2), 3], fused_px={3: 4})
    op = runner.fused[3]
    assert op.kernel == "bin_conv_step_pack_px4/w32" and op.px == 4 and op.weights_in_shared
    w = op.work(3)
    assert (w.n, w.p, w.f, w.row) == (3, 14 * 4, 2, 4) and op.fout == runner.ops[4].fout
    pooled = Runner(net, "X", "emulation", 64, fuse="auto", fused_px=2).fused
    assert {i: f.kernel for i, f in pooled.items()} == {
        0: "int_conv_step_pool_pack/u8/w64",  # no blocked kernel: unblocked
        3: "bin_conv_step_pool_pack_px2/w64",
        7: "bin_dense_step_pack/w64",
    }
    assert pooled[3].work(5).p == 7 * 4 and pooled[3].work(5).row == 4  # 7 pooled columns
    # 4 pixels per warp: the pooled run has no such kernel and stays unblocked
    assert Runner(net, "X", "emulation", fuse="auto", fused_px=4).fused[3].px == 1
    assert Runner(net, "X", "emulation", fuse="auto", fused_px=1).fused[3].px == 1
    refused = {
        "{0: 2}": ({0: 2}, r"^layers 0, 1 and 2: cannot fuse: 2 pixels per warp: only a BinConv2d run has"),
        "{3: 4}": ({3: 4}, r"^layers 3, 4 and 5: .*: bin_conv_step_pool_pack takes 1 or 2$"),
        "{3: 3}": ({3: 3}, r"3 pixels per warp: bin_conv_step_pool_pack takes 1 or 2$"),
        "{4: 2}": ({4: 2}, r"^fused_px names layer 4, the first layer of no fused run \(runs: 0-2, 3-5\)$"),
        "'2'": ("2", r"^fused_px '2': use pixels per warp"),
        # pixels per warp that are no whole number, or that no fused kernel has
        "{3: 2.0}": ({3: 2.0}, r"^fused_px \{3: 2\.0\}: pixels per warp must be a whole number"),
        "{3: True}": ({3: True}, r"^fused_px \{3: True\}: pixels per warp must be a whole number"),
        "3": (3, r"^fused_px 3: no fused kernel takes that many pixels per warp \(1, 2, 4\)$"),
        "0": (0, r"^fused_px 0: no fused kernel takes"),
        "8": (8, r"^fused_px 8: no fused kernel takes"),
    }
    for what, (fused_px, match) in refused.items():
        with pytest.raises(GpuKernelError, match=match):
            Runner(net, "X", "emulation", fuse=[(0, 2), (3, 5)], fused_px=fused_px)
        print(f"fused_px={what}: refused")


def test_the_garbage_padding_test_covers_the_blocked_kernels():
    """Input words whose padding bits are set: tests/test_gpu_kernels.py's
    test_padding_bits_never_count feeds them to the blocked kernels too (every configuration,
    both word sizes), which mask the last word of the activations and the weights alike."""
    from tests.test_gpu_kernels import PADDING_KINDS

    assert set(FAMILIES) <= set(PADDING_KINDS)  # test_padding_bits_never_count runs them


def _mutated_gpu(tmp_path, name: str, old: str, new: str, keys: list[str]) -> EmulatedGpu:
    """An in-order EmulatedGpu whose kernels `keys` come from bin_conv.cu with `old` (once in
    the file) replaced by `new`; the other kernels as built."""
    text = (CUDA_DIR / "bin_conv.cu").read_text()
    assert text.count(old) == 1, old
    copy = tmp_path / f"bin_conv_{name}.cu"
    copy.write_text(text.replace(old, new))
    aliases = {key: f"{name}_{i}" for i, key in enumerate(keys)}
    src = tmp_path / f"{name}.cu"
    src.write_text(
        f'#include "common.cuh"\n#include "{copy}"\n'
        + "".join(f"auto& {alias} = {KERNELS[key].expr};\n" for key, alias in aliases.items())
    )
    lib = EmuLibrary(kernel_emulation_library(src, list(aliases.values())))
    gpu = EmulatedGpu("in-order")
    gpu._emu = lib
    gpu._entry = {**gpu._entry, **{key: lib.entry(f"emu_{alias}") for key, alias in aliases.items()}}
    return gpu


def _results(gpu, cases) -> dict:
    """{(family, case): None when golden, else what differs or the error} (blocks of 48 threads:
    a whole and a partial warp)."""
    out = {}
    for family, case in cases:
        try:
            out[(family, case)] = check_fused_case(gpu, family, case, 48)
        except Exception as exc:  # a write past the output buffer, a fault report
            out[(family, case)] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    return out


MUTATION_CASES = [(f, c) for f, c in CASES if c[1] in ("X", "XYZ")]  # two configurations, all else


def test_removing_the_tail_handling_is_reported(tmp_path):
    """Lane 0 storing all PX words of a group, also those past the row's end: every case whose
    rows end in a tail fails (a word stored over the next row's, or past the output buffer at
    the last row), every other case stays golden."""
    old = "if (q < npx) dst[(i64)q * f_total] = word[q];"
    keys = [f"{family}/w{bits}" for family in FAMILIES for bits in (32, 64)]
    gpu = _mutated_gpu(tmp_path, "no_tail", old, "dst[(i64)q * f_total] = word[q];", keys)
    results = _results(gpu, MUTATION_CASES)
    wrong = [
        f"{fused_case_label(f, c, 48)}: {'tail' if has_tail(f, c) else 'no tail'}, {problem or 'golden'}"
        for (f, c), problem in results.items()
        if (problem is None) == has_tail(f, c)
    ]
    print(f"{sum(p is not None for p in results.values())} of {len(results)} cases reported")
    assert not wrong, "\n".join(wrong[:20])


WRONG_REGISTERS = {  # what the mutation does: (text, its replacement)
    "weight": (  # the third tap of a kernel row takes the second's weight word
        "popcount((W)(a[rx + 2] ^ w2))",
        "popcount((W)(a[rx + 2] ^ w1))",
    ),
    "activation": (  # the middle tap reads the left column's activation word
        "popcount((W)(a[rx + 1] ^ w1))",
        "popcount((W)(a[rx] ^ w1))",
    ),
}


@pytest.mark.parametrize("what", list(WRONG_REGISTERS))
def test_a_wrongly_shared_register_is_reported(tmp_path, what):
    """A pixel's tap taking the wrong word from the registers the group's pixels share (a
    weight word, an activation word): every case differs from golden."""
    old, new = WRONG_REGISTERS[what]
    print(f"{what}: {old} -> {new}")
    keys = [f"{family}/w{bits}" for family in FAMILIES for bits in (32, 64)]
    gpu = _mutated_gpu(tmp_path, f"wrong_{what}", old, new, keys)
    results = _results(gpu, MUTATION_CASES)
    golden_still = [fused_case_label(f, c, 48) for (f, c), problem in results.items() if problem is None]
    assert not golden_still, f"{len(golden_still)} of {len(results)} cases golden: {golden_still[:5]}"


def test_removing_the_barrier_is_reported_for_blocked_kernels(tmp_path):
    """The blocked kernels share the unblocked ones' weight tile and barrier: deleted, the
    shared-memory checks stop the blocked launch with one line naming it and its tile."""
    barrier_removed_fault(
        tmp_path,
        "in-order",
        "bin_conv.cu",
        "    __syncthreads();\n    const BinConvSum<W> sum",
        "bin_conv_step_pack_px<unsigned int, 4>",
        "bin_conv_step_pack_px4/w32",
        [3],
        fused_px=4,
    )


def test_run_network_takes_fused_px():
    """run_network passes fused_px on; the result names the blocked kernel."""
    net = fashion_bnn(1)
    x = random_images(2, 1, net.input_shape)
    print("seeds: network 1, images 2")
    res = run_network(net, x, "X", backend="emulation", fuse=[3], fused_px={3: 2})
    assert res.fused_gpu == [{"first": 3, "last": 4, "kernel": "bin_conv_step_pack_px2/w32"}]
    assert_same(res.outputs[4], golden.run(net, x).outputs[4], "step")


def test_counted_loads_and_modelled_trips():
    """The counts the mapper's model and docs/gpu.md use, on the Fashion shape's binary layer
    (14 x 14, padding 1, 64 -> 64 channels, 32-bit words: 2 input words), per image and output
    channel: the unblocked kernel loads a weight and an activation word per in-frame tap and
    word (40^2 taps x 2 = 3200 each); in 40 in-frame (conv row, kernel row) pairs, a group of
    PX = 4 pixels loads 3 x 2 weight words (4 groups a row: 960) and its in-frame activation
    columns (5 + 6 + 6 + 3 = 20 a row, x 2: 1600); PX = 2: 7 groups (1680) and 3 + 5 x 4 + 3 =
    26 columns (2080); the pooled kernel at PX = 2 computes RX = 4 conv pixels of a row as PX 4
    does. Trips per output: the unblocked 9 x 2; blocked 3 x 2 trips of 68 (RX 2) or 106 (RX 4)
    PTX instructions against the unblocked trip's 17."""
    from gpu_kernels.gpu_model import fused_conv_loads, trips_per_output
    from gpu_kernels.layer_ops import fused_op, prepare

    ops = prepare(fashion_bnn(0), 32)
    per = {}
    for last, px in ((4, 1), (4, 2), (4, 4), (5, 1), (5, 2)):
        op = fused_op(ops, 3, last, px)
        c = fused_conv_loads(op, 1)
        per[op.kernel] = (c["weight"] // 64, c["activation"] // 64, trips_per_output(op))
    assert per == {
        "bin_conv_step_pack/w32": (3200, 3200, 18),
        "bin_conv_step_pack_px2/w32": (1680, 2080, 24),  # ceil(6 x 68 / 17)
        "bin_conv_step_pack_px4/w32": (960, 1600, 38),  # ceil(6 x 106 / 17)
        "bin_conv_step_pool_pack/w32": (3200, 3200, 72),
        "bin_conv_step_pool_pack_px2/w32": (960, 1600, 75),  # two conv rows: ceil(12 x 106 / 17)
    }


@pytest.mark.parametrize(
    "make, bits, runs, px",
    [
        (fashion_bnn, 32, [[0, 2], [3, 5], [7, 8]], {"3-5": 2}),
        (fashion_bnn, 64, [[0, 2], [3, 4], [7, 8]], {"3-4": 4}),  # and the pool as its own kernel
        (cifar10_bnn, 32, [[0, 1], [2, 4], [5, 6], [7, 9], [10, 11], [12, 14], [16, 17]], None),
        (cifar10_bnn, 64, [[0, 1], [2, 4], [5, 6], [7, 9], [10, 11], [12, 14], [16, 17]], None),
    ],
)
def test_what_the_modelled_profile_picks(make, bits, runs, px):
    """The modelled profile with the fused kernels (docs/gpu.md): the DP takes the blocked
    kernels wherever a BinConv2d run has one (CIFAR-10: 4 pixels per warp on the unpooled
    runs, 2 on the pooled ones), and costs less than with the unblocked kernels alone."""
    from gpu_kernels.gpu_model import ModelledProfile
    from gpu_kernels.mapper import dp_mapping, map_network
    from gpu_kernels.profiling import Profile

    net = make(0)
    sizes = [256, 1024] if make is fashion_bnn else [64, 256]
    m = map_network(net, sizes, ModelledProfile(bits, fused=True), n_images=10_000)
    cifar_px = {"2-4": 2, "5-6": 4, "7-9": 2, "10-11": 4, "12-14": 2}
    assert m.dp.fused_gpu == runs and m.dp.fused_px == (cifar_px if px is None else px)
    unblocked = Profile.from_json(m.profile.to_json())
    unblocked.meta["fused_gpu"] = {k: v for k, v in unblocked.meta["fused_gpu"].items() if "/" not in k}
    assert m.dp.total_s < dp_mapping(unblocked, 10_000).total_s
