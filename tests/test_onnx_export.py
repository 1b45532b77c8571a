"""ONNX export: onnxruntime's float32 evaluation of the exported graph equals the golden executor
layer by layer for both families, thresholds stay exact under onnxruntime's default fusions,
values that float32 cannot hold are refused, and export -> import -> export keeps the meaning."""

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto

from models import golden, ir
from models.numerics.sac import OutputMode, combine_columns
from models.onnx import ort as onnx_ort
from models.onnx.export import ExportError, export_onnx
from models.onnx.importer import import_onnx
from models.onnx.ranges import network_ranges
from models.random_networks import random_images, random_sac_network
from tests.helpers import FIXTURES

SEED = 31337


def pm(rng, *shape):
    return np.where(rng.random(shape) < 0.5, -1, 1).astype(np.int8)


def random_bnn(rng, pad, hidden=True, c=2, size=8):
    f1, f2 = 6, 10
    s = size if pad else size + 4
    out = s // 4 if pad else (((s - 2) // 2) - 2) // 2
    layers = [
        ir.IntConv2d(weight=pm(rng, f1, c, 3, 3), bias=rng.integers(-2, 3, f1), padding=pad),
        ir.Step(threshold=rng.integers(-300, 300, f1), direction=pm(rng, f1)),
        ir.MaxPool2d(),
        ir.BinConv2d(weight=pm(rng, f2, f1, 3, 3), bias=rng.integers(-2, 3, f2), padding=pad),
        ir.Step(threshold=rng.integers(-8, 8, f2), direction=pm(rng, f2)),
        ir.MaxPool2d(),
        ir.Flatten(),
    ]
    k = f2 * out * out
    if hidden:
        layers += [
            ir.BinDense(weight=pm(rng, 12, k), bias=rng.integers(-3, 4, 12)),
            ir.Step(threshold=rng.integers(-6, 6, 12), direction=pm(rng, 12)),
        ]
        k = 12
    layers.append(ir.BinDense(weight=pm(rng, 10, k), bias=rng.integers(-3, 4, 10)))
    return ir.Network((c, s, s), "uint8", layers, name="rand_bnn")


def layer_names(model):
    return json.loads({p.key: p.value for p in model.metadata_props}["workbench.layer_outputs"])


def assert_export_matches(net, x, input_range=None):
    model = export_onnx(net, input_range=input_range)
    net.meta["onnx"] = {"layer_outputs": layer_names(model)}
    ref = golden.run(net, x)
    outs = onnx_ort.layer_outputs(model, net, x)
    for i, (o, r) in enumerate(zip(outs, ref.outputs, strict=True)):
        assert np.array_equal(np.asarray(o), r.astype(np.float32)), f"layer {i}"
    # the default (fusing) session gives the same scores
    scores = onnx_ort.run(model, net, x, optimized=True)[0]
    assert np.array_equal(scores, ref.scores.astype(np.float32))
    return model, ref


@pytest.mark.parametrize("pad", [0, 1])
@pytest.mark.parametrize("hidden", [True, False])
def test_bnn_export_equals_golden(pad, hidden):
    seed = SEED + pad + 2 * hidden
    print("seed", seed)
    rng = np.random.default_rng(seed)
    net = random_bnn(rng, pad, hidden)
    x = rng.integers(0, 256, (40, *net.input_shape)).astype(np.uint8)
    model, ref = assert_export_matches(net, x)
    ops = [n.op_type for n in model.graph.node]
    assert {"Conv", "BatchNormalization", "Greater", "Where", "MaxPool", "Reshape", "Gemm"} <= set(ops)
    assert len(np.unique(ref.outputs[1])) == 2  # the steps do switch
    # every +-1 weight tensor is an int8 initializer read through a Cast to float
    weights = [
        n
        for n in model.graph.node
        if n.op_type in ("Conv", "Gemm") and n.name.split("_")[1] in ("IntConv2d", "BinConv2d", "BinDense")
    ]
    casts = {n.output[0]: n for n in model.graph.node if n.op_type == "Cast"}
    inits = {t.name: t for t in model.graph.initializer}
    assert weights and all(inits[casts[n.input[1]].input[0]].data_type == TensorProto.INT8 for n in weights)


@pytest.mark.parametrize("final", ["pixel_sum", "raw", "binary", "relu_quant"])
@pytest.mark.parametrize("s2d", [1, 2])
def test_sac_export_equals_golden(final, s2d):
    seed = SEED + 10 + ["pixel_sum", "raw", "binary", "relu_quant"].index(final) + 5 * s2d
    print("seed", seed)
    rng = np.random.default_rng(seed)
    net = random_sac_network(rng, in_shape=(3, 8, 8), widths=(12, 17), groups=(1, 3, 2), final=final, s2d=s2d)
    x = random_images(rng, 16, net.input_shape, zero_fraction=0.5)
    model, _ = assert_export_matches(net, x)
    groups = json.loads({p.key: p.value for p in model.metadata_props}["workbench.sac_groups"])
    assert sorted(groups.values()) == sorted(
        [layer.weights.group for layer in net.layers if isinstance(layer, ir.PointwiseConv)]
    )


