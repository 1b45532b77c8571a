"""Writing a compare report: the table on stdout, report.json, report.md and PNG plots.

A mismatch cell is `-` where a path has no output of that layer to compare, followed by a
footnote mark `[k]`; the footnotes under the table say why, from the report's `absent` entries:
the path did not run (and why), or the layer is fused into layer N (computed inside N's array
operation or kernel, so only N's output exists), or the path keeps no output of it.
"""

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


PATHS = (("fpga", "FPGA"), ("gpu", "GPU"), ("cpu", "CPU"))  # the mismatch columns, in order
_INSIDE = {  # how a layer fused into layer {n} is computed, per path
    "fpga": "computed together with layer {n} in one array operation",
    "gpu": "computed inside layer {n}'s kernel",
    "cpu": "computed inside the fused CPU network's kernel that writes layer {n}",
}


def _mm(m) -> str:
    if m is None:
        return "-"
    if not m["count"]:
        return "0"
    where = f" first at {tuple(m['first'])}" if m.get("first") is not None else ""
    detail = f" (got {m['got']}, want {m['want']})" if m.get("got") is not None else ""
    return f"{m['count']}{where}{detail}{' ' + m['note'] if m.get('note') else ''}"


def _layers(indices: list) -> str:
    return f"layer {indices[0]}" if len(indices) == 1 else "layers " + ", ".join(map(str, indices))


def _why(r: dict, row: dict, mm: dict, path: str) -> tuple:
    """Why `path` has no output of this layer: ("not_run", why) | ("fused_into", N) |
    ("not_materialised", what), from the layer's `absent` entry (reports written before it:
    from the path's note and the FPGA column)."""
    why = (mm.get("absent") or {}).get(path)
    if why:
        kind = next(iter(why))
        return kind, why[kind]
    if path == "gpu" and not _gpu_ran(r):
        return "not_run", _gpu_note(r)
    if path == "cpu" and not _cpu_ran(r):
        return "not_run", _cpu_note(r)
    cell = row.get(path, "")
    if path == "fpga" and cell.startswith("array (fused into layer "):
        return "fused_into", int(cell.removeprefix("array (fused into layer ").rstrip(")"))
    return "not_materialised", "the report does not say why"


def footnotes(r: dict) -> tuple[dict, list]:
    """({(layer index, path): footnote number} for every `-` mismatch cell, [footnote text]):
    one footnote per path that did not run, per (path, layer N) that layers are fused into,
    per other reason; numbered in the order the table shows them (rows, then FPGA, GPU, CPU)."""
    groups: dict = {}  # (path, kind, value) -> layers, in order of first appearance
    cells = {}
    for row, mm in zip(r["mapping"], r["mismatches"]["layers"], strict=True):
        for path, _ in PATHS:
            if mm.get(path) is None:
                key = (path, *_why(r, row, mm, path))
                groups.setdefault(key, []).append(row["index"])
                cells[(row["index"], path)] = key
    number = {key: k for k, key in enumerate(groups, 1)}
    names = dict(PATHS)
    notes = []
    for (path, kind, value), layers in groups.items():
        name = names[path]
        if kind == "not_run":
            notes.append(f"{name} path not run: {value}.")
        elif kind == "fused_into":
            notes.append(
                f"{name} path: {_layers(layers)} fused into layer {value}: "
                f"{_INSIDE[path].format(n=value)}, so only "
                f"layer {value}'s output exists to compare."
            )
        else:
            notes.append(f"{name} path: no output of {_layers(layers)} to compare: {value}.")
    return {cell: number[key] for cell, key in cells.items()}, notes


def _cell(mm: dict, path: str, index: int, marks: dict) -> str:
    """A mismatch cell: the count (and first difference), or `- [k]` with its footnote."""
    m = mm.get(path)
    return f"- [{marks[(index, path)]}]" if m is None and (index, path) in marks else _mm(m)


def summary_lines(r: dict) -> list:
    f, g = r["fpga"], r["gpu"]
    rtl = f["rtl"]
    marks, notes = footnotes(r)
    lines = [
        f"model {r['model']} ({r['network']}), {r['images']} images of {r['data']}, "
        f"{r['rtl_images']} on the RTL ({rtl.get('sim') or 'none'})",
        "",
        f"{'#':>3} {'layer':38s} {'FPGA path':26s} {'GPU':5s} {'CPU':9s} "
        f"{'FPGA mism.':>12s} {'GPU mism.':>12s} {'CPU mism.':>12s}",
    ]
    for row, mm in zip(r["mapping"], r["mismatches"]["layers"], strict=True):
        i = row["index"]
        lines.append(
            f"{i:3d} {row['layer']:38s} {row['fpga'][:26]:26s} {row['gpu']:5s} {row.get('cpu', 'n/a'):9s} "
            + " ".join(f"{_cell(mm, path, i, marks):>12s}" for path, _ in PATHS)
        )
    lines += ([""] + [f"[{k}] {text}" for k, text in enumerate(notes, 1)]) if notes else []
    acc = r["accuracy"]
    gpu_ran, cpu_ran = _gpu_ran(r), _cpu_ran(r)
    lines += [
        "",
        f"mismatching elements: FPGA {r['mismatches']['fpga']}"
        + (f", GPU {r['mismatches']['gpu']}" if gpu_ran else "")
        + (f", CPU {r['mismatches'].get('cpu')}" if cpu_ran else ""),
        f"accuracy: golden {_pct(acc['golden'])}, "
        + (f"GPU {_pct(acc['gpu'])}, " if gpu_ran else "")
        + (f"CPU {_pct(acc.get('cpu'))}, " if cpu_ran else "")
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
        _cpu_line(r),
    ]
    return lines


