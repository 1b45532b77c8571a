#!/usr/bin/env python3
"""For this chip and this latency target, which array and which network? The joint search of the
array and the network (`sacbench search --device CHIP --latency-ms T`) against the two answers a
user has without it, on each chip:

* **fixed 8x8**: the search of the network alone for the 8x8 array (`--array 8x8 --cost
  latency_ms`) at the clock the 8x8 instance is modelled to reach on that chip, same targets;
* **zoo on its array**: the zoo architecture on the fastest array that fits the chip (the joint
  search's own zoo baseline; the largest array that fits, unless a smaller one is faster at its
  clock), compared where it meets the target.

Latency targets are fractions of the zoo architecture's latency on the fixed 8x8 array on that
chip. Every model is trained with the same recipe over 3 seeds (the protocol of docs/search.md);
the joint search's best model within each target is compared with the fixed-8x8 search's on the
same validation images (paired bootstrap). Prints one table; `--write-docs` puts it, with the
commands, between the `joint-DATA` markers of docs/search.md.

    .venv/bin/python benchmarks/search_joint.py --data digits|fashion [--seeds N] [--write-docs] [--verify]

Finished trials and trainings in the output folder are read back (the searches resume).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path

from fpga.arch import ArrayConfig
from fpga.devices import modelled_clock
from workbench.commands.args import int_at_least
from workbench.commands.search import build_parser, options_from_args, verify
from workbench.search import protocol
from workbench.search.driver import SearchError, TrialFailed, check_options, run_search
from workbench.search.evaluation import outcomes
from workbench.search.front import _acc, _diff, compute_minutes, hardware_text, markdown
from workbench.search.plan import model_job

ROOT = Path(__file__).resolve().parents[1]
CHIPS = ("XC7VX485T", "LFE5U-85F")
FRACTIONS = (0.05, 0.25, 0.5)


def _search_pareto():
    """benchmarks/search_pareto.py: the protocol's configurations and the docs' writer."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("search_pareto", ROOT / "benchmarks" / "search_pareto.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recipe(data: str, seeds: int = 1) -> list[str]:
    """The search's recipe: benchmarks/search_pareto.py's SAC configuration of the data set,
    `seeds` search seeds (super networks) per target."""
    args = list(_search_pareto().CONFIGS[f"{data}-sac"]["args"])
    args[args.index("--seeds") + 1] = str(seeds)
    return args


def fixed_clock(chip: str) -> float:
    """The clock the 8x8 instance (CMAX 64, default memories) is modelled to reach on `chip`."""
    return modelled_clock(ArrayConfig(8, 8), chip).mhz


def argv_of(kind: str, chip: str, data: str, targets: list[float], args) -> list[str]:
    common = ["--family", "sac", "--data", data, "--final-seeds", "3", "--baselines", "none"]
    common += ["--out", str(args.out / data / f"{kind}-{chip}"), *recipe(data, args.seeds)]
    ms = ",".join(f"{t:.6g}" for t in targets)
    if kind == "joint":
        return [*common, "--device", chip, "--latency-ms", ms]
    return [*common, "--array", "8x8", "--clock-mhz", f"{fixed_clock(chip):.6g}", "--latency-ms", ms]


def targets_of(chip: str, data: str, args) -> list[float]:
    """FRACTIONS of the zoo architecture's latency on the fixed 8x8 array on the chip."""
    from models.datasets import load_dataset
    from workbench.search.costs import CostModel
    from workbench.search.families import family

    sargv = argv_of("fixed8x8", chip, data, [1.0], args)
    opts = options_from_args(build_parser().parse_args(sargv), sargv)
    fam, val = family("sac"), load_dataset(data, "val")
    model = CostModel(fam, opts.trial_configs()[0].cost_settings(), val.image_shape, val.classes)
    zoo = model.static("latency_ms", fam.zoo_arch(data))
    return [float(f"{f * zoo:.4g}") for f in FRACTIONS]


def run(kind: str, chip: str, data: str, targets: list[float], args):
    sargv = argv_of(kind, chip, data, targets, args)
    opts = options_from_args(build_parser().parse_args(sargv), sargv)
    check_options(opts)
    print(f"[search_joint] {kind} on the {chip}: sacbench search {' '.join(sargv)}", flush=True)
    doc = run_search(replace(opts, command="sacbench search " + " ".join(map(shlex.quote, sargv))))
    return opts, doc


def best_within(doc: dict, target: float) -> dict | None:
    """The search's model of highest mean validation accuracy within the target (equal
    accuracies: the cheaper)."""
    within = [m for m in doc["models"] if m["cost"] <= target * (1 + 1e-9)]
    return max(within, key=lambda m: (m["accuracy"]["val"], -m["cost"]), default=None)


