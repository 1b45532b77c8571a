"""The input scale: pixels x S before the network (docs/conventions.md, "Network input").

`compare --input-scale S` and the ONNX metadata `workbench.input_scale` (export writes it, import
reads it, the flag overrides it); the scaled pixels are floor(p * S + 1/2); a whole S in front of
an IntConv2d and a Step is folded into them, exactly; bad scales are one line and exit 2; a run
in which a layer gives every image the same output is warned about."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from models import golden, ir
from models.datasets import fashion_dir
from models.onnx import export_onnx, import_onnx
from models.onnx.export import ExportError
from models.onnx.graph import OnnxImportError
from models.onnx.input_scale import (
    MAX_INPUT_SCALE,
    META_SCALE,
    check_scale,
    fold_input_scale,
    input_range_for,
    scale_pixels,
)
from workbench.commands import compare as compare_script

ROOT = Path(__file__).resolve().parents[1]
HEPBNN = ROOT / "tests" / "fixtures" / "hepbnn_fashion.onnx"
ZOO = ROOT / "models" / "zoo"
needs_fashion = pytest.mark.skipif(
    not (fashion_dir() / "t10k-images-idx3-ubyte.gz").exists()
    and not (fashion_dir() / "t10k-images-idx3-ubyte").exists(),
    reason="Fashion-MNIST (dataset-fashion-mnist, make setup) is not installed",
)
# HEP-BNN's model on 40 real test images, nothing through the RTL: a few seconds
HEPBNN_RUN = ["--data", "fashion", "--images", "40", "--rtl-images", "0"]


def compare(args, tmp_path, capsys, name="out"):
    out = tmp_path / name
    code = compare_script.main([*map(str, args), "--out", str(out)])
    captured = capsys.readouterr()
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else None
    lines = [ln for ln in captured.err.splitlines() if ": warning: " in ln or ": note: " in ln]
    return code, report, captured, lines


def with_scale_metadata(tmp_path, value: str, name="scaled.onnx") -> Path:
    """The HEP-BNN fixture with workbench.input_scale = value (the file otherwise as published)."""
    model = onnx.load(str(HEPBNN))
    onnx.helper.set_model_props(model, {META_SCALE: value})
    path = tmp_path / name
    onnx.save(model, str(path))
    return path


# -- the convention ---------------------------------------------------------------------------
def test_scaled_pixels_are_rounded_half_up_and_exact_for_a_whole_scale():
    p = np.array([0, 1, 2, 3, 127, 254, 255], dtype=np.uint8)
    half = scale_pixels(p, 0.5)
    assert half.dtype == np.uint8 and half.tolist() == [0, 1, 1, 2, 64, 127, 128]
    full = scale_pixels(p, 255)
    assert full.dtype == np.int32 and full.tolist() == [int(v) * 255 for v in p]
    assert scale_pixels(p, 1.5).tolist() == [0, 2, 3, 5, 191, 381, 383]  # 1.5 -> 2, 4.5 -> 5
    assert scale_pixels(p, 1).dtype == np.uint8 and scale_pixels(p, 1).tolist() == p.tolist()
    assert input_range_for(255) == (0, 65025)
    assert input_range_for(0.5) == input_range_for(1) == (0, 255)  # uint8 input
    assert input_range_for(1.5) == (0, 383)
    with pytest.raises(ValueError, match="0..255"):
        scale_pixels(np.array([256]), 2)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), MAX_INPUT_SCALE + 1, True, "2"])
def test_a_scale_is_a_positive_finite_number(bad):
    with pytest.raises(ValueError, match="input scale must be"):
        check_scale(bad)
    assert check_scale(255.0) == 255 and isinstance(check_scale(255.0), int)


def small_int_network(scale: int, seed: int = 0) -> ir.Network:
    """IntConv2d + Step on integer input 0..255 * scale, thresholds on and next to the values
    S * c + b the scaled pixels give, both directions; then a binary dense layer."""
    rng = np.random.default_rng(seed)
    f = 6
    weight = rng.choice([-1, 1], size=(f, 1, 3, 3))
    bias = rng.integers(-5, 6, size=f)
    c = rng.integers(-300, 300, size=f)
    threshold = scale * c + bias + rng.integers(-1, 2, size=f)  # on, one below, one above
    direction = rng.choice([-1, 1], size=f)
    layers = [
        ir.IntConv2d(weight=weight, bias=bias, padding=1),
        ir.Step(threshold=threshold, direction=direction),
        ir.Flatten(),
        ir.BinDense(weight=rng.choice([-1, 1], size=(4, f * 25)), bias=np.zeros(4, int)),
    ]
    net = ir.Network((1, 5, 5), "int", layers, name="scaled")
    net.meta.update(input_range=[0, 255 * scale], input_scale=scale)
    return net


@pytest.mark.parametrize("scale", [2, 3, 255])
def test_folding_a_whole_scale_equals_scaling_the_pixels(scale):
    net = small_int_network(scale)
    folded = fold_input_scale(net, scale)
    assert folded.input_kind == "uint8" and folded.meta["input_scale_folded"] == scale
    assert "input_scale" not in folded.meta
    rng = np.random.default_rng(1)
    pixels = rng.integers(0, 256, size=(400, 1, 5, 5)).astype(np.uint8)
    pixels[0], pixels[1] = 0, 255  # the extremes
    want = golden.run(net, scale_pixels(pixels, scale))
    got = golden.run(folded, pixels)
    for i in range(1, len(net.layers)):  # layer 0 is the conv on the pixels, by design
        np.testing.assert_array_equal(got.outputs[i], want.outputs[i], err_msg=f"layer {i}")
    assert len(np.unique(want.outputs[1].reshape(len(pixels), -1), axis=0)) > 1  # not constant


def test_what_is_not_folded():
    net = small_int_network(3)
    assert fold_input_scale(net, 1) is None  # nothing to fold
    assert fold_input_scale(net, 2.5) is None  # rounding is not linear
    narrow = small_int_network(3)
    narrow.meta["input_range"] = [0, 255]  # its steps are not exact for 3 * pixels
    assert fold_input_scale(narrow, 3) is None


# -- ONNX metadata ----------------------------------------------------------------------------
def test_metadata_round_trip_export_import(tmp_path):
    net = import_onnx(HEPBNN, input_scale=255)
    assert net.input_kind == "int" and net.meta["input_range"] == [0, 65025]
    assert net.meta["input_scale"] == 255
    path = tmp_path / "hepbnn_x255.onnx"
    export_onnx(net, path)
    props = {p.key: p.value for p in onnx.load(str(path)).metadata_props}
    assert props[META_SCALE] == "255" and props["workbench.input_range"] == "[0, 65025]"
    again = import_onnx(path)
    assert again.meta["input_scale"] == 255 and again.meta["input_range"] == [0, 65025]
    # a fractional scale, written by export for a network on uint8 pixels
    small = import_onnx(ZOO / "bnn_digits.onnx")
    export_onnx(small, tmp_path / "half.onnx", input_scale=0.5)
    assert import_onnx(tmp_path / "half.onnx").meta["input_scale"] == 0.5
    # files without the key (the fixture, the zoo) carry no scale, and export writes none
    assert "input_scale" not in import_onnx(HEPBNN).meta
    assert META_SCALE not in {p.key for p in export_onnx(small).metadata_props}
    # a folded network takes the pixels: it is exported without a scale
    folded = fold_input_scale(again, 255)
    assert META_SCALE not in {p.key for p in export_onnx(folded).metadata_props}


def test_export_refuses_a_scale_outside_the_proven_range():
    small = import_onnx(ZOO / "bnn_digits.onnx")
    with pytest.raises(ExportError, match="the scaled pixels reach 65025"):
        export_onnx(small, input_scale=255)
    with pytest.raises(ExportError, match="input scale must be a positive"):
        export_onnx(small, input_scale=-1)


def test_the_argument_overrides_the_metadata(tmp_path):
    path = with_scale_metadata(tmp_path, "255")
    assert import_onnx(path).meta["input_range"] == [0, 65025]
    over = import_onnx(path, input_scale=2)
    assert over.meta["input_scale"] == 2 and over.meta["input_range"] == [0, 510]
    assert "input_scale" not in import_onnx(path, input_range=(0, 255)).meta  # the caller's input
    with pytest.raises(OnnxImportError, match="not both"):
        import_onnx(path, input_range=(0, 255), input_scale=2)


@pytest.mark.parametrize(
    "value", ["0", "-3", "NaN", "Infinity", "1e400", '"255"', "[255]", "true", "x", "9e9"]
)
def test_bad_metadata_is_refused_naming_the_key(value, tmp_path):
    with pytest.raises(OnnxImportError, match=f"metadata {META_SCALE} = "):
        import_onnx(with_scale_metadata(tmp_path, value))


# -- the compare command ----------------------------------------------------------------------
@needs_fashion
def test_the_flag_changes_the_accuracy_and_the_warning_goes(tmp_path, capsys):
    code, plain, _, lines = compare(["--model", HEPBNN, *HEPBNN_RUN], tmp_path, capsys, "plain")
    assert code == 0 and plain["input_scale"]["scale"] is None
    assert len(lines) == 1 and len(plain["warnings"]) == 1
    assert lines[0].startswith(
        "sacbench compare: warning: layer 1 (Step 64 ch) gives every one of the 40 images"
    )
    assert "--input-scale" in lines[0]
    code, scaled, captured, lines = compare(
        ["--model", HEPBNN, *HEPBNN_RUN, "--input-scale", "255"], tmp_path, capsys, "scaled"
    )
    assert code == 0 and lines == [] and scaled["warnings"] == []
    assert scaled["input_scale"]["scale"] == 255 and scaled["input_scale"]["source"] == "--input-scale"
    assert scaled["input_scale"]["applied"].startswith("folded into layers 0 and 1")
    assert "pixels x 255 (--input-scale)" in scaled["data"] and "pixels x 255" in captured.out
    acc, before = scaled["accuracy"], plain["accuracy"]
    assert acc["golden"] == acc["gpu"] == acc["fpga"] >= 0.6 > 0.2 >= before["golden"]
    assert scaled["mismatches"]["fpga"] == 0 and scaled["mismatches"]["gpu"] == 0


@needs_fashion
def test_the_model_carries_its_scale_and_the_flag_overrides_it(tmp_path, capsys):
    path = with_scale_metadata(tmp_path, "255")
    code, own, _, lines = compare(["--model", path, *HEPBNN_RUN], tmp_path, capsys, "own")
    assert code == 0 and own["input_scale"]["scale"] == 255
    assert own["input_scale"]["source"] == f"model metadata ({META_SCALE})"
    assert lines == [f"sacbench compare: note: input scale 255 from the model metadata ({META_SCALE})"]
    code, over, _, lines = compare(
        ["--model", path, *HEPBNN_RUN, "--input-scale", "1"], tmp_path, capsys, "over"
    )
    assert code == 0 and over["input_scale"] == {
        "scale": 1,
        "source": "--input-scale",
        "applied": "images: pixels x S, rounded half up",
    }
    assert over["accuracy"]["golden"] < own["accuracy"]["golden"]
    assert len(lines) == 1 and "check the input scale 1 (--input-scale)" in lines[0]


def test_a_scale_applied_to_the_images_runs_every_path(tmp_path, capsys):
    """0.5 is not folded: the images are the rounded halves, uint8, on every path."""
    code, r, _, _ = compare(
        ["--model", ZOO / "bnn_digits.onnx", "--images", "6", "--rtl-images", "0", "--input-scale", "0.5"],
        tmp_path,
        capsys,
    )
    assert code == 0 and r["input_scale"]["applied"].startswith("images")
    assert r["mismatches"]["fpga"] == 0 and r["mismatches"]["gpu"] == 0


@pytest.mark.parametrize(
    "model, scale, message",
    [
        (HEPBNN, "255.5", "input scale 255.5 (--input-scale): the scaled pixels reach 65,153"),
        (
            ZOO / "sac_digits.onnx",
            "2",
            "but its input is int (imported with --input-scale 2)",
        ),  # PointwiseConv
    ],
)
def test_a_scale_the_array_cannot_take_is_refused_before_any_path_runs(
    model, scale, message, tmp_path, capsys
):
    code, _, captured, _ = compare(["--model", model, "--input-scale", scale], tmp_path, capsys)
    err = captured.err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0], captured.err
    assert "batch/s" not in captured.err  # the GPU path did not start


@pytest.mark.parametrize("value", ["0", "-2", "nan", "inf", "-inf", "abc", "1e308", ""])
def test_bad_flag_values_are_one_line_and_exit_2(value, tmp_path, capsys):
    code, _, captured, _ = compare(["--model", HEPBNN, "--input-scale", value], tmp_path, capsys)
    err = captured.err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--input-scale" in err[0], captured.err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["0", "NaN", '"x"'])
def test_bad_metadata_is_one_line_and_exit_2(value, tmp_path, capsys):
    path = with_scale_metadata(tmp_path, value)
    code, _, captured, _ = compare(["--model", path, "--data", "random:1", "--images", "2"], tmp_path, capsys)
    err = captured.err.strip().splitlines()
    assert code == 2 and len(err) == 1 and f"metadata {META_SCALE} = " in err[0], captured.err
