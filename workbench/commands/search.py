"""Co-design search: budgeted super networks (BSN) that pay in SAC-array cycles, energy, GPU
time, parameters, mult-adds or parallel steps; many (budget, lambda, seed) trials through Ray
Tune, one Pareto front on the validation split.

Examples:
  sacbench search --family sac --cost cycles --budgets 12000,20000 --array 8x8 \\
      --data digits --epochs 15 --out out/search/sac
  sacbench search --family bnn --cost cycles --budgets 100000 --seeds 2 --out out/search/bnn
  sacbench search --family resnet-fabric --cost params --budgets 20000 --final-seeds 1 \\
      --baselines none --out out/search/fabric
  sacbench search --family sac --space zoo --data fashion --budgets 280000 --epochs 4 \\
      --warmup-epochs 1 --out out/search/sac_fashion
  sacbench search --family sac --device XC7VX485T --latency-ms 0.01,0.02 --out out/search/joint

With --device CHIP (an FPGA: XC7VX485T, LFE5U-85F, LFE5U-25F) the array is searched with the
network: each network is costed on the fastest candidate array (--arrays) that fits the chip
within --utilisation, at the clock the area and clock model gives that array there; the front
lists (array, network) pairs.

Every reported model (the search's, the random-search and width-scaling baselines', the zoo
architecture's) is trained with the same recipe over --final-seeds seeds; the front and every
comparison are decided on the validation split, the test split only reported
(docs/search.md, "The protocol"). Writes DIR/pareto.json (every model: architecture, counts
per seed, mean accuracies with 95% intervals, paired comparisons with the zoo architecture,
exact costs; each budget's comparison with the baselines; the rank agreement of the super
network), DIR/pareto.png, DIR/front/*.onnx + cards, DIR/trials/<trial>/ and DIR/models/. With --verify
the models on the front run through the compare job (FPGA path with a few RTL images, GPU path
for BNNs). Flags and inputs are checked before any training. A trial that fails, or a lost Ray
head, ends the search with status 3; an interrupted search shuts Ray down and keeps the finished
trials: the same command again resumes.
"""

import argparse
import shlex
import sys
from pathlib import Path

from fpga.arch import MAX_CLOCK_MHZ, MIN_CLOCK_MHZ, ArrayConfig
from fpga.clock import clock_for
from fpga.devices import DEVICES as FPGA_DEVICES
from models.train.common import DEVICES
from workbench.commands.args import (
    MAX_EPOCHS,
    MAX_LR,
    MAX_WIDTH,
    SEED_MAX,
    ArgumentParser,
    finite_float,
    guarded,
    int_at_least,
)
from workbench.search.costs import COSTS
from workbench.search.driver import (
    SearchError,
    SearchOptions,
    TrialFailed,
    interruption,
    run_search,
)
from workbench.search.families import FAMILIES

PROG = "sacbench search"


