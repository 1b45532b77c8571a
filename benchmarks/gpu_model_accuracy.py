#!/usr/bin/env python3
"""How close the modelled GPU profile (gpu_kernels/gpu_model.py, what the compare job and the
search's `gpu` cost use on machines without a GPU) comes to GPU measurements: per kernel family
the measured / modelled ratio before and after calibration, per measured run the whole-run
kernel time measured (the anchor), raw-modelled and calibrated. Needs no GPU: it reads layer
times that `benchmarks/gpu_bnn.py` measured on one (stored in
docs/measurements/h200_2026-12-04/layer_times.json).

    python benchmarks/gpu_model_accuracy.py                  # report; exit 1 if CALIBRATION is stale
    python benchmarks/gpu_model_accuracy.py --add fashion 64 results/gpu_bnn_fashion.json
                                                             # add a GPU run's layer times, refit

--add NET WORD_BITS RUN_JSON (repeatable): NET is the benchmark's network spec ('fashion',
'cifar10' or the .onnx path, relative to the repository), RUN_JSON a gpu_bnn_<shape>.json the
benchmark wrote on a GPU; its GPU layers' times are added (a run already there is replaced).
Exit status: 0 the constants in gpu_model.py equal the fit; 1 they do not (paste the printed
CALIBRATION); 2 bad arguments or files.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from gpu_kernels import gpu_model
from safeio import write_text_atomic

FIELDS = ["net", "word_bits", "images", "run", "batch", "layer", "impl", "seconds"]


def samples_of_run(net: str, word_bits: int, path: Path) -> list[dict]:
    data = json.loads(path.read_text())
    if "runs" not in data or "images" not in data:
        raise ValueError(f"{path}: not a gpu_bnn_<shape>.json (no 'runs' / 'images')")
    if not str(data.get("profile_source", "")).startswith("measured: cupy"):
        raise ValueError(
            f"{path}: its runs were not measured on a GPU (profile: {data.get('profile_source')!r})"
        )
    out = []
    for run in data["runs"]:
        if "wall_s" not in run or run["result"].get("backend") != "cupy":
            continue
        if run["result"]["word_bits"] != word_bits:
            raise ValueError(
                f"{path}: run {run['name']} used {run['result']['word_bits']}-bit words, not {word_bits}"
            )
        for i, layer in enumerate(run["result"]["layers"]):
            if layer["device"] == "gpu" and layer["seconds"] > 0:
                out.append(
                    {
                        "net": net,
                        "word_bits": word_bits,
                        "images": data["images"],
                        "run": run["name"],
                        "batch": run["batch"],
                        "layer": i,
                        "impl": layer["impl"],
                        "seconds": layer["seconds"],
                    }
                )
    return out


def write_samples(samples: list[dict], path: Path) -> None:
    rows = [[s[f] for f in FIELDS] for s in samples]
    write_text_atomic(
        path,
        json.dumps(
            {
                "about": "GPU layer times measured by benchmarks/gpu_bnn.py on an "
                "NVIDIA H200 (seconds over all batches of the run); "
                "benchmarks/gpu_model_accuracy.py",
                "fields": FIELDS,
                "rows": rows,
            },
            separators=(",", ":"),
        )
        + "\n",
    )


def report(samples: list[dict], raws: list[tuple[str, float]]) -> bool:
    """Print the comparison; `raws`: each sample's `gpu_model.raw_sample_s`. True when the
    constants in gpu_model.py equal the fit."""
    fit, every = gpu_model.fit_calibration(samples, raws)
    by_family: dict[str, list[tuple[float, float]]] = {}
    runs: dict[tuple, list[float]] = {}
    for s, (family, raw) in zip(samples, raws, strict=True):
        cal = raw * gpu_model.calibration(family)
        by_family.setdefault(family, []).append((s["seconds"] / raw, s["seconds"] / cal))
        tot = runs.setdefault((s["net"], s["word_bits"], s["run"]), [0.0, 0.0, 0.0])
        tot[0] += s["seconds"]
        tot[1] += raw
        tot[2] += cal
    geo = lambda vs: math.exp(sum(map(math.log, vs)) / len(vs))  # noqa: E731
    print(f"{len(samples)} measured layer times of {len(runs)} runs\n")
    print("measured / modelled per kernel family (geometric mean, and the range of single layers)")
    print(f"  {'family':16} {'layers':>6}  {'raw model':>21}  {'calibrated':>21}  fit    in code")
    for fam in sorted(by_family):
        raw = [r for r, _ in by_family[fam]]
        cal = [c for _, c in by_family[fam]]
        code = gpu_model.calibration(fam)
        print(
            f"  {fam:16} {len(raw):6}  {geo(raw):6.2f} ({min(raw):5.2f}..{max(raw):5.2f})  "
            f"{geo(cal):6.2f} ({min(cal):5.2f}..{max(cal):5.2f})  {fit[fam]:5.2f}  {code:5.2f}"
        )
    print(
        f"  {'(all)':16} {len(samples):6}  {'':21}  {'':21}  {every:5.2f}  "
        f"{gpu_model.CALIBRATION_OTHER:5.2f} (families not measured)\n"
    )
    print("whole runs, GPU kernel time of every layer: measured (the anchor) and modelled")
    print(f"  {'network':28} {'words':>5} {'run':>11} {'measured ms':>12} {'raw x':>7} {'calibrated x':>13}")
    for (net, wb, run), (meas, raw, cal) in runs.items():
        print(f"  {net:28} {wb:5} {run:>11} {1e3 * meas:12.2f} {meas / raw:7.2f} {meas / cal:13.2f}")
    ratios = [m / c for m, _, c in runs.values()]
    print(
        f"\ncalibrated whole runs: measured / modelled {min(ratios):.2f}..{max(ratios):.2f} "
        f"(raw: {min(m / r for m, r, _ in runs.values()):.2f}.."
        f"{max(m / r for m, r, _ in runs.values()):.2f})"
    )
    stale = fit != gpu_model.CALIBRATION or every != gpu_model.CALIBRATION_OTHER
    if stale:
        print(
            f"\nCALIBRATION in gpu_kernels/gpu_model.py differs from the fit; paste:\n"
            f"CALIBRATION = {fit}\nCALIBRATION_OTHER = {every}"
        )
    return not stale


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--add",
        nargs=3,
        action="append",
        default=[],
        metavar=("NET", "WORD_BITS", "RUN_JSON"),
        help="add a GPU run's layer times to the stored measurements",
    )
    ap.add_argument(
        "--data",
        type=Path,
        default=gpu_model.CALIBRATION_DATA,
        help="the stored measurements (default: %(default)s)",
    )
    args = ap.parse_args(argv)
    try:
        samples = gpu_model.load_samples(args.data) if args.data.exists() else []
        for net, wb, path in args.add:
            if wb not in ("32", "64"):
                raise ValueError(f"--add {net} {wb} {path}: WORD_BITS must be 32 or 64")
            new = samples_of_run(net, int(wb), Path(path))
            if not new:
                raise ValueError(f"{path}: no GPU layer times in it")
            keys = {(s["net"], s["word_bits"], s["run"]) for s in new}
            samples = [s for s in samples if (s["net"], s["word_bits"], s["run"]) not in keys] + new
            print(f"added {len(new)} layer times of {len(keys)} runs from {path}")
        if args.add:
            args.data.parent.mkdir(parents=True, exist_ok=True)
            write_samples(samples, args.data)
        if not samples:
            raise ValueError(f"{args.data}: no measurements (add some with --add)")
        raws = [gpu_model.raw_sample_s(s) for s in samples]  # every sample's network loads
    except (OSError, ValueError, KeyError, IndexError) as exc:
        print(f"gpu_model_accuracy: {exc}", file=sys.stderr)
        return 2
    return 0 if report(samples, raws) else 1


if __name__ == "__main__":
    sys.exit(main())