def _cpu_ran(r: dict) -> bool:
    return (r.get("cpu") or {}).get("wall_s") is not None


def _cpu_note(r: dict) -> str:
    note = (r.get("cpu") or {}).get("note") or "n/a: this report has no CPU path"
    return note.removeprefix("n/a: ")


def _golden_s(r: dict) -> float:
    return sum(r.get("golden", {}).get("layer_s") or [])


def _cpu_line(r: dict) -> str:
    """The CPU path's measured time, beside the golden executor's in the same run."""
    if not _cpu_ran(r):
        return f"CPU path: not run ({_cpu_note(r)})"
    c = r["cpu"]
    golden = _golden_s(r)
    return (
        f"CPU (fused CPU network, {c.get('threads', '?')} threads, measured): {r['images']:,} images "
        f"in {1e3 * c['wall_s']:,.3f} ms, {_num(c.get('ms_per_image'), '{:.4f}')} ms/image, "
        f"{_num(c.get('images_per_s'), '{:,.0f}')} images/s"
        + (f" (golden executor, numpy: {1e3 * golden:,.3f} ms)" if golden else "")
    )


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
    cpu = (
        f"- CPU path: fused CPU network (gpu_kernels/cpu_impl.py), {r['cpu'].get('threads', '?')} "
        "threads, measured"
        if _cpu_ran(r)
        else f"- CPU path: not run ({_cpu_note(r)})"
    )
    marks, notes = footnotes(r)
    lines = [
        f"# Compare report: {r['network']}",
        "",
        f"- model: `{r['model']}`",
        f"- data: {r['data']}, {r['images']} images "
        f"({r['rtl_images']} through the RTL on {f['rtl'].get('sim') or 'none'})",
        gpu,
        cpu,
        "",
        "## Agreement with the golden model (mismatching elements per layer)",
        "",
        "| # | layer | FPGA path | GPU impl | CPU kernel | FPGA mismatches | GPU mismatches "
        "| CPU mismatches |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row, mm in zip(r["mapping"], r["mismatches"]["layers"], strict=True):
        i = row["index"]
        lines.append(
            f"| {i} | {row['layer']} | {row['fpga']} | {row['gpu']} | {row.get('cpu', 'n/a')} | "
            + " | ".join(_cell(mm, p, i, marks) for p, _ in PATHS)
            + " |"
        )
    acc = r["accuracy"]
    if notes:
        lines += ["", "`- [k]`: no output of that layer on that path to compare, because:", ""]
        lines += [f"{k}. {text}" for k, text in enumerate(notes, 1)]
    cpu_ran = _cpu_ran(r)
    lines += [
        "",
        "## Accuracy",
        "",
        "| golden | GPU | FPGA | CPU |",
        "| --- | --- | --- | --- |",
        f"| {_pct(acc['golden'])} | {_pct(acc['gpu']) if _gpu_ran(r) else 'not run'} | {_pct(acc['fpga'])} | "
        f"{_pct(acc.get('cpu')) if cpu_ran else 'not run'} |",
        "",
        "## Cost",
        "",
        f"| | FPGA | GPU{_modelled(r)} | CPU{' (measured)' if cpu_ran else ''} |",
        "| --- | --- | --- | --- |",
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
    c = r.get("cpu") or {}
    cpu_cols = (
        [
            f"{1e3 * c['wall_s']:,.3f} ms for {r['images']:,} images in one call "
            f"({_num(c.get('ms_per_image'), '{:.4f}')} ms per image)",
            f"{_num(c.get('images_per_s'), '{:,.0f}')} images/s",
            "n/a",
        ]
        if cpu_ran
        else ["not run"] * 3
    )
    lines += [
        f"| latency | {f['latency_ms']:.3f} ms per image ({f['cycles_per_image']:,} cycles "
        f"at {clock_label(f)}) | {gpu_cols[0]} | {cpu_cols[0]} |",
        f"| throughput | {f['images_per_s']:,.0f} images/s | {gpu_cols[1]} | {cpu_cols[1]} |",
        f"| energy | {f['energy_uj_per_image']:.3f} uJ/image (op-energy model, "
        f"docs/energy.md) | {gpu_cols[2]} | {cpu_cols[2]} |",
        "",
    ]
    if _gpu_ran(r) and _gpu_times(r) == "modelled":
        lines += [
            f"No GPU on this machine: the CUDA kernels ran in the CPU emulation (that is "
            f"what the GPU mismatches column checks); the mapping and the GPU times come from "
            f"a model ({g.get('profile', 'gpu_kernels/gpu_model.py')}), the same in every "
            f"run, not from measurements.",
            "",
        ]
    if cpu_ran:
        golden = _golden_s(r)
        lines += [
            f"CPU: the fused CPU network ({c.get('threads', '?')} threads), {c.get('timing', 'measured')}"
            + (
                f"; the golden executor (numpy) took {1e3 * golden:,.3f} ms for the same images"
                if golden
                else ""
            )
            + ".",
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
    if (r.get("cpu") or {}).get("layer_s"):  # a fused kernel's time on the last layer it computes
        cpu_s = np.array([t if t > 0 else np.nan for t in r["cpu"]["layer_s"]], dtype=float)
        series.append(("CPU (fused CPU network, measured)", cpu_s / n, 3, "tab:purple"))
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
        "a layer fused into a later one (a conv with its step, a shift with its conv; on the CPU "
        "path a conv with its step and pooling) is counted on that layer"
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
