"""The lowering at the ends of a layer's range (`make mutants` found no test with a
threshold beyond a layer's reachable range, near its ends, or a bias near the int32 limits).

A step's threshold folds into the row bias, clipped to one past the layer's reachable range
(docs/fpga_bnn.md): networks that differ only in how far beyond the range a threshold lies
compute the same function, and lower to the same op. The reachable ends are measured on the
golden model (pre-activations at inputs that reach them), results are compared with the
golden model through the compiler and the interpreter on non-square arrays.
"""

import numpy as np
import pytest

from fpga.arch import ArrayConfig
from fpga.compiler import compile_network
from fpga.execute import interpret
from fpga.lowering import (
    CODE_BIT,
    CODE_INT,
    CODE_PM1,
    CODE_UINT8,
    ArrayOp,
    LoweringError,
    decode_output,
    encode_input,
    lower,
)
from models import golden, ir
from models.checks import INT32_MAX, INT32_MIN
from models.numerics import sac
from models.numerics.sac import OutputMode
from models.random_networks import build_bnn, random_combined

SEED = 8080
FAR = 1 << 40


def pm1(rng, *shape):
    return np.where(rng.random(shape) < 0.5, -1, 1).astype(np.int8)


def array_ops(net):
    return [op for op in lower(net) if isinstance(op, ArrayOp)]


def run_equal(net, x, array):
    """Compile for `array`, run on the interpreter, compare every output with golden."""
    prog = compile_network(net, ArrayConfig.parse(array))
    ref, res = golden.run(net, x), interpret(prog, x)
    for i, out in res.outputs.items():
        assert np.array_equal(out, ref.outputs[i]), i
    return ref


# Each case: a network builder taking the step of the layer under test, the index of that
# layer, its input code, inputs at the low and high end of every row, and an array.
def uint8_case(rng):
    """IntConv2d on 3x3 images without padding: one output pixel; pixel 0 or 255 by sign."""
    w = pm1(rng, 4, 2, 3, 3)
    w[0] = 1  # rows with 18, ~9 and 0 positive weights
    w[3] = -1
    conv = ir.IntConv2d(weight=w, bias=np.array([3, -7, 0, 11]), padding=0)
    hi = np.where(w > 0, 255, 0).astype(np.uint8)  # [F, C, 3, 3]: row f's top
    return (
        lambda step: ir.Network((2, 3, 3), "uint8", [conv] + [step] * (step is not None), name="uint8_step"),
        0,
        CODE_UINT8,
        255 - hi,
        hi,
        "3x5",
    )


def pm1_case(rng):
    """BinDense on the network input: a = w reaches the top of row w, a = -w the bottom."""
    w = pm1(rng, 5, 9)
    w[0], w[4] = 1, -1
    fc = ir.BinDense(weight=w, bias=np.array([2, -5, 0, 1, 9]))
    return (
        lambda step: ir.Network((9,), "binary", [fc] + [step] * (step is not None), name="pm1_step"),
        0,
        CODE_PM1,
        -w,
        w,
        "5x2",
    )


def bit_case(rng):
    """BinDense reading the bits a BinDense + Step left in the data buffer (weights 2w). The
    first step's thresholds are beyond its range, so its bits are a constant pattern, here
    the sign pattern of one row of the layer under test (all its rows are equal: 5 of 7
    weights +1), or its negation."""
    k, f = 7, 4
    w1 = pm1(rng, k, 6)
    row = np.array([1, 1, -1, 1, 1, -1, 1], np.int8)
    fc2 = ir.BinDense(weight=np.tile(row, (f, 1)), bias=np.array([0, 4, -3, 8]))

    def net(step, pattern=None):
        on = rng.integers(-2, 3, k) if pattern is None else np.where(pattern > 0, -FAR, FAR)
        layers = [
            ir.BinDense(weight=w1, bias=np.zeros(k, int)),
            ir.Step(threshold=on, direction=np.ones(k, int)),
            fc2,
        ]
        return ir.Network((6,), "binary", layers + [step] * (step is not None), name="bit_step")

    return net, 2, CODE_BIT, -row, row, "2x3"


CASES = {"uint8": uint8_case, "pm1": pm1_case, "bit": bit_case}


def reachable(case, rng):
    """(lo, hi) of every row of the layer under test, by the golden model at inputs that
    reach them."""
    build, li, code, low, high, _ = case
    ends = []
    for x in (low, high):
        if code == CODE_BIT:  # the inputs are the first step's constant bits
            net = build(None, x)
            ends.append(golden.run(net, pm1(rng, 1, 6)).outputs[li][0])
        else:
            out = golden.run(build(None), x).outputs[li]
            ends.append(out.reshape(len(x), -1).diagonal())
    return ends[0].astype(np.int64), ends[1].astype(np.int64)


