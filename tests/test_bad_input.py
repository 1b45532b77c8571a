"""Bad input across the commands: every case gets its documented exit status and one
line on stderr naming the flag, file or value, no traceback, and leaves `--out` untouched.

Cases run in-process through each command's `main(argv)` (the same code the scripts and
`sacbench` run, exit-status wrapper included); a few run the scripts themselves as processes to
check that the status reaches the shell. The contract itself (workbench/commands/args.py) is
tested directly: what an internal error, Ctrl-C, SIGTERM or a full disk become. Simulator
faults are in tests/test_rtl_shards.py, report-directory faults in tests/test_compare.py."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.helpers import ROOT
from workbench import cli
from workbench.commands import args as contract
from workbench.commands import compare

SAC = str(ROOT / "models" / "zoo" / "sac_digits.onnx")
BNN = str(ROOT / "models" / "zoo" / "bnn_digits.onnx")
HEPBNN = str(ROOT / "tests" / "fixtures" / "hepbnn_fashion.onnx")


def tree(path) -> dict:
    """What is at `path`: every file under it with its bytes (None: nothing there)."""
    if not path.exists():
        return None
    if path.is_file():
        return {"": path.read_bytes()}
    return {
        str(p.relative_to(path)): p.read_bytes() if p.is_file() else b"dir" for p in sorted(path.rglob("*"))
    }


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got:\n{err}"
    assert "Traceback" not in err
    return lines[0]


# (flags after --model, expected exit status, words the line holds); {tmp} is a fresh temporary
# directory with a file `file` and an earlier report `report/` in it
COMPARE_CASES = [
    # numbers
    (["--clock-mhz", "nan"], 2, "--clock-mhz must be a finite number, got 'nan'"),
    (["--clock-mhz", "inf"], 2, "--clock-mhz must be a finite number, got 'inf'"),
    (["--clock-mhz", "1e308"], 2, "--clock-mhz must be at most 100000"),
    (["--clock-mhz", "0"], 2, "--clock-mhz must be positive"),
    (["--clock-mhz", "-170"], 2, "--clock-mhz must be positive"),
    (["--clock-mhz", "fast"], 2, "--clock-mhz must be a number, got 'fast'"),
    (["--clock-mhz", "5e-324"], 2, "--clock-mhz must be at least 0.001, got '5e-324'"),
    (["--clock-mhz", "1e-300"], 2, "--clock-mhz must be at least 0.001"),
    (["--images", "1_0"], 2, "--images must be a whole number, got '1_0'"),
    (["--images", "\u0663"], 2, "--images must be a whole number"),
    (
        ["--data", "random:1", "--images", "1000000000000"],
        2,
        "--images 1,000,000,000,000: sac_digits needs about",
    ),
    (["--address", "garbage"], 2, "--address must look like HOST:PORT"),
    (["--address", "127.0.0.1:1"], 2, "--address 127.0.0.1:1: cannot reach a Ray cluster there"),
    (["--images", "0"], 2, "--images must be at least 1, got 0"),
    (["--images", "-5"], 2, "--images must be at least 1, got -5"),
    (["--images", "2.5"], 2, "--images must be a whole number, got '2.5'"),
    (["--rtl-images", "-1"], 2, "--rtl-images must be at least 0"),
    (["--rtl-jobs", "0"], 2, "--rtl-jobs must be at least 1, got 0"),
    (["--rtl-timeout", "0"], 2, "--rtl-timeout must be positive"),
    (["--rtl-timeout", "nan"], 2, "--rtl-timeout must be a finite number"),
    (["--batch", "0"], 2, "--batch must be at least 1"),
    # choices and shapes
    (["--sim", "modelsim"], 2, "argument --sim: invalid choice: 'modelsim'"),
    (["--array", "8by8"], 2, "--array must look like ROWSxCOLS (e.g. 8x8), got '8by8'"),
    (["--array", "8x8x8"], 2, "--array must look like ROWSxCOLS"),
    (["--array", "0x8"], 2, "--array 0x8: rows and columns must be 1..255"),
    (["--array", "256x8"], 2, "rows and columns must be 1..255"),
    (["--address", " "], 2, "--address must name a Ray cluster"),
    (["--frobnicate"], 2, "unrecognized arguments: --frobnicate"),
    # data
    (["--data", "random:abc"], 2, "--data 'random:abc': the seed must be a whole number"),
    (["--data", "random:-1"], 2, "--data 'random:-1': the seed must be a whole number"),
    (["--data", "random:"], 2, "--data random: needs a seed after the colon"),
    (["--data", "randomly"], 2, "random data is 'random' or 'random:SEED'"),
    (["--data", ""], 2, "--data is empty"),
    (["--data", "/no/such/data"], 2, "/no/such/data"),
    (["--data", "{tmp}"], 2, "holds no images (neither MNIST-style IDX files"),
    # output directory
    (["--out", "{tmp}/file"], 2, "--out {tmp}/file: is a file, not a directory"),
    (["--out", "{tmp}/file/sub"], 2, "{tmp}/file is a file, not a directory"),
    (["--out", "/proc/sacbench"], 2, "is under /proc, a virtual file system"),
    (["--out", "/sys/sacbench"], 2, "is under /sys, a virtual file system"),
    (["--out", "."], 2, "--out .: holds the current directory"),
    (["--out", "/"], 2, "--out /: is the root directory"),
    (["--out", "{tmp}", "--data", "{tmp}/file"], 2, "holds an input of this run"),
    (
        ["--out", "{tmp}/report"],
        2,
        "already holds 2 entries (report.json, report.md); give --force to replace it as a whole",
    ),
    (
        ["--out", "{tmp}", "--force"],
        2,
        "holds files but is not a directory compare_gpu_fpga wrote (no .sacbench.json or report.json)",
    ),
]

MODEL_CASES = [  # (the --model value, exit status, words)
    ("{tmp}/missing.onnx", 2, "model file {tmp}/missing.onnx not found"),
    ("{tmp}", 2, "--model {tmp} is a directory; give an .onnx file"),
    ("{tmp}/file", 2, "{tmp}/file: empty file, not an ONNX model"),
    (str(ROOT / "README.md"), 2, "README.md: not a readable ONNX file"),
]


@pytest.fixture
def tmp(tmp_path):
    (tmp_path / "file").write_bytes(b"")
    report = tmp_path / "report"
    report.mkdir()
    (report / "report.json").write_text('{"old": true}\n')
    (report / "report.md").write_text("old\n")
    return tmp_path


def run_compare(argv, capsys, tmp, out_default=True):
    argv = [a.replace("{tmp}", str(tmp)) for a in argv]
    if out_default and "--out" not in argv:
        argv += ["--out", str(tmp / "out")]
    before = tree(tmp)
    code = compare.main(argv)
    err = capsys.readouterr().err
    assert tree(tmp) == before, "a refused run changed files"
    return code, err


@pytest.mark.parametrize(
    "flags, code, words", COMPARE_CASES, ids=[" ".join(c[0]) or "empty" for c in COMPARE_CASES]
)
def test_compare_flags(flags, code, words, tmp, capsys):
    got, err = run_compare(["--model", SAC, "--images", "2", *flags], capsys, tmp)
    line = one_line(err)
    assert got == code and words.replace("{tmp}", str(tmp)) in line, line
    assert line.startswith("sacbench compare: error: ")


@pytest.mark.parametrize("model, code, words", MODEL_CASES, ids=[c[0] for c in MODEL_CASES])
def test_compare_models(model, code, words, tmp, capsys):
    got, err = run_compare(["--model", model, "--images", "2"], capsys, tmp)
    line = one_line(err)
    assert got == code and words.replace("{tmp}", str(tmp)) in line, line


def test_compare_data_that_does_not_fit_the_model(tmp, capsys):
    got, err = run_compare(["--model", HEPBNN, "--images", "2"], capsys, tmp)
    assert got == 2 and "expects input 1x28x28" in one_line(err)


# the other commands, through `sacbench` (the wrapper is the same for the scripts)
CLI_CASES = [
    (["frobnicate"], 2, "unknown command 'frobnicate'"),
    (["demo", "--frobnicate"], 2, "demo: error: unrecognized arguments: --frobnicate"),
    (["search", "--budgets", "nan"], 2, "--budgets must be finite numbers"),
    (["search", "--budgets", "100", "--clock-mhz", "inf"], 2, "--clock-mhz must be a finite"),
    (["search", "--budgets", "100", "--array", "0x8"], 2, "rows and columns must be 1..255"),
    (["map", "--network", "{tmp}/missing.onnx"], 2, "{tmp}/missing.onnx"),
    (["map", "--batch-exp", "0"], 2, "--batch-exp: expected 2 arguments"),
    (["map", "--word-bits", "16"], 2, "argument --word-bits: invalid choice: 16"),
    (["train", "--family", "cnn", "--out", "{tmp}/m.onnx"], 2, "invalid choice: 'cnn'"),
    (["train", "--family", "bnn"], 2, "the following arguments are required: --out"),
    (["train", "--family", "bnn", "--out", "{tmp}/m.txt"], 2, ".onnx"),
    (["sim", "no_such_module"], 2, "no bench tb/test_no_such_module.py"),
    (["sim", "sdp_ram", "--sim", "modelsim"], 2, "invalid choice: 'modelsim'"),
]


@pytest.mark.parametrize("argv, code, words", CLI_CASES, ids=[" ".join(c[0]) for c in CLI_CASES])
def test_other_commands(argv, code, words, tmp, capsys):
    argv = [a.replace("{tmp}", str(tmp)) for a in argv]
    before = tree(tmp)
    got = cli.main(argv)
    err = capsys.readouterr().err
    assert tree(tmp) == before
    if argv[0] == "frobnicate":  # the usage follows the line
        err = err.split("\n\n")[0]
    line = one_line(err)
    assert got == code and words.replace("{tmp}", str(tmp)) in line, line


@pytest.mark.parametrize("command", list(cli.COMMANDS))
def test_every_help_shows_the_exit_status(command, capsys):
    from workbench.commands.args import exit_status

    assert cli.main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith(exit_status(command)), out[-1000:]


@pytest.mark.parametrize(
    "script, prog, words",
    [
        ("compare_gpu_fpga", "sacbench compare", "required: --model"),
        ("demo", "sacbench demo", "unrecognized arguments: --no-such-flag"),
        ("map_bnn", "sacbench map", "unrecognized arguments: --no-such-flag"),
    ],
)
def test_scripts_exit_2_with_one_line(script, prog, words):
    """The scripts as a shell runs them: the status reaches the shell, stderr is one line
    (search.py and train.py are the same two lines around run_guarded; they load torch, so they
    are tested in-process above)."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / f"{script}.py"), "--no-such-flag"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 2
    line = one_line(out.stderr)
    assert line.startswith(f"{prog}: error: ") and words in line, line


