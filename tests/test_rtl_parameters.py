"""Parameter constraints of rtl/ are checked at elaboration: a bad size stops Verilator (and every
other tool) with an error naming the constraint, instead of building a broken array."""

import subprocess
from pathlib import Path

import pytest

from tb.sim import verilator_on_path

RTL = Path(__file__).resolve().parents[1] / "rtl"

BAD = [
    ("systolic_array", {"ROWS": 16, "ROW_BITS": 3}, "ROW_BITS_must_be_at_least_clog2_ROWS"),
    (
        "systolic_array",
        {"ROWS": 16, "COLS": 16, "COUNT_BITS": 8},
        "COUNT_BITS_must_be_at_least_clog2_ROWS_x_COLS_plus_1",
    ),
    ("sac_cell", {"SLOTS": 9}, "SLOTS_must_be_1_to_8"),
    ("sdp_ram", {"DEPTH": 300, "AW": 8}, "AW_must_be_at_least_clog2_DEPTH"),
    ("data_feeder", {"BANKS": 65, "BKW": 6}, "BKW_must_be_at_least_clog2_BANKS"),
    ("instruction_decoder", {"IMEM_DEPTH": 512, "IAW": 8}, "IAW_must_be_at_least_clog2_IMEM_DEPTH"),
    ("accelerator", {"ROWS": 300}, "ROWS_and_COLS_must_be_1_to_255"),
    ("relu_quant", {"SHIFT": 40}, "SHIFT_must_be_0_to_ACC_BITS_minus_1"),
    ("popcount_pipe", {"N": 64, "W": 6}, "W_must_be_at_least_clog2_N_plus_1"),
    ("popcount_pipe", {"N": 4096, "W": 13, "MAX_LATENCY": 2}, "LATENCY_exceeds_MAX_LATENCY"),
]


def lint(module: str, params: dict) -> subprocess.CompletedProcess:
    verilator_on_path()
    return subprocess.run(
        [
            "verilator",
            "--lint-only",
            "-Wall",
            f"-I{RTL}",
            "--top-module",
            module,
            str(RTL / f"{module}.v"),
            *[f"-G{k}={v}" for k, v in params.items()],
        ],
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize("module,params,constraint", BAD, ids=[b[2] for b in BAD])
def test_bad_parameters_stop_elaboration(module, params, constraint):
    out = lint(module, params)
    assert out.returncode != 0
    assert constraint in out.stdout + out.stderr


@pytest.mark.parametrize("module", sorted({b[0] for b in BAD}))
def test_default_parameters_pass(module):
    out = lint(module, {})
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_module_declares_default_nettype_none():
    missing = [p.name for p in RTL.glob("*.v") if "`default_nettype none" not in p.read_text()]
    assert not missing
