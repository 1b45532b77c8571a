"""scripts/gpu_check.sh here, without a GPU: every early exit (no CuPy, no NVRTC, a driver too
old, no device, a compile error, kernels that cannot take the default block, wrong results, a
phase out of time) ends within seconds with its documented exit status, one clear line and
JSON under OUT; and the whole path runs through a fake CuPy (tests/fake_cupy) whose kernels are
the CPU emulation. Every run uses the Python of this venv with tests/import_blocker on
PYTHONPATH, which refuses torch, onnx, onnxruntime, cocotb, scikit-learn, scipy, ray, ...:
what the GPU machine's own Python (numpy, CuPy, pytest) sees."""

import json
import os
import re
import subprocess
import sys
import time

import pytest

from gpu_kernels.kernel_table import KERNELS
from tests.helpers import HAVE_GXX, ROOT, needs_gxx

BLOCKER = ROOT / "tests" / "import_blocker"
FAKE_CUPY = ROOT / "tests" / "fake_cupy"
SCRIPT = ROOT / "scripts" / "gpu_check.sh"


def run_check(tmp_path, mode=None, env_extra=None, timeout=240):
    """gpu_check.sh OUT with a fake CuPy in `mode` (None: no CuPy at all)."""
    out = tmp_path / "out"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GPU_CHECK_", "FAKE_CUPY", "BLOCKED_IMPORTS", "PYTHONPATH"))
    }
    env.update(
        GPU_CHECK_PYTHON=sys.executable,
        CUPY_CACHE_DIR=str(tmp_path / "cupy_cache"),
        PYTHONPATH=os.pathsep.join(map(str, [BLOCKER] + ([FAKE_CUPY] if mode else []))),
        BLOCKED_IMPORTS_LOG=str(tmp_path / "refused.txt"),
    )
    if mode:
        env["FAKE_CUPY_MODE"] = mode
    else:
        env["BLOCKED_IMPORTS_EXTRA"] = "cupy"  # absent even where a real one is installed
    env.update(env_extra or {})
    t0 = time.monotonic()
    proc = subprocess.run(
        ["bash", str(SCRIPT), str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    return proc, out, time.monotonic() - t0


def load(out, name):
    return json.loads((out / name).read_text())


EARLY_EXITS = [
    # (fake CuPy mode, exit status, the line that says why)
    (None, 3, "CuPy cannot be imported (ModuleNotFoundError"),
    ("no_nvrtc", 5, "NVRTC is not usable (RuntimeError: CuPy failed to load libnvrtc.so.13"),
    ("old_driver", 4, "the CUDA driver supports CUDA 12.4, older than CuPy's runtime (CUDA 13.0)"),
    ("no_device", 4, "no usable CUDA device: cudaErrorNoDevice"),
    (
        "compile_error",
        5,
        "the kernel module does not compile: NVRTC could not build the kernels (CompileException)",
    ),
    ("few_threads", 6, "bin_conv3x3/w32, bin_conv3x3/w64 cannot run blocks of the default 256"),
    ("wrong_results", 6, "differs from the golden model"),
]


@pytest.mark.parametrize("mode, code, reason", EARLY_EXITS, ids=[str(e[0]) for e in EARLY_EXITS])
def test_early_exit_is_fast_clear_and_recorded(tmp_path, mode, code, reason):
    if mode in ("few_threads", "wrong_results") and not HAVE_GXX:
        pytest.skip("the fake's kernels are the emulation, which needs g++")
    proc, out, seconds = run_check(tmp_path, mode)
    text = proc.stdout
    assert proc.returncode == code, text[-3000:] + proc.stderr[-2000:]
    assert seconds < 60
    assert "[preflight] python" in text
    if mode:  # versions come first, whatever fails after
        assert re.search(
            r"\[preflight\] CuPy 14\.2\.0\+fake, CUDA driver \S+ \(\d+\), CUDA runtime "
            r"13\.0 \(13000\), NVRTC ",
            text,
        )
    stop = [line for line in text.splitlines() if line.startswith("[preflight] STOP: ")]
    assert len(stop) == 1 and reason in stop[0], stop
    assert "Traceback" not in text + proc.stderr
    pre = load(out, "preflight.json")
    assert pre["exit_code"] == code and pre["status"] == "failed" and reason in pre["error"]
    summary = load(out, "gpu_check.json")
    assert summary["exit_code"] == code and [p["name"] for p in summary["phases"]] == ["preflight"]
    assert f"exit {code} after" in text


def test_a_phase_out_of_time_stops_with_status_7(tmp_path):
    """NVRTC that never returns: the preflight's timeout ends it; versions were printed first."""
    proc, out, seconds = run_check(tmp_path, "slow_compile", {"GPU_CHECK_PREFLIGHT_S": "6"})
    assert proc.returncode == 7, proc.stdout[-3000:]
    assert seconds < 40
    text = proc.stdout
    assert text.index("CUDA runtime 13.0") < text.index("compiling the kernel module")
    summary = load(out, "gpu_check.json")
    assert summary["phases"][0]["status"] == "timeout" and summary["status"] == "a phase ran out of time"


def test_usage(tmp_path):
    proc = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2 and "usage: scripts/gpu_check.sh OUT" in proc.stderr


def test_budgets_fit_eight_minutes():
    """Every phase's default budget fits the total, and the total (with each phase's kill grace
    and the summary's reserve) stays within 8 minutes."""
    text = SCRIPT.read_text()
    default = lambda name: int(re.search(rf"\${{{name}:-(\d+)}}", text).group(1))  # noqa: E731
    total = default("GPU_CHECK_TOTAL_S")
    reserve, grace = (int(re.search(rf"^{n}=(\d+)", text, re.M).group(1)) for n in ("RESERVE", "GRACE"))
    phases = [default(f"GPU_CHECK_{p}_S") for p in ("PREFLIGHT", "TESTS", "FASHION", "CIFAR10")]
    assert total <= 480 and sum(phases) <= total - reserve - grace
    assert min(phases[2:]) >= 60  # both benchmarks have time of their own


TRIAL = {
    "GPU_CHECK_IMAGES": "4",
    "GPU_CHECK_FASHION_EXP": "1 2",
    "GPU_CHECK_CIFAR10_EXP": "0 0",
    "GPU_CHECK_BENCH_ARGS": "--repeats 1 --warmup 0 --launches 1 --check 2 --max-run-s 0.3",
    "GPU_CHECK_FUSED_SHAPES": "fashion",  # the CIFAR-10 shape's fused kernels: 13 s more here
    "GPU_CHECK_PYTEST_K": (
        "cupy-dense or cupy-flatten or padding_bits "
        "or test_fashion_network_on_gpu and X-32 or honour or largest or separates "
        "or every_run_fused_on_gpu and fashion_bnn-X-32"
    ),
}


@needs_gxx
def test_whole_check_through_the_fake_gpu(tmp_path):
    """All five phases, every result file, exit 0; the fake's kernels are the emulation, so the
    numbers are not GPU numbers: this checks the plumbing."""
    proc, out, seconds = run_check(tmp_path, "ok", TRIAL)
    text = proc.stdout
    assert proc.returncode == 0, text[-4000:] + proc.stderr[-2000:]
    # versions and every kernel's resources, before any test runs
    first_test = text.index("phase exactness")
    resources = text.index("bin_conv3x3/w32                 80        0       768")
    assert text.index("NVRTC 13.0") < resources < first_test
    for name in (
        "preflight.json",
        "pytest_gpu.xml",
        "gpu_bnn_fashion.json",
        "gpu_bnn_cifar10.json",
        "gpu_bnn.json",
        "gpu_check.json",
        "phases.tsv",
        "nvidia-smi.txt",
        "cupy_config.txt",
        "mapping_cifar10.json",
    ):
        assert (out / name).exists(), name
    pre = load(out, "preflight.json")
    assert pre["status"] == "ready" and len(pre["kernels"]) == len(KERNELS) == 39  # every instantiation
    assert pre["smoke"]["checks"] and pre["smoke"]["kernel_us"] > 0
    summary = load(out, "gpu_check.json")
    assert summary["exit_code"] == 0 and summary["status"] == "all exact"
    assert [(p["name"], p["status"]) for p in summary["phases"]] == [
        ("preflight", "ok"),
        ("exactness", "ok"),
        ("fashion", "ok"),
        ("cifar10", "ok"),
    ]
    assert all(p["seconds"] <= p["limit_s"] for p in summary["phases"])
    ex = summary["exactness"]
    assert ex["passed"] >= 8 and ex["failed"] == ex["errors"] == 0
    for shape in ("fashion", "cifar10"):
        b = summary["benchmarks"][shape]
        assert b["all_exact"] and b["best_wall_s"] > 0 and b["dp_wall_s"] > 0, (shape, b)
        assert b["target_met"] is None  # 4 images: no verdict on the target
    fashion = load(out, "gpu_bnn_fashion.json")
    assert [r["name"] for r in fashion["runs"]][:3] == ["dp", "all-XYZ", "dp-unfused"]
    # the benchmark ran with the fused kernels: each timed against its layers' kernels
    assert fashion["fused"] and "fused_error" not in fashion
    blocked = {"3-4/px2", "3-4/px4", "3-5/px2"}  # the binary runs' register-blocked kernels
    assert set(fashion["fused_kernels"]) == {"0-1", "0-2", "3-4", "3-5", "7-8"} | blocked
    b = summary["benchmarks"]["fashion"]
    assert b["fused_kernels"]["3-5"]["kernel"] == "bin_conv_step_pool_pack/w64" and b["dp_unfused_wall_s"], b
    assert b["fused_kernels"]["3-5/px2"]["kernel"] == "bin_conv_step_pool_pack_px2/w64"
    assert summary["benchmarks"]["cifar10"]["fused_kernels"] is None  # GPU_CHECK_FUSED_SHAPES
    assert "[gpu_check] fashion fused: dp" in text and "--backend cupy --fused --shapes fashion" in text
    assert len(pre["smoke"]["fused_checks"]) == 4 and pre["smoke"]["fused_problems"] == []
    assert any(r.get("gpu_kernel_s", 0) > 0 and r["gpu_host_s"] > 0 for r in fashion["runs"])
    assert "[gpu_check] fashion (4 images): best" in text and "[gpu_check] cifar10 (4 images)" in text
    refused = (tmp_path / "refused.txt").read_text().split() if (tmp_path / "refused.txt").exists() else []
    assert not {"torch", "onnx", "onnxruntime", "cocotb"} & {n.split(".")[0] for n in refused}, refused


def test_make_gpu_check_runs_no_setup():
    """`make gpu-check` on the GPU machine must not run `make setup` (apt-get, a venv, pip: no
    network there) nor need the venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    proc = subprocess.run(
        ["make", "--no-print-directory", "-n", "gpu-check", "OUT=/tmp/somewhere"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "scripts/gpu_check.sh /tmp/somewhere"


class StickyFaultGpu:
    """The emulation as a GPU after a faulting kernel: launching a fused kernel fails with an
    illegal address, and from then on every call fails too (CUDA's sticky errors)."""

    ERROR = "cudaErrorIllegalAddress: an illegal memory access was encountered"

    def __init__(self):
        from gpu_kernels.devices import EmulatedGpu

        self._gpu, self.broken = EmulatedGpu(), False

    def _check(self):
        if self.broken:
            raise RuntimeError(self.ERROR)

    def __getattr__(self, name):
        attr = getattr(self._gpu, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            self._check()
            return attr(*args, **kwargs)

        return call

    def prepare(self, key, launch, args):
        self._check()
        go = self._gpu.prepare(key, launch, args)
        if "_step_" not in key:  # not a fused kernel
            return go

        def fault():
            self.broken = True
            self._check()

        return fault


@needs_gxx
def test_a_faulting_fused_kernel_is_a_warning_of_the_preflight():
    """preflight's smoke test runs the fused kernels last: one that faults with a sticky error
    (every later call fails) leaves four warnings, after the ordinary runs and the timed launch
    have their results."""
    from gpu_kernels import preflight

    report = {}
    preflight.smoke(StickyFaultGpu(), report)
    smoke = report["smoke"]
    assert len(smoke["checks"]) == 14 and smoke["kernel_us"] > 0 and smoke["fused_checks"] == []
    assert len(smoke["fused_problems"]) == 4
    assert all(StickyFaultGpu.ERROR in p for p in smoke["fused_problems"])
    assert [w for w in report["warnings"] if StickyFaultGpu.ERROR in w] == smoke["fused_problems"]