# -- the contract itself -------------------------------------------------------------------------
def raising(exc):
    def main(argv):
        raise exc

    return main


def sending(signum):
    def main(argv):
        os.kill(os.getpid(), signum)
        time.sleep(5)  # the handler interrupts it
        return 0

    return main


@pytest.mark.parametrize(
    "main, code, words",
    [
        (lambda argv: None, 0, None),
        (lambda argv: 1, 1, None),
        (raising(contract.BadInput("--thing: no good")), 2, "prog: error: --thing: no good"),
        (raising(SystemExit(2)), 2, None),
        (
            raising(ValueError("bad\nvalue")),
            3,
            "prog: error: internal error: ValueError: bad value (--debug shows the traceback)",
        ),
        (
            raising(OSError(errno.ENOSPC, "No space left on device", "out/report.json")),
            3,
            "prog: error: disk full writing out/report.json; nothing half-written was kept",
        ),
        (
            raising(PermissionError(errno.EACCES, "Permission denied", "/x")),
            3,
            "prog: error: [Errno 13] Permission denied: '/x' (--debug shows the traceback)",
        ),
        (raising(KeyboardInterrupt()), 130, "prog: interrupted (SIGINT)"),
        (sending(signal.SIGTERM), 143, "prog: terminated (SIGTERM)"),
        (sending(signal.SIGHUP), 129, "prog: terminated (SIGHUP)"),
    ],
    ids=[
        "ok",
        "mismatch",
        "bad input",
        "usage",
        "internal",
        "disk full",
        "os error",
        "sigint",
        "sigterm",
        "sighup",
    ],
)
def test_exit_status_contract(main, code, words, capsys):
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    assert contract.run_guarded("prog", main, []) == code
    err = capsys.readouterr().err
    if words is None:
        assert err == ""
    else:
        assert one_line(err) == words
    assert {s: signal.getsignal(s) for s in previous} == previous  # the handlers are back


