"""The compare job (`sacbench compare`, scripts/compare_gpu_fpga.py) end to end: every zoo model
and the HEP-BNN fixture through the golden executor, the GPU kernels (CPU emulation here) and the
FPGA path (1 image on the RTL under Verilator, the rest on the interpreter) with zero mismatches
and a well-formed report; a corrupted output is reported with a non-zero exit; bad arguments and
files give clear errors; the report directory appears whole or not at all; without a GPU the
GPU column (mapping and times) is modelled, the same in every run."""

import errno
import json
from pathlib import Path

import pytest

from workbench import report as report_module
from workbench.commands import compare as compare_script

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "models" / "zoo"
FIXTURE = ROOT / "tests" / "fixtures" / "hepbnn_fashion.onnx"

REPORT_KEYS = {
    "model",
    "images",
    "rtl_images",
    "accuracy",
    "gpu_backend",
    "mismatches",
    "fpga",
    "gpu",
    "mapping",
}


def run(args, tmp_path):
    out = tmp_path / "out"
    code = compare_script.main([*map(str, args), "--out", str(out)])
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else None
    return code, report, out


@pytest.mark.parametrize(
    "model, data, gpu",
    [
        (ZOO / "bnn_digits.onnx", "digits", True),
        (ZOO / "sac_digits.onnx", "digits", False),
        (FIXTURE, "random:3", True),
    ],
)
def test_end_to_end_zero_mismatches(model, data, gpu, tmp_path):
    code, r, out = run(
        [
            "--model",
            model,
            "--data",
            data,
            "--images",
            "6",
            "--rtl-images",
            "1",
            "--batch",
            "4",
            "--save-outputs",
        ],
        tmp_path,
    )
    assert code == 0
    assert set(r) >= REPORT_KEYS
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
    for name in ("report.md", "layer_times.png", "fpga_cycles.png", "outputs/golden.npy", "outputs/fpga.npy"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "outputs" / "gpu.npy").exists() == gpu


@pytest.mark.parametrize("path", ["gpu", "fpga"])
def test_corrupted_output_is_a_mismatch(path, tmp_path, capsys):
    code, r, _ = run(
        ["--model", ZOO / "bnn_digits.onnx", "--images", "3", "--rtl-images", "0", "--inject-fault", path],
        tmp_path,
    )
    assert code == 1
    assert r["mismatches"][path] == 1
    last = r["mismatches"]["layers"][-1][path]
    assert last["count"] == 1 and last["first"] == [0, 0]
    captured = capsys.readouterr()
    assert "MISMATCH" in captured.err and "first at (0, 0)" in captured.out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model", "missing.onnx"], "model file missing.onnx not found"),
        (["--model", ZOO / "bnn_digits.onnx", "--array", "8by8"], "--array must look like ROWSxCOLS"),
        (["--model", ZOO / "bnn_digits.onnx", "--data", "/no/such/data"], "no such file or directory"),
        (["--model", FIXTURE, "--images", "2"], "expects input 1x28x28"),
        (["--model", ROOT / "README.md"], "not a readable ONNX file"),
        (["--model", ZOO / "bnn_digits.onnx", "--images", "0"], "--images must be at least 1"),
        (["--model", ZOO / "bnn_digits.onnx", "--clock-mhz", "0"], "--clock-mhz must be positive"),
    ],
)
def test_bad_arguments_and_files(args, message, tmp_path, capsys):
    code, _, out = run(args, tmp_path)
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_argparse_errors(capsys):
    assert compare_script.main(["--model", "x.onnx", "--sim", "xyz"]) == 2
    assert "invalid choice: 'xyz'" in capsys.readouterr().err
    assert compare_script.main([]) == 2
    assert "the following arguments are required: --model" in capsys.readouterr().err


# quick runs: random images (no data set to load), no RTL
SMALL = ["--model", ZOO / "sac_digits.onnx", "--data", "random:1", "--images", "2", "--rtl-images", "0"]


