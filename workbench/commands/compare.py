"""One model through every path: golden executor, GPU kernels, FPGA (RTL + cycle model).

Reports agreement layer by layer, accuracy, cycles, latency and energy in DIR (--out):
report.json, report.md, PNG plots and, with --save-outputs, outputs/*.npy. DIR is written as a
whole: into a temporary sibling, renamed into place at the end, so an interrupted or failed run
leaves an earlier report as it was and nothing else. An existing DIR with files in it is
replaced only with --force, and only when it is a report directory this command wrote that holds
nothing else (its marker .sacbench.json lists what it wrote); never the current directory or one
above it, nor a directory that holds the model or the data. One run per DIR at a time: a second
run on the same DIR is refused (exit 2) while the first is writing it. If the RTL simulator
cannot be built, a simulation fails, runs past its wall-clock limit (--rtl-timeout) or is
stopped, the run ends with one line and exit status 3, and the simulator's log is kept next to
DIR as DIR.rtl_failure.log. A model that takes its pixels scaled (HEP-BNN's: x 255) needs
--input-scale, unless its file records the scale (workbench.input_scale); a run in which some
layer gives every image the same output prints a warning that names the layer. See README
("Your own model and data", "Exit status").
"""

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch or the CPU kernels load

from fpga.arch import MAX_CLOCK_MHZ, MIN_CLOCK_MHZ  # noqa: E402
from models.onnx.input_scale import MAX_INPUT_SCALE  # noqa: E402
from safeio import OutputPathError, StagedDirectory, write_text_atomic  # noqa: E402
from workbench.commands.args import (  # noqa: E402
    ArgumentParser,
    finite_float,
    guarded,
    int_at_least,
    print_error,
)
from workbench.compare import (  # noqa: E402
    CompareError,
    Options,
    RtlFailure,
    check_options,
    run,
)

PROG = "sacbench compare"
TOOL = "compare_gpu_fpga"  # the name output markers carry (reports written before keep theirs)
# what a report directory holds (report.json first: the marker of directories written before
# they carried safeio's marker file)
REPORT_FILES = ("report.json", "report.md", "layer_times.png", "fpga_cycles.png", "outputs")


def build_parser() -> ArgumentParser:
    ap = ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--model", required=True, type=Path, help="ONNX file (BNN or SAC CNN)")
    ap.add_argument(
        "--data",
        default="digits",
        help="digits (embedded), a dataset path (MNIST/Fashion-MNIST IDX, "
        "CIFAR-10 batches, HEP-BNN CSV), or random[:SEED]",
    )
    ap.add_argument(
        "--images", type=int_at_least("--images", 1), default=100, help="images through golden/GPU/FPGA model"
    )
    ap.add_argument(
        "--input-scale",
        type=finite_float("--input-scale", positive=True, at_most=MAX_INPUT_SCALE),
        default=None,
        metavar="S",
        help="multiply the data's 0..255 pixels by S before the network (rounded half up to "
        "integers; e.g. 255 for HEP-BNN's models); overrides the scale the model file records "
        "(ONNX metadata workbench.input_scale); without either, the pixels as they are",
    )
    ap.add_argument(
        "--rtl-images",
        type=int_at_least("--rtl-images", 0),
        default=2,
        help="of those, how many through the RTL",
    )
    ap.add_argument(
        "--rtl-jobs",
        type=int_at_least("--rtl-jobs", 1),
        default=None,
        metavar="N",
        help="simulator processes the RTL images are sharded over (default: the "
        "number of cores); results are merged in image order",
    )
    ap.add_argument(
        "--rtl-timeout",
        type=finite_float("--rtl-timeout", positive=True),
        default=None,
        metavar="SECONDS",
        help="wall-clock limit of one RTL shard (default: 5 min plus 10 times the "
        "cycle model's time estimate); past it the run ends with exit 3",
    )
    ap.add_argument(
        "--address",
        default=None,
        metavar="ADDR",
        help="run the RTL shards as tasks on the Ray cluster at ADDR (host:port or "
        "auto); 'local' starts a Ray instance on this machine",
    )
    ap.add_argument("--sim", default="verilator", choices=["verilator", "icarus"], help="RTL simulator")
    ap.add_argument("--array", default="8x8", help="SAC array ROWSxCOLS")
    ap.add_argument(
        "--clock-mhz",
        default=None,
        type=finite_float("--clock-mhz", positive=True, at_least=MIN_CLOCK_MHZ, at_most=MAX_CLOCK_MHZ),
        help="FPGA clock in MHz for latency, throughput and energy per second (default: the "
        "routed Fmax of this array when `make timing`/`make synth` measured it, else the seed "
        "paper's 170 MHz, labelled 'not routed')",
    )
    ap.add_argument("--batch", type=int_at_least("--batch", 1), default=64, help="GPU batch size")
    ap.add_argument(
        "--out",
        type=Path,
        default=Path("out/compare"),
        metavar="DIR",
        help="report directory (written as a whole)",
    )
    ap.add_argument(
        "--force",
        action="store_true",
        help="replace an existing report directory DIR, one this command wrote and that holds nothing else",
    )
    ap.add_argument(
        "--save-outputs", action="store_true", help="write DIR/outputs/{golden,gpu,fpga}.npy (final scores)"
    )
    ap.add_argument("--inject-fault", choices=["gpu", "fpga", "cpu"], help=argparse.SUPPRESS)
    return ap


