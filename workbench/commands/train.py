"""Train a BNN or a SAC CNN with quantization-aware training and export it as ONNX + JSON card.

    python scripts/train.py --family bnn --data digits --epochs 100 --seed 1 \\
        --out models/zoo/bnn_digits.onnx

Architecture and optimisation flags default to the digits recipes; the zoo cards record the
exact command of every shipped model (docs/models.md).

The float twin is trained first (its accuracy is the card's baseline), then the quantized model.
`--epochs` sets the quantized epochs and, unless `--float-epochs` is given, the float twin's
in the default recipe's proportion; `--quick` is a smoke run (1 + 1 epochs).
Progress bars go to stderr; the last line printed is the accuracy summary. The same seed and
thread count give the same model on the same machine and torch build.

Flags, data and the output path (not a directory, writable, no existing model or card unless
`--force`, and then only a model and card this command wrote, unchanged since) are checked before
any training; one training per --out at a time. The model and card are written to temporary
files and renamed over the old ones together: a failure leaves the previous ones as they were
(one while writing them keeps the training result in OUT.result.pkl).
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import inspect
import math
import pickle
import shlex
import sys
import tempfile
from pathlib import Path

from models.datasets import DatasetError, load_dataset, parse_spec
from models.numerics.sac import MAX_GROUP
from models.train.bnn import BnnConfig
from models.train.common import DEVICES, training_device
from models.train.recipes import train_bnn, train_sac
from models.train.sac import SacConfig, SacNet
from safeio import OutputLock
from workbench.cards import write_model_and_card
from workbench.commands.args import (
    MAX_BATCH,
    MAX_EPOCHS,
    MAX_LR,
    MAX_WIDTH,
    SEED_MAX,
    ArgumentParser,
    finite_float,
    int_at_least,
    print_error,
)

PROG = "sacbench train"
DEFAULT_EPOCHS = {"bnn": 100, "sac": 15}
DEFAULT_FLOAT_EPOCHS = {"bnn": 60, "sac": 40}


def _ints(flag: str, high: int, most: int = 64):
    """An argparse type: comma-separated whole numbers 1..high (ASCII digits), at most `most`."""
    one = int_at_least(flag, 1, high)

    def parse(text: str) -> tuple:
        parts = text.split(",")
        if len(parts) > most:
            raise argparse.ArgumentTypeError(f"{flag}: at most {most} values, got {len(parts)}")
        return tuple(one(v) for v in parts)

    return parse


def _layers(text: str) -> tuple:
    one = int_at_least("--pools", 0, 63)
    return tuple(one(v) for v in text.split(",") if v != "")


def parse_args(argv=None):
    p = ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument(
        "--family",
        choices=["bnn", "sac"],
        required=True,
        help="bnn: a binarized network (the GPU path and the array); sac: a power-of-two SAC CNN",
    )
    p.add_argument(
        "--data",
        default="digits",
        help="'digits', 'fashion' (Debian package dataset-fashion-mnist) or a "
        "directory of IDX files or CIFAR-10 batches (training needs the "
        "train split: a single file, such as a HEP-BNN CSV, has none; "
        "compare and the benchmarks read those)",
    )
    p.add_argument(
        "--epochs",
        type=int_at_least("--epochs", 1, MAX_EPOCHS),
        default=None,
        help="quantized-training epochs (SAC: per pruning stage; the last stage runs "
        "twice as long); default bnn 100, sac 15",
    )
    p.add_argument(
        "--float-epochs",
        type=int_at_least("--float-epochs", 1, MAX_EPOCHS),
        default=None,
        help="float twin epochs; default: in proportion to --epochs as in the "
        "default recipe (bnn 0.6 x, at least 1: 60 for 100; sac 8/3 x: 40 "
        "for 15)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run of the whole pipeline in seconds (digits) to minutes: "
        "1 float epoch and 1 quantized epoch (SAC: 1 per stage) unless "
        "--epochs / --float-epochs say otherwise; not a useful model",
    )
    p.add_argument(
        "--seed",
        type=int_at_least("--seed", 0, SEED_MAX),
        default=0,
        help="seed of the weights' initialisation, the data order and the augmentation",
    )
    p.add_argument(
        "--threads",
        type=int_at_least("--threads", 1, 1024),
        default=1,
        help="torch threads, 1 or more (fixed for determinism)",
    )
    p.add_argument("--out", required=True, help="output .onnx path; the card is written next to it")
    p.add_argument(
        "--force", action="store_true", help="replace an existing --out model and card (refused otherwise)"
    )
    p.add_argument("--name", default=None, help="network name (default: the output file stem)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    p.add_argument(
        "--device", choices=DEVICES, default="cpu", help="where to train (cuda: --family bnn; docs/models.md)"
    )
    opt = p.add_argument_group("optimisation (defaults: the digits recipes)")
    opt.add_argument(
        "--lr",
        type=finite_float("--lr", positive=True, at_most=MAX_LR),
        help=f"quantized-training learning rate (0..{MAX_LR:g}]",
    )
    opt.add_argument(
        "--float-lr",
        type=finite_float("--float-lr", positive=True, at_most=MAX_LR),
        help=f"float twin learning rate (0..{MAX_LR:g}]",
    )
    opt.add_argument(
        "--batch", type=int_at_least("--batch", 1, MAX_BATCH), help="quantized-training batch size"
    )
    opt.add_argument(
        "--float-batch", type=int_at_least("--float-batch", 1, MAX_BATCH), help="float twin batch size"
    )
    opt.add_argument(
        "--max-shift",
        type=int_at_least("--max-shift", 1, 255),
        help="augmentation: random shifts by up to this many pixels (less than the image's side)",
    )
    opt.add_argument(
        "--augment-prob",
        type=finite_float("--augment-prob", at_least=0, at_most=1),
        help="fraction of images shifted during quantized training (0..1)",
    )
    opt.add_argument(
        "--kd-alpha",
        type=finite_float("--kd-alpha", at_least=0, at_most=1),
        help="weight of the distillation loss (0..1)",
    )
    arch = p.add_argument_group("architecture (defaults: the digits models)")
    arch.add_argument("--channels", type=_ints("--channels", MAX_WIDTH), help="bnn: conv widths, e.g. 64,128")
    arch.add_argument(
        "--hidden", type=int_at_least("--hidden", 0, 16 * MAX_WIDTH), help="bnn: hidden dense width (0: none)"
    )
    arch.add_argument("--s2d", type=int_at_least("--s2d", 1, 64), help="sac: input space-to-depth factor")
    arch.add_argument(
        "--widths", type=_ints("--widths", MAX_WIDTH), help="sac: hidden 1x1 layer widths, e.g. 64,128"
    )
    arch.add_argument(
        "--groups",
        type=_ints("--groups", MAX_GROUP),
        help="sac: column-combining group of each hidden layer, e.g. 1,2,4",
    )
    arch.add_argument(
        "--final-group", type=int_at_least("--final-group", 1, MAX_GROUP), help="sac: group of the last layer"
    )
    arch.add_argument(
        "--pools", type=_layers, help="sac: hidden layers (0-based) followed by a 2x2 max pooling, e.g. 2"
    )
    arch.add_argument(
        "--flatten-at",
        type=int_at_least("--flatten-at", 0, 64),
        help="sac: the 1x1 layer (0-based; the number of widths = the final one) "
        "that reads the remaining map folded into channels (a dense head)",
    )
    arch.add_argument(
        "--stages", type=int_at_least("--stages", 1, 16), help="sac: progressive pruning stages"
    )
    return p.parse_args(argv)


_FAMILY_FLAGS = {
    "bnn": ("channels", "hidden"),
    "sac": ("s2d", "widths", "groups", "final_group", "stages", "pools", "flatten_at"),
}


def recipe_kwargs(args, image_shape: tuple) -> dict:
    """The recipe's keyword arguments from the flags given (others keep the recipe defaults);
    raises ValueError naming a flag that does not apply or does not fit."""
    other = "sac" if args.family == "bnn" else "bnn"
    for flag in _FAMILY_FLAGS[other]:
        if getattr(args, flag) is not None:
            raise ValueError(f"--{flag.replace('_', '-')} applies to --family {other} only")
    kw = {
        k: getattr(args, k)
        for k in ("lr", "float_lr", "batch", "float_batch", "max_shift", "augment_prob", "kd_alpha")
        if getattr(args, k) is not None
    }
    side = min(image_shape[1:])
    if kw.get("max_shift", 0) >= side:
        raise ValueError(f"--max-shift {kw['max_shift']} must be less than the images' side ({side} pixels)")
    if args.device != "cpu":
        if args.family != "bnn":
            raise ValueError(f"--device {args.device} applies to --family bnn only")
        try:
            training_device(args.device)
        except ValueError as exc:
            raise ValueError(f"--{exc}") from None
        kw["device"] = args.device
    if args.family == "bnn":
        cfg = {"input_shape": image_shape}
        if args.channels is not None:
            cfg["channels"] = args.channels
        if args.hidden is not None:
            if args.hidden < 0:
                raise ValueError(f"--hidden must be 0 or more, got {args.hidden}")
            cfg["hidden"] = args.hidden
        kw["cfg"] = BnnConfig(**cfg)
        return kw
    if args.stages is not None:
        kw["stages"] = args.stages
    cfg = {"input_shape": image_shape}
    for k in ("s2d", "widths", "groups", "final_group", "pools", "flatten_at"):
        if getattr(args, k) is not None:
            cfg[k] = getattr(args, k)
    sac_cfg = SacConfig(**cfg)
    if len(sac_cfg.groups) != len(sac_cfg.widths):
        raise ValueError(
            f"--groups needs one group per hidden layer ({len(sac_cfg.widths)} "
            f"widths), got {len(sac_cfg.groups)}"
        )
    bad = [i for i in sac_cfg.pools if i >= len(sac_cfg.widths)]
    if bad or len(set(sac_cfg.pools)) != len(sac_cfg.pools):
        raise ValueError(
            f"--pools {','.join(map(str, sac_cfg.pools))}: each hidden layer "
            f"0..{len(sac_cfg.widths) - 1} at most once"
        )
    c, h, w = image_shape
    if h % sac_cfg.s2d or w % sac_cfg.s2d:
        raise ValueError(f"--s2d {sac_cfg.s2d} does not divide the {h}x{w} images")
    side = min(h, w) // sac_cfg.s2d
    if side >> len(sac_cfg.pools) < 1:
        raise ValueError(
            f"--pools: {len(sac_cfg.pools)} poolings leave no pixels of the "
            f"{h // sac_cfg.s2d}x{w // sac_cfg.s2d} input"
        )
    try:
        SacNet(sac_cfg)  # the remaining geometry checks (flatten_at)
    except ValueError as exc:
        raise ValueError(f"--flatten-at: {exc}") from None
    kw["cfg"] = sac_cfg
    return kw


# Peak memory of a training run, in units of what one forward pass of one image keeps (every
# module's output): the saved activations, their gradients and the temporaries of the backward
# pass of a batch, for the model and the teacher (distillation); parameters four times over
# (weights, gradients, Adam's two moments) for each of the two models; the three splits as float32.
ACTIVATION_FACTOR = 4
BASE_BYTES = 768 << 20  # Python, torch and the data set loaded once


def training_memory(family: str, cfg, image_shape: tuple, images: int, batch: int) -> int:
    """Bytes a training run of this architecture needs at its peak (see above), from one forward
    pass of one image through the float model."""
    import torch

    from models.train.bnn import BnnNet

    model = BnnNet(cfg, binary=False) if family == "bnn" else SacNet(cfg)
    sizes = []
    hooks = [
        m.register_forward_hook(
            lambda _m, _i, out: sizes.append(out.numel() * out.element_size() if torch.is_tensor(out) else 0)
        )
        for m in model.modules()
        if not list(m.children())
    ]
    try:
        with torch.no_grad():
            model.eval()(torch.zeros(1, *image_shape))
    finally:
        for h in hooks:
            h.remove()
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    return (
        BASE_BYTES
        + ACTIVATION_FACTOR * 2 * batch * sum(sizes)
        + 2 * 4 * params
        + 4 * images * math.prod(image_shape)
    )


def check_training_memory(args, kw: dict, image_shape: tuple, images: int) -> None:
    """Refuse (ValueError, exit 2) an architecture and batch whose training needs more memory
    than the machine has available, with the estimate, before anything is trained."""
    from models.resources import available_memory_bytes, gib
    from models.train import recipes

    recipe = inspect.signature(recipes._train_bnn if args.family == "bnn" else recipes._train_sac)
    batch = max(kw.get(k, recipe.parameters[k].default) for k in ("batch", "float_batch"))
    need, have = training_memory(args.family, kw["cfg"], image_shape, images, batch), available_memory_bytes()
    if need > have:
        raise ValueError(
            f"this architecture and batch of {batch} need about {gib(need)} to "
            f"train, this machine has {gib(have)} available; give smaller "
            f"--widths/--channels/--hidden or --batch"
        )


def epoch_counts(args) -> tuple[int, int]:
    """(quantized epochs, float twin epochs) from --epochs, --float-epochs and --quick: the float
    epochs follow --epochs in the default recipe's proportion unless given."""
    family = args.family
    epochs = args.epochs if args.epochs is not None else (1 if args.quick else DEFAULT_EPOCHS[family])
    if args.float_epochs is not None:
        return epochs, args.float_epochs
    if args.quick and args.epochs is None:
        return epochs, 1
    ratio = DEFAULT_FLOAT_EPOCHS[family] / DEFAULT_EPOCHS[family]
    return epochs, max(1, round(epochs * ratio))


