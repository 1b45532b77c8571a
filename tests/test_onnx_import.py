"""ONNX import: the HEP-BNN fixtures and synthetic files, golden executor == onnxruntime layer by
layer (including pre-activations on or within float32 rounding of a threshold), and every error
case naming the node and the value."""

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from models import golden, ir
from models.onnx import ort as onnx_ort
from models.onnx.graph import OnnxImportError
from models.onnx.importer import import_onnx
from tests.helpers import FIXTURES

HEPBNN = ["hepbnn_fashion.onnx", "hepbnn_cudatest.onnx"]
SEED = 1234
LAYERS = [
    "IntConv2d",
    "Step",
    "MaxPool2d",
    "BinConv2d",
    "Step",
    "MaxPool2d",
    "Flatten",
    "BinDense",
    "Step",
    "BinDense",
]


def assert_layers_equal_ort(model, net, x, optimized=False):
    outs = onnx_ort.layer_outputs(model, net, x, optimized=optimized)
    ref = golden.run(net, x)
    for i, (o, r) in enumerate(zip(outs, ref.outputs, strict=True)):
        o = np.asarray(o).reshape(r.shape)
        assert np.array_equal(o, r.astype(np.float32)), (
            f"layer {i} ({net.layers[i].type_name}): {int((o != r).sum())} elements differ"
        )
    return ref


# ---------------------------------------------------------------------------------------------
# the fixtures
# ---------------------------------------------------------------------------------------------
def test_fixture_license_is_shipped():
    text = (FIXTURES / "LICENSE-fastinference").read_text()
    assert text.startswith("MIT License")


@pytest.mark.parametrize("name", HEPBNN)
def test_fixture_structure_and_meta(name):
    net = import_onnx(FIXTURES / name)
    assert [layer.type_name for layer in net.layers] == LAYERS
    assert net.input_shape == (1, 28, 28) and net.input_kind == "uint8"
    onnx_meta = net.meta["onnx"]
    assert onnx_meta["input_shape"] == [None, 784]
    assert onnx_meta["dropped"] == ["LogSoftmax_33 (LogSoftmax)"]
    assert net.meta["family"] == "bnn"
    assert net.layers[0].padding == (1 if name == "hepbnn_fashion.onnx" else 0)
    assert net.output_shape == (10,)


@pytest.mark.parametrize("name", HEPBNN)
def test_fixture_golden_equals_onnxruntime_random_images(name):
    seed = SEED + HEPBNN.index(name)
    print("seed", seed)
    rng = np.random.default_rng(seed)
    path = FIXTURES / name
    model = onnx.load(str(path))
    net = import_onnx(path)
    x = rng.integers(0, 256, (48, *net.input_shape)).astype(np.uint8)
    x[0] = 0
    x[1] = 255
    ref = assert_layers_equal_ort(model, net, x)
    # the file's own output (LogSoftmax of the scores) ranks classes the same way, with the
    # default (optimizing) session too
    for optimized in (False, True):
        logp = onnx_ort.run(model, net, x, optimized=optimized)[0]
        assert np.array_equal(np.argmax(logp, axis=1), ref.predictions)


@pytest.mark.parametrize("name", HEPBNN)
def test_fixture_wide_input_range(name):
    """With pixels up to +-40000 the first layer's steps switch (with 0..255 they are constant:
    the fixture's batch norm means are in the 1e5 range); thresholds come from the bracketed
    onnxruntime evaluation."""
    seed = SEED + 10 + HEPBNN.index(name)
    print("seed", seed)
    rng = np.random.default_rng(seed)
    path = FIXTURES / name
    net = import_onnx(path, input_range=(-40000, 40000))
    assert net.input_kind == "int"
    x = rng.integers(-40000, 40001, (24, *net.input_shape)).astype(np.int32)
    ref = assert_layers_equal_ort(onnx.load(str(path)), net, x)
    assert set(np.unique(ref.outputs[1])) == {-1, 1}


def test_fixture_real_images_through_a_flat_input():
    """HEP-BNN CSV rows are the file's flat input; digits padded to 28x28 are real images."""
    from models.datasets import load_digits

    path = FIXTURES / "hepbnn_cudatest.onnx"
    net = import_onnx(path)
    d = load_digits("test")
    x = np.zeros((40, 1, 28, 28), np.uint8)
    x[:, :, 10:18, 10:18] = d.images[:40]
    assert_layers_equal_ort(onnx.load(str(path)), net, x)


