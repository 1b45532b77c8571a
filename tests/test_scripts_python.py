"""The scripts of scripts/ run from any Python 3: they re-execute themselves with .venv's
interpreter (scripts/_venv.py), and without a .venv say in one line to run `make setup` (exit 2)
instead of a ModuleNotFoundError traceback."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "scripts").glob("*.py") if p.name != "_venv.py")
STDLIB_ONLY = {"verilator_shim.py"}  # run by `make setup` itself, with the standard library only
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin")


def first_non_stdlib_import(path: Path) -> str | None:
    for node in ast.parse(path.read_text()).body:
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top != "__future__":
                return top
    return None


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_script_imports_the_bootstrap_before_the_project(script):
    if script.name in STDLIB_ONLY:
        assert first_non_stdlib_import(script) is None, "it must stay standard library only"
    else:
        assert first_non_stdlib_import(script) == "_venv", script


@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no python3 outside the virtual environment")
def test_a_script_started_by_another_python_reruns_with_the_projects(tmp_path):
    out = subprocess.run(
        [SYSTEM_PYTHON, str(ROOT / "scripts" / "demo.py"), "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: sacbench demo"), out.stdout[:200]


@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no python3 outside the virtual environment")
def test_without_the_environment_one_line_says_make_setup(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "_venv.py", tmp_path / "scripts")
    shutil.copy(ROOT / "scripts" / "train.py", tmp_path / "scripts")  # a checkout without .venv
    out = subprocess.run(
        [SYSTEM_PYTHON, "-E", "-s", "scripts/train.py", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert lines[0].startswith("train.py: error:") and "make setup" in lines[0], lines