def test_sac_shift_with_fill_and_no_shift():
    rng = np.random.default_rng(SEED + 20)
    print("seed", SEED + 20)
    w = np.zeros((5, 4), np.int32)
    w[np.arange(5), np.arange(5) % 4] = [64, -32, 1, 2, -4]
    layers = [
        ir.ChannelShift(directions=[0, 3, 8, 4], fill=7),
        ir.PointwiseConv(
            weights=combine_columns(w, 4), bias=rng.integers(-99, 99, 5), mode=OutputMode.RELU_QUANT
        ),
        ir.PointwiseConv(
            weights=combine_columns(np.eye(5, dtype=np.int32)[:3] * 16, 1),
            bias=np.zeros(3, np.int32),
            mode=OutputMode.RAW,
        ),
    ]
    net = ir.Network((4, 5, 5), "uint8", layers, name="fill")
    x = random_images(rng, 8, net.input_shape, zero_fraction=0.5)
    model, _ = assert_export_matches(net, x)
    assert "Pad" in [n.op_type for n in model.graph.node]
    back = import_onnx(model)
    assert back.layers[0].fill == 7 and back.layers[0].directions.tolist() == [0, 3, 8, 4]


@pytest.mark.parametrize("family", ["bnn", "sac"])
def test_value_ranges_contain_every_golden_value(family):
    """The ranges behind the exactness proof and the step tables are never too narrow."""
    seed = SEED + 25 + (family == "sac")
    print("seed", seed)
    rng = np.random.default_rng(seed)
    if family == "bnn":
        net = random_bnn(rng, 1)
        x = rng.integers(0, 256, (60, *net.input_shape)).astype(np.uint8)
        x[0], x[1] = 0, 255
    else:
        net = random_sac_network(rng, in_shape=(3, 8, 8), widths=(12, 17), groups=(1, 3, 2), s2d=2)
        x = random_images(rng, 60, net.input_shape, zero_fraction=0.5)
    res = golden.run(net, x)
    for i, (r, out) in enumerate(zip(network_ranges(net)[1:], res.outputs, strict=True)):
        per_channel = out.reshape(len(x), r.lo.shape[0], -1).astype(np.int64)
        assert (per_channel >= r.lo[None, :, None]).all(), f"layer {i}"
        assert (per_channel <= r.hi[None, :, None]).all(), f"layer {i}"


def every_sum(r):
    v = np.arange(-9 * r, 9 * r + 1)
    pix = np.zeros((v.size, 9), np.int64)
    rest = v.copy()
    for i in range(9):
        pix[:, i] = np.clip(rest, -r, r)
        rest -= pix[:, i]
    return pix.reshape(v.size, 1, 3, 3).astype(np.int32)


def test_exported_steps_exact_on_every_integer_even_when_fused():
    """Thresholds half-way between integers: the default session's Conv+BatchNormalization
    fusion (rescaled float weights, other rounding) cannot flip any integer input."""
    rng = np.random.default_rng(SEED + 30)
    print("seed", SEED + 30)
    c, r = 40, 50
    net = ir.Network(
        (1, 3, 3),
        "int",
        [
            ir.IntConv2d(weight=np.ones((c, 1, 3, 3), np.int8), bias=rng.integers(-3, 4, c)),
            ir.Step(threshold=rng.integers(-9 * r, 9 * r, c), direction=pm(rng, c)),
        ],
        name="thr",
    )
    x = every_sum(r)
    assert_export_matches(net, x, input_range=(-r, r))


def test_integer_input_range_survives_round_trip():
    rng = np.random.default_rng(SEED + 35)
    print("seed", SEED + 35)
    c, r = 12, 50
    net = ir.Network(
        (1, 3, 3),
        "int",
        [
            ir.IntConv2d(weight=np.ones((c, 1, 3, 3), np.int8), bias=rng.integers(-3, 4, c)),
            ir.Step(threshold=rng.integers(-9 * r, 9 * r, c), direction=pm(rng, c)),
        ],
        name="thr",
    )
    back = import_onnx(export_onnx(net, input_range=(-r, r)))
    assert back.input_kind == "int" and back.meta["input_range"] == [-r, r]
    assert np.array_equal(back.layers[1].threshold, net.layers[1].threshold)
    again = import_onnx(export_onnx(back))
    assert again.meta["input_range"] == [-r, r]
    x = every_sum(r)
    assert np.array_equal(golden.run(again, x).scores, golden.run(net, x).scores)


