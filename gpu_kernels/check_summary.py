"""Last step of scripts/gpu_check.sh: gather what the phases left in OUT into OUT/gpu_check.json
and print the headline numbers (exactness, both shapes' best time against their targets, the
DP mapping against all-XYZ and against itself without the fused kernels, each fused kernel
against its layers' kernels, each phase's time against its budget).

    python -m gpu_kernels.check_summary OUT --exit-code N --total-s 470

Reads OUT/phases.tsv (written by the script), preflight.json, pytest_gpu.xml (JUnit) or
selfcheck_gpu.json, and gpu_bnn_<shape>.json; a file a phase did not get to write is reported
as missing, never guessed.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from safeio import write_text_atomic

SHAPES = ("fashion", "cifar10")


def _json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def phases(out: Path) -> list[dict]:
    try:
        with open(out / "phases.tsv", newline="") as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
    except OSError:
        return []
    return [
        {
            "name": r["phase"],
            "exit": int(r["rc"]) if r["rc"] else None,
            "seconds": int(r["seconds"] or 0),
            "limit_s": int(r["limit_s"] or 0),
            "status": r["status"],
        }
        for r in rows
    ]


def exactness(out: Path) -> dict:
    """Counts and the first failures from pytest's JUnit XML (or selfcheck's JSON)."""
    xml = out / "pytest_gpu.xml"
    if xml.exists():
        try:
            root = ET.parse(xml).getroot()
        except ET.ParseError as exc:
            return {"source": xml.name, "error": f"unreadable: {exc}"}
        suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
        count = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
        first = []
        for case in root.iter("testcase"):
            bad = case.find("failure")
            if bad is None:
                bad = case.find("error")
            if bad is not None and len(first) < 5:
                msg = (bad.get("message") or "").splitlines()
                first.append(f"{case.get('name')}: {msg[0][:300] if msg else ''}")
        passed = count["tests"] - count["failures"] - count["errors"] - count["skipped"]
        return {
            "source": xml.name,
            "passed": passed,
            "failed": count["failures"],
            "errors": count["errors"],
            "skipped": count["skipped"],
            "seconds": round(sum(float(s.get("time", 0)) for s in suites), 1),
            "first_failures": first,
        }
    sc = _json(out / "selfcheck_gpu.json")
    if sc is not None:
        return {
            "source": "selfcheck_gpu.json",
            "passed": sc["checks"] - len(sc["failures"]),
            "failed": len(sc["failures"]),
            "errors": 0,
            "skipped": len(sc.get("skipped", [])),
            "seconds": round(sc.get("seconds", 0), 1),
            "first_failures": sc["failures"][:5],
        }
    return {"source": None, "error": "no report (the phase did not run or was killed)"}


def benchmark(out: Path, shape: str) -> dict:
    d = _json(out / f"gpu_bnn_{shape}.json")
    if d is None:
        return {"error": f"gpu_bnn_{shape}.json missing (the phase did not run or was killed)"}
    runs = {r["name"]: r for r in d.get("runs", [])}
    wall = lambda name: runs.get(name, {}).get("wall_s")  # noqa: E731
    return {
        "status": d.get("status"),
        "images": d.get("images"),
        "data": d.get("data"),
        "best_run": d.get("best_run"),
        "best_wall_s": d.get("best_wall_s"),
        "target_s": d.get("target_s"),
        "target_met": d.get("target_met"),
        "dp_wall_s": wall("dp"),
        "all_xyz_wall_s": wall("all-XYZ"),
        "algorithm1_wall_s": wall("algorithm1"),
        "dp_vs_all_xyz": d.get("dp_vs_all_xyz"),
        "dp_mapping": runs.get("dp", {}).get("impls"),
        "dp_batch": runs.get("dp", {}).get("batch"),
        "dp_fused_gpu": runs.get("dp", {}).get("fused_gpu"),
        "dp_fused_px": runs.get("dp", {}).get("fused_px"),
        "dp_unfused_wall_s": wall("dp-unfused"),
        "dp_unfused_vs_dp": d.get("dp_unfused_vs_dp"),
        "fused_error": d.get("fused_error"),
        "fused_kernels": fused_kernels(d.get("fused_kernels"), runs.get("dp", {}).get("batch")),
        "all_exact": d.get("all_exact"),
        "batch_sizes": d.get("batch_sizes"),
        "batch_sizes_left_out": d.get("batch_sizes_left_out"),
        "skipped_runs": {n: r["skipped"] for n, r in runs.items() if "skipped" in r},
    }


def fused_kernels(times: dict | None, batch) -> dict | None:
    """Each fused kernel against its layers' separate kernels at the DP run's batch size (else
    the largest one timed): kernel, batch, fused_s, fused_config, unfused_s, speedup."""
    if not times:
        return None
    out = {}
    for key, e in times.items():
        rows = e.get("batch") or {}
        b = str(batch) if str(batch) in rows else max(rows, key=int, default=None)
        if b is not None:
            out[key] = {"kernel": e.get("kernel"), "batch": int(b), **rows[b]}
    return out


def _ms(s) -> str:
    return "n/a" if s is None else f"{1e3 * s:.3f} ms"


def headline(summary: dict) -> list[str]:
    lines = []
    pre = summary.get("preflight") or {}
    dev = pre.get("device") or {}
    if pre:
        lines.append(
            f"device: {dev.get('name', '?')}; CuPy {pre.get('cupy')}, driver CUDA "
            f"{pre.get('cuda_driver')}, runtime {pre.get('cuda_runtime')}, NVRTC "
            f"{pre.get('nvrtc') or pre.get('nvrtc_error')}; preflight {pre.get('status')}"
            + (f": {pre['error']}" if pre.get("error") else "")
        )
    ex = summary.get("exactness")
    if ex:
        lines.append(
            "exactness: "
            + (
                ex["error"]
                if "error" in ex
                else f"{ex['passed']} passed, {ex['failed']} failed, {ex['errors']} errors, "
                f"{ex['skipped']} skipped ({ex['seconds']} s)"
            )
            + "".join(f"\n    FAIL {f}" for f in ex.get("first_failures", []))
        )
    for shape, b in summary.get("benchmarks", {}).items():
        if "error" in b:
            lines.append(f"{shape}: {b['error']}")
            continue
        verdict = {True: "met", False: "NOT met", None: "no verdict"}[b.get("target_met")]
        lines.append(
            f"{shape} ({b.get('images')} images): best {b.get('best_run')} "
            f"{_ms(b.get('best_wall_s'))} (target {_ms(b.get('target_s'))}: {verdict}); "
            f"dp {_ms(b.get('dp_wall_s'))} vs all-XYZ {_ms(b.get('all_xyz_wall_s'))}"
            + (f" ({b['dp_vs_all_xyz']:.2f}x)" if b.get("dp_vs_all_xyz") else "")
            + f"; all exact: {b.get('all_exact')}"
        )
        if b.get("fused_error"):
            lines.append(f"{shape} fused kernels left out: {b['fused_error']}")
        elif b.get("fused_kernels"):
            lines.append(
                f"{shape} fused: dp {_ms(b.get('dp_wall_s'))} (runs {b.get('dp_fused_gpu')}"
                + (f", register-blocked {b['dp_fused_px']}" if b.get("dp_fused_px") else "")
                + ") vs dp-unfused "
                f"{_ms(b.get('dp_unfused_wall_s'))}"
                + (f" ({b['dp_unfused_vs_dp']:.2f}x)" if b.get("dp_unfused_vs_dp") else "")
                + "; kernels (separate / fused): "
                + ", ".join(
                    f"{k} {v['kernel']} {v['speedup']:.2f}x" if v.get("speedup") else f"{k} {v['kernel']} n/a"
                    for k, v in b["fused_kernels"].items()
                )
            )
    lines.append(
        "phases: "
        + ", ".join(
            f"{p['name']} {p['status']} {p['seconds']}/{p['limit_s']} s" for p in summary.get("phases", [])
        )
    )
    lines.append(
        f"total {summary.get('seconds')} s of {summary.get('total_budget_s')} s; exit "
        f"{summary.get('exit_code')} ({summary.get('status')})"
    )
    return lines


EXIT_MEANING = {
    0: "all exact",
    1: "a check failed",
    2: "usage",
    3: "no CuPy",
    4: "no usable CUDA device",
    5: "NVRTC missing or the kernels do not compile",
    6: "compiled kernels unusable",
    7: "a phase ran out of time",
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--exit-code", type=int, required=True)
    ap.add_argument("--total-s", type=int, default=None)
    args = ap.parse_args(argv)
    ph = phases(args.out)
    summary = {
        "exit_code": args.exit_code,
        "status": EXIT_MEANING.get(args.exit_code, "?"),
        "total_budget_s": args.total_s,
        "seconds": sum(p["seconds"] for p in ph),
        "phases": ph,
        "preflight": _json(args.out / "preflight.json"),
    }
    ran = {p["name"] for p in ph}
    if "exactness" in ran:
        summary["exactness"] = exactness(args.out)
    summary["benchmarks"] = {s: benchmark(args.out, s) for s in SHAPES if s in ran}
    write_text_atomic(args.out / "gpu_check.json", json.dumps(summary, indent=1, default=str))
    print("[gpu_check] ===== summary (gpu_check.json) =====")
    for line in headline(summary):
        print(f"[gpu_check] {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
