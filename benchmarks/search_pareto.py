#!/usr/bin/env python3
"""The co-design search's results under its protocol (docs/search.md, "The protocol"): one
configuration per data set and family, each a sweep of budgets at fixed fractions of the zoo
architecture's own cost, the random-search and width-scaling baselines, every model trained with
the same recipe over 3 seeds, and the zoo architecture, the anchor, trained in the same run.
Prints the report (every model with counts and 95% intervals, each budget's paired comparisons,
the rank agreement of the super network); `--write-docs` puts it, with the command, the date, the
machine and the wall time, between the configuration's markers in docs/search.md.

    .venv/bin/python benchmarks/search_pareto.py --config digits-sac [--write-docs]
    .venv/bin/python benchmarks/search_pareto.py --config digits-bnn [--write-docs]
    .venv/bin/python benchmarks/search_pareto.py --config fashion-bnn --device cuda   # a GPU
    .venv/bin/python benchmarks/search_pareto.py --config fashion-sac --address HOST:PORT

Trials and trainings already finished in the output folder are read back (the search resumes),
so an interrupted configuration continues where it stopped. The estimate printed first is from
the per-epoch times measured on the 2-core development machine (CONFIGS' `minutes`).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import re
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path

from safeio import write_text_atomic
from workbench.commands.search import build_parser as build_search_parser
from workbench.commands.search import options_from_args, verify
from workbench.search.driver import SearchError, check_options, run_search
from workbench.search.front import compute_minutes, summary
from workbench.search.plan import final_jobs

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "search.md"

# name: the search's arguments (budgets as fractions of the zoo architecture's cycles on 8x8),
# and the minutes one super network and one final training take on one core of the development
# machine (for the estimate printed first). fashion-bnn's are measured (2026-12-05: two super
# networks 49 min each and final trainings 57-76 min each, two at a time on the 2 cores), and
# fashion-sac's (2026-12-06: one super network 22 min, 12 final trainings 89 min in all, with
# place-and-route runs beside them)
CONFIGS = {
    "digits-sac": {
        "family": "sac",
        "data": "digits",
        "fractions": (0.35, 0.45, 0.55),
        "args": [
            "--seeds",
            "2",
            "--epochs",
            "15",
            "--warmup-epochs",
            "3",
            "--final-float-epochs",
            "20",
            "--final-epochs",
            "8",
        ],
        "minutes": (0.8, 0.8),
    },
    "digits-bnn": {
        "family": "bnn",
        "data": "digits",
        "fractions": (0.3, 0.45, 0.55),
        "args": [
            "--seeds",
            "2",
            "--epochs",
            "15",
            "--warmup-epochs",
            "3",
            "--final-float-epochs",
            "15",
            "--final-epochs",
            "25",
        ],
        "minutes": (1.0, 1.5),
    },
    # Fashion-MNIST: a shorter recipe than the zoo's (2 + 6 and 6 + 2 epochs instead of 5 + 16
    # and 30 + 4) so that 3 seeds of every model fit in hours on 2 cores; every model, the zoo
    # architecture included, gets the same one
    "fashion-bnn": {
        "family": "bnn",
        "data": "fashion",
        "fractions": (0.45, 0.6),
        "args": [
            "--seeds",
            "1",
            "--epochs",
            "4",
            "--warmup-epochs",
            "1",
            "--binary-supernet",
            "--min-channels",
            "64,8",
            "--final-float-epochs",
            "2",
            "--final-epochs",
            "6",
        ],
        "minutes": (50.0, 62.0),
    },
    "fashion-sac": {
        "family": "sac",
        "data": "fashion",
        "fractions": (0.45,),
        "args": [
            "--seeds",
            "1",
            "--space",
            "zoo",
            "--epochs",
            "4",
            "--warmup-epochs",
            "1",
            "--final-float-epochs",
            "6",
            "--final-epochs",
            "2",
        ],
        "minutes": (22.0, 7.5),
    },
}


def search_argv(name: str, args) -> list[str]:
    """The `sacbench search` arguments of a configuration (budgets filled in by budgets())."""
    c = CONFIGS[name]
    argv = [
        "--family",
        c["family"],
        "--cost",
        "cycles",
        "--data",
        c["data"],
        "--array",
        "8x8",
        "--budgets",
        "1",
        "--final-seeds",
        str(args.final_seeds),
        "--baselines",
        "random,width",
        "--out",
        str(args.out / name),
        *c["args"],
    ]
    for flag, value in (("--cpus", args.cpus), ("--address", args.address), ("--device", args.device)):
        if value is not None:
            argv += [flag, str(value)]
    return argv


def budgets(opts) -> list[float]:
    """The configuration's budgets: fractions of the zoo architecture's exact cycles."""
    from models.datasets import load_dataset
    from workbench.search.costs import CostModel
    from workbench.search.families import family

    fam = family(opts.family)
    val = load_dataset(opts.data, "val")
    model = CostModel(fam, opts.trial_configs()[0].cost_settings(), val.image_shape, val.classes)
    zoo = model.static("cycles", fam.zoo_arch(opts.data))
    return [float(round(f * zoo)) for f in CONFIGS[opts_name(opts)]["fractions"]]


def opts_name(opts) -> str:
    return Path(opts.out).name


def estimate_minutes(opts, cpus: int) -> float:
    """Minutes the configuration takes here: its super networks and final trainings (those not
    finished yet) at the measured per-core minutes, `cpus` at a time."""
    from workbench.search.evaluation import read_final
    from workbench.search.options import plan_of
    from workbench.search.results import read_result

    per_super, per_final = CONFIGS[opts_name(opts)]["minutes"]
    configs = opts.trial_configs()
    trials = [c for c in configs if read_result(Path(c.out)) is None]
    jobs = [
        j
        for j in final_jobs(configs, plan_of(opts, configs), Path(opts.out).resolve() / "models")
        if read_final(j.out) is None
    ]
    work = len(trials) * (per_super + configs[0].final_seeds * per_final) + len(jobs) * per_final
    return work / max(1, cpus)


def write_docs(name: str, text: str) -> None:
    """The report between `<!-- results:NAME -->` and `<!-- /results:NAME -->` in docs/search.md."""
    doc = DOC.read_text()
    start, end = f"<!-- results:{name} -->", f"<!-- /results:{name} -->"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if not pattern.search(doc):
        raise SystemExit(f"search_pareto: error: {DOC} has no {start} ... {end} block")
    write_text_atomic(DOC, pattern.sub(lambda _m: f"{start}\n{text}\n{end}", doc))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), required=True)
    ap.add_argument("--final-seeds", type=int, default=3)
    ap.add_argument("--cpus", type=int, default=None, help="local Ray: trainings at once")
    ap.add_argument("--address", default=None, help="a Ray cluster (HOST:PORT)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default=None)
    ap.add_argument("--verify", action="store_true", help="the front through the compare job")
    ap.add_argument(
        "--write-docs", action="store_true", help="put the report into docs/search.md (between its markers)"
    )
    ap.add_argument("--out", type=Path, default=Path("out/bench/search"))
    args = ap.parse_args(argv)
    command = "benchmarks/search_pareto.py " + " ".join(
        map(shlex.quote, sys.argv[1:] if argv is None else argv)
    )
    try:
        sargv = search_argv(args.config, args)
        opts = options_from_args(build_search_parser().parse_args(sargv), sargv)
        opts = replace(opts, budgets=budgets(opts), command=command)
        check_options(opts)
    except SearchError as exc:
        ap.error(str(exc))
    import os

    cpus = args.cpus or (1 if args.address else os.cpu_count() or 1)
    print(
        f"[search_pareto] {args.config}: budgets {', '.join(f'{b:,.0f}' for b in opts.budgets)}"
        f" cycles; about {estimate_minutes(opts, cpus):.0f} min on {cpus} core(s) of the "
        f"development machine (what is finished in {opts.out} is read back)",
        flush=True,
    )
    t0 = time.perf_counter()
    doc = run_search(opts)
    wall = time.perf_counter() - t0
    report = summary(doc)
    print("\n" + report)
    code = verify(doc, opts, images=100) if args.verify else 0
    if args.write_docs:
        shown = list(sargv)
        shown[shown.index("--budgets") + 1] = ",".join(f"{b:g}" for b in opts.budgets)
        stamp = (
            f"Made on {datetime.date.today().isoformat()} by `{command}`, which runs "
            f"`sacbench search {' '.join(shlex.quote(a) for a in shown)}`: "
            f"{compute_minutes(doc):.0f} min of training in all (super networks and final "
            f"trainings, one core each) on {platform.machine()} with {os.cpu_count()} "
            f"cores; this run {wall / 60:.1f} min wall (what had finished in "
            f"{opts.out} before was read back)."
        )
        write_docs(args.config, f"{stamp}\n\n{report}")
        print(f"[search_pareto] wrote the report into {DOC.relative_to(ROOT)}")
    return code


if __name__ == "__main__":
    sys.exit(main())
