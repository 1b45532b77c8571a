"""The `sacbench` console command: every command is reachable, usage errors are one line with
exit status 2."""

import subprocess
import sys

import pytest

from tests.helpers import ROOT
from workbench import cli


def test_help_lists_every_command(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in cli.COMMANDS:
        assert name in out


def test_unknown_command_exits_2(capsys):
    assert cli.main(["frobnicate"]) == 2
    assert "unknown command 'frobnicate'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args,message",
    [
        (["sim", "no_such_module"], "no bench tb/test_no_such_module.py"),
        (["sim", "sdp_ram", "--sim", "modelsim"], "invalid choice: 'modelsim'"),
        (["sim", "sdp_ram", "--shape", "99x99"], "no test of tb/test_sdp_ram.py matches"),
    ],
)
def test_sim_usage_errors(args, message, capsys):
    try:
        code = cli.main(args)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and message in err, err


def test_console_script_is_installed():
    exe = ROOT / ".venv" / "bin" / "sacbench"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "workbench.cli"]
    out = subprocess.run([*cmd, "--help"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and "sacbench <command>" in out.stdout
