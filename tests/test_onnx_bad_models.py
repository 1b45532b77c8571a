"""Malformed but checker-valid ONNX models: every problem is an OnnxImportError naming the file
and the opset, node, metadata key, input or initializer; never another exception type (the
commands would call that an internal error, exit 3), never a silent import. Opsets onnxruntime
cannot run, metadata of the wrong JSON type, absurd input shapes, tensors whose declared size is
not their data, and random mutations of the fixture and zoo files."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from models import golden, ir
from models.numerics.sac import MAX_GROUP
from models.onnx import ort as onnx_ort
from models.onnx.graph import MAX_IMAGE_ELEMENTS, OPSET_MAX, OPSET_MIN, OnnxImportError, check_opsets
from models.onnx.importer import import_onnx
from tests.helpers import FIXTURES, ROOT
from tests.test_onnx_import import sac_model, small_bnn_model

FILES = sorted(FIXTURES.glob("*.onnx")) + sorted((ROOT / "models" / "zoo").glob("*.onnx"))
ALLOC_LIMIT = 32 << 20  # bytes numpy may allocate while refusing an absurd declaration


def deterministic(examples: int = 100):
    """hypothesis settings of this file: the same examples on every run, no deadline."""
    return settings(deadline=None, derandomize=True, database=None, max_examples=examples)


def _ort_loads(version: int) -> bool:
    """Whether onnxruntime opens a one-node Relu model stamped with this default-domain opset."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "probe", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", version)])
    so = ort.SessionOptions()
    so.log_severity_level = 4
    try:
        ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001 - onnxruntime's errors share no base class but Exception
        return False
    return True


def _ort_max_opset() -> int:
    version = OPSET_MIN
    while version < 1000 and _ort_loads(version + 1):
        version += 1
    return version


ORT_MAX_OPSET = _ort_max_opset()  # probed when this module is imported, not by the tool


def _with_opset(model, version, domain=""):
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid(domain, version))
    return model


def _assert_imports_equal_to_ort(model):
    net = import_onnx(model)
    x = np.random.default_rng(0).integers(0, 256, (8, *net.input_shape)).astype(np.uint8)
    scores = golden.run(net, x).scores
    got = onnx_ort.run(model, net, x)[0].reshape(scores.shape)
    assert np.array_equal(got, scores.astype(np.float32))


