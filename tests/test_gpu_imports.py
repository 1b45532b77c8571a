"""What scripts/gpu_check.sh needs imports on the GPU machine's Python: numpy, CuPy and pytest,
without torch, onnx, onnxruntime, cocotb, scikit-learn, scipy, ray (simulated here by
tests/import_blocker on PYTHONPATH, which refuses them and logs every attempt), and without
tqdm or matplotlib where they are missing too."""

import json
import os
import subprocess
import sys

from tests.helpers import ROOT, needs_gxx

BLOCKER = ROOT / "tests" / "import_blocker"


def run(args, tmp_path, extra_blocked=""):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BLOCKED_IMPORTS", "PYTHONPATH"))}
    log = tmp_path / "refused.txt"
    env.update(
        PYTHONPATH=os.pathsep.join([str(BLOCKER), str(ROOT)]),
        BLOCKED_IMPORTS_LOG=str(log),
        BLOCKED_IMPORTS_EXTRA=extra_blocked,
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
    )
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True)
    refused = log.read_text().split() if log.exists() else []
    return proc, refused


IMPORT_ALL = """
import importlib, json, pkgutil, runpy, sys
import gpu_kernels
mods = sorted(m.name for m in pkgutil.walk_packages(gpu_kernels.__path__, "gpu_kernels."))
for m in mods:
    importlib.import_module(m)
for script in ("benchmarks/gpu_bnn.py",):
    runpy.run_path(script, run_name="not_main")
import tests.conftest, tests.helpers, tests.test_gpu_cupy
print(json.dumps(mods))
"""


def test_blocker_refuses_and_logs(tmp_path):
    proc, refused = run(["-c", "import torch"], tmp_path)
    assert proc.returncode != 0 and "refused: not on the GPU machine's Python" in proc.stderr
    assert refused == ["torch"]


def test_gpu_check_modules_import_without_torch_onnx_cocotb(tmp_path):
    """Every gpu_kernels module, the GPU benchmark and the CuPy tests import, and none of them
    even tries torch, onnx, onnxruntime, cocotb, scikit-learn, scipy or ray."""
    proc, refused = run(["-c", IMPORT_ALL], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    mods = json.loads(proc.stdout.splitlines()[-1])
    assert {
        "gpu_kernels.preflight",
        "gpu_kernels.check_summary",
        "gpu_kernels.runner",
        "gpu_kernels.mapper",
        "gpu_kernels.selfcheck",
    } <= set(mods)
    assert refused == [], refused


def test_cupy_tests_collect_with_numpy_and_pytest_only(tmp_path):
    proc, refused = run(
        ["-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests/test_gpu_cupy.py"],
        tmp_path,
        "tqdm,matplotlib,cupy",
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "tests collected" in proc.stdout or "collected" in proc.stdout
    assert not {"torch", "onnx", "onnxruntime"} & set(refused)


@needs_gxx
def test_benchmark_runs_without_tqdm_and_matplotlib(tmp_path):
    """The GPU benchmark end to end (on the emulation) with numpy alone: progress as plain
    lines, no heatmap, every result file else."""
    out = tmp_path / "out"
    proc, refused = run(
        [
            "benchmarks/gpu_bnn.py",
            "--backend",
            "emulation",
            "--shapes",
            "fashion",
            "--images",
            "3",
            "--fashion-exp",
            "1",
            "1",
            "--repeats",
            "1",
            "--warmup",
            "0",
            "--launches",
            "1",
            "--check",
            "2",
            "--max-run-s",
            "0.05",
            "--out",
            str(out),
        ],
        tmp_path,
        "tqdm,matplotlib",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "profiling fashion_bnn: 0/10 layer" in proc.stderr  # the plain progress lines
    assert (out / "gpu_bnn_fashion.json").exists() and not (out / "heatmap_fashion.png").exists()
    assert {"tqdm", "matplotlib"} <= {n.split(".")[0] for n in refused}
    assert not {"torch", "onnx", "onnxruntime"} & {n.split(".")[0] for n in refused}