def paired(a_opts, a: dict, b_opts, b: dict) -> dict:
    """A against B on the validation images, over the final seeds both have (seed k with k)."""
    common = sorted({r["seed"] for r in a["seeds"]} & {r["seed"] for r in b["seeds"]})

    def outs(opts, model):
        first = opts.trial_configs()[0]
        root = Path(opts.out).resolve() / "models"
        return [outcomes(model_job(first, model["arch"], k, root).out) for k in common]

    return protocol.paired(outs(a_opts, a), outs(b_opts, b), "val")


def cell(m: dict | None, with_array: bool) -> str:
    if m is None:
        return "none within the target"
    text = f"{m['arch_text']}; val {_acc(m, 'val')}; {m['cost']:.4g} ms"
    return f"{hardware_text(m.get('hardware'))}; {text}" if with_array else text


def rows_for(chip: str, targets, joint, fixed) -> list[dict]:
    (jopts, jdoc), (fopts, fdoc) = joint, fixed
    zoo = jdoc.get("zoo")
    rows = []
    for t in targets:
        a, b = best_within(jdoc, t), best_within(fdoc, t)
        vs = vs_zoo = "-"
        if a is not None and b is not None:
            vs = _diff(paired(jopts, a, fopts, b))
        if a is not None and zoo is not None:
            if zoo["cost"] <= t * (1 + 1e-9):
                vs_zoo = _diff(paired(jopts, a, jopts, zoo))
            else:
                vs_zoo = f"the zoo architecture is over the target ({zoo['cost']:.4g} ms)"
        rows.append(
            {
                "chip": chip,
                "target (ms)": f"{t:.4g}",
                "joint search: array; network; val %; latency": cell(a, True),
                "fixed 8x8 search: network; val %; latency": cell(b, False)
                + f" (8x8 at {fixed_clock(chip):.4g} MHz)",
                "joint vs fixed 8x8 (val, points)": vs,
                "joint vs zoo on its array (val, points)": vs_zoo,
            }
        )
    rows.append(
        {
            "chip": chip,
            "target (ms)": "-",
            "joint search: array; network; val %; latency": "zoo architecture on its array: "
            + (cell(zoo, True) if zoo else f"does not fit: {jdoc.get('zoo_infeasible', '?')}"),
            "fixed 8x8 search: network; val %; latency": "zoo architecture: "
            + (cell(fdoc.get("zoo"), False) if fdoc.get("zoo") else "-"),
            "joint vs fixed 8x8 (val, points)": "-",
            "joint vs zoo on its array (val, points)": "-",
        }
    )
    return rows


def write_docs(name: str, text: str) -> None:
    """Between the `name` markers of docs/search.md: benchmarks/search_pareto.py's writer."""
    _search_pareto().write_docs(name, text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", choices=("digits", "fashion"), default="digits")
    ap.add_argument(
        "--seeds",
        type=int_at_least("--seeds", 1, 1000),
        default=1,
        help="search seeds (super networks) per latency target (default 1)",
    )
    ap.add_argument("--chips", default=",".join(CHIPS), help="comma-separated FPGAs")
    ap.add_argument(
        "--verify", action="store_true", help="the joint searches' fronts through the compare job"
    )
    ap.add_argument("--write-docs", action="store_true", help="the table into docs/search.md")
    ap.add_argument("--out", type=Path, default=Path("out/bench/search-joint"))
    args = ap.parse_args(argv)
    command = "benchmarks/search_joint.py " + " ".join(
        map(shlex.quote, sys.argv[1:] if argv is None else argv)
    )
    t0, rows, runs, code = time.perf_counter(), [], [], 0
    try:
        for chip in (c.strip() for c in args.chips.split(",") if c.strip()):
            targets = targets_of(chip, args.data, args)
            joint = run("joint", chip, args.data, targets, args)
            fixed = run("fixed8x8", chip, args.data, targets, args)
            runs += [joint, fixed]
            rows += rows_for(chip, targets, joint, fixed)
            if args.verify:
                code = max(code, verify(joint[1], joint[0], images=100))
    except SearchError as exc:
        ap.error(str(exc))
    except TrialFailed as exc:  # a trial or a tool failed: the search's own exit status
        print(f"search_joint: error: {exc}", file=sys.stderr)
        return 3
    minutes = sum(compute_minutes(doc) for _, doc in runs)
    table = markdown(rows)
    print("\n" + table)
    if args.write_docs:
        stamp = (
            f"Made on {datetime.date.today().isoformat()} by `{command}`, which runs "
            + "; ".join(f"`{doc['command']}`" for _, doc in runs)
            + f": {minutes:.0f} min of training in all (one core each) on {platform.machine()} with "
            f"{os.cpu_count()} cores; this run {(time.perf_counter() - t0) / 60:.1f} min wall."
        )
        write_docs(f"joint-{args.data}", f"{stamp}\n\n{table}")
        print("[search_joint] wrote the table into docs/search.md")
    return code


if __name__ == "__main__":
    sys.exit(main())
