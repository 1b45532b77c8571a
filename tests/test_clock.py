"""The clock reports compute latency at (fpga/clock.py) and the timing flow that records it
(workbench/flows/timing.py, ecp5.py): a routed Fmax only for the configuration it was routed
for, the paper's 170 MHz labelled "not routed" otherwise, the user's --clock-mhz above both."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from fpga import clock
from fpga.arch import ArrayConfig
from fpga.clock import PAPER_MHZ, clock_for, record_fmax, record_path, routed_clock
from workbench.flows import ecp5, timing
from workbench.report import clock_label


def test_without_a_record_the_paper_clock_says_not_routed(tmp_path):
    clock = clock_for(ArrayConfig(), folder=tmp_path)
    assert (clock.mhz, clock.source) == (PAPER_MHZ, "paper")
    assert "not routed" in clock.label and "170 MHz" in clock.label


def test_a_given_clock_wins_over_a_routed_one(tmp_path):
    record_fmax(ArrayConfig(), 48.0, ecp5.DEVICE, "make timing SHAPE=8x8", tmp_path)
    clock = clock_for(ArrayConfig(), 100.0, tmp_path)
    assert (clock.mhz, clock.source, clock.note) == (100.0, "given", "--clock-mhz")


def test_the_routed_fmax_of_the_configuration_is_used_and_named(tmp_path):
    record_fmax(ArrayConfig(), 48.25, ecp5.DEVICE, "make timing SHAPE=8x8", tmp_path)
    clock = clock_for(ArrayConfig(), folder=tmp_path)
    assert (clock.mhz, clock.source) == (48.25, "routed")
    assert "ECP5 LFE5U-85F" in clock.label and "make timing SHAPE=8x8" in clock.label
    assert clock.as_dict()["label"] == clock.label


def test_smaller_memories_use_the_routed_fmax_other_structures_do_not(tmp_path):
    record_fmax(ArrayConfig(), 48.0, ecp5.DEVICE, "make synth", tmp_path)
    fitted = replace(ArrayConfig(), ddepth=64, wdepth=64, imem_depth=16)  # the compare job's
    assert routed_clock(fitted, tmp_path).mhz == 48.0
    for other in (replace(ArrayConfig(), cmax=128), replace(ArrayConfig(), ddepth=2048)):
        assert routed_clock(other, tmp_path) is None, other
        assert clock_for(other, folder=tmp_path).source == "paper"
    assert routed_clock(ArrayConfig(16, 16), tmp_path) is None  # another shape's file is absent


@pytest.mark.parametrize(
    "text",
    ["", "{", "[]", '{"fmax_mhz": "fast"}', '{"fmax_mhz": NaN, "hdl_parameters": {}}'],
)
def test_a_record_that_does_not_read_is_never_a_guess(tmp_path, text):
    path = record_path(ArrayConfig(8, 8), tmp_path)
    path.write_text(text)
    assert clock_for(ArrayConfig(), folder=tmp_path).source == "paper"


def test_a_record_goes_stale_when_the_rtl_changes(tmp_path, monkeypatch):
    rtl = tmp_path / "rtl"
    rtl.mkdir()
    (rtl / "top.v").write_text("module top; endmodule\n")
    monkeypatch.setattr(clock, "RTL", rtl)
    record_fmax(ArrayConfig(), 48.0, ecp5.DEVICE, "make timing SHAPE=8x8", tmp_path)
    assert routed_clock(ArrayConfig(), tmp_path).mhz == 48.0
    (rtl / "top.v").write_text("module top; wire a; endmodule\n")  # a register added, say
    assert routed_clock(ArrayConfig(), tmp_path) is None
    assert clock_for(ArrayConfig(), folder=tmp_path).source == "paper"


def test_a_record_with_an_impossible_fmax_is_not_used(tmp_path):
    record_fmax(ArrayConfig(), 0.0, ecp5.DEVICE, "make synth", tmp_path)
    assert routed_clock(ArrayConfig(), tmp_path) is None


def test_the_report_names_its_clock():
    fpga = {"clock_mhz": 48.0, "clock": clock_for(ArrayConfig(), 48.0).as_dict()}
    assert clock_label(fpga) == "48 MHz (--clock-mhz)"
    assert clock_label({"clock_mhz": 170.0}) == "170 MHz"  # a report from before the label


def _segment(kind: str, cell: str, delay: float) -> dict:
    return {"type": kind, "from": {"cell": cell}, "to": {"cell": cell}, "delay": delay}


def test_the_critical_path_is_cut_into_blocks_with_logic_and_routing():
    path = [
        _segment("clk-to-q", "dbank[45].u_ram.mem.0.0", 5.8),
        _segment("routing", "dbank[45].u_ram.mem.0.0", 2.0),
        _segment("logic", "u_feeder.bank_bit[45].bank.data_bit", 0.4),
        _segment("routing", "u_feeder.bank_bit[45].bank.data_bit", 1.5),
        _segment("logic", "u_feeder.shift[0].pos[3].from.x", 0.4),
        _segment("routing", "u_feeder.shift[0].pos[3].from.x", 1.0),
        _segment("setup", "u_array.col[3].stage0", 0.1),
    ]
    hops = ecp5.path_by_block(path)
    assert [h["block"] for h in hops] == ["dbank[45].u_ram", "u_feeder", "u_array"]
    assert hops[0] == {"block": "dbank[45].u_ram", "cells": 0, "logic_ns": 5.8, "routing_ns": 2.0}
    assert hops[1] == {"block": "u_feeder", "cells": 2, "logic_ns": 0.8, "routing_ns": 2.5}
    rep = {
        "fmax": {"clk": {"achieved": 85.5, "constraint": 170.0}},
        "utilization": {"TRELLIS_COMB": {"used": 100}, "TRELLIS_FF": {"used": 50}},
        "critical_paths": [{"path": path}],
    }
    res = ecp5.summarize(rep)
    assert (res["fmax_mhz"], res["lut4"], res["ffs"], res["bram"]) == (85.5, 100, 50, 0)
    assert (res["path_logic_ns"], res["path_routing_ns"], res["path_cells"]) == (6.7, 4.5, 2)
    lines = ecp5.path_lines(res)
    assert "6.70 ns logic + 4.50 ns routing" in lines[0] and lines[1].lstrip().startswith("dbank[45]")


def test_block_names_are_the_innermost_instances():
    assert ecp5.block_of("rowpipe[3].u_rq.q_reg") == "rowpipe[3].u_rq"
    assert ecp5.block_of("u_decoder.u_imem.x") == "u_decoder.u_imem"
    assert ecp5.block_of("k_reg[3]") == "top"


def test_make_timing_refuses_a_bad_shape_in_one_line(capsys):
    assert timing.main(["--shape", "8by8"]) == timing.EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--shape" in err[0] and "ROWSxCOLS" in err[0]


def test_the_timing_record_is_what_the_clock_reads(tmp_path):
    path = record_fmax(ArrayConfig(16, 16), 47.5, ecp5.DEVICE, "make synth", tmp_path)
    rec = json.loads(path.read_text())
    assert rec["hdl_parameters"]["ROWS"] == 16 and rec["fmax_mhz"] == 47.5
    assert clock_for(ArrayConfig(16, 16), folder=tmp_path).mhz == 47.5


def test_a_top_with_other_banks_keeps_a_record_of_its_own(tmp_path):
    wide = ArrayConfig(32, 16, cmax=128)
    assert record_path(wide, tmp_path).name == "ecp5_top_32x16_cmax128.json"
    assert record_path(ArrayConfig(32, 16), tmp_path).name == "ecp5_top_32x16.json"  # the default CMAX
    record_fmax(wide, 75.0, ecp5.DEVICE, "make timing SHAPE=32x16 CMAX=128", tmp_path)
    assert routed_clock(wide, tmp_path).mhz == 75.0
    assert routed_clock(ArrayConfig(32, 16), tmp_path) is None  # 64 banks: not routed


def test_make_timing_refuses_a_bad_cmax_in_one_line(capsys):
    assert timing.main(["--shape", "8x8", "--cmax", "5000"]) == timing.EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--cmax" in err[0] and "4096" in err[0]


def test_make_timing_refuses_a_bad_depth_in_one_line(capsys):
    assert timing.main(["--shape", "8x8", "--depths", "ddepth=128,depth=9"]) == timing.EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--depths" in err[0] and "'depth=9'" in err[0]


def test_the_depths_of_a_fitted_instance_parse():
    assert timing.parse_depths("ddepth=128, pdepth=64") == {"ddepth": 128, "pdepth": 64}
    assert timing.parse_depths("") == {}


def fake_report() -> dict:
    """A nextpnr JSON report as summarize() reads it: one clock, the utilisation, no path."""
    use = {"TRELLIS_COMB": {"used": 20_000}, "TRELLIS_FF": {"used": 10_000}, "DP16KD": {"used": 97}}
    return {"fmax": {"clk": {"achieved": 99.0}}, "utilization": use, "critical_paths": []}


def test_a_flow_experiment_s_nextpnr_arguments_reach_nextpnr(tmp_path, monkeypatch):
    """`nextpnr_args` go after the flow's own arguments; one the flow sets itself is refused
    before any tool runs (nextpnr would refuse it after minutes of yosys)."""
    seen = []

    def nextpnr(cmd, **_):
        seen.append(cmd)
        report = Path(cmd[cmd.index("--report") + 1])
        report.write_text(json.dumps(fake_report()))
        return subprocess.CompletedProcess(cmd, 0, "", "")

    net = tmp_path / "t_netlist.json"
    monkeypatch.setattr(ecp5, "tools", lambda: ("yosys", "nextpnr"))
    monkeypatch.setattr(ecp5, "synthesize", lambda *a: net)
    monkeypatch.setattr(ecp5, "fold_netlist", lambda n: 0)
    monkeypatch.setattr(ecp5.subprocess, "run", nextpnr)
    res = ecp5.place_route("t", "read_verilog x.v", "top", tmp_path, nextpnr_args=("--router", "router2"))
    assert res["fmax_mhz"] == 99.0 and res["lut4"] == 20_000
    assert seen[0][0] == "nextpnr" and seen[0][-2:] == ["--router", "router2"]
    with pytest.raises(ecp5.FlowError, match="--seed"):
        ecp5.place_route("t", "read_verilog x.v", "top", tmp_path, nextpnr_args=("--seed", "2"))
    assert len(seen) == 1


def test_make_timing_refuses_an_option_the_flow_sets_in_one_line(capsys):
    assert timing.main(["--shape", "8x8", "--nextpnr-arg=--freq=100"]) == timing.EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--nextpnr-arg" in err[0] and "--freq=100" in err[0]


@pytest.mark.parametrize("experiment", [False, True], ids=["the flow", "a flow experiment"])
def test_make_timing_records_the_flow_s_run_only(tmp_path, monkeypatch, capsys, experiment):
    """The record stands for the flow every report assumes: a run with --nextpnr-arg prints its
    Fmax, leaves the record and the details as they were and routes in a folder of its own (its
    logs would overwrite the recorded run's); a run without records and writes the details."""
    calls, recorded = [], []

    def run(config, seed, folder, nextpnr_args=()):
        calls.append((folder, nextpnr_args))
        return {**ecp5.summarize(fake_report()), "bram_outreg": 0}

    monkeypatch.setattr(ecp5, "tools", lambda: ("yosys", "nextpnr"))
    monkeypatch.setattr(timing, "FMAX_DIR", tmp_path)
    monkeypatch.setattr(timing, "run", run)
    monkeypatch.setattr(timing, "record_fmax", lambda *a, **k: recorded.append(a[1]) or tmp_path / "r")
    extra = ["--nextpnr-arg=--router", "--nextpnr-arg=router2"] if experiment else []
    assert timing.main(["--shape", "8x8", *extra]) == 0
    out = capsys.readouterr().out
    assert "Fmax 99.0 MHz" in out
    if experiment:
        assert calls == [(tmp_path / "experiments", ("--router", "router2"))]
        assert "not recorded: nextpnr ran with --router router2" in out
        assert recorded == [] and list(tmp_path.iterdir()) == []
    else:
        assert calls == [(tmp_path, ())] and recorded == [99.0]
        assert [p.name for p in tmp_path.iterdir()] == ["ecp5_top_8x8_details.json"]
