"""Every option of every `sacbench` command says what it is for, and its default once; every help
starts `usage: sacbench <command>` and ends with one exit-status table of the statuses that
command returns (workbench/commands/args.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.commands.args import COMMAND_EXITS, command_exits

SACBENCH = Path(sys.executable).parent / "sacbench"
COMMANDS = ["compare", "demo", "map", "search", "sim", "train"]
# the command's file under scripts/ (`make sim` runs `sacbench sim`)
SCRIPTS = {
    "compare": "compare_gpu_fpga",
    "demo": "demo",
    "map": "map_bnn",
    "search": "search",
    "train": "train",
}
# a paragraph or sentence about exit statuses: "exit status:", "Exit status 1:", "exit codes:"
EXIT_HEADING = re.compile(r"\bexit (?:status|codes?)\b(?: \d+)?:", re.I)


def option_entries(help_text: str) -> list[str]:
    """The help's option entries, each joined into one line ('--flag METAVAR  text ...')."""
    options = help_text.split("options:", 1)[-1]
    entries = re.split(r"\n(?=  -)", options)
    # an entry ends at a blank line (then comes a group's heading, the epilog)
    return [
        " ".join(ln.strip() for ln in e.split("\n\n")[0].splitlines())
        for e in entries
        if e.strip().startswith("-")
    ]


def help_words(entry: str) -> str:
    """An entry without its flags and metavars: the help text alone."""
    return re.sub(r"^(-[-\w]+(?: [A-Z_{},.\[\]\w-]+)?(?:, )?)+", "", entry).strip()


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_has_help_and_one_default(command):
    out = subprocess.run([str(SACBENCH), command, "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    entries = option_entries(out.stdout)
    assert len(entries) >= 2, out.stdout
    for entry in entries:
        assert help_words(entry), f"sacbench {command}: {entry.split()[0]} has no help"
        assert entry.count("(default") <= 1, f"sacbench {command}: doubled default in {entry!r}"


def test_the_check_sees_a_missing_help_and_a_doubled_default():
    entries = option_entries("options:\n  --out OUT\n  --lambdas L  weights (default 1) (default: [1.0])\n")
    assert help_words(entries[0]) == ""
    assert entries[1].count("(default") == 2


def help_of(command: str) -> str:
    out = subprocess.run([str(SACBENCH), command, "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def exit_codes(help_text: str) -> set[int]:
    """The statuses listed in the help's exit-status table (rows '  0   ok', '  130, 143, 129  ...')."""
    table = help_text.split("exit status:", 1)[1]
    rows = re.findall(r"^  (\d+(?:, \d+)*)  ", table, re.M)
    return {int(c) for row in rows for c in row.split(", ")}


def test_every_command_is_checked():
    assert sorted(COMMAND_EXITS) == sorted(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_usage_and_one_exit_status_table_of_the_commands_own_statuses(command):
    text = help_of(command)
    assert text.startswith(f"usage: sacbench {command} "), text[:200]
    assert len(EXIT_HEADING.findall(text)) == 1, f"sacbench {command}: {EXIT_HEADING.findall(text)}"
    assert exit_codes(text) == command_exits(command), text.split("exit status:", 1)[1]


@pytest.mark.parametrize("command", sorted(SCRIPTS))
def test_the_scripts_say_the_same_usage(command):
    """scripts/*.py (and make, which runs them) show the `sacbench <command>` usage too."""
    script = Path(__file__).resolve().parents[1] / "scripts" / f"{SCRIPTS[command]}.py"
    out = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"usage: sacbench {command} "), out.stdout[:200]


def test_the_check_sees_a_second_exit_status_paragraph_and_a_code_not_returned():
    text = (
        "usage: sacbench map\n\nexit status: 0 ok, 2 bad usage\n\nexit status:\n  0    ok\n  1    differs\n"
    )
    assert len(EXIT_HEADING.findall(text)) == 2
    assert EXIT_HEADING.findall("... for BNNs). Exit status 1: a verified model differs")
    assert not EXIT_HEADING.findall("the run ends with one line and exit status 3, and")
    assert 1 in exit_codes(text) and 1 not in command_exits("map")
