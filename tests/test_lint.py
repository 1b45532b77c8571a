"""The Python lint and layout rules of pyproject.toml ([tool.ruff]) hold on the whole tree, so
that CI enforces what `make lint` and the pre-commit hooks check: ruff's pycodestyle, pyflakes,
import order, bugbear, simplify and pyupgrade rules, and `ruff format`'s layout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUFF = Path(sys.executable).parent / "ruff"

pytestmark = pytest.mark.skipif(not RUFF.exists(), reason="ruff is installed by `make setup`")


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(RUFF), *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_check_is_clean():
    res = _ruff("check", "--no-cache", ".")
    assert res.returncode == 0, res.stdout + res.stderr


def test_ruff_format_leaves_every_file_as_it_is():
    res = _ruff("format", "--check", "--no-cache", ".")
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_rule_sets_are_the_ones_promised():
    import tomllib

    lint = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert {"E", "W", "F", "I", "B", "SIM", "UP"} <= set(lint["select"])


def test_a_planted_bugbear_finding_fails_the_check(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def f(x=[]):\n    return x\n")  # B006: a mutable default argument
    res = subprocess.run(
        [str(RUFF), "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(probe)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 1 and "B006" in res.stdout, res.stdout + res.stderr
