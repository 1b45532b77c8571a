"""Map a BNN's layers to the CPU or a GPU configuration (HEP-BNN's Algorithm 1 and a
transfer-aware DP), print the mapping with its costs, and write DIR/mapping.json (the profile
and both choices) and DIR/heatmap.png. With a measured profile the CPU's choice is also timed
as the fused CPU network (the whole network in a few kernels, every step and pooling inside the
layer before it), which the DP takes when no per-layer mapping beats it.

examples (from the repository root, in the activated environment; `sacbench map` is the same
as `.venv/bin/python scripts/map_bnn.py`):
  # the Fashion-shaped HEP-BNN network measured on this machine (CuPy with an NVIDIA GPU, else
  # the CPU emulation of the kernels, whose times are NOT GPU timings), into out/map
  sacbench map --network fashion --batch-exp 0 4 --out out/map
  # the HEP-BNN ONNX model from the repository, mapped from the profile saved above (same
  # layers): no measuring, no GPU needed, the same mapping every time
  sacbench map --network tests/fixtures/hepbnn_fashion.onnx --profile out/map/mapping.json \\
      --out out/map_hepbnn

--out: the directory is written as a whole (into a temporary sibling, then renamed). One that
holds files is replaced only with --force, and only when it holds a mapping this command wrote
and nothing else; never the current directory or one above it, nor one that holds an input.
Flags and inputs are checked before any measuring; a failing kernel compiler or a write that
fails ends the run with status 3.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.commands.args import ArgumentParser, print_error

PROG = "sacbench map"
OUTPUTS = ("mapping.json", "heatmap.png")  # what a map directory holds
MAX_BATCH_EXP = 20


class UsageError(Exception):
    """Bad flags or inputs: one line, exit status 2."""


def int_at_least(flag: str, low: int, high: int | None = None):
    """An argparse type: an integer in low..high (high: no limit when None)."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be an integer, got {text!r}") from None
        if v < low or (high is not None and v > high):
            bound = f"at least {low}" if high is None else f"in {low}..{high}"
            raise argparse.ArgumentTypeError(f"{flag} must be {bound}, got {v}")
        return v

    return parse


def parser() -> ArgumentParser:
    from gpu_kernels.launch import DEFAULT_THREADS, KERNEL_MAX_THREADS
    from models.random_networks import SHAPES

    doc = __doc__.split("\n\n", 1)
    ap = ArgumentParser(
        prog=PROG, description=doc[0], epilog=doc[1], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--network",
        default="fashion",
        metavar="NAME|FILE.onnx",
        help=f"{' or '.join(SHAPES)} (HEP-BNN shapes with seeded random parameters) "
        "or a BNN as an ONNX file (default: %(default)s)",
    )
    ap.add_argument(
        "--seed",
        type=int_at_least("--seed", 0),
        default=0,
        help="parameter seed of a named shape (default: %(default)s)",
    )
    ap.add_argument(
        "--profile",
        default="measured",
        metavar="measured|FILE.json",
        help="measure the layers here, or a profile / mapping.json written earlier (default: %(default)s)",
    )
    ap.add_argument(
        "--backend",
        default="auto",
        choices=("auto", "cupy", "emulation"),
        help="where GPU configurations are measured: auto = CuPy with a GPU, else the "
        "emulation (default: %(default)s)",
    )
    ap.add_argument(
        "--batch-exp",
        type=int_at_least("--batch-exp", 0, MAX_BATCH_EXP),
        nargs=2,
        default=(0, 4),
        metavar=("BL", "BU"),
        help="batch sizes 2^BL .. 2^BU, HEP-BNN's bl and bu (default: 0 4, i.e. 1..16 images per batch)",
    )
    ap.add_argument(
        "--images",
        type=int_at_least("--images", 1),
        default=10_000,
        help="size of the data set the costs are for (default: %(default)s)",
    )
    ap.add_argument(
        "--word-bits",
        type=int,
        default=32,
        choices=(32, 64),
        help="bits per packed word of binary tensors (default: %(default)s)",
    )
    ap.add_argument(
        "--repeats",
        type=int_at_least("--repeats", 1),
        default=5,
        help="timed runs per measurement, median kept (default: %(default)s)",
    )
    ap.add_argument(
        "--warmup",
        type=int_at_least("--warmup", 0),
        default=2,
        help="untimed runs before them (default: %(default)s)",
    )
    ap.add_argument(
        "--threads",
        type=int_at_least("--threads", 1, KERNEL_MAX_THREADS),
        default=None,
        help=f"GPU threads per block, 1..{KERNEL_MAX_THREADS} (default: {DEFAULT_THREADS})",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=Path("out/map"),
        metavar="DIR",
        help="directory for mapping.json and heatmap.png (default: %(default)s)",
    )
    ap.add_argument(
        "--force",
        action="store_true",
        help="replace --out when it holds an earlier mapping (and nothing else)",
    )
    return ap


