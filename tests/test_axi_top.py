"""The AXI top (rtl/accelerator_axi.v, rtl/stream_fifo.v): its parameter checks stop
elaboration, and the register map in docs/microarchitecture.md is the one the bench driver
(tb/axi_port.py) uses and the RTL's header comment lists (tb/test_accelerator_axi.py then holds
the RTL to the driver)."""

import re
from pathlib import Path

import pytest

from tb import axi_port
from tests.test_rtl_parameters import lint

ROOT = Path(__file__).resolve().parents[1]

BAD = [
    ("accelerator_axi", {"AXIL_ADDR_WIDTH": 8}, "AXIL_ADDR_WIDTH_must_be_9_to_32"),
    ("accelerator_axi", {"FIFO_DEPTH": 6}, "FIFO_DEPTH_must_be_a_power_of_2_from_2_to_256"),
    ("accelerator_axi", {"COLS": 0}, "ROWS_and_COLS_must_be_1_to_255"),
    ("stream_fifo", {"DEPTH": 1}, "DEPTH_must_be_a_power_of_2_from_2_to_65536"),
    ("stream_fifo", {"DEPTH": 8, "AW": 2}, "AW_must_be_log2_DEPTH"),
    ("stream_fifo", {"WIDTH": 0}, "WIDTH_must_be_positive"),
]


@pytest.mark.parametrize("module,params,constraint", BAD, ids=[b[2] for b in BAD])
def test_bad_parameters_stop_elaboration(module, params, constraint):
    out = lint(module, params)
    assert out.returncode != 0
    assert constraint in out.stdout + out.stderr


def documented_registers() -> dict:
    text = (ROOT / "docs" / "microarchitecture.md").read_text()
    section = text[text.index("### AXI4-Lite registers") : text.index("### AXI4-Stream commands")]
    rows = re.findall(r"^\| (0x[0-9A-F]{3})(?: \+ 4n)? \| (\w+) \|", section, flags=re.M)
    return {name: int(addr, 16) for addr, name in rows}


def test_register_map_in_docs_matches_driver_and_rtl():
    docs = documented_registers()
    driver = {
        "CONTROL": axi_port.A_CONTROL,
        "STATUS": axi_port.A_STATUS,
        "HOST_ADDR": axi_port.A_HOST_ADDR,
        "HOST_DATA": axi_port.A_HOST_DATA,
        "IRQ_ENABLE": axi_port.A_IRQ_ENABLE,
        "IRQ_STATUS": axi_port.A_IRQ_STATUS,
        "ID": axi_port.A_ID,
        "window": axi_port.A_WINDOW,
    }
    assert docs == driver
    rtl = (ROOT / "rtl" / "accelerator_axi.v").read_text()
    in_header = dict(re.findall(r"^//\s+0x([0-9A-F]{3}) (\w+)", rtl, flags=re.M))
    assert {k: v for k, v in docs.items() if k != "window"} == {
        name: int(addr, 16) for addr, name in in_header.items()
    }
    assert (
        f"32'h{axi_port.ID:08X}" in rtl
        and f"0x{axi_port.ID:08X}" in (ROOT / "docs" / "microarchitecture.md").read_text()
    )
