"""Map a BNN's layers to the CPU or a GPU configuration (HEP-BNN's Algorithm 1 and a
transfer-aware DP), print the mapping with its costs, and write DIR/mapping.json (the profile
and both choices) and DIR/heatmap.png.

examples (from the repository root, in the activated environment; `sacbench map` is the same
as `.venv/bin/python scripts/map_bnn.py`):
  # the Fashion-shaped HEP-BNN network measured on this machine (CuPy with an NVIDIA GPU, else
  # the CPU emulation of the kernels, whose times are NOT GPU timings), into out/map
  sacbench map --network fashion --batch-exp 0 4 --out out/map
  # the HEP-BNN ONNX model from the repository, mapped from the profile saved above (same
  # layers): no measuring, no GPU needed, the same mapping every time
  sacbench map --network tests/fixtures/hepbnn_fashion.onnx --profile out/map/mapping.json \\
      --out out/map_hepbnn

--out: the directory is written as a whole (into a temporary sibling, then renamed); one that
holds a previous mapping is replaced, one that holds other files only with --force.
exit status: 0 ok, 2 bad usage or input (checked before any measuring), 3 a tool failed (the
kernel compiler, writing the results).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from workbench.commands.args import ArgumentParser, print_error

PROG = "sacbench map"
OUTPUTS = ("mapping.json", "heatmap.png")     # what a map directory holds
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
    ap = ArgumentParser(prog=PROG, description=doc[0], epilog=doc[1],
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--network", default="fashion", metavar="NAME|FILE.onnx",
                    help=f"{' or '.join(SHAPES)} (HEP-BNN shapes with seeded random parameters) "
                         "or a BNN as an ONNX file (default: %(default)s)")
    ap.add_argument("--seed", type=int_at_least("--seed", 0), default=0,
                    help="parameter seed of a named shape (default: %(default)s)")
    ap.add_argument("--profile", default="measured", metavar="measured|FILE.json",
                    help="measure the layers here, or a profile / mapping.json written earlier "
                         "(default: %(default)s)")
    ap.add_argument("--backend", default="auto", choices=("auto", "cupy", "emulation"),
                    help="where GPU configurations are measured: auto = CuPy with a GPU, else the "
                         "emulation (default: %(default)s)")
    ap.add_argument("--batch-exp", type=int_at_least("--batch-exp", 0, MAX_BATCH_EXP), nargs=2,
                    default=(0, 4), metavar=("BL", "BU"),
                    help="batch sizes 2^BL .. 2^BU, HEP-BNN's bl and bu (default: 0 4, i.e. "
                         "1..16 images per batch)")
    ap.add_argument("--images", type=int_at_least("--images", 1), default=10_000,
                    help="size of the data set the costs are for (default: %(default)s)")
    ap.add_argument("--word-bits", type=int, default=32, choices=(32, 64),
                    help="bits per packed word of binary tensors (default: %(default)s)")
    ap.add_argument("--repeats", type=int_at_least("--repeats", 1), default=5,
                    help="timed runs per measurement, median kept (default: %(default)s)")
    ap.add_argument("--warmup", type=int_at_least("--warmup", 0), default=2,
                    help="untimed runs before them (default: %(default)s)")
    ap.add_argument("--threads", type=int_at_least("--threads", 1, KERNEL_MAX_THREADS),
                    default=None,
                    help=f"GPU threads per block, 1..{KERNEL_MAX_THREADS} (default: "
                         f"{DEFAULT_THREADS})")
    ap.add_argument("--out", type=Path, default=Path("out/map"), metavar="DIR",
                    help="directory for mapping.json and heatmap.png (default: %(default)s)")
    ap.add_argument("--force", action="store_true",
                    help="replace --out even when it holds files other than a mapping's")
    return ap


def load_inputs(args):
    """The network and the profile source, checked before any measuring (UsageError)."""
    from gpu_kernels.errors import GpuKernelError
    from gpu_kernels.profiling import JsonProfile, MeasuredProfile
    from models.random_networks import SHAPES, network_from_spec

    if args.batch_exp[0] > args.batch_exp[1]:
        raise UsageError(f"--batch-exp {args.batch_exp[0]} {args.batch_exp[1]}: BL must not be "
                         "larger than BU")
    spec = Path(args.network)
    if args.network not in SHAPES and not spec.is_file():
        what = "is a directory" if spec.is_dir() else "is no such file"
        raise UsageError(f"--network {args.network}: not a named shape ({', '.join(SHAPES)}) and "
                         f"{what}")
    try:
        net = network_from_spec(args.network, args.seed)
    except (ValueError, GpuKernelError) as exc:     # the importer's errors are ValueErrors
        raise UsageError(f"--network {args.network}: {exc}") from None
    if args.profile == "measured":
        source = MeasuredProfile(backend=args.backend, word_bits=args.word_bits,
                                 repeats=args.repeats, warmup=args.warmup,
                                 threads=args.threads, progress=True)
    else:
        try:
            source = JsonProfile(args.profile)
        except (GpuKernelError, KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"--profile {args.profile}: {exc}") from None
    return net, source


def prepare_out(out: Path, force: bool) -> Path:
    """Check --out and make the temporary sibling the results are written into (UsageError when
    it cannot be used); returns the sibling."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: is a file, not a directory")
    if out.is_dir():
        others = sorted(p.name for p in out.iterdir() if p.name not in OUTPUTS)
        if others and not force:
            raise UsageError(f"--out {out}: holds files that are not a mapping's "
                             f"({', '.join(others[:3])}{', ...' if len(others) > 3 else ''}); "
                             "use --force to replace the directory, or another --out")
    try:
        out.resolve().parent.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.resolve().parent))
        umask = os.umask(0)
        os.umask(umask)
        stage.chmod(0o777 & ~umask)          # mkdtemp's 0700 would become --out's mode
        return stage
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot be created ({exc.strerror or exc})") from None


