"""Writing a compare report: the table on stdout, report.json, report.md and PNG plots."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def _pct(v) -> str:
    return "n/a" if v is None else f"{100 * v:.2f}%"


def _num(v, fmt="{:,.3f}") -> str:
    return "n/a" if v is None else fmt.format(v)


def _mm(m) -> str:
    if m is None:
        return "-"
    if not m["count"]:
        return "0"
    where = f" first at {tuple(m['first'])}" if m.get("first") is not None else ""
    detail = f" (got {m['got']}, want {m['want']})" if m.get("got") is not None else ""
    return f"{m['count']}{where}{detail}{' ' + m['note'] if m.get('note') else ''}"


def summary_lines(r: dict) -> list:
    f, g = r["fpga"], r["gpu"]
    rtl = f["rtl"]
    lines = [
        f"model {r['model']} ({r['network']}), {r['images']} images of {r['data']}, "
        f"{r['rtl_images']} on the RTL ({rtl.get('sim') or 'none'})",
        "",
        f"{'#':>3} {'layer':38s} {'FPGA path':26s} {'GPU':5s} {'FPGA mism.':>12s} {'GPU mism.':>12s}",
    ]
    for row, mm in zip(r["mapping"], r["mismatches"]["layers"]):
        lines.append(f"{row['index']:3d} {row['layer']:38s} {row['fpga'][:26]:26s} {row['gpu']:5s} "
                     f"{_mm(mm['fpga']):>12s} {_mm(mm['gpu']):>12s}")
    acc = r["accuracy"]
    lines += [
        "",
        f"mismatching elements: FPGA {r['mismatches']['fpga']}, GPU "
        f"{'n/a' if r['mismatches']['gpu'] is None else r['mismatches']['gpu']}",
        f"accuracy: golden {_pct(acc['golden'])}, GPU {_pct(acc['gpu'])}, FPGA {_pct(acc['fpga'])}",
        f"FPGA ({f['array']} SAC array at {f['clock_mhz']:g} MHz): {f['cycles_per_image']:,} cycles "
        f"per image, {f['latency_ms']:.3f} ms, {f['images_per_s']:,.0f} images/s, "
        f"{f['energy_uj_per_image']:.3f} uJ/image (op-energy model), "
        f"{f['activity_per_image']:,.0f} active cell ops/image"
        + ("" if not rtl.get("images") else
           f"; RTL cycles {'equal' if rtl.get('cycles_match_model') else 'DIFFER FROM'} the cycle model"),
        f"GPU ({r['gpu_backend']}): " + (
            "n/a" if g.get("batch") is None else
            f"batch {g['batch']}, {g['latency_ms_per_batch']:.3f} ms/batch, "
            f"{_num(g['images_per_s'], '{:,.0f}')} images/s, energy "
            f"{_num(g['energy_uj_per_image'], '{:.3f} uJ/image')}"
            + (" (emulation timings, not a GPU)" if r["gpu_backend"] == "emulation" else "")),
    ]
    return lines


def write_markdown(r: dict, path: Path, plots: list) -> None:
    f, g = r["fpga"], r["gpu"]
    lines = [f"# Compare report: {r['network']}", "",
             f"- model: `{r['model']}`", f"- data: {r['data']}, {r['images']} images "
             f"({r['rtl_images']} through the RTL on {f['rtl'].get('sim') or 'none'})",
             f"- GPU backend: {r['gpu_backend']}", "",
             "## Agreement with the golden model (mismatching elements per layer)", "",
             "| # | layer | FPGA path | GPU impl | FPGA mismatches | GPU mismatches |",
             "| --- | --- | --- | --- | --- | --- |"]
    for row, mm in zip(r["mapping"], r["mismatches"]["layers"]):
        lines.append(f"| {row['index']} | {row['layer']} | {row['fpga']} | {row['gpu']} | "
                     f"{_mm(mm['fpga'])} | {_mm(mm['gpu'])} |")
    acc = r["accuracy"]
    lines += ["", "`-`: the path does not materialise that layer (fused into the next one).", "",
              "## Accuracy", "", "| golden | GPU | FPGA |", "| --- | --- | --- |",
              f"| {_pct(acc['golden'])} | {_pct(acc['gpu'])} | {_pct(acc['fpga'])} |", "",
              "## Cost", "", "| | FPGA | GPU |", "| --- | --- | --- |",
              f"| latency | {f['latency_ms']:.3f} ms per image ({f['cycles_per_image']:,} cycles at "
              f"{f['clock_mhz']:g} MHz) | {_num(g.get('latency_ms_per_batch'))} ms per batch of "
              f"{g.get('batch') or 'n/a'} |",
              f"| throughput | {f['images_per_s']:,.0f} images/s | "
              f"{_num(g.get('images_per_s'), '{:,.0f}')} images/s |",
              f"| energy | {f['energy_uj_per_image']:.3f} uJ/image (op-energy model, docs/energy.md) | "
              f"{_num(g.get('energy_uj_per_image'), '{:.3f} uJ/image')} |", ""]
    if r["gpu_backend"] == "emulation":
        lines += ["GPU times are CPU-emulation times of the CUDA kernels (no GPU on this machine).", ""]
    lines += ["## FPGA cycles per layer", "",
              "| layer | tiles (N x K) | weight loads | matmuls |", "| --- | --- | --- | --- |"]
    for lay in f["layers"]:
        lines.append(f"| {lay['layer']} | {lay['n_tiles']} x {lay['k_tiles']} | "
                     f"{lay['load_cycles']:,} | {lay['matmul_cycles']:,} |")
    lines += ["", f"Host layers (run by the host, not the array): {f['host_layers'] or 'none'}.", ""]
    lines += [f"![{p.stem}]({p.name})" for p in plots]
    path.write_text("\n".join(lines) + "\n")


def write_plots(r: dict, out: Path) -> list:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    f, g = r["fpga"], r["gpu"]
    n = r["images"]
    names = [f"{row['index']} {row['layer'][:22]}" for row in r["mapping"]]
    fpga_s = np.full(len(names), np.nan)      # no bar: fused into the layer it feeds
    for lay in f["layers"]:
        fpga_s[lay["layer"]] = (lay["load_cycles"] + lay["matmul_cycles"]) / (f["clock_mhz"] * 1e6)
    for i, s in f.get("host_s", {}).items():
        fpga_s[int(i)] = s / n
    series = [("golden (numpy)", np.array(r["golden"]["layer_s"]) / n), ("FPGA", fpga_s)]
    if g.get("layer_s"):
        series.append((f"GPU ({r['gpu_backend']})", np.array(g["layer_s"]) / n))
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(series)
    for k, (label, vals) in enumerate(series):
        ax.bar(np.arange(len(names)) + k * width, 1e6 * vals, width, label=label)
    ax.set_yscale("log")
    ax.set_ylabel("microseconds per image")
    ax.set_xticks(np.arange(len(names)) + width * (len(series) - 1) / 2)
    ax.set_xticklabels(names, rotation=40, ha="right", fontsize=8)
    ax.set_title(f"{r['network']}: time per layer (FPGA: cycle model at {f['clock_mhz']:g} MHz, "
                 "a fused conv+step shown on the step; host layers measured)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    p1 = out / "layer_times.png"
    fig.savefig(p1, dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 4))
    desc = {row["index"]: row["layer"] for row in r["mapping"]}
    labels = [f"{lay['layer']}: {desc[lay['first']][:18]}\n{lay['n_tiles']}x{lay['k_tiles']} tiles"
              for lay in f["layers"]]
    loads = [lay["load_cycles"] for lay in f["layers"]]
    mms = [lay["matmul_cycles"] for lay in f["layers"]]
    ax.bar(labels, mms, label="MATMUL")
    ax.bar(labels, loads, bottom=mms, label="LOAD_WEIGHTS")
    ax.set_xlabel("array operation (output layer: first layer it covers)")
    ax.tick_params(axis="x", labelsize=7)
    ax.set_ylabel("cycles per image")
    ax.set_title(f"{r['network']}: FPGA cycle breakdown on a {f['array']} array "
                 f"({f['cycles_per_image']:,} cycles per image)", fontsize=9)
    ax.legend()
    fig.tight_layout()
    p2 = out / "fpga_cycles.png"
    fig.savefig(p2, dpi=110)
    plt.close(fig)
    return [p1, p2]


def write_all(r: dict, out: Path) -> list:
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(r, indent=2, default=_json_default))
    plots = write_plots(r, out)
    write_markdown(r, out / "report.md", plots)
    return [out / "report.json", out / "report.md"] + plots


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)
