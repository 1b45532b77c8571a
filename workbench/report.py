"""Writing a compare report: the table on stdout, report.json, report.md and PNG plots."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from safeio import atomic_path, write_json_atomic, write_text_atomic


def clock_label(f: dict) -> str:
    """The clock of the FPGA numbers and where it comes from (fpga/clock.py); reports written
    before the clock carried its source say only the MHz."""
    clock = f.get("clock")
    return clock["label"] if isinstance(clock, dict) and "label" in clock else f"{f['clock_mhz']:g} MHz"


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
    for row, mm in zip(r["mapping"], r["mismatches"]["layers"], strict=True):
        lines.append(
            f"{row['index']:3d} {row['layer']:38s} {row['fpga'][:26]:26s} {row['gpu']:5s} "
            f"{_mm(mm['fpga']):>12s} {_mm(mm['gpu']):>12s}"
        )
    acc = r["accuracy"]
    gpu_ran = _gpu_ran(r)
    lines += [
        "",
        f"mismatching elements: FPGA {r['mismatches']['fpga']}"
        + (f", GPU {r['mismatches']['gpu']}" if gpu_ran else ""),
        f"accuracy: golden {_pct(acc['golden'])}, "
        + (f"GPU {_pct(acc['gpu'])}, " if gpu_ran else "")
        + f"FPGA {_pct(acc['fpga'])}",
        f"FPGA ({f['array']} SAC array at {clock_label(f)}): {f['cycles_per_image']:,} cycles "
        f"per image, {f['latency_ms']:.3f} ms, {f['images_per_s']:,.0f} images/s, "
        f"{f['energy_uj_per_image']:.3f} uJ/image (op-energy model), "
        f"{f['activity_per_image']:,.0f} active cell ops/image"
        + (
            ""
            if not rtl.get("images")
            else f"; RTL cycles {'equal' if rtl.get('cycles_match_model') else 'DIFFER FROM'} the cycle model"
        ),
        (
            f"GPU ({_gpu_where(r)}): batch {g['batch']}, {g['latency_ms_per_batch']:.3f} ms/batch, "
            f"{_num(g['images_per_s'], '{:,.0f}')} images/s{_modelled(r)}, energy "
            f"{_num(g['energy_uj_per_image'], '{:.3f} uJ/image')}"
        )
        if gpu_ran
        else f"GPU path: not run ({_gpu_note(r)})",
    ]
    return lines


def _gpu_times(r: dict) -> str:
    """ "measured" (CuPy on a GPU) or "modelled" (no GPU: gpu_kernels/gpu_model.py)."""
    return r["gpu"].get("times", "measured")


def _modelled(r: dict) -> str:
    return " (modelled)" if _gpu_times(r) == "modelled" else ""


def _gpu_where(r: dict) -> str:
    if _gpu_times(r) == "modelled":
        return "no GPU here: kernels checked in the CPU emulation, mapping and times modelled for an H200"
    device = r["gpu"].get("device")
    return f"{r['gpu_backend']}{f', {device}' if device else ''}, measured"


def _gpu_ran(r: dict) -> bool:
    return r["gpu"].get("batch") is not None


def _gpu_note(r: dict) -> str:
    return r["gpu"].get("note", "").removeprefix("n/a: ") or "the GPU kernels are for BNNs"


def write_markdown(r: dict, path: Path, plots: list) -> None:
    f, g = r["fpga"], r["gpu"]
    gpu = f"- GPU path: {_gpu_where(r)}" if _gpu_ran(r) else f"- GPU path: not run ({_gpu_note(r)})"
    lines = [
        f"# Compare report: {r['network']}",
        "",
        f"- model: `{r['model']}`",
        f"- data: {r['data']}, {r['images']} images "
        f"({r['rtl_images']} through the RTL on {f['rtl'].get('sim') or 'none'})",
        gpu,
        "",
        "## Agreement with the golden model (mismatching elements per layer)",
        "",
        "| # | layer | FPGA path | GPU impl | FPGA mismatches | GPU mismatches |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row, mm in zip(r["mapping"], r["mismatches"]["layers"], strict=True):
        lines.append(
            f"| {row['index']} | {row['layer']} | {row['fpga']} | {row['gpu']} | "
            f"{_mm(mm['fpga'])} | {_mm(mm['gpu'])} |"
        )
    acc = r["accuracy"]
    lines += [
        "",
        "`-`: the path does not materialise that layer (fused into the next one).",
        "",
        "## Accuracy",
        "",
        "| golden | GPU | FPGA |",
        "| --- | --- | --- |",
        f"| {_pct(acc['golden'])} | {_pct(acc['gpu']) if _gpu_ran(r) else 'not run'} | {_pct(acc['fpga'])} |",
        "",
        "## Cost",
        "",
        f"| | FPGA | GPU{_modelled(r)} |",
        "| --- | --- | --- |",
    ]
    gpu_cols = (
        [
            f"{_num(g.get('latency_ms_per_batch'))} ms per batch of {g['batch']}",
            f"{_num(g.get('images_per_s'), '{:,.0f}')} images/s",
            _num(g.get("energy_uj_per_image"), "{:.3f} uJ/image"),
        ]
        if _gpu_ran(r)
        else ["not run"] * 3
    )
    lines += [
        f"| latency | {f['latency_ms']:.3f} ms per image ({f['cycles_per_image']:,} cycles "
        f"at {clock_label(f)}) | {gpu_cols[0]} |",
        f"| throughput | {f['images_per_s']:,.0f} images/s | {gpu_cols[1]} |",
        f"| energy | {f['energy_uj_per_image']:.3f} uJ/image (op-energy model, "
        f"docs/energy.md) | {gpu_cols[2]} |",
        "",
    ]
    if _gpu_ran(r) and _gpu_times(r) == "modelled":
        lines += [
            f"No GPU on this machine: the CUDA kernels ran in the CPU emulation (that is "
            f"what the mismatch column checks); the mapping and the GPU times come from "
            f"a model ({g.get('profile', 'gpu_kernels/gpu_model.py')}), the same in every "
            f"run, not from measurements.",
            "",
        ]
    lines += [
        "## FPGA cycles per layer",
        "",
        "| layer | tiles (N x K) | weight loads | matmuls |",
        "| --- | --- | --- | --- |",
    ]
    for lay in f["layers"]:
        lines.append(
            f"| {lay['layer']} | {lay['n_tiles']} x {lay['k_tiles']} | "
            f"{lay['load_cycles']:,} | {lay['matmul_cycles']:,} |"
        )
    host = ", ".join(map(str, f["host_layers"])) or "none"
    lines += ["", f"Host layers (run by the host, not the array): {host}.", ""]
    lines += [f"![{p.stem}]({p.name})" for p in plots]
    write_text_atomic(path, "\n".join(lines) + "\n")


def write_plots(r: dict, out: Path) -> list:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    f, g = r["fpga"], r["gpu"]
    n = r["images"]
    names = [_wrap(f"{row['index']} {row['layer']}", 13) for row in r["mapping"]]
    array_s = np.full(len(names), np.nan)  # no bar: fused into the layer it feeds
    host_s = np.full(len(names), np.nan)
    for lay in f["layers"]:
        array_s[lay["layer"]] = (lay["load_cycles"] + lay["matmul_cycles"]) / (f["clock_mhz"] * 1e6)
    for i, s in f.get("host_s", {}).items():
        host_s[int(i)] = s / n
    # (label, seconds per image, bar position in the group, colour); the FPGA path's array
    # times (modelled) and host times (measured) share a slot but not a colour
    series = [
        ("golden (numpy, measured)", np.array(r["golden"]["layer_s"]) / n, 0, "tab:blue"),
        (f"FPGA array (cycle model, {clock_label(f)})", array_s, 1, "tab:orange"),
        ("FPGA host layers (measured)", host_s, 1, "tab:brown"),
    ]
    if g.get("layer_s"):
        how = "modelled, H200" if _gpu_times(r) == "modelled" else f"{r['gpu_backend']}, measured"
        series.append((f"GPU ({how})", np.array(g["layer_s"]) / n, 2, "tab:green"))
    slots = 1 + max(s[2] for s in series)
    fig, ax = plt.subplots(figsize=(3.5 + 1.05 * len(names), 5))
    width = 0.8 / slots
    for label, vals, slot, colour in series:
        if np.isfinite(vals).any():
            ax.bar(np.arange(len(names)) + slot * width, 1e6 * vals, width, label=label, color=colour)
    ax.set_yscale("log")
    ax.set_ylabel("microseconds per image")
    ax.set_xticks(np.arange(len(names)) + width * (slots - 1) / 2)
    ax.set_xticklabels(names, fontsize=7)
    fused = (
        "a layer fused into the next (a conv with its step, a shift with its conv) is "
        "counted on the layer it feeds"
    )
    ax.set_title(f"{r['network']}: time per layer\n({fused})", fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    p1 = out / "layer_times.png"
    with atomic_path(p1) as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, 4.5))
    labels = [_op_label(lay, r["mapping"]) for lay in f["layers"]]
    loads = [lay["load_cycles"] for lay in f["layers"]]
    mms = [lay["matmul_cycles"] for lay in f["layers"]]
    ax.bar(labels, mms, label="MATMUL")
    ax.bar(labels, loads, bottom=mms, label="LOAD_WEIGHTS")
    ax.set_xlabel("array operation (the layers it covers; N x K tiles)")
    ax.tick_params(axis="x", labelsize=7)
    ax.set_ylabel("cycles per image")
    ax.set_title(
        f"{r['network']}: FPGA cycle breakdown on a {f['array']} array "
        f"({f['cycles_per_image']:,} cycles per image)",
        fontsize=9,
    )
    ax.legend()
    fig.tight_layout()
    p2 = out / "fpga_cycles.png"
    with atomic_path(p2) as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)
    return [p1, p2]


_COMPUTE = ("PointwiseConv", "IntConv2d", "BinConv2d", "BinDense")


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width, break_long_words=False)) or text


def _op_label(lay: dict, mapping: list) -> str:
    """An array operation named by the layer that computes (the conv or dense layer), with
    the range of layers it covers and its tiles."""
    first, last = lay["first"], lay["layer"]
    covered = [mapping[i]["layer"] for i in range(first, last + 1)]
    main = next((d for d in covered if d.split()[0] in _COMPUTE), covered[-1])
    span = f"layer {last}" if first == last else f"layers {first}-{last}"
    return f"{span}\n{_wrap(main, 16)}\n{lay['n_tiles']}x{lay['k_tiles']} tiles"


def write_all(r: dict, out: Path) -> list:
    """report.json, the plots and report.md in `out` (the compare command's staged directory:
    they appear at --out together, or not at all). A value JSON cannot hold (nan, inf) is an
    error here, never an invalid report.json."""
    write_json_atomic(out / "report.json", r, allow_nan=False)
    plots = write_plots(r, out)
    write_markdown(r, out / "report.md", plots)
    return [out / "report.json", out / "report.md"] + plots