def _numbers(text: str, flag: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{flag} must be comma-separated numbers, got {text!r}") from None
    if not values or any(v != v or v in (float("inf"), float("-inf")) for v in values):
        raise argparse.ArgumentTypeError(f"{flag} must be finite numbers, got {text!r}")
    return values


def _baselines(text: str) -> tuple:
    names = tuple(v.strip() for v in text.split(",") if v.strip())
    if names in ((), ("none",)):
        return ()
    from workbench.search.plan import BASELINES

    bad = [n for n in names if n not in BASELINES]
    if bad:
        raise argparse.ArgumentTypeError(
            f"--baselines: unknown baseline {bad[0]!r} (choose from {', '.join(BASELINES)}, or none)"
        )
    return names


def build_parser() -> argparse.ArgumentParser:
    ap = ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument(
        "--family",
        choices=sorted(FAMILIES),
        default="sac",
        help="the super network's family: SAC CNNs, binarized networks or the B-ResNet fabric",
    )
    ap.add_argument(
        "--cost",
        choices=COSTS,
        default=None,
        help="the budgeted cost (default cycles; latency_ms with --latency-ms; with --device CHIP "
        "latency_ms or energy, the array the fastest that fits either way)",
    )
    ap.add_argument(
        "--budgets",
        default=None,
        type=lambda t: _numbers(t, "--budgets"),
        help="comma-separated budgets in the cost's unit (e.g. 12000,20000 cycles); "
        "required unless --latency-ms gives them",
    )
    ap.add_argument(
        "--latency-ms",
        default=None,
        type=lambda t: _numbers(t, "--latency-ms"),
        help="latency targets in ms per image: the same as --cost latency_ms --budgets T",
    )
    ap.add_argument(
        "--lambdas",
        default="1",  # a string: argparse runs it through `type` (-> [1.0]) and shows it as typed
        type=lambda t: _numbers(t, "--lambdas"),
        help="comma-separated weights of the budget penalty lambda * max(0, C - budget) / budget",
    )
    ap.add_argument(
        "--seeds",
        type=int_at_least("--seeds", 1, 1000),
        default=1,
        help="N seeds per (budget, lambda): K..K+N-1 with K = --first-seed",
    )
    ap.add_argument(
        "--first-seed",
        type=int_at_least("--first-seed", 0, SEED_MAX),
        default=0,
        help="the first seed (more seeds of a sweep into a new --out)",
    )
    ap.add_argument("--data", default="digits", help="digits, fashion or a dataset path")
    ap.add_argument(
        "--array",
        default=None,
        help="SAC array ROWSxCOLS for cycles and energy (default 8x8; not with --device CHIP)",
    )
    ap.add_argument(
        "--arrays",
        default=None,
        help="with --device CHIP: the candidate arrays, ROWSxCOLS[:CMAX] comma-separated (default: "
        "powers of two from 4x4 to 128x64, no wider than tall, CMAX 64..512 and >= 8 COLS)",
    )
    ap.add_argument(
        "--utilisation",
        default=None,
        type=finite_float("--utilisation", positive=True, at_most=1.0),
        help="with --device CHIP: the share of each of its resources (LUTs, FFs, block RAMs) an "
        "array may take (default 0.8)",
    )
    ap.add_argument(
        "--clock-mhz",
        default=None,
        type=finite_float("--clock-mhz", at_least=MIN_CLOCK_MHZ, at_most=MAX_CLOCK_MHZ),
        help="for latency_ms (default: the routed Fmax of --array when `make timing`/`make synth` "
        "measured it, else the seed paper's 170 MHz; with --device CHIP each candidate array's "
        "modelled clock there, this overrides it for all)",
    )
    ap.add_argument(
        "--processors", type=int_at_least("--processors", 1, 4096), default=2, help="for the parallel cost"
    )
    ap.add_argument(
        "--gpu-profile", default=None, help="reference GPU profile JSON for the gpu cost (sacbench map --out)"
    )
    ap.add_argument(
        "--epochs",
        type=int_at_least("--epochs", 1, MAX_EPOCHS),
        default=20,
        help="super-network epochs per trial",
    )
    ap.add_argument(
        "--warmup-epochs",
        type=int_at_least("--warmup-epochs", 0, MAX_EPOCHS),
        default=3,
        help="first epochs train the weights only",
    )
    ap.add_argument(
        "--final-epochs",
        type=int_at_least("--final-epochs", 1, MAX_EPOCHS),
        default=None,
        help="QAT epochs of the final model (default: the zoo recipe's)",
    )
    ap.add_argument(
        "--final-float-epochs",
        default=None,
        type=int_at_least("--final-float-epochs", 1, MAX_EPOCHS),
        help="float-twin epochs of the final model (default: the zoo recipe's)",
    )
    ap.add_argument(
        "--optimizer",
        choices=("adam", "sgd"),
        default="adam",
        help="weights' optimizer (sgd: the paper's, momentum 0.9, weight decay 1e-4)",
    )
    ap.add_argument(
        "--lr",
        type=finite_float("--lr", positive=True, at_most=MAX_LR),
        default=None,
        help="weights' learning rate (adam 0.01, sgd 0.05)",
    )
    ap.add_argument(
        "--gate-lr",
        type=finite_float("--gate-lr", positive=True, at_most=100.0),
        default=0.1,
        help="gate logits' learning rate (SGD, momentum 0.9)",
    )
    ap.add_argument(
        "--gate-clip-final",
        default=8.0,
        type=finite_float("--gate-clip-final", at_least=0.0, at_most=100.0),
        help="the limit of the gate logits grows linearly to this by the last "
        "epoch, so the gates settle on one architecture (0: stays --gate-clip)",
    )
    ap.add_argument(
        "--settle-epochs",
        type=int_at_least("--settle-epochs", 0, MAX_EPOCHS),
        default=2,
        help="weight-only epochs on the returned architecture, the gates "
        "fixed on it, that end the super network's training",
    )
    ap.add_argument(
        "--penalty",
        choices=("hinge", "abs"),
        default="hinge",
        help="the budget penalty: max(0, C - budget) (the paper's) or |C - budget| "
        "(the BSN authors' code: spend the budget)",
    )
    ap.add_argument(
        "--gate-entropy",
        default=0.0,
        type=finite_float("--gate-entropy", at_least=0.0, at_most=100.0),
        help="weight of the gates' entropy in the last third of the gated epochs "
        "(pushes them to 0/1; measured to make digits searches worse)",
    )
    ap.add_argument(
        "--no-projection",
        dest="project",
        action="store_false",
        help="return the gates' own architecture even when it is over the budget "
        "(by default the least confident gates are flipped until it fits)",
    )
    ap.add_argument(
        "--gate-clip",
        type=finite_float("--gate-clip", at_least=0.0, at_most=100.0),
        default=3.0,
        help="keep gate logits in [-c, c] (0: no limit)",
    )
    ap.add_argument(
        "--layers", type=int_at_least("--layers", 1, 64), default=None, help="super network: hidden layers"
    )
    ap.add_argument(
        "--width",
        type=int_at_least("--width", 1, MAX_WIDTH),
        default=None,
        help="super network: most channels",
    )
    ap.add_argument(
        "--space",
        choices=("default", "zoo"),
        default="default",
        help="default: the family's own space; zoo: the super network has the skeleton of the "
        "family's zoo model for --data (its widths as the most, its poolings and flattening)",
    )
    ap.add_argument(
        "--binary-supernet",
        action="store_true",
        help="bnn: train the super network binarized (sign activations, +-1 "
        "weights) instead of as its float twin",
    )
    ap.add_argument(
        "--min-channels",
        default=None,
        help="bnn: channels of each conv block that are always on, comma-separated "
        "(e.g. 64,8 keeps the first convolution whole; default one block of 8)",
    )
    ap.add_argument(
        "--hidden",
        type=int_at_least("--hidden", 1, 16 * MAX_WIDTH),
        default=None,
        help="bnn: the widest hidden dense layer, a multiple of 32 (default the zoo's 256)",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=Path("out/search"),
        help="the search's folder: trials, final trainings, pareto.json, pareto.png, front/ "
        "(a rerun with the same options resumes there)",
    )
    ap.add_argument(
        "--address", default=None, help="join this Ray cluster (default: a local Ray for the search)"
    )
    ap.add_argument(
        "--cpus", type=int_at_least("--cpus", 1, 4096), default=None, help="local Ray: trials at once"
    )
    ap.add_argument(
        "--device",
        action="append",
        default=None,
        help="where the trials train (cpu or cuda: the bnn family; the trials at once share the "
        "GPU) and/or the FPGA whose arrays are searched with the network "
        f"({', '.join(FPGA_DEVICES)}); give it twice for both, e.g. --device cuda --device LFE5U-85F",
    )
    ap.add_argument(
        "--collect-only",
        action="store_true",
        help="train nothing: the front of the trials of these options that have "
        "finished in --out (pareto.json lists the others as unfinished)",
    )
    ap.add_argument(
        "--final-seeds",
        type=int_at_least("--final-seeds", 1, 100),
        default=3,
        help="train every reported model (the search's, the baselines', the zoo "
        "architecture's) with seeds 0..N-1 of the same recipe; accuracies are "
        "means with 95%% intervals",
    )
    ap.add_argument(
        "--baselines",
        default="random,width",
        type=_baselines,
        help="random (one random architecture per trial, within its budget), width "
        "(the zoo architecture width-scaled to each budget), both, or none",
    )
    ap.add_argument(
        "--dominance-cost",
        type=finite_float("--dominance-cost", positive=True, at_most=100.0),
        default=1.0,
        help="a model dominates the zoo architecture when its cost is at most this "
        "fraction of the zoo's and its validation accuracy not significantly "
        "worse",
    )
    ap.add_argument(
        "--verify",
        action="store_true",
        help="run the compare job on the front's models; fail on any mismatch",
    )
    ap.add_argument(
        "--verify-images",
        type=int_at_least("--verify-images", 1, 1_000_000),
        default=100,
        help="test images each front model runs through the compare job under --verify",
    )
    return ap


def clock_mhz(args) -> float:
    """--clock-mhz, or the clock fpga/clock.py gives the --array (a bad --array is reported by
    the cost settings' check, with its own message)."""
    try:
        config = ArrayConfig.parse(args.array or "8x8")
    except ValueError:
        config = None
    return clock_for(config, args.clock_mhz).mhz


def split_devices(values: list | None) -> tuple[str, str | None]:
    """The --device values: (where the trials train, the FPGA whose arrays are searched or
    None). SearchError for an unknown name or two of a kind."""
    from fpga.devices import UnknownDevice, device

    train, chips = [], []
    for v in values or []:
        if v.lower() in DEVICES:
            train.append(v.lower())
            continue
        try:
            chips.append(device(v).name)
        except UnknownDevice:
            raise SearchError(
                f"--device {v}: neither a training device ({' or '.join(DEVICES)}) nor a known FPGA "
                f"({', '.join(FPGA_DEVICES)})"
            ) from None
    for kind, got in (("training device", train), ("FPGA", chips)):
        if len(set(got)) > 1:
            raise SearchError(f"--device: two {kind}s given ({' and '.join(got)}); give one")
    return (train[0] if train else "cpu"), (chips[0] if chips else None)


def cost_and_budgets(args, chip: str | None) -> tuple[str, list]:
    """--cost and --budgets, or --latency-ms for both; the joint search's costs."""
    cost, budgets = args.cost, args.budgets
    if args.latency_ms is not None:
        if budgets is not None:
            raise SearchError("--latency-ms gives the budgets: drop --budgets")
        if cost not in (None, "latency_ms"):
            raise SearchError(f"--latency-ms budgets the latency: drop --cost {cost}")
        cost, budgets = "latency_ms", args.latency_ms
    cost = cost or "cycles"
    if budgets is None:
        raise SearchError("give the budgets: --budgets B1,B2 (in the cost's unit) or --latency-ms T1,T2")
    if chip is not None:
        if args.array is not None:
            raise SearchError(
                f"--array {args.array} with --device {chip}: the joint search picks the array "
                f"(name the candidates with --arrays)"
            )
        if cost not in ("latency_ms", "energy"):
            raise SearchError(
                f"--device {chip} searches the array at its modelled clock: the cost must be "
                f"latency_ms (--latency-ms T) or energy, not {cost}"
            )
    else:
        for flag, value in (("--arrays", args.arrays), ("--utilisation", args.utilisation)):
            if value is not None:
                raise SearchError(f"{flag} is for the joint search of the array: give --device CHIP")
    return cost, budgets


def canonical_arrays(text: str | None) -> str | None:
    """--arrays as one canonical text (ROWSxCOLS:CMAX, sorted, each once): the same candidates
    given in another order or spelling are the same search (its folders' keys, resuming)."""
    if text is None:
        return None
    from workbench.search.hardware import parse_shapes

    try:
        shapes = parse_shapes(text)
    except ValueError as exc:
        raise SearchError(str(exc)) from None
    return ",".join(f"{r}x{c}:{b}" for r, c, b in sorted(shapes))


def options_from_args(args, argv) -> SearchOptions:
    train_device, chip = split_devices(args.device)
    cost, budgets = cost_and_budgets(args, chip)
    if chip is None:
        costs = {
            "array": args.array or "8x8",
            "clock_mhz": clock_mhz(args),
            "processors": args.processors,
            "gpu_profile": args.gpu_profile,
        }
    else:  # the array is searched: each its own modelled clock, unless --clock-mhz
        costs = {
            "clock_mhz": args.clock_mhz,
            "processors": args.processors,
            "gpu_profile": args.gpu_profile,
            "fpga_device": chip,
            "utilisation": 0.8 if args.utilisation is None else args.utilisation,
            "arrays": canonical_arrays(args.arrays),
        }
    trial = {
        "epochs": args.epochs,
        "warmup_epochs": args.warmup_epochs,
        "final_epochs": args.final_epochs,
        "final_float_epochs": args.final_float_epochs,
        "final_seeds": args.final_seeds,
        "gate_clip_final": args.gate_clip_final,
        "project": args.project,
        "settle_epochs": args.settle_epochs,
        "penalty": args.penalty,
        "gate_entropy": args.gate_entropy,
        "optimizer": args.optimizer,
        "gate_lr": args.gate_lr,
        "gate_clip": args.gate_clip,
        "device": train_device,
        "costs": costs,
    }
    if args.lr is not None or args.optimizer == "sgd":
        trial["lr"] = args.lr if args.lr is not None else 0.05
    space = {k: v for k, v in (("layers", args.layers), ("width", args.width)) if v is not None}
    if args.space == "zoo":
        if space:
            raise SearchError("--space zoo takes its sizes from the zoo model: drop --layers and --width")
        from workbench.search.families import family

        fam = family(args.family)
        if not hasattr(fam, "zoo_space"):
            raise SearchError(f"--space zoo: the {args.family} family has no zoo model")
        try:
            space = fam.zoo_space(args.data)
        except ValueError as exc:
            raise SearchError(f"--space zoo: {exc}") from None
    if args.binary_supernet:
        if args.family != "bnn":
            raise SearchError("--binary-supernet is for the bnn family")
        space = {**space, "binary": True}
    if args.min_channels is not None:
        if args.family != "bnn":
            raise SearchError("--min-channels is for the bnn family")
        try:
            space = {**space, "min_channels": [int(v) for v in args.min_channels.split(",")]}
        except ValueError:
            raise SearchError(
                f"--min-channels must be comma-separated channel counts, got {args.min_channels!r}"
            ) from None
    if args.hidden is not None:
        if args.family != "bnn":
            raise SearchError("--hidden is for the bnn family")
        space = {**space, "hidden": args.hidden}
    if space:
        trial["space"] = space
    return SearchOptions(
        family=args.family,
        cost=cost,
        budgets=budgets,
        lambdas=args.lambdas,
        seeds=args.seeds,
        first_seed=args.first_seed,
        data=args.data,
        out=args.out,
        address=args.address,
        cpus=args.cpus,
        trial=trial,
        collect_only=args.collect_only,
        baselines=args.baselines,
        cost_fraction=args.dominance_cost,
        command="sacbench search " + " ".join(map(shlex.quote, argv)),
    )


def _verify_array(model: dict, opts: SearchOptions) -> dict:
    """The compare job's array for a front model: the joint search's pick, else --array (the
    compare job fits the memories to the network, as the pick did)."""
    hw = model.get("hardware")
    if hw:
        return {"array": hw["array"], "cmax": hw["cmax"]}
    return {"array": opts.trial["costs"]["array"]}


def verify(doc: dict, opts: SearchOptions, images: int) -> int:
    """The compare job on every model of the front: 1 if any path differs."""
    from workbench.compare import CompareError, Options, RtlFailure, run

    worst = 0
    for m in doc["models"]:
        if not (m["on_front"] and m["files"].get("onnx")):
            continue
        out = Path(opts.out) / "verify" / m["name"]
        try:
            report, code = run(
                Options(
                    model=Path(m["files"]["onnx"]),
                    data=opts.data,
                    images=images,
                    rtl_images=2,
                    **_verify_array(m, opts),
                    out=out,
                    progress=False,
                )
            )
        except RtlFailure as exc:  # a tool failure (exit 3), not bad input
            raise TrialFailed(f"verify {m['name']}: {exc}") from None
        except CompareError as exc:
            raise SearchError(f"verify {m['name']}: {exc}") from None
        fpga, gpu = report["mismatches"]["fpga"], report["mismatches"]["gpu"]
        rtl = report["fpga"]["rtl"]
        print(
            f"[verify] {m['name']}: FPGA mismatches {fpga}, GPU mismatches "
            f"{'n/a' if gpu is None else gpu}, RTL cycles "
            f"{'equal' if rtl.get('cycles_match_model') else 'DIFFER FROM'} the model "
            f"({report['fpga']['cycles_per_image']:,} per image)"
        )
        worst = max(worst, code)
    return worst


@guarded(PROG)
def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        opts = options_from_args(args, argv)
        doc = run_search(opts)
        from workbench.search.front import summary

        print("\n" + summary(doc))
        if doc["unfinished"]:
            print(f"  ({len(doc['unfinished'])} trial(s) not finished: {', '.join(doc['unfinished'])})")
        print(f"wrote {opts.out / 'pareto.json'}, {opts.out / 'pareto.png'} and {opts.out / 'front'}/")
        if args.verify:
            return verify(doc, opts, args.verify_images)
        return 0
    except SearchError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except TrialFailed as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 3
    except BaseException as exc:  # a signal while the trials ran: Ray is shut down,
        stop = interruption(exc)  # and the line says how to resume
        if stop is None:
            raise
        print(f"{PROG}: {stop[1]}", file=sys.stderr)
        return 128 + stop[0]


if __name__ == "__main__":
    sys.exit(main())
