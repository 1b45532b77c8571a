"""The area and clock model (fpga/area_model.py, fpga/devices.py) against its committed data
(fpga/data/area_points.json, area_model.json, written by benchmarks/area_model.py): no synthesis
here, only the committed fit and points (the benchmark's measuring function replaced by one that
hands the committed points back)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest

from fpga import area_model as am
from fpga import clock as fpga_clock
from fpga.arch import ArrayConfig
from fpga.devices import DEVICES, UnknownDevice, device, fits, modelled_clock

ROOT = Path(__file__).resolve().parents[1]
FIT = json.loads(am.FIT_FILE.read_text())
POINTS = json.loads(am.POINTS_FILE.read_text())


def measured(p: dict) -> dict:
    if p["kind"] == "array":
        return {"luts": p["luts"], "ffs": p["ffs"]}
    if p["kind"] == "flat":  # yosys' count of the flattened top, in nextpnr's LUT4 sites
        lutram = p["lut_memory"]  # six sites per 16x4 LUTRAM, exact: not scaled by the packing
        return {
            "luts": round((p["luts"] - lutram) * FIT["ecp5_packing"]["factor"]) + lutram,
            "ffs": p["ffs"],
            "brams": p["brams"],
        }
    if p["kind"] in ("routed", "packed"):  # nextpnr's own counts
        return {"luts": p["lut4"], "ffs": p["ffs"], "brams": p["bram"]}
    return {r: sum(b[r] for b in p["blocks"].values()) for r in ("luts", "ffs", "brams")}


def modelled(p: dict) -> dict:
    model = am.AreaModel(p["target"])
    if p["kind"] == "array":
        return model.logic(ArrayConfig(rows=p["rows"], cols=p["cols"]))["array"]
    config = ArrayConfig.from_hdl_parameters(p["hdl_parameters"])
    if p["kind"] in ("flat", "routed", "packed"):  # the placed netlist: the calibrated model
        r = model.predict(config)
    else:  # the blocks kept apart, as synthesized
        r = model.predict(config, with_array=p["kind"] == "top", calibrated=False)
    return {"luts": r.luts, "ffs": r.ffs, "brams": r.brams}


def stated(p: dict) -> dict:
    errors = FIT["errors"]["ecp5_netlist" if p["kind"] in ("flat", "routed", "packed") else p["target"]]
    return errors[p["role"]]


def test_the_fit_is_of_the_committed_points():
    assert FIT["rtl_sha256"] == POINTS["rtl_sha256"]
    kinds = {(p["target"], p["kind"], p["role"]) for p in POINTS["points"]}
    for target in am.TARGETS:
        assert {(target, "rest", "train"), (target, "array", "train"), (target, "ram", "table")} <= kinds
        assert (target, "rest", "held_out") in kinds
    assert ("ecp5", "flat", "held_out") in kinds
    assert ("ecp5", "packed", "held_out") in kinds


@pytest.mark.parametrize("role", ["train", "additivity", "held_out"])
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


def test_the_routed_tops_within_the_stated_error_of_their_role():
    """nextpnr's own counts of the routed tops. The 8x8 is a training point (its netlist is the
    flattened 8x8 the calibration is fitted on, and its count gives the packing factor); the
    16x16 at CMAX 64 is in no fit of the area: held out."""
    model = am.AreaModel("ecp5")
    roles = {(r["rows"], r["cols"]): r["area_role"] for r in FIT["ecp5_clock"]["points"]}
    assert roles == {(8, 8): "train", (16, 16): "held_out"}
    for r in FIT["ecp5_clock"]["points"]:
        stated_error = FIT["errors"]["ecp5_netlist"][r["area_role"]]
        pred = model.predict(ArrayConfig(r["rows"], r["cols"], r["cmax"]))
        assert abs(pred.luts - r["lut4"]) / r["lut4"] * 100 <= stated_error["luts"]["max_abs_pct"] + 0.01
        assert abs(pred.ffs - r["ffs"]) / r["ffs"] * 100 <= stated_error["ffs"]["max_abs_pct"] + 0.01
        assert pred.brams == r["dp16kd"]


def test_no_held_out_point_enters_the_packing_factor_or_shares_a_training_netlist():
    """The packing factor is the training 8x8 top's nextpnr count over yosys' count of the same
    flattened netlist (LUTRAM left out of both); no held-out placed point has a training point's
    parameters."""
    packing = FIT["ecp5_packing"]
    flat8 = next(p for p in POINTS["points"] if p["key"] == "ecp5:flat:8x8")
    routed8 = next(r for r in FIT["ecp5_clock"]["points"] if (r["rows"], r["cols"]) == (8, 8))
    lutram = flat8["lut_memory"]
    assert packing["factor"] == round((routed8["lut4"] - lutram) / (flat8["luts"] - lutram), 4)
    assert routed8["area_role"] == "train" and flat8["role"] == "train"
    trained = {
        json.dumps(p["hdl_parameters"], sort_keys=True)
        for p in POINTS["points"]
        if p["kind"] == "flat" and p["role"] == "train"
    }
    held = [r for r in FIT["ecp5_clock"]["points"] if r["area_role"] == "held_out"]
    held += [
        p for p in POINTS["points"] if p["kind"] in ("flat", "routed", "packed") and p["role"] == "held_out"
    ]
    assert held and not any(json.dumps(p["hdl_parameters"], sort_keys=True) in trained for p in held)


def test_held_out_luts_and_block_rams_within_five_percent():
    """The goal, on what each target's model predicts: the 7-series blocks kept apart (as `make
    synth` reports them) and the calibrated ECP5 model against the netlist nextpnr places. The
    ECP5 blocks kept apart are a step of the fit, not a prediction: their error is stated in the
    fit file and docs/area_model.md, not held to the goal."""
    for target in ("xc7", "ecp5_netlist"):
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


def test_lutram_is_not_scaled_by_the_ecp5_calibration():
    """nextpnr packs each 16x4 LUTRAM into six LUT4 sites wherever it sits, and flattening
    removes neither its read multiplexer nor its read register: the calibrated ECP5 model leaves a
    memory built from LUTRAM as synthesized and scales the others."""
    fit = json.loads(json.dumps(am.load_fit()))  # a copy to change
    ecp5 = fit["targets"]["ecp5"]
    ecp5["calibration"]["luts"] = dict.fromkeys(am.CALIBRATION_GROUPS, 0.5)
    ecp5["calibration"]["ffs"] = dict.fromkeys(am.CALIBRATION_GROUPS, 0.5)
    ecp5["rams"] = {k: {**v, "lut_memory": 0} for k, v in ecp5["rams"].items()}
    for k in list(ecp5["rams"]):  # every shape the top has, whatever the table was measured for
        ecp5["rams"].setdefault(k.replace("_old1", "_old0"), ecp5["rams"][k])
    small = ArrayConfig(8, 8, 32, ddepth=64, pdepth=32, wdepth=64, bdepth=32, sdepth=16, imem_depth=64)
    none = am.AreaModel("ecp5", fit).predict(small)
    whole = am.AreaModel("ecp5", fit).predict(small, calibrated=False)
    assert (none.luts, none.ffs) == pytest.approx((0.5 * whole.luts, 0.5 * whole.ffs))
    key = am.ram_key(8, 64, 0)  # the data buffer's 32 banks, now said to be LUTRAM
    bank = ecp5["rams"][key]
    bank["lut_memory"] = 1
    some = am.AreaModel("ecp5", fit).predict(small)
    assert some.luts - none.luts == pytest.approx(0.5 * 32 * bank["luts"])
    assert some.ffs - none.ffs == pytest.approx(0.5 * 32 * bank["ffs"])


def test_yosys_ecp5_cells_in_nextpnr_s_lut4_sites():
    """A carry cell takes two LUT4 sites and a 16x4 LUTRAM six (its four RAM LUTs and its write
    port's slice), as nextpnr's packing counts TRELLIS_COMB (measured with ecp5.pack)."""
    from workbench.flows.synth import LUTRAM_SITES, ecp5_counts

    got = ecp5_counts({"LUT4": 56, "CCU2C": 3, "TRELLIS_DPR16X4": 16, "TRELLIS_FF": 16, "DP16KD": 2})
    assert LUTRAM_SITES == 6
    assert (got["luts"], got["lut_memory"], got["ffs"], got["dp16kd"]) == (56 + 6 + 96, 96, 16, 2)


def test_nextpnr_s_utilisation_table_is_read():
    from workbench.flows.ecp5 import utilisation

    log = """Info: Device utilisation:
Info: 	          TRELLIS_IO:      32/    365     8%
Info: 	              DP16KD:       3/    208     1%
Info: 	          TRELLIS_FF:      16/  83640     0%
Info: 	        TRELLIS_COMB:     153/  83640     0%
Info: 	        TRELLIS_RAMW:      16/  10455     0%
Info: Max frequency for clock 'clk': 62.91 MHz (FAIL at 170.00 MHz)
"""
    assert utilisation(log) == {
        "TRELLIS_IO": 32,
        "DP16KD": 3,
        "TRELLIS_FF": 16,
        "TRELLIS_COMB": 153,
        "TRELLIS_RAMW": 16,
    }


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
    for wrong in (True, False, "0.8"):
        with pytest.raises(ValueError, match="utilisation"):
            fits(config, "LFE5U-85F", utilisation=wrong)


def test_block_rams_alone_can_refuse():
    """Deep data-buffer banks exhaust the block RAMs long before the LUTs."""
    fit = fits(ArrayConfig(4, 4, 32, ddepth=16384), "LFE5U-25F")
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
        assert clock.source == "model" and "a routed size" in clock.note
    far = modelled_clock(ArrayConfig(32, 32, 256), "LFE5U-85F")
    assert "extrapolated" in far.note and "not routed" in far.note
    assert far.mhz < min(p["fmax_mhz"] for p in FIT["ecp5_clock"]["points"])
    small = modelled_clock(ArrayConfig(2, 2, 8), "LFE5U-85F")
    assert small.mhz <= max(p["fmax_mhz"] for p in FIT["ecp5_clock"]["points"])


def test_an_unknown_target_is_refused():
    with pytest.raises(ValueError, match="unknown area-model target"):
        am.AreaModel("stratix")


def test_a_routed_size_is_what_fpga_clock_s_covers_says():
    """The routed 8x8 CMAX 64 top stands for an 8x8 CMAX 64 with smaller memories (its routed
    Fmax), not for one with a deeper memory or another CMAX: those are extrapolated."""
    smaller = modelled_clock(ArrayConfig(8, 8, 64, ddepth=512, pdepth=256), "LFE5U-85F")
    routed_8x8 = next(p for p in FIT["ecp5_clock"]["points"] if (p["rows"], p["cols"]) == (8, 8))
    assert "a routed size" in smaller.note and smaller.mhz == routed_8x8["fmax_mhz"]
    for other in (
        ArrayConfig(8, 8, 64, ddepth=16384),
        ArrayConfig(8, 8, 64, imem_depth=1024),
        ArrayConfig(8, 8, 128),
    ):
        clock = modelled_clock(other, "LFE5U-85F")
        assert "extrapolated" in clock.note and "a routed size" not in clock.note, other


# ---------------------------------------------------------------- measured on another rtl/
OTHER_DIGEST = "f" * 64


def test_a_fit_of_another_rtl_says_so_and_still_answers(monkeypatch):
    monkeypatch.setattr(fpga_clock, "rtl_digest", lambda rtl=None: OTHER_DIGEST)
    want = (
        f"measured on an earlier rtl/ (digest {FIT['rtl_sha256'][:12]}); the model may be off by the change"
    )
    for target in am.TARGETS:
        model = am.AreaModel(target)
        assert model.note == want and model.predict(ArrayConfig()).note == want
    fit = fits(ArrayConfig(), "LFE5U-85F")
    assert fit and fit.note == want and fit.reason == ""
    assert want in modelled_clock(ArrayConfig(12, 12, 96), "LFE5U-85F").note
    assert want in modelled_clock(ArrayConfig(), "LFE5U-85F").note


def test_a_fit_of_this_rtl_has_no_note(monkeypatch):
    monkeypatch.setattr(fpga_clock, "rtl_digest", lambda rtl=None: FIT["rtl_sha256"])
    assert am.AreaModel("ecp5").predict(ArrayConfig()).note == ""
    assert fits(ArrayConfig(), "LFE5U-85F").note == ""
    assert "earlier rtl/" not in modelled_clock(ArrayConfig(), "LFE5U-85F").note


# ---------------------------------------------------------------- benchmarks/area_model.py
@pytest.fixture
def bench():
    spec = importlib.util.spec_from_file_location("area_model_bench", ROOT / "benchmarks" / "area_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_fit_of_the_committed_points_is_the_committed_fit(bench, capsys):
    """The fit is deterministic: the committed points fitted again give the committed file."""
    again = json.loads(json.dumps(bench.build_fit(POINTS)))
    assert again["targets"] == FIT["targets"]
    assert again == FIT


COMMITTED = {p["key"]: p for p in POINTS["points"]}
RUN_KEYS = ("key", "target", "kind", "role")


@pytest.fixture
def sandbox(bench, monkeypatch, tmp_path):
    """The benchmark writing into tmp_path: copies of the committed points and fit, an empty
    cache, rtl/ as the points', and a measuring function that hands the committed point back
    (2.5 s of a fake clock each)."""
    for name in ("POINTS_FILE", "FIT_FILE"):
        copy = tmp_path / getattr(am, name).name
        shutil.copy(getattr(am, name), copy)
        monkeypatch.setattr(am, name, copy)
    monkeypatch.setattr(bench, "CACHE", tmp_path / "cache.json")
    monkeypatch.setattr(bench.synth, "OUT", tmp_path / "synth")
    monkeypatch.setattr(bench, "rtl_digest", lambda: POINTS["rtl_sha256"])
    monkeypatch.setattr(fpga_clock, "rtl_digest", lambda rtl=None: POINTS["rtl_sha256"])
    calls = []

    def measure(target, kind, arg):
        k = bench.key(target, kind, arg)
        calls.append(k)
        return {
            f: v for f, v in COMMITTED[k].items() if f not in (*RUN_KEYS, "rtl_sha256", "seconds", "date")
        }

    class FakeTime:
        now = 0.0

        def time(self):
            self.now += 2.5
            return self.now

    monkeypatch.setattr(bench, "measure", measure)
    monkeypatch.setattr(bench, "time", FakeTime())
    return bench, calls, tmp_path


def test_a_partial_run_keeps_the_committed_points_and_fit(sandbox, capsys):
    bench, calls, tmp = sandbox
    before = am.POINTS_FILE.read_text(), am.FIT_FILE.read_text()
    rc = bench.main(["--budget-min", "0.25"])  # 15 s of the fake clock: six points
    out = capsys.readouterr().out
    assert rc == bench.EXIT_INCOMPLETE == 3
    assert len(calls) == 6 and len(json.loads((tmp / "cache.json").read_text())) == 6
    assert (am.POINTS_FILE.read_text(), am.FIT_FILE.read_text()) == before
    planned = len(bench.jobs(route=False))
    assert f"{planned - 6} of {planned} planned points not measured" in out and "left as committed" in out


def test_a_complete_run_writes_the_points_and_the_same_fit(sandbox, capsys):
    """Every planned point measured (all but two from the cache): the files are written, the
    committed points and coefficients come back."""
    bench, calls, tmp = sandbox
    cache = {k: {f: v for f, v in p.items() if f not in RUN_KEYS} for k, p in list(COMMITTED.items())[2:]}
    (tmp / "cache.json").write_text(json.dumps(cache))
    am.POINTS_FILE.write_text("{}")
    am.FIT_FILE.write_text("{}")
    assert bench.main([]) == 0
    assert calls == list(COMMITTED)[:2]
    written = json.loads(am.POINTS_FILE.read_text())
    strip = lambda p: {f: v for f, v in p.items() if f not in ("seconds", "date")}  # noqa: E731
    assert [strip(p) for p in written["points"]] == [strip(p) for p in POINTS["points"]]
    assert json.loads(am.FIT_FILE.read_text())["targets"] == FIT["targets"]


def test_too_few_training_points_is_one_line(bench):
    points = [
        p for p in POINTS["points"] if p["key"] not in ("xc7:array:4x4", "xc7:array:8x4", "xc7:array:4x8")
    ]
    with pytest.raises(bench.TooFewPoints) as exc:
        bench.fit(points)
    assert str(exc.value) == "xc7 array: 4 training points for 5 terms; the fit needs at least 5"


def test_no_synth_without_the_points_file_is_one_line(sandbox, capsys):
    bench, _, tmp = sandbox
    am.POINTS_FILE.unlink()
    assert bench.main(["--no-synth"]) == 1
    out = capsys.readouterr()
    assert len(out.out.strip().splitlines()) == 1 and "does not read" in out.out and not out.err


def test_no_synth_prints_the_note_of_another_rtl(sandbox, monkeypatch, capsys):
    bench, _, _ = sandbox
    monkeypatch.setattr(fpga_clock, "rtl_digest", lambda rtl=None: OTHER_DIGEST)
    assert bench.main(["--no-synth"]) == 0
    measured = POINTS["rtl_sha256"][:12]  # the rtl/ the committed points were measured on
    assert f"measured on an earlier rtl/ (digest {measured})" in capsys.readouterr().out
