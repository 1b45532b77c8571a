"""The compare job (`sacbench compare`, scripts/compare_gpu_fpga.py) end to end: every zoo model
and the HEP-BNN fixture through the golden executor, the GPU kernels (CPU emulation here) and the
FPGA path (1 image on the RTL under Verilator, the rest on the interpreter) with zero mismatches
and a well-formed report; a corrupted output is reported with a non-zero exit; bad arguments and
files give clear errors."""
import json
from pathlib import Path

import pytest

from workbench.commands import compare as compare_script

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "models" / "zoo"
FIXTURE = ROOT / "tests" / "fixtures" / "hepbnn_fashion.onnx"

REPORT_KEYS = {"model", "images", "rtl_images", "accuracy", "gpu_backend", "mismatches", "fpga",
               "gpu", "mapping"}


def run(args, tmp_path):
    out = tmp_path / "out"
    code = compare_script.main([*map(str, args), "--out", str(out)])
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else None
    return code, report, out


@pytest.mark.parametrize("model, data, gpu", [
    (ZOO / "bnn_digits.onnx", "digits", True),
    (ZOO / "sac_digits.onnx", "digits", False),
    (FIXTURE, "random:3", True),
])
def test_end_to_end_zero_mismatches(model, data, gpu, tmp_path):
    code, r, out = run(["--model", model, "--data", data, "--images", "6", "--rtl-images", "1",
                        "--batch", "4", "--save-outputs"], tmp_path)
    assert code == 0
    assert REPORT_KEYS <= set(r)
    assert r["images"] == 6 and r["rtl_images"] == 1
    assert r["mismatches"]["fpga"] == 0
    assert r["fpga"]["rtl"]["sim"] == "verilator" and r["fpga"]["rtl"]["cycles_match_model"]
    assert r["fpga"]["rtl"]["cycles"] == [r["fpga"]["cycles_per_image"]]
    for key in ("cycles_per_image", "latency_ms", "images_per_s", "energy_uj_per_image"):
        assert r["fpga"][key] > 0
    if gpu:
        assert r["mismatches"]["gpu"] == 0 and r["gpu_backend"] in ("emulation", "cupy")
        for key in ("batch", "latency_ms_per_batch", "images_per_s"):
            assert r["gpu"][key] > 0
    else:
        assert r["gpu_backend"] == "n/a" and r["mismatches"]["gpu"] is None
    if data == "digits":
        assert 0.5 <= r["accuracy"]["golden"] <= 1 and r["accuracy"]["fpga"] == r["accuracy"]["golden"]
    assert len(r["mapping"]) == len(r["mismatches"]["layers"])
    for name in ("report.md", "layer_times.png", "fpga_cycles.png", "outputs/golden.npy",
                 "outputs/fpga.npy"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "outputs" / "gpu.npy").exists() == gpu


@pytest.mark.parametrize("path", ["gpu", "fpga"])
def test_corrupted_output_is_a_mismatch(path, tmp_path, capsys):
    code, r, _ = run(["--model", ZOO / "bnn_digits.onnx", "--images", "3", "--rtl-images", "0",
                      "--inject-fault", path], tmp_path)
    assert code == 1
    assert r["mismatches"][path] == 1
    last = r["mismatches"]["layers"][-1][path]
    assert last["count"] == 1 and last["first"] == [0, 0]
    captured = capsys.readouterr()
    assert "MISMATCH" in captured.err and "first at (0, 0)" in captured.out


@pytest.mark.parametrize("args, message", [
    (["--model", "missing.onnx"], "model file missing.onnx not found"),
    (["--model", ZOO / "bnn_digits.onnx", "--array", "8by8"], "--array must look like ROWSxCOLS"),
    (["--model", ZOO / "bnn_digits.onnx", "--data", "/no/such/data"], "no such file or directory"),
    (["--model", FIXTURE, "--images", "2"], "expects input 1x28x28"),
    (["--model", ROOT / "README.md"], "not a readable ONNX file"),
    (["--model", ZOO / "bnn_digits.onnx", "--images", "0"], "--images must be at least 1"),
    (["--model", ZOO / "bnn_digits.onnx", "--clock-mhz", "0"], "--clock-mhz must be positive"),
])
def test_bad_arguments_and_files(args, message, tmp_path, capsys):
    code, _, _ = run(args, tmp_path)
    assert code == 2
    assert message in capsys.readouterr().err


def test_argparse_errors(capsys):
    with pytest.raises(SystemExit) as e:
        compare_script.main(["--model", "x.onnx", "--sim", "xyz"])
    assert e.value.code == 2 and "invalid choice: 'xyz'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        compare_script.main([])
