#!/usr/bin/env python3
"""The co-design search's numbers (issue 9), each with its anchor measured in the same run.

For the SAC and BNN families on a data set (cost = cycles on an 8x8 array): a sweep of
budgets at fixed fractions of the zoo model's own cycles, two seeds each, through local Ray;
the validation Pareto front; whether a front model dominates the zoo model of the family
(test accuracy at least equal, cycles at most 0.6x); the front verified on the FPGA path (zero
mismatches, RTL cycles equal to the model). For the ResNet fabric (cost = params): the fixed
ResNet inside it trained with the same recipe, then B-ResNet at that ResNet's parameter budget.
Times: the sweep's wall time and each trial's.

    .venv/bin/python benchmarks/search_pareto.py --data digits
    .venv/bin/python benchmarks/search_pareto.py --data fashion --families bnn --seeds 1 \
        --budgets 1600000,2100000 --epochs 4 --warmup-epochs 1
    .venv/bin/python benchmarks/search_pareto.py --data fashion --families sac --space zoo \
        --seeds 1 --epochs 4 --warmup-epochs 1
    .venv/bin/python benchmarks/search_pareto.py --data fashion --families bnn --seeds 1 \
        --first-seed 1 --budgets 2080000 --layers 3 --min-channels 64,64,8 --hidden 512 --epochs 4 \
        --warmup-epochs 1 --gate-lr 0.05 --final-float-epochs 10 --final-epochs 64 --cpus 2

Trials already finished in the output folder with the same settings are read back, not rerun
(the search's resumption), so a sweep can be extended budget by budget.
"""
import argparse
import json
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path

from safeio import write_text_atomic
from workbench.commands.search import build_parser as build_search_parser
from workbench.commands.search import options_from_args, verify
from workbench.search.driver import SearchError, SearchOptions, check_options, run_search, zoo_reference

FRACTIONS = {"sac": (0.35, 0.45, 0.55), "bnn": (0.3, 0.45, 0.55)}
TARGET_RATIO = 0.6


def sweep(opts: SearchOptions) -> tuple:
    t0 = time.perf_counter()
    doc = run_search(opts)
    return doc, time.perf_counter() - t0


def chain_options(family: str, args) -> SearchOptions:
    """What `sacbench search` makes of the benchmark's arguments for a SAC or BNN sweep (its
    one mapping of options to trial settings, and its checks: SearchError); the budgets are
    set once the zoo anchor is known."""
    flags = (("--epochs", args.epochs), ("--warmup-epochs", args.warmup_epochs),
             ("--gate-lr", args.gate_lr), ("--final-epochs", args.final_epochs),
             ("--final-float-epochs", args.final_float_epochs), ("--layers", args.layers),
             ("--min-channels", args.min_channels), ("--hidden", args.hidden),
             ("--cpus", args.cpus))
    argv = ["--family", family, "--cost", "cycles", "--budgets", "1", "--seeds",
            str(args.seeds), "--first-seed", str(args.first_seed), "--data", args.data,
            "--array", args.array, "--space", args.space,
            "--out", str(args.out / f"{family}_{args.data}")]
    argv += [str(x) for flag, value in flags if value is not None for x in (flag, value)]
    opts = replace(options_from_args(build_search_parser().parse_args(argv), argv),
                   command=args.command)
    check_options(opts)
    return opts


def report_chain(opts: SearchOptions, args) -> dict:
    family = opts.family
    zoo = zoo_reference(opts)
    if zoo is None:
        print(f"\n{family}: no zoo model for {args.data}: nothing to compare with")
        return {}
    budgets = args.budgets or [round(f * zoo["costs"]["cycles"]) for f in FRACTIONS[family]]
    print(f"\n=== {family} family on {args.data}, cost cycles ({args.array}); anchor: zoo "
          f"{zoo['name']}: test {100 * zoo['test']:.2f}%, {zoo['costs']['cycles']:,.0f} cycles; "
          f"budgets {budgets} ===", flush=True)
    opts = replace(opts, budgets=budgets)
    doc, wall = sweep(opts)
    print(f"\n{'model':28s} {'arch':52s} {'val':>7s} {'test':>7s} {'cycles':>9s} {'x zoo':>6s} "
          f"{'front':>5s} {'trial s':>8s}")
    for m in doc["models"]:
        print(f"{m['name']:28s} {m['arch_text'][:52]:52s} {100 * m['accuracy']['val']:6.2f}% "
              f"{100 * m['accuracy']['test']:6.2f}% {m['costs']['cycles']:9,.0f} "
              f"{m['cost_vs_zoo']:6.2f} {'yes' if m['on_front'] else '':>5s} "
              f"{m['seconds']['total']:8.0f}")
    winners = [m for m in doc["models"] if m["on_front"] and
               m["accuracy"]["test"] >= zoo["test"] and m["cost_vs_zoo"] <= TARGET_RATIO]
    print(f"front models dominating the zoo model (test >= {100 * zoo['test']:.2f}%, cycles <= "
          f"{TARGET_RATIO}x): {', '.join(m['name'] for m in winners) or 'NONE'}")
    code = verify(doc, opts, images=args.verify_images) if args.verify else None
    trials = [m["seconds"]["total"] for m in doc["models"]]
    print(f"sweep of {len(doc['models'])} trials through local Ray: {wall / 60:.1f} min wall; "
          f"one trial {min(trials):.0f}-{max(trials):.0f} s (mean {sum(trials) / len(trials):.0f} s)")
    if code is not None:
        print(f"verification of the front on the FPGA path: {'zero mismatches' if code == 0 else 'MISMATCH'}")
    return {"family": family, "zoo": zoo, "winners": [m["name"] for m in winners],
            "sweep_s": wall, "trial_s": trials, "verify_exit": code}


