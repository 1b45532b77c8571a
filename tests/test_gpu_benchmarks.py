"""The benchmark scripts run end to end on tiny inputs (their numbers come from full runs, see
docs/gpu.md); the GPU one through the emulation, whose timings are not GPU timings."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import needs_gxx

REPO = Path(__file__).resolve().parents[1]
pytestmark = needs_gxx


FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")
SMALL = ["--backend", "emulation", "--repeats", "1", "--warmup", "0", "--launches", "1"]


def bench(*args, out):
    return subprocess.run(
        [sys.executable, "benchmarks/gpu_bnn.py", *SMALL, *args, "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )


def test_gpu_benchmark_smoke_on_emulation(tmp_path):
    out = bench(
        "--shapes", "fashion", "--images", "5", "--fashion-exp", "1", "2", "--check", "3", out=tmp_path
    )
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads((tmp_path / "gpu_bnn.json").read_text())["shapes"]["fashion"]
    assert res == json.loads((tmp_path / "gpu_bnn_fashion.json").read_text())
    runs = {r["name"]: r for r in res["runs"]}
    assert {"algorithm1", "dp", "cpu-only", "all-X", "all-XYZ"} <= set(runs)
    assert [r["name"] for r in res["runs"]][:3] == ["dp", "all-XYZ", "algorithm1"]  # priority
    assert res["all_exact"] and res["target_met"] is None  # emulation: no verdict
    assert res["dp_vs_all_xyz"] > 0 and runs["all-XYZ"]["gpu_host_s"] > 0
    assert runs["dp"]["accuracy"] is None and res["data"].startswith("random")
    # no GPU energy for emulated runs, and no energy window spent on them
    assert all(r["energy_j"] is None and r["energy_calls"] == 0 for r in runs.values() if "wall_s" in r)
    assert (tmp_path / "heatmap_fashion.png").exists() and (tmp_path / "mapping_fashion.json").exists()
    profile = json.loads((tmp_path / "mapping_fashion.json").read_text())["profile"]
    assert set(profile["host_s"]) == {"2", "4"}  # host issue times kept


def test_gpu_benchmark_with_the_warp_step_kernel(tmp_path):
    """--step-kernel warp: the profile and every run use step_pack_warp, exactly."""
    out = bench(
        "--shapes", "fashion", "--images", "3", "--fashion-exp", "1", "1", "--check", "3",
        "--step-kernel", "warp", out=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads((tmp_path / "gpu_bnn_fashion.json").read_text())
    assert res["step_kernel"] == "warp" and res["all_exact"]
    profile = json.loads((tmp_path / "mapping_fashion.json").read_text())["profile"]
    assert profile["meta"]["step_kernel"] == "warp"


def test_budget_leaves_out_batch_sizes_and_runs_then_stops(tmp_path):
    """A budget too small for anything but the first batch size: the larger one is left out,
    every full run is skipped for the budget, and the JSON says so."""
    out = bench(
        "--shapes", "fashion", "--images", "5", "--fashion-exp", "1", "2", "--budget-s", "0.2", out=tmp_path
    )
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads((tmp_path / "gpu_bnn_fashion.json").read_text())
    assert res["status"] == "done" and res["batch_sizes"] == [2] and res["batch_sizes_left_out"] == [4]
    assert all("of the budget left" in r["skipped"] for r in res["runs"] if "impls" in r and "batch" in r)
    assert res["best_run"] is None and res["all_exact"] is None
    assert "no full run fitted the budget" in out.stdout


@pytest.mark.skipif(not FASHION_DIR.exists(), reason="no Fashion-MNIST files here")
def test_real_images_report_accuracy(tmp_path):
    """--data: the Fashion-MNIST test images for both 1x28x28 networks (the random-parameter
    shape and the HEP-BNN ONNX model); accuracy over all images beside each run's time."""
    model = "tests/fixtures/hepbnn_fashion.onnx"
    out = bench(
        "--shapes",
        "fashion",
        model,
        "--images",
        "6",
        "--fashion-exp",
        "1",
        "1",
        "--exp",
        "1",
        "1",
        "--check",
        "2",
        "--max-run-s",
        "0.05",
        "--data",
        str(FASHION_DIR),
        out=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    shapes = json.loads((tmp_path / "gpu_bnn.json").read_text())["shapes"]
    assert set(shapes) == {"fashion", "hepbnn_fashion"}
    for res in shapes.values():
        assert res["data"].startswith(f"{FASHION_DIR} (test split, first 6 images)")
        done = [r for r in res["runs"] if "wall_s" in r]
        assert done and all(0.0 <= r["accuracy"] <= 1.0 for r in done)
    assert "accuracy" in out.stdout
    bad = bench("--shapes", "cifar10", "--images", "2", "--data", str(FASHION_DIR), out=tmp_path / "b")
    assert bad.returncode == 2 and "fits none of the shapes cifar10" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_cpu_benchmark_smoke(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "benchmarks/bnn_cpu.py",
            "--images",
            "60",
            "--batch",
            "25",
            "--repeats",
            "1",
            "--check",
            "20",
            "--json",
            str(tmp_path / "b.json"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "every layer equal" in out.stdout
    assert "PyTorch float32 scores vs golden on 20 images: equal" in out.stdout
    res = json.loads((tmp_path / "b.json").read_text())
    assert res["exact_vs_golden"] and res["ratio"] > 0


def _gpu_bnn_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_bnn_bench", REPO / "benchmarks" / "gpu_bnn.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_fused_kernels_are_compared_with_their_layers():
    """--fused's `fused_kernels`: per fused kernel (the register-blocked ones too) and batch
    size, its fastest configuration against the sum of its layers' fastest ones (kernel times;
    here the modelled profile's)."""
    from gpu_kernels.configs import CONFIGS
    from gpu_kernels.gpu_model import ModelledProfile
    from models.random_networks import fashion_bnn

    bench_mod = _gpu_bnn_module()
    prof = ModelledProfile(32, fused=True).profile(fashion_bnn(0), [256])
    times = bench_mod.fused_kernel_times(prof)
    assert set(times) == {"0-1", "0-2", "3-4", "3-4/px2", "3-4/px4", "3-5", "3-5/px2", "7-8"}
    assert times["3-5/px2"]["kernel"] == "bin_conv_step_pool_pack_px2/w32"  # the blocked kernels too
    r = times["3-5"]["batch"]["256"]
    row = prof.meta["fused_gpu"]["3-5"]["layer_s"]["256"]
    assert (r["fused_s"], r["fused_config"]) == min(zip(row, CONFIGS, strict=True))
    assert r["unfused_s"] == pytest.approx(sum(min(prof.layer_s[256][i]) for i in (3, 4, 5)))
    assert r["speedup"] == pytest.approx(r["unfused_s"] / r["fused_s"])
    assert times["7-8"]["kernel"] == "bin_dense_step_pack/w32"
    assert "layers   3-5 bin_conv_step_pool_pack/w32" in "\n".join(bench_mod.fused_lines(times, "modelled"))


def test_a_failing_fused_check_is_one_line_and_the_shape_goes_on(monkeypatch):
    """The benchmark's check of the network with every run fused: an exception (what a GPU
    could raise) becomes one line, which bench_shape records as fused_error before profiling
    without the fused kernels."""
    import argparse

    from models.random_networks import fashion_bnn, random_images

    bench_mod = _gpu_bnn_module()
    net = fashion_bnn(1)
    x = random_images(2, 2, net.input_shape)
    args = argparse.Namespace(backend="emulation", word_bits=32)
    assert bench_mod.fused_self_check(net, x, args) is None  # exact in the emulation

    class Broken:
        def __init__(self, *a, **k):
            raise RuntimeError("cudaErrorIllegalAddress: an illegal memory access\nmore")

    monkeypatch.setattr(bench_mod, "Runner", Broken)
    assert (
        bench_mod.fused_self_check(net, x, args)
        == "RuntimeError: cudaErrorIllegalAddress: an illegal memory access"
    )


def test_the_fused_check_runs_in_a_child_process(monkeypatch, tmp_path):
    """bench_shape checks the fused kernels in a child process (a faulting fused kernel's sticky
    CUDA error must not stop the benchmark): golden there gives None; a child that dies (here
    it aborts, as a process whose context is lost may) is one line recorded as fused_error, and
    the shape is benchmarked without the fused kernels, every run exact."""
    import argparse

    from models.random_networks import random_images

    bench_mod = _gpu_bnn_module()
    args = argparse.Namespace(backend="emulation", word_bits=32)
    x = random_images(2, 2, (1, 28, 28))
    print("seed: images 2")
    assert bench_mod.fused_self_check_isolated("fashion", x, args, 120) is None
    abort = [sys.executable, "-c", "import os; print('fused self check: {}'); os.abort()"]
    monkeypatch.setattr(bench_mod, "fused_check_command", lambda *a: abort)
    why = bench_mod.fused_self_check_isolated("fashion", x, args, 120)
    assert why.startswith("the fused self check's process ended with signal 6 and no result"), why
    argv = [*SMALL, "--fused", "--shapes", "fashion", "--images", "3", "--fashion-exp", "1", "1"]
    assert bench_mod.main([*argv, "--check", "3", "--out", str(tmp_path)]) == 0
    res = json.loads((tmp_path / "gpu_bnn_fashion.json").read_text())
    assert res["fused_error"] == why and "fused_kernels" not in res
    assert res["all_exact"] and not any(r.get("fused_gpu") for r in res["runs"])