@pytest.mark.parametrize("code", list(CASES))
def test_thresholds_beyond_the_range_fold_like_the_first_unreachable_one(code):
    seed = SEED + list(CASES).index(code)
    print("seed", seed)
    rng = np.random.default_rng(seed)
    case = CASES[code](rng)
    build, li, in_code, low, high, array = case
    lo, hi = reachable(case, rng)
    assert (lo < hi).all()
    f = len(lo)
    direction = np.resize([1, -1, -1, 1, 1], f)
    # far above the top and far below the bottom, by more than int32 reaches, alternately
    above = np.resize([True, False], f)
    far = np.where(above, np.resize([FAR, INT32_MAX + 9], f), np.resize([-FAR, INT32_MIN - 9], f))
    edge = np.where(above, hi + 1, lo - 1)
    nets = {
        name: build(ir.Step(threshold=t, direction=direction)) for name, t in (("far", far), ("edge", edge))
    }
    ops = {name: next(op for op in array_ops(net) if op.first == li) for name, net in nets.items()}
    assert ops["far"].in_code == in_code
    assert np.array_equal(ops["far"].bias, ops["edge"].bias)
    assert np.array_equal(ops["far"].weights.packed, ops["edge"].weights.packed)
    # and on the array both give the golden output, constant per channel, at both ends too
    if code == "bit":
        x = pm1(rng, 12, 6)
    else:
        rand = pm1(rng, *low.shape) if code == "pm1" else rng.integers(0, 256, low.shape, np.uint8)
        x = np.concatenate([low, high, rand])
    for net in nets.values():
        ref = run_equal(net, x, array)
        assert (ref.outputs[li + 1] == ref.outputs[li + 1][:1]).all()


@pytest.mark.parametrize("code", list(CASES))
def test_thresholds_just_inside_the_range(code):
    """Thresholds one and two inside either end, and at the ends, with inputs at and next to
    the ends: every comparison near the ends is exact on the array."""
    seed = SEED + 10 + list(CASES).index(code)
    print("seed", seed)
    rng = np.random.default_rng(seed)
    case = CASES[code](rng)
    build, li, in_code, low, high, array = case
    lo, hi = reachable(case, rng)
    f = len(lo)
    inside = np.resize([0, 1, 2], f)
    t = np.where(np.resize([True, False], f), hi - inside, lo + inside)
    for direction in (np.resize([1, -1], f), np.resize([-1, 1], f)):
        net = build(ir.Step(threshold=t, direction=direction))
        if code == "uint8":
            near = [low, high]
            for d in (1, 2):  # d above the bottom and d below the top: one pixel moved d
                for end in (low, high):  # towards the middle of 0..255
                    a = end.reshape(len(end), -1).copy()
                    a[:, 4] = np.where(a[:, 4] == 0, d, 255 - d)
                    near.append(a.reshape(end.shape))
            x = np.concatenate(near)
        elif code == "pm1":
            flips = [low, high]
            for j in range(3):  # one, two or three inputs flipped from either end
                a, b = low.copy(), high.copy()
                a[:, : j + 1] *= -1
                b[:, : j + 1] *= -1
                flips += [a, b]
            x = np.concatenate(flips)
        else:
            x = pm1(rng, 40, 6)
        run_equal(net, x, array)


def test_binary_dense_after_binary_dense_with_steps():
    """The first step's bits feed the second dense layer in place, with weights 2w and a step
    of either direction; thresholds spread over the whole range."""
    rng = np.random.default_rng(SEED + 20)
    print("seed", SEED + 20)
    k, h, f = 8, 9, 5
    layers = [
        ir.BinDense(weight=pm1(rng, h, k), bias=rng.integers(-3, 4, h)),
        ir.Step(threshold=rng.integers(-4, 5, h), direction=pm1(rng, h)),
        ir.BinDense(weight=pm1(rng, f, h), bias=rng.integers(-3, 4, f)),
        ir.Step(threshold=rng.integers(-9, 10, f), direction=np.array([1, -1, 1, -1, -1])),
        ir.BinDense(weight=pm1(rng, 3, f), bias=rng.integers(-3, 4, 3)),
    ]
    net = ir.Network((k,), "binary", layers, name="three_dense")
    ops = array_ops(net)
    assert [op.in_code for op in ops] == [CODE_PM1, CODE_BIT, CODE_BIT]
    assert [op.in_place for op in ops] == [False, True, True]
    run_equal(net, pm1(rng, 64, k), "4x3")


def folded_bias_net(bias, sign, k=6):
    """A raw BinDense on the network input with all weights `sign`: its folded bias is
    bias - sign * k (the +-1 inputs are stored as 0 and 2)."""
    fc = ir.BinDense(weight=np.full((2, k), sign, np.int8), bias=np.array([bias, 0]), name="fc")
    return ir.Network((k,), "binary", [fc], name="limits")


@pytest.mark.parametrize("sign", [-1, 1])
def test_folded_bias_at_the_int32_limits(sign):
    """A folded bias of exactly INT32_MAX (weights -1) or INT32_MIN (weights +1) is kept and
    gives the golden output; one further is refused, naming the layer."""
    k = 6
    limit = INT32_MAX if sign < 0 else INT32_MIN
    net = folded_bias_net(limit + sign * k, sign)
    (op,) = array_ops(net)
    assert op.bias.dtype == np.int32
    rng = np.random.default_rng(SEED + 30 + sign)
    print("seed", SEED + 30 + sign)
    x = np.concatenate([np.full((1, k), s, np.int8) for s in (-1, 1)] + [pm1(rng, 6, k)])
    run_equal(net, x, "3x2")
    with pytest.raises(LoweringError) as err:
        lower(folded_bias_net(limit + sign * k - sign, sign))
    assert str(err.value) == "layer 0 (BinDense 'fc'): folded bias does not fit int32"