def check_output(out: Path, force: bool, inputs=()) -> None:
    """Refuse, before any training, an --out that cannot be written or would replace something
    that is not a model this command wrote (ValueError naming the path). With `force`, an
    existing model is replaced only when its card (NAME.json next to it) names it and holds its
    digest: a file the user made, or changed since, is never replaced."""
    from safeio import check_file_target
    from workbench.cards import card_of

    if out.suffix != ".onnx":
        raise ValueError(f"--out must end in .onnx, got {out}")
    card = out.with_suffix(".json")
    check_file_target(out, "--out", inputs)
    check_file_target(card, "--out", inputs)
    for path in (out, card):
        if path.exists() and not force:
            raise ValueError(f"--out {out}: {path} exists; pass --force to replace it")
    if force and (out.exists() or card.exists()):
        own = card_of(out)
        if own is None:
            what = card if card.exists() else out
            raise ValueError(
                f"--out {out}: {what} is not a model or card this command wrote "
                f"(no card {card.name} naming {out.name}); it is not replaced"
            )
        if out.exists() and hashlib.sha256(out.read_bytes()).hexdigest() != own["sha256"]:
            raise ValueError(
                f"--out {out}: {out} was changed since it was trained (its digest "
                f"differs from the card's); it is not replaced"
            )
    folder = out.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise ValueError(f"--out {out}: {folder} is not a directory")
    try:  # what the write will need: a new file in the folder
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".train-probe-"):
            pass
    except OSError as exc:
        raise ValueError(f"--out {out}: cannot write in {folder} ({exc.strerror or exc})") from None