def replace_dir(stage: Path, out: Path) -> None:
    """Put the finished `stage` where `out` is, as a whole."""
    out = out.resolve()
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
        os.rename(out, old / out.name)
    os.rename(stage, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def write_results(mapping, args, stage: Path) -> list[Path]:
    from workbench.files import write_json_atomic

    # which network was measured: the search's gpu cost scales this profile to others
    mapping.profile.meta.update(network_spec=args.network, network_seed=args.seed)
    written = [write_json_atomic(stage / "mapping.json", mapping.to_json())]
    png = mapping.heatmap(stage / "heatmap.png")
    if png is not None:
        written.append(png)
    return written


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    from gpu_kernels.errors import BackendError, BuildError, GpuKernelError
    from gpu_kernels.mapper import batch_range, map_network

    try:
        net, source = load_inputs(args)
        stage = prepare_out(args.out, args.force)
    except UsageError as exc:
        print_error(PROG, str(exc))
        return 2
    try:
        try:
            mapping = map_network(net, batch_range(*args.batch_exp), source,
                                  n_images=args.images)
        except BuildError as exc:
            print_error(PROG, f"the kernel compiler failed: {exc}")
            return 3
        except (GpuKernelError, BackendError, ValueError) as exc:
            print_error(PROG, str(exc))
            return 2
        try:
            written = write_results(mapping, args, stage)
            replace_dir(stage, args.out)
        except OSError as exc:
            print_error(PROG, f"cannot write {args.out}: {exc.strerror or exc}")
            return 3
    finally:
        shutil.rmtree(stage, ignore_errors=True)       # gone already when renamed into place
    print(net.summary())
    print()
    print(mapping.table())
    names = ", ".join(p.name for p in written)
    print(f"\nwrote {names} in {args.out}"
          + ("" if len(written) == len(OUTPUTS) else " (no matplotlib: no heatmap)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
