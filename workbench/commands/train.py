"""Train a BNN or a SAC CNN with quantization-aware training and export it as ONNX + JSON card.

    python scripts/train.py --family bnn --data digits --epochs 100 --seed 1 \\
        --out models/zoo/bnn_digits.onnx

The float twin is trained first (its accuracy is the card's baseline), then the quantized model.
Progress bars go to stderr; the last line printed is the accuracy summary. The same seed and
thread count give the same model on the same machine and torch build.
"""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from models.datasets import DatasetError
from models.train.recipes import train_bnn, train_sac
from workbench.cards import write_model_and_card

DEFAULT_EPOCHS = {"bnn": 100, "sac": 15}
DEFAULT_FLOAT_EPOCHS = {"bnn": 60, "sac": 40}


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="train", description=__doc__.split("\n")[0])
    p.add_argument("--family", choices=["bnn", "sac"], required=True)
    p.add_argument("--data", default="digits",
                   help="'digits' or a path to IDX files, CIFAR-10 batches or a HEP-BNN CSV")
    p.add_argument("--epochs", type=int, default=None,
                   help="quantized-training epochs (SAC: per pruning stage; the last stage runs "
                        "twice as long); default bnn 100, sac 15")
    p.add_argument("--float-epochs", type=int, default=None,
                   help="float twin epochs (default bnn 60, sac 40)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads (fixed for determinism)")
    p.add_argument("--out", required=True, help="output .onnx path; the card is written next to it")
    p.add_argument("--name", default=None, help="network name (default: the output file stem)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    if out.suffix != ".onnx":
        print(f"error: --out must end in .onnx, got {out}", file=sys.stderr)
        return 2
    epochs = args.epochs if args.epochs is not None else DEFAULT_EPOCHS[args.family]
    float_epochs = (args.float_epochs if args.float_epochs is not None
                    else DEFAULT_FLOAT_EPOCHS[args.family])
    train = train_bnn if args.family == "bnn" else train_sac
    try:
        result = train(args.data, epochs=epochs, float_epochs=float_epochs, seed=args.seed,
                       threads=args.threads, progress=not args.no_progress,
                       name=args.name or out.stem)
    except DatasetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    command = "python scripts/train.py " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    card = write_model_and_card(result, out, command)
    acc = result.accuracy
    print(result.net.summary())
    if "compile" in card:
        print(f"compiles for the default SAC array: {card['compile']}")
    print(f"wrote {out} and {out.with_suffix('.json')} in {result.seconds:.1f} s")
    print(f"{args.family} {args.data}: quantized test accuracy {100 * acc['quantized_test']:.2f}% "
          f"(golden {100 * acc['golden_test']:.2f}%), float twin {100 * acc['float_test']:.2f}%, "
          f"seed {args.seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