def test_export_refuses_inexact_values():
    w = np.zeros((2, 3), np.int32)
    w[0, 0] = 64
    big = ir.Network(
        (3, 4, 4),
        "uint8",
        [ir.PointwiseConv(weights=combine_columns(w, 1), bias=[1 << 24, 0], mode=OutputMode.RAW)],
        name="big",
    )
    with pytest.raises(
        ExportError,
        match=r"layer 0 \(PointwiseConv\): values or partial sums "
        r"reach 16793536, not exact in float32",
    ):
        export_onnx(big)
    # pixel sums over 64 pixels of raw accumulators near 2^18
    w2 = np.full((1, 64), 64, np.int32)
    wide = ir.Network(
        (64, 8, 8),
        "uint8",
        [ir.PointwiseConv(weights=combine_columns(w2, 1), bias=[0], mode=OutputMode.RAW), ir.PixelSum()],
        name="w",
    )
    with pytest.raises(ExportError, match=r"layer 1 \(PixelSum\): values or partial sums reach"):
        export_onnx(wide)
    net = ir.Network(
        (1, 3, 3),
        "int",
        [
            ir.IntConv2d(weight=np.ones((1, 1, 3, 3), np.int8), bias=[0]),
            ir.Step(threshold=[0], direction=[1]),
        ],
        name="s",
    )
    with pytest.raises(ExportError, match=r"layer 1 \(Step\): step inputs reach 9000000"):
        export_onnx(net, input_range=(-1000000, 1000000))
    with pytest.raises(ExportError, match=r"takes int input: give its value range"):
        export_onnx(net)
    with pytest.raises(ExportError, match=r"needs an ir.Network, got str"):
        export_onnx("model.onnx")


def canonical(net):
    """What a network means, independent of names: layer types and integer parameters (steps as
    their on-sets over the reachable range are compared through outputs instead)."""
    out = []
    for layer in net.layers:
        d = {"type": layer.type_name}
        for k in ("weight", "bias", "padding", "factor", "directions", "fill", "mode"):
            if hasattr(layer, k):
                v = getattr(layer, k)
                d[k] = np.asarray(v).tolist() if not isinstance(v, (int, OutputMode)) else int(v)
        if isinstance(layer, ir.PointwiseConv):
            d["dense"] = layer.dense().tolist()
            d["group"] = layer.weights.group
        out.append(d)
    return out


@pytest.mark.parametrize("family", ["bnn", "sac"])
def test_round_trip_keeps_meaning(family, tmp_path):
    seed = SEED + 40 + (family == "sac")
    print("seed", seed)
    rng = np.random.default_rng(seed)
    if family == "bnn":
        net = random_bnn(rng, 1)
        x = rng.integers(0, 256, (30, *net.input_shape)).astype(np.uint8)
    else:
        net = random_sac_network(rng, in_shape=(2, 8, 8), widths=(9, 14), groups=(2, 3, 1), s2d=2)
        x = random_images(rng, 30, net.input_shape, zero_fraction=0.5)
    first = tmp_path / "a.onnx"
    second = tmp_path / "b.onnx"
    export_onnx(net, first)
    back = import_onnx(first)
    export_onnx(back, second)
    again = import_onnx(second)
    assert canonical(back) == canonical(net) == canonical(again)
    ref = golden.run(net, x)
    for other in (back, again):
        for a, b in zip(golden.run(other, x).outputs, ref.outputs, strict=True):
            assert np.array_equal(a, b)
    a = onnx_ort.run(onnx.load(str(first)), net, x)[0]
    b = onnx_ort.run(onnx.load(str(second)), back, x)[0]
    assert np.array_equal(a, b) and np.array_equal(a, ref.scores.astype(np.float32))
    # thresholds: identical where the step switches inside the reachable range
    for la, lb in zip(net.layers, back.layers, strict=True):
        if isinstance(la, ir.Step):
            assert la.direction.shape == lb.direction.shape


@pytest.mark.parametrize("name", ["hepbnn_cudatest.onnx"])
def test_fixture_import_export_import(name, tmp_path):
    rng = np.random.default_rng(SEED + 50)
    print("seed", SEED + 50)
    net = import_onnx(FIXTURES / name)
    out = tmp_path / "re.onnx"
    export_onnx(net, out)
    back = import_onnx(out)
    assert back.meta["onnx"]["input_shape"] == [None, 1, 28, 28]
    x = rng.integers(0, 256, (20, *net.input_shape)).astype(np.uint8)
    ref = golden.run(net, x)
    original_scores = onnx_ort.run(
        onnx.load(str(FIXTURES / name)), net, x, outputs=[net.meta["onnx"]["layer_outputs"][-1]]
    )[0]
    exported_scores = onnx_ort.run(onnx.load(str(out)), back, x)[0]
    assert np.array_equal(original_scores, exported_scores)
    assert np.array_equal(golden.run(back, x).scores, ref.scores)