def report_fabric(args, root: Path) -> dict:
    out = root / f"fabric_{args.data}"
    probe = SearchOptions(family="resnet-fabric", cost="params", budgets=[1.0], data=args.data,
                          out=out, trial={"final_epochs": args.fabric_epochs})
    base = zoo_reference(probe)        # the fixed ResNet, trained with the same recipe
    budget = base["costs"]["params"]
    print(f"\n=== resnet-fabric on {args.data}, cost params; anchor: fixed {base['name']}: test "
          f"{100 * base['test']:.2f}%, {budget:,.0f} parameters (the budget) ===", flush=True)
    opts = SearchOptions(family="resnet-fabric", cost="params", budgets=[budget],
                         lambdas=[1.0], seeds=args.seeds, first_seed=args.first_seed,
                         data=args.data, out=out, cpus=args.cpus,
                         trial={"final_epochs": args.fabric_epochs}, command=args.command)
    doc, wall = sweep(opts)
    for m in doc["models"]:
        print(f"{m['name']:34s} {m['arch_text']:44s} val {100 * m['accuracy']['val']:6.2f}% test "
              f"{100 * m['accuracy']['test']:6.2f}% params {m['costs']['params']:,.0f} "
              f"({m['costs']['params'] / budget:.2f}x the ResNet's){' front' if m['on_front'] else ''}")
    better = [m["name"] for m in doc["models"] if m["accuracy"]["test"] >= base["test"]
              and m["costs"]["params"] < budget]
    print(f"B-ResNet models with test accuracy >= the ResNet's and fewer parameters: "
          f"{', '.join(better) or 'NONE'}; sweep {wall / 60:.1f} min")
    return {"family": "resnet-fabric", "baseline": base, "better": better, "sweep_s": wall}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="digits")
    ap.add_argument("--families", default="sac,bnn,fabric")
    ap.add_argument("--array", default="8x8")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--budgets", type=lambda v: [float(b) for b in v.split(",")], default=None,
                    help="cycle budgets (instead of fixed fractions of the zoo model's cycles)")
    ap.add_argument("--epochs", type=int, default=None, help="super-network epochs per trial")
    ap.add_argument("--warmup-epochs", type=int, default=None)
    ap.add_argument("--gate-lr", type=float, default=None, help="gate logits' learning rate")
    ap.add_argument("--space", choices=("default", "zoo"), default="default",
                    help="zoo: super networks with the skeleton of the zoo model (search --space)")
    ap.add_argument("--first-seed", type=int, default=0, help="seeds K..K+N-1 (search --first-seed)")
    ap.add_argument("--layers", type=int, default=None, help="super network: hidden layers")
    ap.add_argument("--min-channels", default=None,
                    help="bnn: channels of each conv block that are always on (search --min-channels)")
    ap.add_argument("--hidden", type=int, default=None, help="bnn: the widest hidden dense layer")
    ap.add_argument("--final-epochs", type=int, default=None,
                    help="QAT epochs of each final model (default: the zoo recipe's)")
    ap.add_argument("--final-float-epochs", type=int, default=None,
                    help="float-twin epochs of each final model (default: the zoo recipe's)")
    ap.add_argument("--cpus", type=int, default=None, help="local Ray: trials at once")
    ap.add_argument("--fabric-epochs", type=int, default=30)
    ap.add_argument("--verify-images", type=int, default=100)
    ap.add_argument("--no-verify", dest="verify", action="store_false")
    ap.add_argument("--out", type=Path, default=Path("out/bench/search"))
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    args.command = "benchmarks/search_pareto.py " + " ".join(
        map(shlex.quote, sys.argv[1:] if argv is None else argv))
    families = args.families.split(",")
    unknown = [f for f in families if f not in ("sac", "bnn", "fabric")]
    if unknown:
        ap.error(f"unknown family {unknown[0]!r} (sac, bnn or fabric)")
    try:        # every sweep's options are checked before the first one trains
        chains = {f: chain_options(f, args) for f in families if f != "fabric"}
    except SearchError as exc:
        ap.error(str(exc))
    results = [report_chain(chains[f], args) if f != "fabric" else report_fabric(args, args.out)
               for f in families]
    if args.json:
        write_text_atomic(args.json, json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
