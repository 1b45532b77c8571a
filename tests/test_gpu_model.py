"""The modelled GPU profile (gpu_kernels/gpu_model.py) against the layer times measured on an H200
(docs/measurements/h200_2026-12-04/layer_times.json): the calibration constants are the fit of
those measurements, and with them whole runs land within 2x of what was measured (without them
5-12x short)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_kernels import gpu_model
from gpu_kernels.configs import CONFIGS
from gpu_kernels.layer_ops import prepare
from models.random_networks import network_from_spec

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks" / "gpu_model_accuracy.py"


@pytest.fixture(scope="module")
def samples():
    return gpu_model.load_samples()


def run_totals(samples, calibrated):
    totals = {}
    for s in samples:
        family, t = gpu_model.raw_sample_s(s)
        t *= gpu_model.calibration(family) if calibrated else 1.0
        tot = totals.setdefault((s["net"], s["word_bits"], s["run"]), [0.0, 0.0])
        tot[0] += s["seconds"]
        tot[1] += t
    return {k: m / t for k, (m, t) in totals.items()}


def test_the_constants_are_the_fit_of_the_stored_measurements(samples):
    assert len(samples) >= 500
    fit, every = gpu_model.fit_calibration(samples)
    assert fit == gpu_model.CALIBRATION
    assert every == gpu_model.CALIBRATION_OTHER


def test_calibrated_runs_are_within_2x_of_the_measured_ones_and_raw_ones_are_not(samples):
    calibrated = run_totals(samples, calibrated=True)
    raw = run_totals(samples, calibrated=False)
    assert len(calibrated) >= 40
    off = {k: r for k, r in calibrated.items() if not 0.5 <= r <= 2.0}
    assert not off, f"measured / modelled outside 0.5..2: {off}"
    assert all(r > 4 for r in raw.values())  # what the calibration corrected


@pytest.mark.parametrize("spec", ["fashion", "cifar10"])
def test_calibration_keeps_the_models_choice_of_configuration_per_layer(spec):
    ops = prepare(network_from_spec(spec), 64)
    for op in ops:
        if op.kernel is None:
            continue
        raw = {c: gpu_model.raw_kernel_s(op, 1024, c) for c in CONFIGS}
        cal = {c: gpu_model.kernel_s(op, 1024, c) for c in CONFIGS}
        ok = [c for c in CONFIGS if raw[c] is not None]
        assert min(ok, key=raw.get) == min(ok, key=cal.get), op.label


def test_an_unmeasured_kernel_family_gets_the_overall_factor(monkeypatch):
    ops = prepare(network_from_spec("fashion"), 64)
    pool = next(op for op in ops if op.kernel and gpu_model.kernel_family(op) == "maxpool2x2")
    raw = gpu_model.raw_kernel_s(pool, 256, "XY")
    assert gpu_model.kernel_s(pool, 256, "XY") == pytest.approx(raw * gpu_model.CALIBRATION["maxpool2x2"])
    monkeypatch.delitem(gpu_model.CALIBRATION, "maxpool2x2")  # as if never measured
    assert gpu_model.kernel_s(pool, 256, "XY") == pytest.approx(raw * gpu_model.CALIBRATION_OTHER)


def test_the_benchmark_reports_and_agrees_with_the_code():
    out = subprocess.run([sys.executable, str(BENCH)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr
    assert "calibrated whole runs: measured / modelled" in out.stdout


def test_adding_a_run_refits_and_bad_input_is_one_line(tmp_path):
    data = tmp_path / "times.json"
    run = tmp_path / "gpu_bnn_fashion.json"
    layers = [{"device": "gpu", "impl": "XY", "seconds": 0.002, "layer": "x"}] * 10
    run.write_text(
        json.dumps(
            {
                "images": 1000,
                "profile_source": "measured: cupy (NVIDIA H200)",
                "runs": [
                    {
                        "name": "dp",
                        "batch": 512,
                        "wall_s": 0.01,
                        "result": {"backend": "cupy", "word_bits": 64, "layers": layers},
                    }
                ],
            }
        )
    )
    out = subprocess.run(
        [sys.executable, str(BENCH), "--data", str(data), "--add", "fashion", "64", str(run)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == 1  # one made-up run: not the code's fit
    assert "added 10 layer times of 1 runs" in out.stdout and "CALIBRATION = {" in out.stdout
    assert len(gpu_model.load_samples(data)) == 10
    for args, message in [
        (["--add", "fashion", "16", str(run)], "WORD_BITS must be 32 or 64"),
        (["--add", "fashion", "64", str(tmp_path / "none.json")], "none.json"),
        (["--data", str(tmp_path / "missing.json")], "no measurements"),
    ]:
        bad = subprocess.run(
            [sys.executable, str(BENCH), "--data", str(data), *args]
            if "--data" not in args
            else [sys.executable, str(BENCH), *args],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=300,
        )
        assert bad.returncode == 2, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1 and message in bad.stderr
    emulated = tmp_path / "emulated.json"
    emulated.write_text(run.read_text().replace("measured: cupy", "measured: emulation"))
    bad = subprocess.run(
        [sys.executable, str(BENCH), "--data", str(data), "--add", "fashion", "64", str(emulated)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert bad.returncode == 2 and "not measured on a GPU" in bad.stderr