# ---------------------------------------------------------------------------------------------
# thresholds on, and within float32 rounding of, integer pre-activations
# ---------------------------------------------------------------------------------------------
def adversarial_bn(rng, c):
    """Batch norms whose zero crossing sits exactly on an integer, one float32 ulp off it, half
    way, with negative and zero gamma, tiny and huge variances."""
    k = rng.integers(-150, 150, c).astype(np.float32)
    kind = np.arange(c) % 6
    mean = k.copy()
    mean[kind == 1] = np.nextafter(k[kind == 1], np.float32(np.inf))
    mean[kind == 2] = np.nextafter(k[kind == 2], np.float32(-np.inf))
    mean[kind == 3] = k[kind == 3] + np.float32(0.5)
    gamma = (rng.choice([-1.0, 1.0], c) * rng.uniform(0.5, 2, c)).astype(np.float32)
    gamma[kind == 4] = 0.0
    beta = np.zeros(c, np.float32)
    beta[kind == 5] = rng.choice([-1e-7, 1e-7], int((kind == 5).sum()))
    var = rng.choice([1.0, 1e-6, 1e4, 3.0], c).astype(np.float32)
    return gamma, beta, mean, var


DENSE_K = 300


def threshold_model(rng, c, compare, plus_first, dense):
    """input -> (Conv 3x3 all-ones on integers | Gemm all-ones on 300 +-1 inputs, bias 0/1)
    -> BN -> compare(0) -> Where -> output."""
    nodes, inits = [], []

    def init(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr, np.float32), name))
        return name

    if dense:
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", DENSE_K])
        nodes.append(
            helper.make_node(
                "Gemm",
                ["x", init("w", np.ones((c, DENSE_K))), init("b", np.arange(c) % 2)],
                ["pre"],
                name="fc",
                transB=1,
            )
        )
    else:
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 3, 3])
        nodes.append(
            helper.make_node(
                "Conv",
                ["x", init("w", np.ones((c, 1, 3, 3))), init("b", np.zeros(c))],
                ["pre"],
                name="conv",
                kernel_shape=[3, 3],
                pads=[0, 0, 0, 0],
            )
        )
    g, b, m, v = adversarial_bn(rng, c)
    nodes.append(
        helper.make_node(
            "BatchNormalization",
            ["pre", init("g", g), init("be", b), init("m", m), init("v", v)],
            ["bn"],
            name="bn",
            epsilon=1e-5,
        )
    )
    nodes.append(helper.make_node(compare, ["bn", init("zero", 0.0)], ["cmp"], name="cmp"))
    vals = [init("p", [1.0]), init("n", [-1.0])]
    nodes.append(helper.make_node("Where", ["cmp"] + (vals if plus_first else vals[::-1]), ["y"], name="act"))
    shape = ["N", c] if dense else ["N", c, 1, 1]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
    graph = helper.make_graph(nodes, "thresholds", [x], [y], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_cast_of_a_constant_folds_into_the_constant():
    """A +-1 weight stored as int8 and cast to float (as our exporter writes it) imports as the
    same network as the float32 weight; a Cast to a type numpy does not have names the node."""
    rng = np.random.default_rng(SEED + 40)
    print("seed", SEED + 40)
    model = threshold_model(rng, 4, "Greater", True, dense=True)
    plain = import_onnx(model, input_range="binary")
    g = model.graph
    w = next(t for t in g.initializer if t.name == "w")
    g.initializer.remove(w)
    g.initializer.append(numpy_helper.from_array(numpy_helper.to_array(w).astype(np.int8), "w8"))
    g.node.insert(0, helper.make_node("Cast", ["w8"], ["w"], name="w_cast", to=TensorProto.FLOAT))
    cast = import_onnx(model, input_range="binary")
    x = rng.choice([-1, 1], (16, DENSE_K)).astype(np.int8)
    assert np.array_equal(golden.run(cast, x).scores, golden.run(plain, x).scores)
    g.node[0].attribute[0].i = 999
    with pytest.raises(OnnxImportError, match=r"node 'w_cast' \(Cast\): Cast to unsupported type 999"):
        import_onnx(model, input_range="binary")


def every_sum(lo, hi, r, shape):
    """Images whose 9 pixels (each in [-r, r]) sum to every integer lo..hi."""
    v = np.arange(lo, hi + 1)
    pix = np.zeros((v.size, 9), np.int64)
    rest = v.copy()
    for i in range(9):
        pix[:, i] = np.clip(rest, -r, r)
        rest -= pix[:, i]
    assert (pix.sum(1) == v).all()
    return pix.reshape(v.size, *shape).astype(np.int32)


def every_pm1_sum(k):
    """+-1 vectors of length k whose sums are every value -k, -k+2, ..., k."""
    ones = np.arange(k + 1)
    return np.where(np.arange(k)[None, :] < ones[:, None], 1, -1).astype(np.int8)


@pytest.mark.parametrize("compare", ["Greater", "GreaterOrEqual", "Less", "LessOrEqual"])
@pytest.mark.parametrize("plus_first", [True, False])
@pytest.mark.parametrize("dense", [False, True])
def test_steps_equal_onnxruntime_on_every_reachable_integer(compare, plus_first, dense):
    seed = (
        SEED
        + 100
        + ["Greater", "GreaterOrEqual", "Less", "LessOrEqual"].index(compare)
        + 10 * plus_first
        + 20 * dense
    )
    print("seed", seed)
    rng = np.random.default_rng(seed)
    model = threshold_model(rng, 48, compare, plus_first, dense)
    if dense:
        net = import_onnx(model, input_range="binary")
        x = every_pm1_sum(DENSE_K)
        assert [layer.type_name for layer in net.layers] == ["BinDense", "Step"]
    else:
        net = import_onnx(model, input_range=(-20, 20))
        x = every_sum(-180, 180, 20, (1, 3, 3))
        assert [layer.type_name for layer in net.layers] == ["IntConv2d", "Step"]
    pre = golden.run(net, x).outputs[0].reshape(len(x), -1)
    ref = golden.run(net, x).scores.reshape(len(x), -1)
    # the reference session evaluates the graph as written. (onnxruntime's default session
    # fuses Conv + BatchNormalization into one Conv with rescaled float weights, which rounds
    # differently exactly at such ties: see docs/models.md.)
    got = onnx_ort.run(model, net, x)[0].reshape(len(x), -1)
    bad = np.argwhere(got != ref)
    assert bad.size == 0, f"pre-activation {pre[bad[0][0], bad[0][1]]}, channel {bad[0][1]}"
    # the crossings are inside the range: most channels switch somewhere
    assert (np.diff(ref, axis=0) != 0).any(axis=0).mean() > 0.5


def test_bracketed_steps_for_wide_ranges():
    """Pre-activations up to +-180,000 (wider than one full table): the bracketed search finds
    the same thresholds, checked on every integer near them and on random ones."""
    rng = np.random.default_rng(SEED + 200)
    print("seed", SEED + 200)
    model = threshold_model(rng, 48, "Greater", True, dense=False)
    net = import_onnx(model, input_range=(-20000, 20000))
    x = np.concatenate(
        [
            every_sum(-1500, 1500, 20000, (1, 3, 3)),
            rng.integers(-20000, 20001, (400, 1, 3, 3)).astype(np.int32),
        ]
    )
    got = onnx_ort.run(model, net, x)[0].reshape(len(x), -1)
    assert np.array_equal(got, golden.run(net, x).scores.reshape(len(x), -1))
    narrow = import_onnx(model, input_range=(-20, 20))
    inside = np.abs(net.layers[1].threshold) < 150
    assert np.array_equal(net.layers[1].threshold[inside], narrow.layers[1].threshold[inside])


def test_dense_input_needs_binary_kind():
    rng = np.random.default_rng(SEED)
    model = threshold_model(rng, 4, "Greater", True, dense=True)
    with pytest.raises(
        OnnxImportError,
        match=r"node 'fc': lowered to BinDense, which takes "
        r"binary input, but its input is int",
    ):
        import_onnx(model, input_range=(-3, 3))


# ---------------------------------------------------------------------------------------------
# error cases
# ---------------------------------------------------------------------------------------------
def small_bnn_model(**change):
    """A valid tiny HEP-BNN-style file; `change` swaps in bad pieces."""
    rng = np.random.default_rng(7)
    pm = lambda *s: np.where(rng.random(s) < 0.5, -1.0, 1.0)  # noqa: E731
    w1 = change.get("w1", pm(4, 1, 3, 3))
    inits = {
        "w1": w1,
        "b1": change.get("b1", np.zeros(4)),
        "g": np.ones(4),
        "be": np.zeros(4),
        "m": np.zeros(4),
        "v": np.ones(4),
        "zero": np.array(0.0),
        "p": [1.0],
        "n": change.get("n", [-1.0]),
        "shape": np.array([0, -1]),
        "w2": change.get("w2", pm(3, 64)),
        "b2": np.zeros(3),
    }
    nodes = [
        helper.make_node(
            "Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]
        ),
        helper.make_node("BatchNormalization", ["c1", "g", "be", "m", "v"], ["bn1"], name="bn1"),
        helper.make_node("Greater", ["bn1", "zero"], ["gt1"], name="gt1"),
        helper.make_node("Where", ["gt1", "p", "n"], ["a1"], name="where1"),
        helper.make_node(
            "MaxPool", ["a1"], ["p1"], name="pool1", kernel_shape=change.get("pool", [2, 2]), strides=[2, 2]
        ),
        helper.make_node("Reshape", ["p1", "shape"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "w2", "b2"], ["y"], name="fc", transB=1),
    ]
    if "extra" in change:
        nodes = change["extra"](nodes)
    tensors = [
        numpy_helper.from_array(np.asarray(v, np.int64 if k == "shape" else np.float32), k)
        for k, v in inits.items()
    ]
    graph = helper.make_graph(
        nodes,
        "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        initializer=tensors,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_small_model_imports_and_matches():
    model = small_bnn_model()
    net = import_onnx(model)
    rng = np.random.default_rng(SEED + 5)
    print("seed", SEED + 5)
    assert_layers_equal_ort(model, net, rng.integers(0, 256, (20, 1, 8, 8)).astype(np.uint8))


def test_error_non_pm1_conv_weight():
    w = np.ones((4, 1, 3, 3))
    w[2, 0, 1, 0] = 0.5
    with pytest.raises(
        OnnxImportError,
        match=r"node 'conv1' \(Conv\): weight 'w1'\[2, 0, 1, 0\] "
        r"= .*0\.5.* is not \+-1",
    ):
        import_onnx(small_bnn_model(w1=w))


def test_error_non_pm1_gemm_weight():
    w = np.ones((3, 64))
    w[1, 7] = 3.0
    with pytest.raises(
        OnnxImportError,
        match=r"node 'fc' \(Gemm\): weight 'w2'\[1, 7\] = "
        r".*3\.0.* is not \+-1",
    ):
        import_onnx(small_bnn_model(w2=w))


def test_error_non_integer_bias():
    with pytest.raises(
        OnnxImportError,
        match=r"node 'conv1' \(Conv\): bias 'b1'\[1\] = .*0\.25.* "
        r"is not an int32 integer",
    ):
        import_onnx(small_bnn_model(b1=[0, 0.25, 0, 0]))


def test_error_where_values():
    with pytest.raises(
        OnnxImportError,
        match=r"node 'where1' \(Where\): selects \(1\.0, 0\.0\); "
        r"a binary step needs \+1 and -1",
    ):
        import_onnx(small_bnn_model(n=[0.0]))


def test_error_unsupported_pool():
    with pytest.raises(
        OnnxImportError,
        match=r"node 'pool1' \(MaxPool\): attribute "
        r"kernel_shape=\[3, 3\] is not supported",
    ):
        import_onnx(small_bnn_model(pool=[3, 3]))


def test_error_unsupported_operator():
    def add_relu(nodes):
        nodes[0].output[0] = "c0"
        return [nodes[0], helper.make_node("Relu", ["c0"], ["c1"], name="relu0")] + nodes[1:]

    with pytest.raises(
        OnnxImportError,
        match=r"node 'relu0' \(Relu\): operator Relu is not "
        r"supported here \(supported operators: Conv, ",
    ):
        import_onnx(small_bnn_model(extra=add_relu))


def test_error_branching_graph():
    def branch(nodes):
        return nodes + [helper.make_node("Neg", ["c1"], ["unused"], name="side")]

    with pytest.raises(
        OnnxImportError,
        match=r"node 'conv1' \(Conv\): its output 'c1' feeds 2 "
        r"nodes .* only a chain of layers is supported",
    ):
        import_onnx(small_bnn_model(extra=branch))


def test_error_bad_files(tmp_path):
    with pytest.raises(OnnxImportError, match=r"missing.onnx: no such file"):
        import_onnx(tmp_path / "missing.onnx")
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x00\x01not a protobuf at all" * 10)
    with pytest.raises(OnnxImportError, match=r"junk.onnx: not a readable ONNX file"):
        import_onnx(junk)
    with pytest.raises(OnnxImportError, match=r"input_range must be None, \(lo, hi\) or 'binary'"):
        import_onnx(small_bnn_model(), input_range="pixels")


def sac_model(w=None, div=64.0, kernel=None, groups=None):
    """input [N, 4, 4, 4] -> shift (depthwise one-hot) -> 1x1 conv -> Div -> Floor -> Clip
    -> 1x1 conv raw -> ReduceSum."""
    rng = np.random.default_rng(9)
    c = 4
    k = np.zeros((c, 1, 9), np.float32)
    k[np.arange(c), 0, [0, 4, 8, 5]] = 1
    k = k.reshape(c, 1, 3, 3) if kernel is None else kernel
    w = np.array([[64, 0, -8, 0], [0, -1, 0, 2], [4, 0, 0, 0]], np.float32) if w is None else w
    w2 = np.array([[1, -2, 4], [0, 32, -64]], np.float32)
    inits = [
        numpy_helper.from_array(np.asarray(a, np.float32), n)
        for n, a in [
            ("k", k),
            ("w", w[:, :, None, None]),
            ("b", [10, -300, 0]),
            ("d", div),
            ("lo", 0.0),
            ("hi", 255.0),
            ("w2", w2[:, :, None, None]),
            ("b2", [5, -5]),
        ]
    ]
    inits.append(numpy_helper.from_array(np.array([2, 3], np.int64), "axes"))
    nodes = [
        helper.make_node(
            "Conv", ["x", "k"], ["s"], name="shift", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=c
        ),
        helper.make_node("Conv", ["s", "w", "b"], ["acc"], name="pw", kernel_shape=[1, 1]),
        helper.make_node("Div", ["acc", "d"], ["q"], name="div"),
        helper.make_node("Floor", ["q"], ["fl"], name="floor"),
        helper.make_node("Clip", ["fl", "lo", "hi"], ["a"], name="clip"),
        helper.make_node("Conv", ["a", "w2", "b2"], ["raw"], name="final", kernel_shape=[1, 1]),
        helper.make_node("ReduceSum", ["raw", "axes"], ["y"], name="psum", keepdims=0),
    ]
    del rng
    graph = helper.make_graph(
        nodes,
        "sac",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", c, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    if groups is not None:
        helper.set_model_props(model, {"workbench.sac_groups": groups})
    return model


def test_sac_pattern_imports_and_matches():
    model = sac_model()
    net = import_onnx(model)
    assert [layer.type_name for layer in net.layers] == [
        "ChannelShift",
        "PointwiseConv",
        "PointwiseConv",
        "PixelSum",
    ]
    assert net.meta["family"] == "sac"
    assert net.layers[0].directions.tolist() == [0, 4, 8, 5]
    assert net.layers[1].weights.group == 2  # widest grouping that keeps one per group
    rng = np.random.default_rng(SEED + 6)
    print("seed", SEED + 6)
    assert_layers_equal_ort(model, net, rng.integers(0, 256, (10, 4, 4, 4)).astype(np.uint8))


def test_error_sac_non_power_of_two_weight():
    w = np.array([[64, 0, -8, 0], [0, -3, 0, 2], [4, 0, 0, 0]], np.float32)
    with pytest.raises(
        OnnxImportError,
        match=r"node 'pw' \(Conv\): weight 'w'\[1, 1, 0, 0\] = "
        r".*-3\.0.* is not 0 or \+-2\^k with k = 0\.\.6",
    ):
        import_onnx(sac_model(w=w))
    w[1, 1] = 128
    with pytest.raises(OnnxImportError, match=r"weight 'w'\[1, 1, 0, 0\] = .*128\.0.* is not 0"):
        import_onnx(sac_model(w=w))


def test_error_sac_patterns():
    with pytest.raises(
        OnnxImportError,
        match=r"node 'div' \(Div\): Div by 32\.0; ReLU & "
        r"quantize divides the accumulator by 64",
    ):
        import_onnx(sac_model(div=32.0))
    k = np.zeros((4, 1, 3, 3), np.float32)
    k[:, 0, 1, 1] = 1
    k[2, 0, 0, 0] = 0.5
    with pytest.raises(
        OnnxImportError,
        match=r"node 'shift' \(Conv\): kernel of channel 2 is "
        r"\[0\.5, 0\.0, 0\.0, 0\.0, 1\.0, .*not one-hot",
    ):
        import_onnx(sac_model(kernel=k))
    with pytest.raises(
        OnnxImportError,
        match=r"node 'pw' \(Conv\): column combining with G=4: "
        r"row 0, group 0 .* holds 2 nonzero weights",
    ):
        import_onnx(sac_model(groups='{"acc": 4}'))


def test_pointwise_on_integer_input_is_refused():
    with pytest.raises(
        OnnxImportError,
        match=r"lowered to ChannelShift, which takes uint8 "
        r"input, but its input is int",
    ):
        import_onnx(sac_model(), input_range=(-5, 5))


def test_network_description_accepts_import_result():
    """A file from elsewhere is named after the file, not its graph ("torch-jit-export")."""
    net = import_onnx(FIXTURES / "hepbnn_cudatest.onnx")
    assert isinstance(net, ir.Network) and net.name == "hepbnn_cudatest"


def _fixture_model():
    return onnx.load(str(FIXTURES / "hepbnn_cudatest.onnx"))


def test_files_that_are_not_models_are_refused(tmp_path):
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    with pytest.raises(OnnxImportError, match="empty.onnx: empty file, not an ONNX model"):
        import_onnx(empty)
    with pytest.raises(OnnxImportError, match="is a directory, not an ONNX file"):
        import_onnx(tmp_path)


def test_integer_input_is_refused():
    """onnxruntime cannot run an INT64-input graph of these operators: refuse it up front."""
    m = _fixture_model()
    m.graph.input[0].type.tensor_type.elem_type = onnx.TensorProto.INT64
    with pytest.raises(OnnxImportError, match="is INT64; the importer reads FLOAT inputs"):
        import_onnx(m)


@pytest.mark.parametrize(
    "which,value,message",
    [
        (4, -1.0, "variance .* is negative"),
        (3, float("nan"), "mean .* is not finite"),
        (1, float("inf"), "scale .* is not finite"),
    ],
)
def test_invalid_batch_norm_parameters_are_refused(which, value, message):
    m = _fixture_model()
    bn = next(n for n in m.graph.node if n.op_type == "BatchNormalization")
    init = next(t for t in m.graph.initializer if t.name == bn.input[which])
    arr = numpy_helper.to_array(init).copy()
    arr.reshape(-1)[0] = value
    init.CopyFrom(numpy_helper.from_array(arr, init.name))
    with pytest.raises(OnnxImportError, match=message):
        import_onnx(m)


@pytest.mark.parametrize("bad", [(0.5, 3), (0, 2.5), (True, 3), (1,), "pixels"])
def test_input_range_bounds_must_be_integers(bad):
    with pytest.raises(OnnxImportError, match="input_range must be"):
        import_onnx(FIXTURES / "hepbnn_cudatest.onnx", input_range=bad)


@settings(max_examples=60, deadline=None)
@given(
    op=st.sampled_from(["Conv", "MaxPool"]),
    name=st.sampled_from(
        [
            "pads",
            "strides",
            "kernel_shape",
            "dilations",
            "group",
            "auto_pad",
            "ceil_mode",
            "storage_order",
            "bogus",
        ]
    ),
    value=st.one_of(
        st.lists(st.integers(-3, 5), min_size=1, max_size=5),
        st.integers(-3, 5),
        st.sampled_from(["SAME_UPPER", "VALID", "NOTSET", "x"]),
    ),
)
def test_any_attribute_imports_or_raises_the_projects_error(op, name, value):
    """Whatever a Conv or MaxPool attribute holds, the import gives a network or an
    OnnxImportError (never another exception)."""
    m = _fixture_model()
    node = next(n for n in m.graph.node if n.op_type == op)
    kept = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend(kept + [helper.make_attribute(name, value)])
    try:
        net = import_onnx(m)
    except OnnxImportError:
        return
    assert isinstance(net, ir.Network)
