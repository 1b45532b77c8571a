"""BNN layers on the SAC array, at the level of the arithmetic (docs/fpga_bnn.md): the host's
encodings (+-1 as 0/2, padded taps as 1, binary outputs as 0/1), the folded steps and biases,
and the array's matrix product give every array-run layer's golden output exactly, without the
compiler or the interpreter in the way."""

import numpy as np
import pytest

from fpga.lowering import CODE_BIT, CODE_PM1, ArrayOp, HostOp, decode_output, encode_input, lower
from models import golden, ir
from models.numerics import sac
from models.numerics.sac import OutputMode
from models.random_networks import build_bnn, random_images

SEED = 1702


def test_pm1_inputs_are_stored_as_0_and_2_and_padded_taps_as_1():
    conv = ir.BinConv2d(weight=np.ones((1, 1, 3, 3), np.int8), bias=np.zeros(1, np.int32), padding=1)
    net = ir.Network((1, 2, 2), "binary", [conv], name="one_conv")
    op = next(o for o in lower(net) if isinstance(o, ArrayOp))
    assert op.in_code == CODE_PM1 and op.pad_value == 1
    x = np.array([[[[1, -1], [-1, 1]]]], dtype=np.int8)
    data = encode_input(op, x)  # [1, 9 taps, 2, 2]
    assert data.shape == (1, 9, 2, 2)
    assert data[0, 4].tolist() == [[2, 0], [0, 2]]  # centre tap: the pixel itself
    assert data[0, 0, 0, 0] == 1 and data[0, 8, 1, 1] == 1  # out of frame: padding
    assert set(np.unique(data)) <= {0, 1, 2}


def test_binary_outputs_are_read_as_pm1():
    op = ArrayOp(
        first=0,
        last=0,
        weights=sac.combine_columns(np.ones((2, 1), np.int32), 1),
        bias=np.zeros(2, np.int32),
        mode=OutputMode.BINARY,
        in_code=CODE_PM1,
        out_code=CODE_BIT,
        height=1,
        width=1,
        im2col_pad=None,
    )
    out = decode_output(op, np.array([[[[0]], [[1]]]], dtype=np.uint8), (2, 1, 1))
    assert out.tolist() == [[[[-1]], [[1]]]] and out.dtype == np.int8


@pytest.mark.parametrize("padding", [0, 1])
@pytest.mark.parametrize("seed", range(3))
def test_array_arithmetic_gives_every_golden_layer(padding, seed):
    rng = np.random.default_rng(SEED + 10 * padding + seed)
    print("seed", SEED + 10 * padding + seed)
    net = build_bnn(rng, (2, 12, 12), [[5], [7]], [6], classes=4, padding=padding)
    # negative directions exercise the folded sign of the step
    for layer in net.layers:
        if isinstance(layer, ir.Step):
            layer.direction = np.where(rng.random(layer.direction.size) < 0.5, -1, 1).astype(np.int8)
    x = random_images(rng, 3, net.input_shape)
    ref = golden.run(net, x).outputs
    ops = lower(net)
    assert any(o.in_code == CODE_BIT for o in ops if isinstance(o, ArrayOp))  # 2w weights
    assert any(isinstance(o, HostOp) for o in ops)
    for op in ops:
        if not isinstance(op, ArrayOp):
            continue
        x_in = x if op.first == 0 else ref[op.first - 1]
        assert np.array_equal(array_result(net, op, x_in), ref[op.last]), (op.first, op.last)


def array_result(net, op, x_in):
    """What the array makes of `op` on the golden input `x_in`: the host's encoding, the
    matrix product of sac's reference, the output mode, read back as golden values."""
    data = encode_input(op, x_in)
    n, k = data.shape[:2]
    dense = sac.decode_packed(op.weights.packed, op.weights.group, op.in_channels)
    acc = sac.dense_matmul(dense, data.reshape(n, k, -1), op.bias)
    out = sac.apply_mode(acc, op.mode).reshape(n, -1, op.height, op.width)
    return decode_output(op, out, net.shapes[op.last + 1][0])


@pytest.mark.parametrize("kind", ["uint8", "binary"])
def test_padded_taps_without_a_step(kind):
    """A raw 3x3 convolution with padding 1: every border pixel has padded taps, and the
    raw integer shows their value directly (behind a step, as in build_bnn's networks, a tap
    off by one rarely flips the output, so a wrong padding value for uint8 inputs went
    unnoticed there)."""
    rng = np.random.default_rng(SEED + 50 + (kind == "binary"))
    print("seed", SEED + 50 + (kind == "binary"))
    cls = ir.IntConv2d if kind == "uint8" else ir.BinConv2d
    conv = cls(
        weight=np.where(rng.random((3, 2, 3, 3)) < 0.5, -1, 1).astype(np.int8),
        bias=rng.integers(-2, 3, size=3),
        padding=1,
    )
    net = ir.Network((2, 5, 4), kind, [conv], name=f"raw_{kind}_conv")
    (op,) = lower(net)
    assert op.mode == OutputMode.RAW and op.im2col_pad == 1
    x = random_images(rng, 3, net.input_shape)
    if kind == "binary":
        x = np.where(x < 128, -1, 1).astype(np.int8)
    assert np.array_equal(array_result(net, op, x), golden.run(net, x).outputs[0])


def test_steps_outside_the_reachable_range():
    """Thresholds past either end of a dense layer's range (always on, always off, both
    directions), with inputs that reach both ends (a = w and a = -w): the folded bias must
    keep such a channel constant even where the sum equals its extreme."""
    rng = np.random.default_rng(SEED + 60)
    print("seed", SEED + 60)
    k = 7
    w = np.where(rng.random(k) < 0.5, -1, 1).astype(np.int8)
    fc = ir.BinDense(weight=np.tile(w, (4, 1)), bias=np.array([1, -2, 0, 2]))
    # k + bias and -k + bias are the ends of each row's range; 3 past them
    ends = np.array([k + 1, -k - 2, -k + 0, k + 2])
    step = ir.Step(threshold=ends + np.array([3, -3, -3, 3]), direction=np.array([1, -1, 1, -1]))
    net = ir.Network((k,), "binary", [fc, step], name="steps_at_the_ends")
    (op,) = lower(net)
    x = np.concatenate([[w, -w], np.where(rng.random((4, k)) < 0.5, -1, 1)]).astype(np.int8)
    ref = golden.run(net, x).outputs[1]
    assert (ref == ref[:1]).all()  # constant channels, as intended
    assert np.array_equal(array_result(net, op, x), ref)