def failure_log_path(out: Path) -> Path:
    """Where a failed RTL run's log goes: next to the report directory, never inside it (the
    directory holds whole reports only)."""
    return out.with_name(f"{out.name}.rtl_failure.log")


def rtl_images_note(rtl_images: int, images: int) -> str | None:
    """What the run does with --rtl-images above --images, said once (stderr), not silently."""
    if rtl_images <= images:
        return None
    return (
        f"{PROG}: note: --rtl-images {rtl_images:,} is more than --images {images:,}: "
        "the RTL runs every image the run compares"
    )


def input_notes(report: dict) -> list[str]:
    """stderr lines about the run's input: the scale the model's file set (one the user did not
    type), then each warning (a layer that gives every image the same output)."""
    scale = report.get("input_scale") or {}
    notes = []
    if scale.get("scale") is not None and scale.get("source") != "--input-scale":
        notes.append(f"{PROG}: note: input scale {scale['scale']} from the {scale['source']}")
    notes += [f"{PROG}: warning: {w}" for w in report.get("warnings", [])]
    return notes


@guarded(PROG)
def main(argv=None) -> int:
    from workbench.report import summary_lines, write_all

    args = build_parser().parse_args(argv)
    opts = Options(
        model=args.model,
        data=args.data,
        images=args.images,
        rtl_images=args.rtl_images,
        sim=args.sim,
        array=args.array,
        clock_mhz=args.clock_mhz,
        batch=args.batch,
        out=args.out,
        save_outputs=args.save_outputs,
        inject_fault=args.inject_fault,
        rtl_jobs=args.rtl_jobs,
        address=args.address,
        rtl_timeout=args.rtl_timeout,
        input_scale=args.input_scale,
    )
    try:
        check_options(opts)
        note = rtl_images_note(opts.rtl_images, opts.images)
        if note:
            print(note, file=sys.stderr)
        with StagedDirectory(
            args.out, force=args.force, tool=TOOL, legacy=REPORT_FILES, inputs=(args.model, args.data)
        ) as staged:
            opts.out = staged.path
            report, code = run(opts)
            for line in input_notes(report):
                print(line, file=sys.stderr)
            print("\n".join(summary_lines(report)))
            files = [p.name for p in write_all(report, staged.path)]
            staged.commit()
    except OutputPathError as exc:
        print_error(PROG, str(exc))
        return 2
    except RtlFailure as exc:
        log = failure_log_path(args.out)
        try:
            write_text_atomic(log, exc.log)
            where = f"; simulator log: {log}"
        except OSError as err:
            where = f"; the simulator log could not be written to {log} ({err.strerror})"
        print_error(PROG, f"{exc}{where}")
        return 3
    except CompareError as exc:
        print_error(PROG, str(exc))
        return 2
    failure_log_path(args.out).unlink(missing_ok=True)  # an earlier failure's, now stale
    print(
        f"\nreport: {args.out / files[1]} (and {', '.join(f for f in files if f != files[1])} in {args.out})"
    )
    if code:
        print("MISMATCH: a path differs from the golden model (see the table above)", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
