#!/usr/bin/env python3
"""The seed paper's array on the RTL: the accelerator top at 128x64 with CMAX 512 under
Verilator, running the seed CIFAR-10 network (benchmarks/cifar_cycles.py's layers, random
power-of-two weights, column groups 1, 2 and 8) and the zoo `sac_fashion` model, every layer's
RTL output compared with the golden model and the RTL's cycles with the cycle model. Prints per
array: the build's time and peak memory, and per network its mismatches, cycles (RTL and model)
and the simulated cycles/s and images/s; the smaller arrays show how both scale.

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
import resource
import sys
import tempfile
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


FIELDS = ("dbuf", "pbuf", "wmem", "bmem", "smem", "instructions")


def shared_config(rows: int, cols: int, cmax: int, nets: list) -> ArrayConfig:
    """One instance for every network: each memory as deep as the deepest need among them."""
    memo = {}
    prints = [network_footprint(net, roomy_config(rows, cols, cmax), memo) for _, net in nets]
    most = Footprint(0, *(max(getattr(p, f) for p in prints) for f in FIELDS))
    return most.fitted(rows, cols, cmax)


def build_once(cfg: ArrayConfig, sim: str) -> dict:
    """Build the top's simulator for cfg (cached builds take seconds): time and peak memory."""
    from workbench import rtl_shards

    prog = compile_network(seed_networks(1)[0][1], cfg)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    rtl_shards.build(prog, sim)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"build_s": seconds, "peak_child_rss_mb": peak / 1024, "peak_is_this_build": peak > before}


def run_layer(name: str, net: ir.Network, cfg: ArrayConfig, sim: str, rng) -> dict:
    """One image through the layer's program on the RTL against golden and the cycle model."""
    from workbench import rtl_shards

    prog = compile_network(net, cfg)
    x = rng.integers(0, 256, size=(1, *net.input_shape), dtype=np.uint8)
    want = [golden.check_input(net, x)]
    for layer in net.layers:
        want.append(golden.run_layer(layer, want[-1]))
    model = interpret(prog, x)
    with tempfile.TemporaryDirectory(prefix="paper_scale_") as tmp:
        run = rtl_shards.run(prog, x, sim, 1, Path(tmp), progress=False)
    res = run["results"][0]
    mismatches = {}
    for i, got in res["outputs"].items():
        ref = want[i + 1]
        mismatches[int(i)] = int(np.count_nonzero(np.asarray(got).reshape(ref.shape) != ref))
    rtl_cycles = [c for c, _ in res["segments"]]
    model_cycles = [st.cycles for st in model.segments]
    sim_s = sum(sh["sim_s"] for sh in run["shards"])
    return {
        "network": name,
        "mismatching_elements": sum(mismatches.values()),
        "layers_compared": len(mismatches),
        "rtl_cycles": int(sum(sum(c) for c in rtl_cycles)),
        "model_cycles": int(sum(sum(c) for c in model_cycles)),
        "cycles_match_model": rtl_cycles == model_cycles,
        "sim_s": sim_s,
        "wall_s": run["wall_s"],
    }


def measure(shape: str, sim: str, layers: int | None, fashion: bool, cmax: int = CMAX) -> dict:
    rows, cols = (int(v) for v in shape.lower().split("x"))
    nets = seed_networks(layers) + ([zoo_fashion()] if fashion else [])
    cfg = shared_config(rows, cols, cmax, nets)
    print(f"[paper_scale] {shape} CMAX {cmax}: building ({sim}) ...", flush=True)
    out = {"array": shape, "sim": sim, "hdl_parameters": cfg.hdl_parameters(), **build_once(cfg, sim)}
    print(f"[paper_scale] {shape}: built in {out['build_s']:.0f} s", flush=True)
    rng = np.random.default_rng(SEED)
    out["runs"] = []
    for name, net in nets:
        r = run_layer(name, net, cfg, sim, rng)
        out["runs"].append(r)
        print(
            f"[paper_scale] {shape} {name}: {r['mismatching_elements']} mismatching elements over "
            f"{r['layers_compared']} layer(s); RTL cycles {r['rtl_cycles']:,} "
            f"{'==' if r['cycles_match_model'] else '!='} model {r['model_cycles']:,}; "
            f"{r['rtl_cycles'] / max(r['sim_s'], 1e-9):,.0f} cycles/s",
            flush=True,
        )
    cifar = [r for r in out["runs"] if r["network"].startswith("cifar")]
    cycles, sim_s = sum(r["rtl_cycles"] for r in cifar), sum(r["sim_s"] for r in cifar)
    out["cifar"] = {
        "layers": len(cifar),
        "cycles": cycles,
        "sim_s": sim_s,
        "cycles_per_s": cycles / sim_s if sim_s else None,
        "images_per_s": 1 / sim_s if sim_s and layers is None else None,  # the whole image only
    }
    out["ok"] = all(r["mismatching_elements"] == 0 and r["cycles_match_model"] for r in out["runs"])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--array", nargs="+", default=["128x64"], help="ROWSxCOLS, one build each")
    ap.add_argument("--sim", choices=("verilator", "icarus"), default="verilator")
    ap.add_argument("--layers", type=int, default=None, help="only the first N layers of the seed network")
    ap.add_argument("--no-fashion", dest="fashion", action="store_false", help="without sac_fashion")
    ap.add_argument("--cmax", type=int, default=CMAX, help="data-buffer banks (the paper's 512)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    print(f"[paper_scale] seed {SEED} (weights and images)")
    results = [measure(a, args.sim, args.layers, args.fashion, args.cmax) for a in args.array]
    print("\narray | build s | peak MB | CIFAR layers | cycles | cycles/s | images/s | all exact")
    for r in results:
        c = r["cifar"]
        ips = f"{c['images_per_s']:.5f}" if c["images_per_s"] else "-"
        print(
            f"{r['array']} | {r['build_s']:.0f} | {r['peak_child_rss_mb']:.0f} | {c['layers']} | "
            f"{c['cycles']:,} | {c['cycles_per_s']:,.0f} | {ips} | {'yes' if r['ok'] else 'NO'}"
        )
    if args.json:
        write_text_atomic(args.json, json.dumps(results, indent=1))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
