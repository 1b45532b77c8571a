#!/usr/bin/env python3
"""The seed paper's array on the RTL: the accelerator top at 128x64 with CMAX 512 under
Verilator, running the seed CIFAR-10 network (benchmarks/cifar_cycles.py's layers, random
power-of-two weights, column groups 1, 2 and 8) and the zoo `sac_fashion` model, every layer's
RTL output compared with the golden model and the RTL's cycles with the cycle model. Prints per
array: the build's time and Verilator's memory (from the build's log), and per network its
mismatches (layers the array computes; host layers are golden's own), cycles (RTL and model),
the simulated cycles/s and images/s (start to done only, and end to end with the program load,
transfers and simulator start-ups); the smaller arrays show how they scale. Exit status 0 all
exact, 1 a mismatch or a cycle count off the model, 3 a build or simulation failure (one line;
the logs stay under --out).

    make paper-scale                                              # 128x64, both networks
    .venv/bin/python benchmarks/paper_scale.py --array 32x32 64x32 128x64 --json out/paper_scale.json
    .venv/bin/python benchmarks/paper_scale.py --array 8x8 --cmax 64 --layers 2 --no-fashion  # quick

One configuration per array serves every layer and network (CMAX 512, each memory as deep as the
deepest need among them): one Verilator build per array. The ISA has no stride, so a strided
layer of the seed network runs at its output resolution (cifar_cycles.py); each layer is its own
program on one random image (seed printed), the layers' cycles add up to the image's.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

from fpga.arch import ArrayConfig
from fpga.compiler import Footprint, compile_network, network_footprint, roomy_config
from fpga.execute import interpret
from models import golden, ir
from safeio import write_text_atomic

SEED = 2019  # the seed paper's year: the random weights and images
CMAX = 512  # the paper's: column groups of 8 on 64 columns
ROOT = Path(__file__).resolve().parents[1]


def _cifar_cycles():
    """benchmarks/cifar_cycles.py, where the seed network's layers are defined."""
    spec = importlib.util.spec_from_file_location("cifar_cycles", ROOT / "benchmarks" / "cifar_cycles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seed_networks(layers: int | None) -> list[tuple[str, ir.Network]]:
    """The seed CIFAR-10 network's layers as networks (random power-of-two weights, seeded)."""
    cc = _cifar_cycles()
    rng = np.random.default_rng(SEED)
    out = []
    for name, cin, cout, side, group, shift, mode in cc.seed_layers()[:layers]:
        # layer_program compiles (for the seed's roomy array); its network is what is wanted
        prog = cc.layer_program(rng, cin, cout, side, group, shift, mode, roomy_config(128, 64, 1024))
        out.append((f"cifar {name}", prog.network))
    return out


def zoo_fashion() -> tuple[str, ir.Network]:
    from models.onnx import load_network

    return "sac_fashion", load_network(ROOT / "models" / "zoo" / "sac_fashion.onnx")


COLUMNS = (
    "array",
    "build s",
    "Verilator MB",
    "CIFAR layers",
    "cycles",
    "cycles/s",
    "images/s (sim; end to end)",
    "all exact",
)
FIELDS = ("dbuf", "pbuf", "wmem", "bmem", "smem", "instructions")


def shared_config(rows: int, cols: int, cmax: int, nets: list) -> ArrayConfig:
    """One instance for every network: each memory as deep as the deepest need among them."""
    memo = {}
    prints = [network_footprint(net, roomy_config(rows, cols, cmax), memo) for _, net in nets]
    most = Footprint(0, *(max(getattr(p, f) for p in prints) for f in FIELDS))
    return most.fitted(rows, cols, cmax)


def build_once(cfg: ArrayConfig, sim: str, log: Path) -> dict:
    """Build the top's simulator for cfg: the time and Verilator's own memory, read from the
    build's log; `cached` when the simulator was already built (no log written now)."""
    from workbench import rtl_shards

    prog = compile_network(seed_networks(1)[0][1], cfg)
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    rtl_shards.build(prog, sim, log)
    seconds = time.time() - t0
    fresh = log.exists() and log.stat().st_mtime >= t0
    text = log.read_text(errors="replace") if fresh else ""
    mb = re.search(r"allocated ([0-9.]+) MB", text)
    return {
        "cached": not fresh,
        "build_s": seconds if fresh else None,
        "verilator_allocated_mb": float(mb.group(1)) if mb else None,  # Verilator itself
        "build_log": str(log) if fresh else None,
    }


def run_layer(name: str, net: ir.Network, cfg: ArrayConfig, sim: str, seed, workdir: Path) -> dict:
    """One random image (numpy seed `seed`) through the network's program on the RTL: every
    layer the array computes against golden (host layers are golden's own and not counted),
    the RTL's cycles against the cycle model."""
    from workbench import rtl_shards

    prog = compile_network(net, cfg)
    x = np.random.default_rng(seed).integers(0, 256, size=(1, *net.input_shape), dtype=np.uint8)
    want = [golden.check_input(net, x)]
    for layer in net.layers:
        want.append(golden.run_layer(layer, want[-1]))
    model = interpret(prog, x)
    workdir = workdir.resolve()  # the simulator runs in a directory of its own
    workdir.mkdir(parents=True, exist_ok=True)
    run = rtl_shards.run(prog, x, sim, 1, workdir, progress=False)
    res = run["results"][0]
    host = set(prog.host_layers)
    mismatches, bad_shape = {}, []
    for i, got in res["outputs"].items():
        if int(i) in host:
            continue
        got, ref = np.asarray(got), want[int(i) + 1]
        if got.shape != ref.shape:
            bad_shape.append(f"layer {i}: {got.shape} != golden {ref.shape}")
            mismatches[int(i)] = int(ref.size)
        else:
            mismatches[int(i)] = int(np.count_nonzero(got != ref))
    last = len(net.layers) - 1
    rtl_cycles = [c for c, _ in res["segments"]]
    model_cycles = [st.cycles for st in model.segments]
    return {
        "network": name,
        "seed": list(seed),
        "mismatching_elements": sum(mismatches.values()),
        "array_layers_compared": sorted(mismatches),
        "host_layers": sorted(host),
        "last_layer_compared": last in mismatches or last in host,
        "shape_errors": bad_shape,
        "rtl_cycles": int(sum(sum(c) for c in rtl_cycles)),
        "model_cycles": int(sum(sum(c) for c in model_cycles)),
        "cycles_match_model": rtl_cycles == model_cycles,
        "sim_s": sum(sh["sim_s"] for sh in run["shards"]),  # start to done only
        "wall_s": run["wall_s"],  # with the program load, transfers, host layers, start-up
    }


def exact(r: dict) -> bool:
    return (
        r["mismatching_elements"] == 0
        and bool(r["array_layers_compared"])
        and r["last_layer_compared"]
        and r["cycles_match_model"]
    )


def measure(shape: str, sim: str, layers: int | None, fashion: bool, cmax: int, out: Path, save) -> dict:
    rows, cols = (int(v) for v in shape.lower().split("x"))
    nets = seed_networks(layers) + ([zoo_fashion()] if fashion else [])
    cfg = shared_config(rows, cols, cmax, nets)
    print(f"[paper_scale] {shape} CMAX {cmax}: building ({sim}) ...", flush=True)
    res = {"array": shape, "sim": sim, "hdl_parameters": cfg.hdl_parameters()}
    res.update(build_once(cfg, sim, out / f"build_{shape}_{sim}.log"))
    took = "already built" if res["cached"] else f"built in {res['build_s']:.0f} s"
    print(f"[paper_scale] {shape}: {took}", flush=True)
    res["runs"] = []
    for k, (name, net) in enumerate(nets):
        r = run_layer(name, net, cfg, sim, (SEED, k), out / f"run_{shape}_{k}")
        res["runs"].append(r)
        save()  # what has finished is kept if a later network fails
        print(
            f"[paper_scale] {shape} {name}: {r['mismatching_elements']} mismatching elements in "
            f"{len(r['array_layers_compared'])} array layer(s)"
            + (f" ({len(r['host_layers'])} on the host)" if r["host_layers"] else "")
            + f"; RTL cycles {r['rtl_cycles']:,} {'==' if r['cycles_match_model'] else '!='} "
            f"model {r['model_cycles']:,}; {r['rtl_cycles'] / max(r['sim_s'], 1e-9):,.0f} cycles/s",
            flush=True,
        )
    cifar = [r for r in res["runs"] if r["network"].startswith("cifar")]
    cycles = sum(r["rtl_cycles"] for r in cifar)
    sim_s, wall_s = sum(r["sim_s"] for r in cifar), sum(r["wall_s"] for r in cifar)
    whole = bool(cifar) and layers is None  # images/s of the whole image only
    res["cifar"] = {
        "layers": len(cifar),
        "cycles": cycles,
        "sim_s": sim_s,
        "wall_s": wall_s,
        "cycles_per_s": cycles / sim_s if sim_s else None,
        "images_per_s_sim": 1 / sim_s if whole and sim_s else None,
        "images_per_s_end_to_end": 1 / wall_s if whole and wall_s else None,
    }
    res["ok"] = bool(res["runs"]) and all(exact(r) for r in res["runs"])
    return res


def _num(v, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--array", nargs="+", default=["128x64"], help="ROWSxCOLS, one build each")
    ap.add_argument("--sim", choices=("verilator", "icarus"), default="verilator")
    ap.add_argument(
        "--layers", type=int, default=None, help="only the first N (>= 1) layers of the seed network"
    )
    ap.add_argument("--no-fashion", dest="fashion", action="store_false", help="without sac_fashion")
    ap.add_argument("--cmax", type=int, default=CMAX, help="data-buffer banks (the paper's 512)")
    ap.add_argument("--out", type=Path, default=Path("out/paper_scale"), help="build logs, run folders")
    ap.add_argument("--json", type=Path, default=None, help="the results, rewritten after each network")
    args = ap.parse_args(argv)
    if args.layers is not None and args.layers < 1:
        ap.error(f"--layers must be at least 1, got {args.layers}")
    for a in args.array:
        if not re.fullmatch(r"[1-9][0-9]*x[1-9][0-9]*", a.lower()):
            ap.error(f"--array {a}: must look like ROWSxCOLS (e.g. 128x64)")
    print(f"[paper_scale] seed {SEED} (weights; the image of network k: numpy seed [{SEED}, k])")
    results: list[dict] = []

    def save():
        if args.json:
            write_text_atomic(args.json, json.dumps(results, indent=1))

    from fpga.compiler import CompileError
    from workbench.rtl_shards import ShardError

    try:
        for a in args.array:
            results.append({"array": a})
            results[-1] = measure(a, args.sim, args.layers, args.fashion, args.cmax, args.out, save)
            save()
    except (CompileError, ShardError, ValueError) as exc:
        save()
        print(f"paper_scale: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 3
    print("\n" + " | ".join(COLUMNS))
    for r in results:
        c = r["cifar"]
        print(
            f"{r['array']} | {_num(r['build_s'], '.0f') if not r['cached'] else 'cached'} | "
            f"{_num(r['verilator_allocated_mb'], '.0f')} | {c['layers']} | {c['cycles']:,} | "
            f"{_num(c['cycles_per_s'], ',.0f')} | {_num(c['images_per_s_sim'], '.5f')}; "
            f"{_num(c['images_per_s_end_to_end'], '.5f')} | {'yes' if r['ok'] else 'NO'}"
        )
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