def load_inputs(args):
    """The network and the profile source, checked before any measuring (UsageError)."""
    from gpu_kernels.errors import GpuKernelError
    from gpu_kernels.profiling import JsonProfile, MeasuredProfile
    from models.random_networks import SHAPES, network_from_spec

    if args.batch_exp[0] > args.batch_exp[1]:
        raise UsageError(
            f"--batch-exp {args.batch_exp[0]} {args.batch_exp[1]}: BL must not be larger than BU"
        )
    spec = Path(args.network)
    if args.network not in SHAPES and not spec.is_file():
        what = "is a directory" if spec.is_dir() else "is no such file"
        raise UsageError(f"--network {args.network}: not a named shape ({', '.join(SHAPES)}) and {what}")
    try:
        net = network_from_spec(args.network, args.seed)
    except (ValueError, GpuKernelError) as exc:  # the importer's errors are ValueErrors
        raise UsageError(f"--network {args.network}: {exc}") from None
    if args.profile == "measured":
        source = MeasuredProfile(
            backend=args.backend,
            word_bits=args.word_bits,
            repeats=args.repeats,
            warmup=args.warmup,
            threads=args.threads,
            progress=True,
        )
    else:
        try:
            source = JsonProfile(args.profile)
        except (GpuKernelError, KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"--profile {args.profile}: {exc}") from None
    return net, source


def write_results(mapping, args, stage: Path) -> list[Path]:
    from gpu_kernels.mapper_report import write_heatmap
    from safeio import write_json_atomic

    # which network was measured: the search's gpu cost scales this profile to others
    mapping.profile.meta.update(network_spec=args.network, network_seed=args.seed)
    written = [write_json_atomic(stage / "mapping.json", mapping.to_json())]
    png = write_heatmap(mapping, stage / "heatmap.png")
    if png is not None:
        written.append(png)
    return written


def map_into(staged, net, source, args) -> tuple[int, list[Path], object]:
    """The mapping written into the staged directory and published: (exit status, the files
    written, the mapping)."""
    from gpu_kernels.cpu_impl import measure_fused
    from gpu_kernels.errors import BackendError, BuildError, GpuKernelError
    from gpu_kernels.mapper import batch_range, map_network

    fused = None  # a saved profile brings its own measurement of the fused CPU network, if any
    if args.profile == "measured":

        def fused(net, batch_sizes):
            return measure_fused(net, batch_sizes, repeats=args.repeats, warmup=args.warmup)

    try:
        sizes = batch_range(*args.batch_exp)
        mapping = map_network(net, sizes, source, n_images=args.images, fused_cpu=fused)
    except BuildError as exc:
        print_error(PROG, f"the kernel compiler failed: {exc}")
        return 3, [], None
    except (GpuKernelError, BackendError, ValueError) as exc:
        print_error(PROG, str(exc))
        return 2, [], None
    try:
        written = write_results(mapping, args, staged.path)
        staged.commit()
    except OSError as exc:
        print_error(PROG, f"cannot write {args.out}: {exc.strerror or exc}")
        return 3, [], None
    return 0, written, mapping


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    from safeio import OutputPathError, StagedDirectory

    staged = StagedDirectory(
        args.out, force=args.force, tool=PROG, legacy=OUTPUTS, inputs=(args.network, args.profile)
    )
    try:
        staged.check()  # the output first: it is what a mistake costs most
        net, source = load_inputs(args)
        with staged:
            code, written, mapping = map_into(staged, net, source, args)
    except (UsageError, OutputPathError) as exc:
        print_error(PROG, str(exc))
        return 2
    if code:
        return code
    print(net.summary())
    print()
    from gpu_kernels.mapper_report import format_table

    print(format_table(mapping))
    names = ", ".join(p.name for p in written)
    print(
        f"\nwrote {names} in {args.out}"
        + ("" if len(written) == len(OUTPUTS) else " (no matplotlib: no heatmap)")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
