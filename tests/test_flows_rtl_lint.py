"""`make lint`'s RTL part (workbench/flows/rtl_lint.py, run by scripts/lint_rtl.py): a lint
problem planted in a copy of rtl/ is reported, the real rtl/ is clean, and the entry point's
exit status says so."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.flows import rtl_lint

ROOT = Path(__file__).resolve().parents[1]


def _verilator() -> bool:
    try:
        rtl_lint.verilator_on_path()
    except RuntimeError:
        return False
    return shutil.which("verilator") is not None


pytestmark = pytest.mark.skipif(not _verilator(), reason="verilator is installed by `make setup`")


def test_the_flow_lints_the_projects_rtl():
    assert rtl_lint.RTL == ROOT / "rtl"
    assert len(list(rtl_lint.RTL.glob("*.v"))) >= 10


def test_a_planted_width_mismatch_is_reported(tmp_path, capsys):
    rtl = tmp_path / "rtl"
    shutil.copytree(ROOT / "rtl", rtl)
    assert rtl_lint.lint_module("stream_fifo", rtl) == []
    src = rtl / "stream_fifo.v"
    text = src.read_text()
    end = text.rindex("endmodule")
    src.write_text(text[:end] + "    wire [3:0] lint_probe = 8'hff;\n" + text[end:])
    assert rtl_lint.lint_module("stream_fifo", rtl) == ["defaults", "-G overrides"]
    out = capsys.readouterr().out
    assert "WIDTHTRUNC" in out and "lint_probe" in out
    assert "[lint] stream_fifo: WARNINGS with defaults and -G overrides" in out


def test_the_entry_point_passes_on_the_real_rtl():
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "lint_rtl.py")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "modules clean, with default and overridden parameters" in out.stdout
