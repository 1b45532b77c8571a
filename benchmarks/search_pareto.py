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
from pathlib import Path

from workbench.commands.search import verify
from workbench.search.driver import SearchOptions, run_search, zoo_reference

FRACTIONS = {"sac": (0.35, 0.45, 0.55), "bnn": (0.3, 0.45, 0.55)}
TARGET_RATIO = 0.6


def sweep(family: str, cost: str, budgets: list, args, out: Path, trial: dict) -> tuple:
    opts = SearchOptions(family=family, cost=cost, budgets=budgets, lambdas=[1.0],
                         seeds=args.seeds, first_seed=args.first_seed, data=args.data, out=out,
                         cpus=args.cpus, trial=trial,
                         command=args.command)
    t0 = time.perf_counter()
    doc = run_search(opts)
    return opts, doc, time.perf_counter() - t0


def report_chain(family: str, args, root: Path) -> dict:
    trial = {"costs": {"array": args.array}}
    trial.update({k: v for k, v in (("epochs", args.epochs), ("warmup_epochs", args.warmup_epochs),
                                    ("gate_lr", args.gate_lr), ("final_epochs", args.final_epochs),
                                    ("final_float_epochs", args.final_float_epochs))
                  if v is not None})
    space = {k: v for k, v in (("layers", args.layers), ("min_channels", args.min_channels),
                               ("hidden", args.hidden)) if v is not None}
    if space:                         # the BNN space of `sacbench search` (same option names)
        trial["space"] = space
    if args.space == "zoo":           # the zoo model's skeleton (sac_fashion: poolings, dense)
        from workbench.search.families import family as get_family
        trial["space"] = get_family(family).zoo_space(args.data)
    probe = SearchOptions(family=family, cost="cycles", budgets=[1.0], data=args.data,
                          out=root / f"{family}_{args.data}", trial=trial)
    zoo = zoo_reference(probe)
    if zoo is None:
        print(f"\n{family}: no zoo model for {args.data}: nothing to compare with")
        return {}
    budgets = args.budgets or [round(f * zoo["costs"]["cycles"]) for f in FRACTIONS[family]]
    print(f"\n=== {family} family on {args.data}, cost cycles ({args.array}); anchor: zoo "
          f"{zoo['name']}: test {100 * zoo['test']:.2f}%, {zoo['costs']['cycles']:,.0f} cycles; "
          f"budgets {budgets} ===", flush=True)
    opts, doc, wall = sweep(family, "cycles", budgets, args, probe.out, trial)
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
    opts, doc, wall = sweep("resnet-fabric", "params", [budget], args, out,
                            {"final_epochs": args.fabric_epochs})
    for m in doc["models"]:
        print(f"{m['name']:34s} {m['arch_text']:44s} val {100 * m['accuracy']['val']:6.2f}% test "
              f"{100 * m['accuracy']['test']:6.2f}% params {m['costs']['params']:,.0f} "
              f"({m['costs']['params'] / budget:.2f}x the ResNet's){' front' if m['on_front'] else ''}")
    better = [m["name"] for m in doc["models"] if m["accuracy"]["test"] >= base["test"]
              and m["costs"]["params"] < budget]
    print(f"B-ResNet models with test accuracy >= the ResNet's and fewer parameters: "
          f"{', '.join(better) or 'NONE'}; sweep {wall / 60:.1f} min")
    return {"family": "resnet-fabric", "baseline": base, "better": better, "sweep_s": wall}


def channel_list(text: str) -> list:
    try:
        return [int(c) for c in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"comma-separated channel counts, got {text!r}") from None


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
    ap.add_argument("--min-channels", type=channel_list, default=None,
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
    if args.space == "zoo" and (args.layers or args.min_channels or args.hidden):
        ap.error("--space zoo takes its sizes from the zoo model: drop --layers, --min-channels "
                 "and --hidden")
    if "sac" in args.families.split(",") and (args.min_channels or args.hidden):
        ap.error("--min-channels and --hidden are for the bnn family: give --families bnn")
    args.command = "benchmarks/search_pareto.py " + " ".join(
        map(shlex.quote, sys.argv[1:] if argv is None else argv))
    results = []
    for fam in args.families.split(","):
        if fam in ("sac", "bnn"):
            results.append(report_chain(fam, args, args.out))
        elif fam == "fabric":
            results.append(report_fabric(args, args.out))
        else:
            print(f"unknown family {fam!r}", file=sys.stderr)
            return 2
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