def _small_dense(version):
    """x [N, 4] -> Gemm(+-1 weights, bias) -> y: an operator of every opset."""
    w = numpy_helper.from_array(np.array([[1, -1, 1, -1], [1, 1, 1, 1]], np.float32), "w")
    b = numpy_helper.from_array(np.array([0, 1], np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc", transB=1)],
        "dense",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
        initializer=[w, b],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", version)])


# ---------------------------------------------------------------------------------------------
# opsets and domains
# ---------------------------------------------------------------------------------------------
def test_opset_range_is_what_onnxruntime_runs():
    """OPSET_MAX is the newest opset the installed onnxruntime opens (and onnx knows)."""
    assert OPSET_MAX == ORT_MAX_OPSET, (OPSET_MAX, ORT_MAX_OPSET, ort.__version__)
    assert onnx.defs.onnx_opset_version() >= OPSET_MAX
    assert not _ort_loads(OPSET_MAX + 1)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_project_files_use_supported_opsets(path):
    model = onnx.load(str(path), load_external_data=False)
    check_opsets(model, str(path))
    assert all(OPSET_MIN <= o.version <= OPSET_MAX for o in model.opset_import if o.domain in ("", "ai.onnx"))


@pytest.mark.parametrize("version", range(9, OPSET_MAX + 1))
def test_every_supported_opset_imports_as_onnxruntime_runs_it(version):
    """The BNN pattern (Where needs opset 9) and the SAC pattern (Clip and ReduceSum inputs
    need 13) at every opset of the range, both spellings of the default domain."""
    domains = ["", "ai.onnx"][:: 1 if version % 2 else -1]
    _assert_imports_equal_to_ort(_with_opset(small_bnn_model(), version, domains[0]))
    if version >= 13:
        _assert_imports_equal_to_ort(_with_opset(sac_model(), version, domains[1]))


@deterministic()
@given(
    version=st.integers(OPSET_MAX + 1, 2**62),
    domain=st.sampled_from(["", "ai.onnx"]),
    family=st.sampled_from(["bnn", "sac"]),
)
def test_opsets_newer_than_onnxruntime_runs_are_refused(version, domain, family):
    model = _with_opset(small_bnn_model() if family == "bnn" else sac_model(), version, domain)
    with pytest.raises(
        OnnxImportError,
        match=rf"opset {version} of the default domain "
        rf"'ai.onnx' is not supported .*{OPSET_MIN}\.\."
        rf"{OPSET_MAX}",
    ):
        import_onnx(model)


def test_opsets_older_than_onnxruntime_guarantees_are_refused():
    assert isinstance(import_onnx(_small_dense(OPSET_MIN), input_range="binary"), ir.Network)
    for version in range(1, OPSET_MIN):
        with pytest.raises(
            OnnxImportError,
            match=rf"dense: opset {version} of the default "
            rf"domain 'ai.onnx' is not supported",
        ):
            import_onnx(_small_dense(version), input_range="binary")


def test_a_second_default_domain_entry_is_checked_too():
    model = small_bnn_model()
    model.opset_import.append(helper.make_opsetid("ai.onnx", OPSET_MAX + 1))
    with pytest.raises(OnnxImportError, match=f"opset {OPSET_MAX + 1} of the default domain"):
        import_onnx(model)


@pytest.mark.parametrize("domain", ["com.microsoft", "org.example.custom", "ai.onnx.ml"])
def test_nodes_of_other_domains_are_refused(domain, tmp_path):
    """A custom operator named like a standard one (com.microsoft's Gemm) must not be lowered
    as the standard one."""
    model = small_bnn_model()
    model.opset_import.append(helper.make_opsetid(domain, 3))
    next(n for n in model.graph.node if n.op_type == "Gemm").domain = domain
    path = tmp_path / "custom.onnx"
    onnx.save(model, str(path))
    with pytest.raises(OnnxImportError, match=r"custom.onnx: .*") as info:
        import_onnx(path)
    if domain != "ai.onnx.ml":  # onnx.checker knows that domain and rejects the Gemm first
        assert f"node 'fc' (Gemm): domain {domain!r} (opset 3) is not supported" in str(info.value)


def test_an_unused_import_of_another_domain_is_harmless():
    model = small_bnn_model()
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    assert isinstance(import_onnx(model), ir.Network)


# ---------------------------------------------------------------------------------------------
# metadata
# ---------------------------------------------------------------------------------------------
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=8,
)
RAW = st.text(max_size=30) | st.sampled_from(
    ["{", "[1, 2", "[" * 5000, "9" * 5000, "NaN", "", "binary", "int", "a\nb", "x" * 300]
)
KEYS = [
    "workbench.sac_groups",
    "workbench.input_range",
    "workbench.input_kind",
    "workbench.network",
    "workbench.layer_outputs",
]


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _valid(key, text):
    """What export_onnx writes for `key` (the rules the importer checks)."""
    if key == "workbench.input_kind":
        return text in ("uint8", "binary")  # "int" needs an input range too
    if key == "workbench.network":
        return 0 < len(text) <= 200 and text.isprintable()
    try:
        v = json.loads(text)
    except (ValueError, RecursionError):
        return False
    if key == "workbench.sac_groups":
        return isinstance(v, dict) and all(_is_int(g) and 1 <= g <= MAX_GROUP for g in v.values())
    if key == "workbench.input_range":
        return (
            isinstance(v, list) and len(v) == 2 and all(map(_is_int, v)) and -(2**31) <= v[0] <= v[1] < 2**31
        )
    return isinstance(v, list) and all(isinstance(n, str) for n in v)


def _with_meta(model, key, text):
    props = {p.key: p.value for p in model.metadata_props}
    props[key] = text
    del model.metadata_props[:]
    helper.set_model_props(model, props)
    return model


@deterministic(300)
@given(
    key=st.sampled_from(KEYS),
    family=st.sampled_from(["bnn", "sac"]),
    text=st.one_of(JSON.map(json.dumps), RAW),
)
def test_metadata_of_any_type_imports_or_names_the_key(key, family, text):
    model = _with_meta(small_bnn_model() if family == "bnn" else sac_model(), key, text)
    try:
        net = import_onnx(model)
    except OnnxImportError as exc:
        named = f"metadata {key} = " in str(exc)
        assert named != _valid(key, text), str(exc)
        return
    assert isinstance(net, ir.Network) and _valid(key, text)


@pytest.mark.parametrize(
    "key,text,why",
    [
        ("workbench.sac_groups", "[1, 2]", "not a JSON object"),
        ("workbench.sac_groups", '{"acc": "2"}', "group size of 'acc' is '2'"),
        ("workbench.sac_groups", '{"acc": true}', "group size of 'acc' is True"),
        ("workbench.sac_groups", '{"acc": 2.0}', "group size of 'acc' is 2.0"),
        ("workbench.sac_groups", '{"acc": 9}', "not an integer in 1..8"),
        ("workbench.sac_groups", "null", "not a JSON object"),
        ("workbench.input_range", '{"lo": 0, "hi": 255}', "not a JSON list of two integers"),
        ("workbench.input_range", '["0", "255"]', "not a JSON list of two integers"),
        ("workbench.input_range", "[0.0, 255.0]", "not a JSON list of two integers"),
        ("workbench.input_range", "[false, true]", "not a JSON list of two integers"),
        ("workbench.input_range", "[0, 99999999999999999999]", "not an int32 interval"),
        ("workbench.input_range", "[5, 1]", "not an int32 interval"),
        ("workbench.input_range", "[0, 255", "not valid JSON"),
        ("workbench.input_range", "9" * 5000, "not valid JSON"),
        ("workbench.input_range", "[" * 100000, "not valid JSON"),
        ("workbench.input_kind", "pixels", "not one of int, uint8, binary"),
        ("workbench.input_kind", "int", "integer input needs workbench.input_range"),
        ("workbench.network", "two\nlines", "printable"),
        ("workbench.network", "", "printable"),
        ("workbench.layer_outputs", '{"a": 1}', "not a JSON list of tensor names"),
        ("workbench.layer_outputs", "[1, 2]", "not a JSON list of tensor names"),
    ],
)
def test_bad_metadata_names_the_file_and_key(key, text, why, tmp_path):
    path = tmp_path / "meta.onnx"
    onnx.save(_with_meta(sac_model(), key, text), str(path))
    with pytest.raises(OnnxImportError) as info:
        import_onnx(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: metadata {key} = ") and why in msg and "\n" not in msg, msg


def test_good_metadata_is_used():
    model = _with_meta(
        _with_meta(sac_model(), "workbench.sac_groups", '{"acc": 1}'), "workbench.network", "my net"
    )
    net = import_onnx(model)
    assert net.name == "my net" and net.layers[1].weights.group == 1
    model = _with_meta(
        _with_meta(small_bnn_model(), "workbench.input_kind", "int"), "workbench.input_range", "[-3, 3]"
    )
    assert import_onnx(model).meta["input_range"] == [-3, 3]


# ---------------------------------------------------------------------------------------------
# input shapes
# ---------------------------------------------------------------------------------------------
def _set_input_dims(model, dims):
    shape = model.graph.input[0].type.tensor_type.shape
    del shape.dim[:]
    for d in dims:
        dim = shape.dim.add()
        if isinstance(d, str):
            dim.dim_param = d
        elif d is not None:
            dim.dim_value = d
    return model


def _peak_while(fn):
    """(exception or None, peak bytes traced while fn runs)."""
    tracemalloc.start()
    try:
        fn()
        raised = None
    except OnnxImportError as exc:
        raised = exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return raised, peak


BAD_DIM = st.one_of(st.integers(-(2**62), 0), st.sampled_from(["H", None]))


@deterministic(150)
@given(
    family=st.sampled_from(["bnn", "sac"]),
    pos=st.integers(1, 3),
    bad=BAD_DIM,
    batch=st.sampled_from(["N", None, 1, 4]),
)
def test_bad_input_dimensions_are_refused_naming_the_input(family, pos, bad, batch):
    """Zero, negative, symbolic or unknown sizes of a non-batch axis."""
    model = small_bnn_model() if family == "bnn" else sac_model()
    dims = [batch] + [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim[1:]]
    dims[pos] = bad
    shown = str(["?" if d is None or isinstance(d, str) else d for d in dims])
    with pytest.raises(OnnxImportError) as info:
        import_onnx(_set_input_dims(model, dims))
    assert f"input 'x' has shape {shown}: dimension {pos} is " in str(info.value)


@pytest.mark.parametrize(
    "dims,why",
    [
        ([0, 1, 8, 8], "batch dimension 0 is not positive"),
        ([-2, 1, 8, 8], "batch dimension -2 is not positive"),
        (["N"], "needs [N, C, H, W] (or [N, K])"),
        ([], "needs [N, C, H, W] (or [N, K])"),
        (["N", 1, 100000, 100000], f"10000000000 elements per image, more than {MAX_IMAGE_ELEMENTS}"),
        (["N", 2**62, 2**62, 1], "elements per image, more than"),
    ],
)
def test_absurd_input_shapes_are_refused_without_allocating(dims, why):
    model = _set_input_dims(small_bnn_model(), dims)
    raised, peak = _peak_while(lambda: import_onnx(model))
    assert raised is not None and why in str(raised), raised
    assert peak < ALLOC_LIMIT, peak


def test_a_huge_input_of_a_zoo_model_is_refused_quickly():
    model = onnx.load(str(ROOT / "models" / "zoo" / "bnn_digits.onnx"))
    _set_input_dims(model, ["N", 1, 100000, 100000])
    raised, peak = _peak_while(lambda: import_onnx(model))
    assert "input 'input' has shape ['?', 1, 100000, 100000]" in str(raised)
    assert peak < ALLOC_LIMIT, peak


def test_a_layer_output_beyond_the_limit_is_refused_before_its_ranges_exist():
    """4096 x 4096 pixels are allowed; 64 channels of them after the first Conv are not."""
    model = onnx.load(str(ROOT / "models" / "zoo" / "bnn_digits.onnx"))
    _set_input_dims(model, ["N", 1, 4096, 4096])
    raised, peak = _peak_while(lambda: import_onnx(model))
    assert "its output [64, 4096, 4096] holds 1073741824 elements per image" in str(raised)
    assert peak < ALLOC_LIMIT, peak


def test_slicing_the_step_tables_and_range_sums_changes_nothing(monkeypatch):
    """The step tables (columns per onnxruntime call) and the range sums (rows per block) are
    computed in slices to bound memory; tiny slices give the same network, bracketed wide
    ranges included."""
    from models.onnx import ranges, steps

    path = FIXTURES / "hepbnn_cudatest.onnx"
    whole = [import_onnx(path, input_range=(-40000, 40000)), import_onnx(path)]
    monkeypatch.setattr(steps, "MAX_EVAL", 7)
    monkeypatch.setattr(ranges, "ROW_BLOCK", 5)
    sliced = [import_onnx(path, input_range=(-40000, 40000)), import_onnx(path)]
    for a, b in zip(whole, sliced, strict=True):
        for la, lb in zip(a.layers, b.layers, strict=True):
            if isinstance(la, ir.Step):
                assert np.array_equal(la.threshold, lb.threshold)
                assert np.array_equal(la.direction, lb.direction)


# ---------------------------------------------------------------------------------------------
# initializers and Constant tensors
# ---------------------------------------------------------------------------------------------
def _break_w1(model, how):
    t = next(t for t in model.graph.initializer if t.name == "w1")
    values = numpy_helper.to_array(t).ravel().tolist()
    if how == "dims_huge":
        t.dims[0] = 2**40
    elif how == "dims_more":
        t.dims[3] = 4
    elif how == "dims_fewer":
        t.dims[0] = 2
    elif how == "dims_negative":
        t.dims[0] = -4
    elif how == "raw_short":
        t.raw_data = t.raw_data[:-4]
    elif how == "raw_long":
        t.raw_data = t.raw_data + b"\0" * 4
    elif how == "raw_odd":
        t.raw_data = t.raw_data + b"\0"
    elif how.startswith("typed_"):
        t.ClearField("raw_data")
        t.float_data.extend({"typed_short": values[:-1], "typed_long": values + [1.0]}.get(how, values))
        if how == "typed_huge":
            t.dims[0] = 2**40
    elif how == "external":
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        t.external_data.add(key="location", value="w1.bin")
    elif how == "COMPLEX64":
        t.CopyFrom(numpy_helper.from_array(np.asarray(values, np.complex64).reshape(t.dims), "w1"))
    else:
        t.data_type = getattr(TensorProto, how)
    return model


@pytest.mark.parametrize(
    "how,why",
    [
        ("dims_fewer", "shape [2, 1, 3, 3] needs 72 bytes of 4-byte elements, the data holds 144"),
        ("raw_long", "shape [4, 1, 3, 3] needs 144 bytes of 4-byte elements, the data holds 148"),
        ("raw_odd", "needs 144 bytes of 4-byte elements, the data holds 145"),
        ("typed_long", "shape [4, 1, 3, 3] needs 36 values, the data holds 37"),
        ("COMPLEX64", "element type COMPLEX64 is not supported"),
        ("INT4", "element type INT4 is not supported"),
        ("FLOAT8E4M3FN", "element type FLOAT8E4M3FN is not supported"),
        # onnx.checker's own size and type checks (they name the tensor too)
        ("dims_huge", "(tensor name: w1) raw_data size (144 bytes) is too small"),
        ("dims_more", "(tensor name: w1) raw_data size (144 bytes) is too small"),
        ("dims_negative", "Negative dimension value (tensor name: w1)"),
        ("raw_short", "(tensor name: w1) raw_data size (140 bytes) is too small"),
        ("typed_short", "(tensor name: w1) float_data size (35) is too small"),
        ("typed_huge", "(tensor name: w1) float_data size (36) is too small"),
        ("STRING", "STRING data (tensor name: w1)"),
        ("UNDEFINED", "(tensor name: w1) to UNDEFINED is not allowed"),
        ("external", "tensor name: w1) should be stored in w1.bin, but it is not regular file"),
    ],
)
def test_initializers_whose_data_is_not_their_shape_are_refused(how, why):
    model = _break_w1(small_bnn_model(), how)
    raised, peak = _peak_while(lambda: import_onnx(model))
    assert raised is not None and why in str(raised), raised
    if "tensor name" not in why:
        assert str(raised).startswith("small: initializer 'w1': "), raised
    assert peak < ALLOC_LIMIT, peak


def test_external_data_that_was_not_loaded_is_refused(tmp_path, monkeypatch):
    """A ModelProto loaded without its external data (the file exists, so onnx.checker
    passes) is refused rather than read as an empty tensor."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "w1.bin").write_bytes(b"\0" * 144)
    with pytest.raises(
        OnnxImportError,
        match=r"^small: initializer 'w1': its data is in an "
        r"external file that was not loaded$",
    ):
        import_onnx(_break_w1(small_bnn_model(), "external"))


def test_a_constant_node_whose_data_is_not_its_shape_is_refused():
    def constant_bias(nodes):
        t = helper.make_tensor("b1c", TensorProto.FLOAT, [4], [0.0] * 4)
        t.dims[0] = 2  # more data than declared (onnx.checker only finds too little)
        return [
            helper.make_node("Constant", [], ["b1c"], name="bias_const", value=t),
            helper.make_node(
                "Conv", ["x", "w1", "b1c"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]
            ),
        ] + nodes[1:]

    model = small_bnn_model(extra=constant_bias)
    raised, peak = _peak_while(lambda: import_onnx(model))
    assert str(raised) == (
        "small: node 'bias_const' (Constant): value: shape [2] needs 2 values, the data holds 4"
    ), raised
    assert peak < ALLOC_LIMIT, peak


# ---------------------------------------------------------------------------------------------
# random mutations of the project's files: OnnxImportError or a network, nothing else
# ---------------------------------------------------------------------------------------------
BASES = [onnx.load(str(p)) for p in FILES] + [small_bnn_model(), sac_model()]
ATTR_VALUES = st.one_of(
    st.integers(-3, 2**40),
    st.floats(-1e3, 1e3),
    st.sampled_from(["x", "NOTSET", "constant"]),
    st.lists(st.integers(-2, 4), min_size=1, max_size=8),
    st.lists(st.floats(-2, 2), min_size=1, max_size=3),
)
ATTR_NAMES = [
    "axis",
    "to",
    "pads",
    "group",
    "keepdims",
    "axes",
    "blocksize",
    "transB",
    "epsilon",
    "min",
    "max",
    "mode",
    "kernel_shape",
    "strides",
    "start",
    "end",
    "allowzero",
    "training_mode",
    "dilations",
    "ceil_mode",
]
ELEM_TYPES = [
    TensorProto.FLOAT,
    TensorProto.INT8,
    TensorProto.INT64,
    TensorProto.DOUBLE,
    TensorProto.BOOL,
    TensorProto.FLOAT16,
    TensorProto.UINT8,
    TensorProto.STRING,
    TensorProto.BFLOAT16,
    TensorProto.INT4,
    TensorProto.COMPLEX64,
    TensorProto.FLOAT8E4M3FN,
    TensorProto.UINT64,
]
META = {
    "workbench.sac_groups": ['{"a": 1}', "[1, 2]", "null", '{"x": 9}'],
    "workbench.input_range": ["[0, 255]", "[1.5, 3]", "{", "[true, 2]", "[-5, 5]"],
    "workbench.input_kind": ["binary", "int", "uint8", "[1]"],
    "workbench.network": ["n", "a\nb", ""],
    "workbench.layer_outputs": ["[]", "[1]", "x"],
}


def _pick(data, items):
    """One of `items`, drawn by index (so a failing example prints a number, not a tensor)."""
    return items[data.draw(st.integers(0, len(items) - 1))]


def _array(t):
    """The tensor's values, or None once an earlier mutation broke it."""
    try:
        return numpy_helper.to_array(t)
    except ValueError:
        return None


def _mutate_attribute(data, m):
    node = _pick(data, m.graph.node)
    if node.attribute and data.draw(st.booleans()):
        del node.attribute[data.draw(st.integers(0, len(node.attribute) - 1))]
        return
    name = data.draw(st.sampled_from([a.name for a in node.attribute] + ATTR_NAMES))
    kept = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend(kept + [helper.make_attribute(name, data.draw(ATTR_VALUES))])


def _mutate_inputs(data, m):
    node = _pick(data, m.graph.node)
    names = (
        ["", "nope", m.graph.input[0].name]
        + [t.name for t in m.graph.initializer][:6]
        + [o for n in m.graph.node for o in n.output][:10]
    )
    if not node.input or data.draw(st.booleans()):
        node.input.append(data.draw(st.sampled_from(names)))
    elif data.draw(st.booleans()):
        node.input[data.draw(st.integers(0, len(node.input) - 1))] = data.draw(st.sampled_from(names))
    else:
        del node.input[data.draw(st.integers(0, len(node.input) - 1))]


def _mutate_initializer(data, m):
    if not m.graph.initializer:
        return
    t = _pick(data, m.graph.initializer)
    how = data.draw(st.sampled_from(["astype", "type", "dim", "truncate", "reshape"]))
    a = _array(t)
    if how == "astype" and a is not None:
        dtype = helper.tensor_dtype_to_np_dtype(data.draw(st.sampled_from(ELEM_TYPES[:7])))
        with np.errstate(invalid="ignore", over="ignore"):
            t.CopyFrom(numpy_helper.from_array(a.astype(dtype), t.name))
    elif how == "type":
        t.data_type = data.draw(st.sampled_from(ELEM_TYPES))
    elif how == "dim" and t.dims:
        t.dims[data.draw(st.integers(0, len(t.dims) - 1))] = data.draw(
            st.sampled_from([0, 1, 2, 3, 7, 2**40])
        )
    elif how == "truncate":
        t.raw_data = t.raw_data[: data.draw(st.integers(0, 8))]
    elif how == "reshape" and a is not None:
        t.CopyFrom(numpy_helper.from_array(a.reshape(-1)[: data.draw(st.integers(0, 3))], t.name))


def _mutate_input(data, m):
    dims = m.graph.input[0].type.tensor_type.shape.dim
    if not dims:
        return
    d = dims[data.draw(st.integers(0, len(dims) - 1))]
    how = data.draw(st.integers(0, 4))
    if how == 4:
        m.graph.input[0].type.tensor_type.elem_type = data.draw(st.integers(0, 100))
    elif how == 0:
        d.dim_value = data.draw(st.sampled_from([0, -1, 1, 3, 28, 784, 2**40]))
    elif how == 1:
        d.dim_param = "s"
    elif how == 2:
        d.Clear()
    else:
        dims.remove(d)


def _mutate_metadata(data, m):
    key = data.draw(st.sampled_from(sorted(META)))
    _with_meta(m, key, data.draw(st.sampled_from(META[key])))


def _mutate_opset(data, m):
    if data.draw(st.booleans()):
        m.opset_import[0].version = data.draw(
            st.sampled_from([6, 7, 9, 11, 13, 18, OPSET_MAX, OPSET_MAX + 1])
        )
    else:
        node = _pick(data, m.graph.node)
        node.domain = data.draw(st.sampled_from(["com.microsoft", "ai.onnx"]))
        m.opset_import.append(helper.make_opsetid(node.domain, 1))


def _mutate_op_type(data, m):
    node = _pick(data, m.graph.node)
    node.op_type = data.draw(
        st.sampled_from(
            [
                "Relu",
                "Conv",
                "Gemm",
                "Greater",
                "Where",
                "MaxPool",
                "Reshape",
                "Flatten",
                "Cast",
                "Identity",
                "Squeeze",
                "Slice",
                "Gather",
                "Pad",
                "Clip",
                "ReduceSum",
                "Div",
                "Floor",
                "BatchNormalization",
                "SpaceToDepth",
                "Dropout",
                "Softmax",
            ]
        )
    )


MUTATIONS = [
    _mutate_attribute,
    _mutate_inputs,
    _mutate_initializer,
    _mutate_input,
    _mutate_metadata,
    _mutate_opset,
    _mutate_op_type,
]


@deterministic(400)
@given(
    data=st.data(),
    base=st.integers(0, len(BASES) - 1),
    mutations=st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=3),
)
def test_mutated_models_import_or_raise_the_projects_error(data, base, mutations):
    """Attributes removed or of another type, node inputs renamed, added or removed,
    initializers of another type or size, input shapes, metadata, opsets, domains and operator
    names changed: import_onnx gives a network or an OnnxImportError, never another
    exception."""
    m = onnx.ModelProto()
    m.CopyFrom(BASES[base])
    for mutate in mutations:
        mutate(data, m)
    try:
        net = import_onnx(m)
    except OnnxImportError as exc:
        assert "\n" not in str(exc), str(exc)
        return
    assert isinstance(net, ir.Network)
