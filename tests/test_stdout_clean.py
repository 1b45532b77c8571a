"""stdout carries results only (README: `make demo > out.txt` holds the tables and the report
paths): progress, build and simulator output go to stderr or to log files, for `sacbench
train`, `sacbench search` and `make sim` / `sacbench sim`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

SACBENCH = Path(sys.executable).parent / "sacbench"
# what a progress bar, a build or a simulator prints
NOT_A_RESULT = re.compile(
    r"\d+%\|"  # tqdm
    r"|ep/s|it/s|epoch \d+/\d+"  # training progress
    r"|^\[search"  # the search's progress lines
    r"|make\[\d+\]|ccache|c\+\+ |Verilat|iverilog"  # a build
    r"|^\s*-?[\d.]+ns INFO|gpi_load_users|cocotb\.regression",  # a simulation (the cocotb log)
    re.M,
)


def assert_results_only(stdout: str) -> None:
    leaked = [line for line in stdout.splitlines() if NOT_A_RESULT.search(line)]
    assert not leaked, f"progress or tool output on stdout: {leaked[:5]}"


def test_the_check_sees_progress_and_tool_output():
    for line in (
        "float twin:  50%|#####     | 1/2 [00:01<00:01,  1.2ep/s]",
        "[search     3 s] sac_cycles_b6000_l1_s0: epoch 1/1, val 80.0%",
        "make[1]: Entering directory '/work/main/build/sim/sac_cell/.verilator-x'",
        "ccache c++ -O2 -I. -c -o verilated.o verilated.cpp",
        "     0.00ns INFO     cocotb.regression                  Running tests",
    ):
        with pytest.raises(AssertionError):
            assert_results_only(line)
    assert_results_only(
        "bnn digits: quantized test accuracy 73.08% (golden 73.08%), seed 0\n1 passed in 2.58s"
    )


def test_train_prints_progress_on_stderr_and_results_on_stdout(tmp_path):
    out = subprocess.run(
        [str(SACBENCH), "train", "--family", "bnn", "--quick", "--out", str(tmp_path / "m.onnx")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert_results_only(out.stdout)
    assert "quantized test accuracy" in out.stdout.strip().splitlines()[-1]
    assert "epoch 1/1" in out.stderr  # the progress is there, on stderr


def test_search_progress_goes_to_stderr(tmp_path, capsys, monkeypatch):
    """The search's own lines and whatever its trials print while they run in the Ray session
    (ray_backend.py's progress; here Ray Tune's fit is a stand-in that trains nothing) reach
    stderr; stdout holds the report."""
    from tests.test_search import SWEEP
    from workbench.commands.search import build_parser, main, options_from_args
    from workbench.search import ray_backend
    from workbench.search.trial import TrialConfig, run_trial

    args = [*SWEEP, "--out", str(tmp_path)]
    done, left = options_from_args(build_parser().parse_args(args), args).trial_configs()
    run_trial(TrialConfig(**{**done.__dict__, "export": False}), log=None)

    def fit(opts, todo, configs, t0):
        print(f"[search      1 s] {left.name}: epoch 1/1, val 10.0%", flush=True)
        return []

    monkeypatch.setattr(ray_backend, "init_ray", lambda opts, session, ray_tmp: None)
    monkeypatch.setattr(ray_backend, "fit", fit)
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert_results_only(out)
    assert f"{left.name}: epoch 1/1" in err and "[search] 2 trial(s) (1 already done" in err
    assert f"(1 trial(s) not finished: {left.name})" in out and "pareto.json" in out
    assert json.loads((tmp_path / "pareto.json").read_text())["unfinished"] == [left.name]
    # --collect-only: its listing of what has finished and what has not is its result (stdout)
    assert main([*args, "--collect-only"]) == 0
    out, err = capsys.readouterr()
    assert_results_only(out)
    listing = out.splitlines()[0]
    assert listing.startswith(f"2 trial(s) (1 already done in {tmp_path})"), out
    assert listing.endswith(f"; --collect-only: 1 not finished and not trained: {left.name}")
    assert "--collect-only" not in err


# -- the benches: builds to a log file, simulations to stderr ----------------------------------
class FakeRunner:
    """Stands in for cocotb's runner: a build that writes its tool output to the log."""

    def __init__(self, fail: bool):
        self.fail = fail

    def build(self, log_file, build_dir, **kwargs):
        Path(log_file).write_text(
            "make[1]: Entering directory\nccache c++ -c -o x.o x.cpp\nx.cpp:1: error: boom\n"
        )
        if self.fail:
            raise RuntimeError("Command failed with return code: 2")
        (Path(build_dir) / "sim").write_text("built")


def test_a_build_writes_its_output_to_a_log_and_a_failed_one_names_it(tmp_path, monkeypatch, capfd):
    from tb import sim

    monkeypatch.setattr(sim, "BUILD", tmp_path / "sim")
    monkeypatch.setattr(sim, "_runner", lambda _sim: FakeRunner(fail=False))
    bdir = sim.build("sac_cell", "icarus")
    out, err = capfd.readouterr()
    log = sim.build_log(bdir)
    assert out == "" and f"; log: {log})" in err and "ccache" not in err
    assert "ccache c++" in log.read_text() and (bdir / "sim").exists()
    monkeypatch.setattr(sim, "_runner", lambda _sim: FakeRunner(fail=True))
    with pytest.raises(RuntimeError, match=r"return code: 2\); its log: .*\.log"):
        sim.build("sac_cell", "icarus", {"X": 1})
    out, err = capfd.readouterr()
    assert out == "" and "x.cpp:1: error: boom" in err  # the log's last lines, on stderr
    failed = sim.build_log(sim.build_dir("sac_cell", "icarus", {"X": 1}))
    assert {p.name for p in failed.parent.iterdir()} == {log.name, failed.name}  # the failed one's stays


@pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog (make setup installs it)")
def test_the_runner_sends_tool_output_to_stderr(tmp_path, capfd):
    from tb import sim

    runner = sim._runner("icarus")
    runner.log_file = None
    runner._execute([["/bin/sh", "-c", "echo simulator says hello"]], cwd=tmp_path)
    out, err = capfd.readouterr()
    assert out == "" and "simulator says hello" in err


@pytest.mark.skipif(shutil.which("iverilog") is None, reason="no iverilog (make setup installs it)")
def test_sim_prints_only_the_report_on_stdout():
    """`make sim` runs `sacbench sim`: one small bench on Icarus, built if need be."""
    out = subprocess.run(
        [str(SACBENCH), "sim", "sac_cell", "--sim", "icarus"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert_results_only(out.stdout)
    assert "1 passed" in out.stdout and "cocotb.regression" in out.stderr