def test_debug_prints_the_traceback(capsys):
    assert contract.run_guarded("prog", raising(ValueError("deep")), ["--debug"]) == 3
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.strip().splitlines()[-1] == "prog: error: internal error: ValueError: deep"


def test_debug_is_taken_out_of_the_arguments_before_a_double_dash():
    seen = []
    contract.run_guarded("prog", seen.append, ["a", "--debug", "--", "--debug"])
    assert seen == [["a", "--", "--debug"]]


# -- numbers on the command line: generated -------------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(max_size=40))
def test_whole_numbers_are_ascii_digits_or_refused(text):
    """Any text: a whole number is what int() of its ASCII digits gives, or argparse's error
    (never '1_0' read as 10, never an exception of another kind)."""
    import argparse

    parse = contract.int_at_least("--n", 0, 10**9)
    body = text.strip()
    digits = body[1:] if body[:1] in "+-" else body
    plain = digits.isascii() and digits.isdigit() and len(digits) <= 30
    try:
        value = parse(text)
    except argparse.ArgumentTypeError as exc:
        assert "--n must" in str(exc)
        assert not plain or not 0 <= int(body) <= 10**9
        return
    assert plain and value == int(body) and 0 <= value <= 10**9


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.text(max_size=20)))
def test_bounded_numbers_are_finite_and_within_their_bounds(text):
    import argparse
    import math

    parse = contract.finite_float("--x", positive=True, at_least=1e-3, at_most=1e5)
    try:
        value = parse(text)
    except argparse.ArgumentTypeError as exc:
        assert str(exc).startswith("--x must")
        return
    assert math.isfinite(value) and 1e-3 <= value <= 1e5