def test_a_raw_conv_followed_by_a_host_layer():
    """No step after the convolution (pooling of the raw integers follows): raw mode."""
    rng = np.random.default_rng(SEED + 40)
    print("seed", SEED + 40)
    conv = ir.BinConv2d(weight=pm1(rng, 3, 2, 3, 3), bias=rng.integers(-3, 4, 3), padding=1)
    net = ir.Network((2, 4, 6), "binary", [conv, ir.MaxPool2d(), ir.Flatten()], name="raw_pool")
    (op,) = array_ops(net)
    assert op.mode == OutputMode.RAW and op.out_code == CODE_INT and op.last == 0
    run_equal(net, pm1(rng, 3, 2, 4, 6), "2x5")


def test_lowering_refusals():
    rng = np.random.default_rng(SEED + 50)
    conv = ir.BinConv2d(weight=pm1(rng, 3, 2, 3, 3), bias=np.zeros(3, int), padding=1)
    with pytest.raises(LoweringError) as err:
        lower(ir.Network((2, 4, 4), "binary", [conv, ir.PixelSum()]))
    assert str(err.value) == "layer 1 (PixelSum) needs a raw PointwiseConv right before it"
    with pytest.raises(LoweringError) as err:
        lower(ir.Network((2, 4, 4), "uint8", [ir.MaxPool2d(), ir.Flatten()], name="host_only"))
    assert str(err.value) == "host_only has no layer the SAC array can run"


def test_encoding_checks_and_types():
    rng = np.random.default_rng(SEED + 60)
    pw = ir.PointwiseConv(weights=random_combined(rng, 4, 3, 1), bias=np.zeros(4, int), mode=OutputMode.RAW)
    net = ir.Network((3, 4, 4), "uint8", [ir.MaxPool2d(), ir.MaxPool2d(), pw])
    (op,) = array_ops(net)
    assert op.first == 2 and op.in_code == CODE_UINT8 and not op.in_place
    ok = np.full((1, 3, 1, 1), 255, np.int64)
    data = encode_input(op, ok)
    assert data.dtype == np.uint8 and data.tolist() == [[[[255]], [[255]], [[255]]]]
    for bad in (-1, 256):
        x = ok.copy()
        x[0, 1, 0, 0] = bad
        with pytest.raises(LoweringError) as err:
            encode_input(op, x)
        assert str(err.value) == "input of layer 2 has values outside 0..255"
    raw = decode_output(op, np.array([[[[-5]], [[7]], [[0]], [[2]]]], np.int64), (4, 1, 1))
    assert raw.dtype == np.int32 and raw.ravel().tolist() == [-5, 7, 0, 2]
    relu = ArrayOp(
        first=0,
        last=0,
        weights=op.weights,
        bias=op.bias,
        mode=OutputMode.RELU_QUANT,
        in_code=CODE_UINT8,
        out_code=CODE_UINT8,
        height=1,
        width=1,
        im2col_pad=None,
    )
    out = decode_output(relu, np.array([[[[200]], [[3]], [[0]], [[255]]]], np.int64), (4, 1, 1))
    assert out.dtype == np.uint8 and out.ravel().tolist() == [200, 3, 0, 255]
    bits = ArrayOp(
        first=0,
        last=0,
        weights=sac.combine_columns(np.ones((2, 1), np.int32), 1),
        bias=np.zeros(2, np.int32),
        mode=OutputMode.BINARY,
        in_code=CODE_BIT,
        out_code=CODE_BIT,
        height=1,
        width=1,
        im2col_pad=None,
    )
    assert encode_input(bits, np.array([[-1], [1]], np.int8)).ravel().tolist() == [0, 1]
    pm = encode_input(
        ArrayOp(
            first=0,
            last=0,
            weights=bits.weights,
            bias=bits.bias,
            mode=OutputMode.RAW,
            in_code=CODE_PM1,
            out_code=CODE_INT,
            height=1,
            width=1,
            im2col_pad=None,
        ),
        np.array([[-1], [1]], np.int8),
    )
    assert pm.dtype == np.uint8 and pm.ravel().tolist() == [0, 2]


def test_in_place_marks_the_binary_dense_only():
    """A binary dense layer right after a binary array output reads it in place; every other
    BNN layer gets its input from the host (im2col, or after host layers)."""
    rng = np.random.default_rng(SEED + 70)
    net = build_bnn(rng, (2, 8, 8), [[4, 5]], [6], classes=3)
    ops = array_ops(net)
    assert [(op.in_code, op.in_place) for op in ops] == [
        (CODE_UINT8, False),
        (CODE_PM1, False),
        (CODE_PM1, False),
        (CODE_BIT, True),
    ]
