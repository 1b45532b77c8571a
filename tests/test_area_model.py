"""The area and clock model (fpga/area_model.py, fpga/devices.py) against its committed data
(fpga/data/area_points.json, area_model.json, written by benchmarks/area_model.py): no synthesis
here, only the committed fit and points."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import pairwise

import pytest

from fpga import area_model as am
from fpga.arch import ArrayConfig
from fpga.devices import DEVICES, UnknownDevice, device, fits, modelled_clock

FIT = json.loads(am.FIT_FILE.read_text())
POINTS = json.loads(am.POINTS_FILE.read_text())


def measured(p: dict) -> dict:
    if p["kind"] == "array":
        return {"luts": p["luts"], "ffs": p["ffs"]}
    if p["kind"] == "flat":  # yosys' count of the flattened top, in nextpnr's LUT4 sites
        return {
            "luts": round(p["luts"] * FIT["ecp5_packing"]["factor"]),
            "ffs": p["ffs"],
            "brams": p["brams"],
        }
    if p["kind"] == "routed":
        return {"luts": p["lut4"], "ffs": p["ffs"], "brams": p["bram"]}
    return {r: sum(b[r] for b in p["blocks"].values()) for r in ("luts", "ffs", "brams")}


def modelled(p: dict) -> dict:
    model = am.AreaModel(p["target"])
    if p["kind"] == "array":
        return model.logic(ArrayConfig(rows=p["rows"], cols=p["cols"]))["array"]
    config = ArrayConfig.from_hdl_parameters(p["hdl_parameters"])
    if p["kind"] in ("flat", "routed"):  # the placed netlist: the calibrated model
        r = model.predict(config)
    else:  # the blocks kept apart, as synthesized
        r = model.predict(config, with_array=p["kind"] == "top", calibrated=False)
    return {"luts": r.luts, "ffs": r.ffs, "brams": r.brams}


def stated(p: dict) -> dict:
    errors = FIT["errors"]["ecp5_netlist" if p["kind"] in ("flat", "routed") else p["target"]]
    return errors[p["role"]]


def test_the_fit_is_of_the_committed_points():
    assert FIT["rtl_sha256"] == POINTS["rtl_sha256"]
    kinds = {(p["target"], p["kind"], p["role"]) for p in POINTS["points"]}
    for target in am.TARGETS:
        assert {(target, "rest", "train"), (target, "array", "train"), (target, "ram", "table")} <= kinds
        assert (target, "rest", "held_out") in kinds
    assert ("ecp5", "flat", "held_out") in kinds


@pytest.mark.parametrize("role", ["train", "held_out"])
def test_the_fit_reproduces_its_points_within_the_stated_error(role):
    """Every committed point within the error the fit file states for its role (the table
    docs/area_model.md quotes)."""
    for p in POINTS["points"]:
        if p["kind"] == "ram" or p["role"] != role:
            continue
        got, pred = measured(p), modelled(p)
        for res, value in got.items():
            if not value:
                continue
            err = 100 * abs(pred[res] - value) / value
            assert err <= stated(p)[res]["max_abs_pct"] + 0.01, (p["key"], res, value, pred[res])


def test_the_routed_tops_within_the_stated_held_out_error():
    """nextpnr's own counts of the routed tops, which neither the blocks nor the calibration saw."""
    model = am.AreaModel("ecp5")
    held = FIT["errors"]["ecp5_netlist"]["held_out"]
    for r in FIT["ecp5_clock"]["points"]:
        pred = model.predict(ArrayConfig(r["rows"], r["cols"], r["cmax"]))
        assert abs(pred.luts - r["lut4"]) / r["lut4"] * 100 <= held["luts"]["max_abs_pct"] + 0.01
        assert abs(pred.ffs - r["ffs"]) / r["ffs"] * 100 <= held["ffs"]["max_abs_pct"] + 0.01
        assert pred.brams == r["dp16kd"]


def test_held_out_luts_and_block_rams_within_five_percent():
    for target in (*am.TARGETS, "ecp5_netlist"):
        held = FIT["errors"][target]["held_out"]
        assert held["luts"]["max_abs_pct"] <= 5.0, target
        assert held.get("brams", {"max_abs_pct": 0.0})["max_abs_pct"] <= 5.0, target


def test_the_memories_are_priced_from_the_synthesized_table():
    """The 8x8 default top's block RAMs: 64 byte banks of 1,024 entries (a RAMB18 each), 8
    partial-sum banks (a RAMB36 each), instruction, trace, weight and bias memories."""
    xc7 = am.AreaModel("xc7").predict(ArrayConfig())
    assert xc7.brams == 44.5
    ecp5 = am.AreaModel("ecp5").predict(ArrayConfig())
    assert ecp5.brams == 97  # nextpnr's DP16KD count of the routed 8x8 top
    table = am.load_fit()["targets"]["xc7"]["rams"]
    # a depth between the table's powers of two is priced as the next one up
    assert am.ram_cost(table, 8, 1000, 0) == am.ram_cost(table, 8, 1024, 0)
    deepest = max(int(k.split("_d")[1].split("_")[0]) for k in table if k.startswith("w8_"))
    twice = am.ram_cost(table, 8, 2 * deepest, 0)
    assert twice["brams"] == 2 * am.ram_cost(table, 8, deepest, 0)["brams"]


