"""The benchmark scripts run end to end on tiny inputs (their numbers come from full runs, see
docs/gpu.md); the GPU one through the emulation, whose timings are not GPU timings."""
import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import needs_gxx

REPO = Path(__file__).resolve().parents[1]
pytestmark = needs_gxx


def test_gpu_benchmark_smoke_on_emulation(tmp_path):
    out = subprocess.run([sys.executable, "benchmarks/gpu_bnn.py", "--backend", "emulation",
                          "--shapes", "fashion", "--images", "5", "--fashion-exp", "1", "2",
                          "--repeats", "1", "--warmup", "0", "--check", "3", "--out", str(tmp_path)],
                         capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads((tmp_path / "gpu_bnn.json").read_text())["shapes"]["fashion"]
    names = {r["name"] for r in res["runs"]}
    assert {"algorithm1", "dp", "cpu-only", "all-X", "all-XYZ"} <= names
    assert res["all_exact"] and res["target_met"] is None          # emulation: no verdict
    assert (tmp_path / "heatmap_fashion.png").exists() and (tmp_path / "mapping_fashion.json").exists()


def test_cpu_benchmark_smoke(tmp_path):
    out = subprocess.run([sys.executable, "benchmarks/bnn_cpu.py", "--images", "60", "--batch", "25",
                          "--repeats", "1", "--check", "20", "--json", str(tmp_path / "b.json")],
                         capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "every layer equal" in out.stdout
    assert "PyTorch float32 scores vs golden on 20 images: equal" in out.stdout
    res = json.loads((tmp_path / "b.json").read_text())
    assert res["exact_vs_golden"] and res["ratio"] > 0
