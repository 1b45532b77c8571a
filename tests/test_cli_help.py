"""Every option of every `sacbench` command says what it is for, and its default once."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SACBENCH = Path(sys.executable).parent / "sacbench"
COMMANDS = ["compare", "demo", "map", "search", "sim", "train"]


def option_entries(help_text: str) -> list[str]:
    """The help's option entries, each joined into one line ('--flag METAVAR  text ...')."""
    options = help_text.split("options:", 1)[-1]
    entries = re.split(r"\n(?=  -)", options)
    return [" ".join(line.strip() for line in e.splitlines()) for e in entries if e.strip().startswith("-")]


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