def grown(model, base, field):
    """Resources at `base` and at `field` grown by 1.5, 2 and 4 (within ArrayConfig's limits)."""
    value = getattr(base, field)
    sizes = [v for v in (value, int(value * 1.5), 2 * value, 4 * value) if field != "cmax" or v <= 4096]
    if field in ("rows", "cols"):
        sizes = [v for v in sizes if v <= 255]
    return [model.predict(replace(base, **{field: v})) for v in sizes]


BASES = [
    ArrayConfig(4, 4, 16),
    ArrayConfig(),
    ArrayConfig(12, 20, 96),
    ArrayConfig(16, 32, 256),
    ArrayConfig(128, 64, 512),
]


@pytest.mark.parametrize("target", am.TARGETS)
@pytest.mark.parametrize("field", ["rows", "cols", "cmax"])
def test_monotonic_in_rows_cols_and_cmax(target, field):
    model = am.AreaModel(target)
    for base in BASES:
        res = grown(model, base, field)
        for a, b in pairwise(res):
            assert b.luts >= a.luts and b.ffs >= a.ffs and b.brams >= a.brams, (target, field, base)


@pytest.mark.parametrize("target", am.TARGETS)
@pytest.mark.parametrize("field", ["ddepth", "pdepth", "wdepth", "bdepth", "sdepth", "imem_depth"])
def test_a_deeper_memory_never_takes_fewer_block_rams(target, field):
    model = am.AreaModel(target)
    for base in BASES:
        res = grown(model, base, field)
        assert all(b.brams >= a.brams for a, b in pairwise(res)), (target, field, base)


def test_every_coefficient_is_non_negative():
    for target in am.TARGETS:
        for block, coef in am.load_fit()["targets"][target]["blocks"].items():
            for res in ("luts", "ffs"):
                assert all(v >= 0 for v in coef[res].values()), (target, block, res)


def test_a_config_over_the_budget_is_refused_naming_the_resource():
    big = ArrayConfig(rows=128, cols=64, cmax=512)
    fit = fits(big, "LFE5U-25F")
    assert not fit and not fit.ok
    assert "LUT4" in fit.reason and "LFE5U-25F" in fit.reason and "80 %" in fit.reason
    assert "\n" not in fit.reason
    small = fits(ArrayConfig(4, 4, 16), "LFE5U-25F")
    assert small and small.reason == ""


def test_the_utilisation_budget_decides():
    config = ArrayConfig()
    at_80 = fits(config, "LFE5U-85F")
    share = at_80.used["luts"]
    assert at_80 and 0 < share < 0.8
    tight = fits(config, "LFE5U-85F", utilisation=share * 0.9)
    assert not tight and "LUT4" in tight.reason
    with pytest.raises(ValueError, match="utilisation"):
        fits(config, "LFE5U-85F", utilisation=1.5)


def test_block_rams_alone_can_refuse():
    """Deep data-buffer banks exhaust the block RAMs long before the LUTs."""
    fit = fits(ArrayConfig(4, 4, 64, ddepth=16384), "LFE5U-25F")
    assert not fit and "DP16KD" in fit.reason and "LUT4" not in fit.reason


def test_an_unknown_device_is_one_clear_line():
    with pytest.raises(UnknownDevice) as exc:
        device("XC7Z020")
    msg = str(exc.value)
    assert "\n" not in msg and "XC7Z020" in msg
    assert all(name in msg for name in DEVICES)
    assert isinstance(exc.value, ValueError)


def test_device_names_and_aliases():
    assert device("vc707").name == "XC7VX485T"
    assert device("lfe5u-85f").luts == 83_640
    assert (device("XC7VX485T").luts, device("XC7VX485T").ffs, device("XC7VX485T").brams) == (
        303_600,
        607_200,
        1_030,
    )
    assert (device("LFE5U-25F").luts, device("LFE5U-25F").brams) == (24_288, 56)


def test_the_xilinx_clock_is_the_paper_s_not_routed():
    clock = modelled_clock(ArrayConfig(), "XC7VX485T")
    assert clock.mhz == 170.0 and clock.source == "paper" and "not routed" in clock.label


def test_the_ecp5_clock_gives_the_routed_tops_back_and_is_labelled_elsewhere():
    for p in FIT["ecp5_clock"]["points"]:
        clock = modelled_clock(ArrayConfig(p["rows"], p["cols"], p["cmax"]), "LFE5U-85F")
        assert clock.mhz == pytest.approx(p["fmax_mhz"], rel=1e-3)
        assert "a routed size" in clock.note
    far = modelled_clock(ArrayConfig(32, 32, 256), "LFE5U-85F")
    assert "extrapolated" in far.note and "not routed" in far.note
    assert far.mhz < min(p["fmax_mhz"] for p in FIT["ecp5_clock"]["points"])
    small = modelled_clock(ArrayConfig(2, 2, 8), "LFE5U-85F")
    assert small.mhz <= max(p["fmax_mhz"] for p in FIT["ecp5_clock"]["points"])


def test_an_unknown_target_is_refused():
    with pytest.raises(ValueError, match="unknown area-model target"):
        am.AreaModel("stratix")