def keep_result(result, out: Path) -> str:
    """After a failed card: the training result in OUT.result.pkl (written atomically), so that
    hours of training are not lost; returns what to tell the user."""
    from safeio import atomic_path

    keep = out.with_suffix(".result.pkl")
    try:
        with atomic_path(keep) as tmp, open(tmp, "wb") as f:
            pickle.dump(result, f)
    except OSError as exc:
        return f"the training result could not be kept either ({exc.strerror or exc})"
    return f"the training result is in {keep}"


def main(argv=None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    epochs, float_epochs = epoch_counts(args)
    train = train_bnn if args.family == "bnn" else train_sac
    lock = OutputLock(out)
    try:
        check_output(out, args.force, inputs=(args.data,))
        lock.acquire()  # one training per --out at a time
        name, split = parse_spec(args.data)
        if split is not None:
            raise DatasetError(
                f"--data {args.data}: training uses the train, val and test splits; give --data {name}"
            )
        # the train split, which training reads first: a single file (no split) is refused here
        train_split = load_dataset(args.data, "train")
        kwargs = recipe_kwargs(args, train_split.image_shape)
        check_training_memory(args, kwargs, train_split.image_shape, len(train_split) * 3 // 2)
    except ValueError as exc:  # DatasetError and OutputPathError included
        lock.release()
        print_error(PROG, str(exc))
        return 2
    try:
        return train_and_write(args, out, argv, train, epochs, float_epochs, kwargs)
    finally:
        lock.release()


def train_and_write(args, out: Path, argv, train, epochs: int, float_epochs: int, kwargs: dict) -> int:
    try:
        result = train(
            args.data,
            epochs=epochs,
            float_epochs=float_epochs,
            seed=args.seed,
            threads=args.threads,
            progress=not args.no_progress,
            log_epochs=not sys.stderr.isatty(),
            name=args.name or out.stem,
            **kwargs,
        )
    except DatasetError as exc:
        print_error(PROG, str(exc))
        return 2
    command = "python scripts/train.py " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])
    )
    try:
        card = write_model_and_card(result, out, command)
    except Exception as exc:  # noqa: BLE001 - any failure here: keep the result, exit 3
        # hours of training must not be lost to a failure while writing the card: keep the
        # result (network, models, accuracies) for workbench.cards.write_model_and_card
        what = (
            "disk full"
            if isinstance(exc, OSError) and exc.errno == errno.ENOSPC
            else f"{type(exc).__name__}: {exc}"
        )
        print_error(
            PROG,
            f"writing the model and card failed ({what}; {out} and its card "
            f"are as they were); {keep_result(result, out)}",
        )
        return 3
    acc = result.accuracy
    print(result.net.summary())
    cost = card["compiled"]
    for size, c in cost["sac_array"].items():
        print(
            f"SAC array {size}: "
            + (
                f"{c['cycles_per_image']} cycles per image, {c['instructions']} instructions"
                if "error" not in c
                else f"does not compile: {c['error']}"
            )
        )
    if "default_8x8" in cost:
        print(f"default ArrayConfig (8x8): {'fits' if cost['default_8x8']['fits'] else 'too small'}")
    if "gpu_mapping" in cost:
        dp = cost["gpu_mapping"]["dp"]
        print(f"GPU mapping (modelled profile, DP): batch {dp['batch']}, {' '.join(dp['impls'])}")
    print(f"wrote {out} and {out.with_suffix('.json')} in {result.seconds:.1f} s")
    print(
        f"{args.family} {args.data}: quantized test accuracy {100 * acc['quantized_test']:.2f}% "
        f"(golden {100 * acc['golden_test']:.2f}%), float twin {100 * acc['float_test']:.2f}%, "
        f"seed {args.seed}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