def test_gpu_column_is_modelled_and_the_same_in_every_run(tmp_path, capsys):
    """No GPU: the emulation checks the kernels, the mapping and times come from the model, so
    a second run (here: the GPU path alone) gives the same column."""
    from gpu_kernels import cuda_available
    from workbench.compare import Options, load_data, load_model, run_gpu

    if cuda_available():
        pytest.skip("a GPU is present: the GPU column is measured")
    model = ZOO / "bnn_digits.onnx"
    code, r, out = run(
        ["--model", model, "--data", "random:1", "--images", "3", "--rtl-images", "0"], tmp_path
    )
    assert code == 0 and r["gpu"]["times"] == "modelled" and "modelled" in r["gpu"]["profile"]
    text = capsys.readouterr().out
    assert "mapping and times modelled for an H200" in text and "(modelled)" in text
    md = (out / "report.md").read_text()
    assert "| | FPGA | GPU (modelled) |" in md and "not from measurements" in md
    opts = Options(model=model, data="random:1", images=3, progress=False)
    net = load_model(model)
    again = json.loads(json.dumps(run_gpu(net, load_data(opts, net)[0], opts).info, default=str))
    for key in ("impls", "latency_ms_per_batch", "images_per_s", "layer_s", "mapping"):
        assert r["gpu"][key] == again[key], key


# -- the report directory: whole or not at all -----------------------------------------------
def earlier_report(tmp_path) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.json").write_text('{"old": true}\n')
    (out / "report.md").write_text("old\n")
    return out


def assert_untouched(tmp_path, out):
    assert json.loads((out / "report.json").read_text()) == {"old": True}
    assert sorted(p.name for p in out.iterdir()) == ["report.json", "report.md"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temporary sibling


def test_existing_report_is_refused_without_force(tmp_path, capsys):
    out = earlier_report(tmp_path)
    code, _, _ = run(SMALL, tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "give --force to replace it as a whole" in err[0]
    assert_untouched(tmp_path, out)


def test_force_replaces_the_report_as_a_whole(tmp_path):
    out = earlier_report(tmp_path)
    code, r, _ = run([*SMALL, "--force"], tmp_path)
    assert code == 0 and r["images"] == 2
    assert sorted(p.name for p in out.iterdir()) == [
        ".sacbench.json",
        "fpga_cycles.png",
        "layer_times.png",
        "report.json",
        "report.md",
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


@pytest.mark.parametrize(
    "fault, code, words",
    [
        (KeyboardInterrupt(), 130, "sacbench compare: interrupted (SIGINT)"),
        (
            OSError(errno.ENOSPC, "No space left on device", "layer_times.png"),
            3,
            "sacbench compare: error: disk full writing layer_times.png; nothing half-written was kept",
        ),
        (
            RuntimeError("matplotlib broke"),
            3,
            "sacbench compare: error: internal error: "
            "RuntimeError: matplotlib broke (--debug shows the traceback)",
        ),
    ],
)
def test_a_fault_while_writing_the_report_leaves_the_earlier_one(
    fault, code, words, tmp_path, capsys, monkeypatch
):
    """Ctrl-C, a full disk or a crash after report.json is written and before the plots."""

    def broken(*_):
        raise fault

    monkeypatch.setattr(report_module, "write_plots", broken)
    out = earlier_report(tmp_path)
    got, _, _ = run([*SMALL, "--force"], tmp_path)
    err = capsys.readouterr().err.strip().splitlines()
    assert got == code and err[-1] == words and "Traceback" not in "".join(err)
    assert_untouched(tmp_path, out)


def test_leftovers_of_a_killed_run_are_cleared(tmp_path):
    """SIGKILL leaves the staged sibling (and, between the two renames, the previous directory
    moved aside): the next run removes the one and puts the other back."""
    from safeio import StagedDirectory

    dead = 2**22 + 1  # above the largest pid Linux allows: no process
    staged = tmp_path / f".out.tmp-{dead}-abc"
    staged.mkdir()
    (staged / "report.json").write_text("{}")
    aside = tmp_path / f".out.old-{dead}-abc"
    aside.mkdir()
    (aside / "report.json").write_text('{"old": true}\n')
    with pytest.raises(ValueError, match="give --force"), StagedDirectory(tmp_path / "out"):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert json.loads((tmp_path / "out" / "report.json").read_text()) == {"old": True}


def test_debug_shows_the_traceback_of_an_internal_error(tmp_path, capsys, monkeypatch):
    def broken(*_):
        raise RuntimeError("matplotlib broke")

    monkeypatch.setattr(report_module, "write_plots", broken)
    assert compare_script.main([*map(str, SMALL), "--out", str(tmp_path / "o"), "--debug"]) == 3
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "matplotlib broke" in err
