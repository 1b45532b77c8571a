"""The mapper's reports: the text table `sacbench map` prints and the heatmap PNG.

Every number carries its unit; times are for the whole data set (`n_images` images in batches),
as the mapper's objective is. When Algorithm 1 and the DP choose the same batch size and
implementations there is one table; when only the implementations differ, one table marks both
choices; when the batch sizes differ, each choice gets its own table (a layer's time depends on
the batch size). Where the profile holds the fused CPU network's measured times, its column
`fused cpu` has each kernel's time on the last layer it computes and `in N` on the layers
computed inside layer N's kernel. Where a choice runs layers as one fused GPU kernel
(Choice.fused_gpu), the column `fused gpu` has, for each such run, the configuration and the
kernel's time on its last layer and `in N` on the others, and holds the choice's marks for
those layers (a line under the table names each run's kernel).
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

from gpu_kernels.configs import CPU
from gpu_kernels.mapper import (
    Choice,
    Mapping,
    fused_cpu_layer_s,
    fused_cpu_meta,
    fused_gpu_cost,
    fused_gpu_variants,
    n_batches,
)
from gpu_kernels.profiling import fused_key
from safeio import atomic_path

NAMES = {"algorithm1": "Algorithm 1", "dp": "DP"}
MARK_A1, MARK_DP, MARK_BOTH = "a", "d", "*"
LAYER_NAME = 32
FUSED = "fused cpu"  # the column of the fused CPU network (a whole-network candidate)
FUSED_GPU = "fused gpu"  # the column of the runs of layers a choice computes in one GPU kernel


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{1e3 * seconds:,.3f}"


def _columns(header: list[str], rows: list[list[str]], left: int = 1) -> list[str]:
    """Text columns: the first `left` left-aligned, the others right-aligned."""
    widths = [max(len(r[j]) for r in [header] + rows) for j in range(len(header))]
    out = []
    for r in [header] + rows:
        cells = [
            c.ljust(w) if j < left else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def summary_lines(m: Mapping) -> list[str]:
    """One row per algorithm: batch size and what its mapping costs, split into parts."""
    header = [
        "choice",
        "batch",
        "total [ms]",
        "layers [ms]",
        "copies [ms]",
        "GPU kernels [ms]",
        "GPU host issue [ms]",
    ]
    rows = []
    for ch in (m.algorithm1, m.dp):
        copies = sum(c["seconds"] for c in ch.transfers)
        rows.append(
            [
                NAMES[ch.algorithm],
                str(ch.batch),
                _ms(ch.total_s),
                _ms(sum(ch.layer_s)),
                _ms(copies),
                _ms(ch.gpu_kernel_s),
                _ms(ch.gpu_host_s),
            ]
        )
    return _columns(header, rows)


def _copies(ch: Choice, n_layers: int) -> list[str]:
    lines = []
    for c in ch.transfers:
        where = (
            f"after layer {c['boundary'] - 1}"
            if c["boundary"] == n_layers
            else f"before layer {c['boundary']}"
        )
        to = "to the GPU" if c["direction"] == "h2d" else "to the host"
        lines.append(f"  {NAMES[ch.algorithm]} copies {to} {where}: {_ms(c['seconds'])} ms")
    return lines


def marked_impls(ch: Choice) -> list[str]:
    """What a choice runs per layer, as the tables name it: its implementations, or `fused cpu`
    on every layer when it runs the whole network as the fused CPU network."""
    return [FUSED] * len(ch.impls) if ch.fused_cpu else list(ch.impls)


def table_impls(ch: Choice) -> list[str]:
    """marked_impls, with `fused gpu` on the layers the choice computes in a fused GPU kernel
    (where the layer tables mark them)."""
    impls = marked_impls(ch)
    for first, last in ch.fused_gpu:
        impls[first : last + 1] = [FUSED_GPU] * (last + 1 - first)
    return impls


def _fused_gpu_cells(m: Mapping, batch: int, choices: list[Choice]) -> dict[int, str]:
    """Layer -> the `fused gpu` column's text at `batch` for the runs the choices take there:
    '<configuration> <ms>' on a run's last layer (the kernel's time for the data set), 'in N'
    on its other layers."""
    k = n_batches(m.n_images, batch)
    cost = fused_gpu_cost(m.profile, batch)
    cells = {}
    for ch in choices:
        for first, last in ch.fused_gpu:
            impl = ch.impls[last]
            px = ch.fused_px.get(fused_key(first, last), 1)
            t = cost.get((first, last, px), [None] * len(m.profile.impls))[m.profile.impls.index(impl)]
            cells[last] = f"{impl} {'n/a' if t is None else _ms(t * k)}"
            cells.update({j: f"in {last}" for j in range(first, last)})
    return cells


def fused_gpu_lines(m: Mapping, choices: list[Choice]) -> list[str]:
    """One line per choice that runs fused GPU kernels: each run's layers, kernel, configuration."""
    entries = fused_gpu_variants(m.profile)

    def kernel(ch, first, last):
        px = ch.fused_px.get(fused_key(first, last), 1)
        return entries.get((first, last, px), {}).get("kernel", "?")

    lines = []
    for ch in choices:
        if ch.fused_gpu:
            runs = "; ".join(
                f"{first}-{last} as {kernel(ch, first, last)} in {ch.impls[last]}"
                for first, last in ch.fused_gpu
            )
            lines.append(f"  {FUSED_GPU}: {NAMES[ch.algorithm]} runs layers {runs}.")
    if lines:
        lines.append(
            f"  {FUSED_GPU}: one kernel per run of layers (its configuration and time on the run's last "
            "layer; in N: computed inside that kernel, no tensor written)."
        )
    return lines


def fused_inside(m: Mapping) -> dict[int, int]:
    """Layer -> the layer whose fused CPU kernel computes it, for the layers computed inside a
    later layer's kernel (the profile's fused_cpu checked: GpuKernelError when malformed)."""
    kernels = fused_cpu_meta(m.profile).get("kernels", [])
    return {i: last for first, last in kernels for i in range(first, last)}


def _columns_at(m: Mapping, batch: int) -> tuple[list[str], list[list]]:
    """The implementations shown at `batch` and their seconds per batch, [layer][impl]: the
    profile's, plus the fused CPU network's where the profile has its times (None on the
    layers computed inside another's kernel)."""
    p = m.profile
    cost = p.cost_s(batch)
    fused = fused_cpu_layer_s(p, batch)
    if fused is None:
        return list(p.impls), cost
    inside = fused_inside(m)
    return list(p.impls) + [FUSED], [
        row + [None if i in inside else t] for i, (row, t) in enumerate(zip(cost, fused, strict=True))
    ]


def layer_table(
    m: Mapping, batch: int, marks: dict[str, list[str]], choices: list[Choice] | None = None
) -> list[str]:
    """Every layer in every implementation at `batch`, in ms for the whole data set; `marks`
    maps a marker to the implementations (one per layer) it marks (table_impls: `fused gpu` on
    the layers of the fused GPU runs of `choices`, which get that column)."""
    p = m.profile
    k = n_batches(m.n_images, batch)
    impls, cost = _columns_at(m, batch)
    gpu_cells = _fused_gpu_cells(m, batch, choices or [])
    if gpu_cells:
        impls, cost = impls + [FUSED_GPU], [row + [None] for row in cost]
    inside = fused_inside(m)
    header = ["#", "layer"] + [f"{impl} [ms]" for impl in impls]
    rows = []
    for i, name in enumerate(p.layers):
        cells = []
        for impl, t in zip(impls, cost[i], strict=True):
            mark = "".join(sym for sym, chosen in marks.items() if chosen[i] == impl)
            mark = MARK_BOTH if len(mark) > 1 else mark
            text = "n/a" if t is None else _ms(t * k)
            if impl == FUSED and i in inside:
                text = f"in {inside[i]}"
            if impl == FUSED_GPU:
                text = gpu_cells.get(i, "-")
            cells.append(text + (mark or " "))
        short = name if len(name) <= LAYER_NAME else name[: LAYER_NAME - 3] + "..."
        rows.append([str(i), short] + cells)
    return _columns(header, rows, left=2)


def cpu_line(m: Mapping) -> str:
    """What the CPU device's times are: the fused CPU network's (measured) and the per-layer
    implementation's, or why the fused network is not in the mapping."""
    fused = fused_cpu_meta(m.profile)
    if fused.get("layer_s"):
        return (
            f"CPU: the whole network as the fused CPU network ({FUSED}; {fused.get('source', 'measured')}); "
            "the per-layer CPU implementation (cpu) where a mapping mixes CPU and GPU layers."
        )
    if fused.get("reason"):
        return f"CPU: the per-layer CPU implementation only: {fused['reason']}."
    return "CPU: the per-layer CPU implementation only (the profile holds no times of the fused CPU network)."


def format_table(m: Mapping) -> str:
    p = m.profile
    a1, dp = m.algorithm1, m.dp
    batches = ", ".join(str(b) for b in p.batch_sizes)
    lines = [
        f"{m.network}: {m.n_images:,} images, batch sizes {batches}; profile: {p.source}",
        cpu_line(m),
        "",
        f"Times are for all {m.n_images:,} images. Algorithm 1 (HEP-BNN) minimises the layer times alone,",
        "DP the layers and the copies between host and GPU"
        + (
            " (and takes the fused CPU network, the whole network on the CPU, where that costs less)."
            if _has_fused(m)
            else "."
        ),
        "",
    ]
    lines += summary_lines(m)
    lines.append("")
    if m.agree():
        lines.append(
            f"Algorithm 1 and DP choose the same mapping: batch {a1.batch}, the "
            f"implementations marked {MARK_BOTH}."
        )
        tables = [(a1.batch, {MARK_BOTH: table_impls(a1)}, [a1])]
    elif a1.batch == dp.batch:
        differ = [
            str(i) for i, (x, y) in enumerate(zip(table_impls(a1), table_impls(dp), strict=True)) if x != y
        ]
        lines.append(
            f"Both choose batch {a1.batch}; they differ in layer(s) {', '.join(differ)} "
            f"({MARK_A1} = Algorithm 1, {MARK_DP} = DP, {MARK_BOTH} = both)."
        )
        tables = [(a1.batch, {MARK_A1: table_impls(a1), MARK_DP: table_impls(dp)}, [a1, dp])]
    else:
        lines.append(
            f"Algorithm 1 chooses batch {a1.batch} (marked {MARK_A1}), DP batch "
            f"{dp.batch} (marked {MARK_DP})."
        )
        tables = [(a1.batch, {MARK_A1: table_impls(a1)}, [a1]), (dp.batch, {MARK_DP: table_impls(dp)}, [dp])]
    for batch, marks, choices in tables:
        lines += ["", f"Layer times at batch {batch} ({n_batches(m.n_images, batch):,} batches):"]
        lines += layer_table(m, batch, marks, choices)
    lines += fused_gpu_lines(m, [a1] if m.agree() else [a1, dp])
    if any(fused_cpu_layer_s(p, batch) is not None for batch, _, _ in tables):
        lines += [
            f"  {FUSED}: each kernel of the fused CPU network on the last layer it computes (the first "
            "kernel's time includes the input's checks and layout); in N: computed inside layer N's "
            "kernel. It runs only as a whole network."
        ]
    copies = _copies(a1, len(p.layers)) + ([] if m.agree() else _copies(dp, len(p.layers)))
    if copies:
        lines += [""] + copies
    lines += ["", "What each algorithm minimises, per batch size:"]
    lines += _columns(
        ["batch", "Algorithm 1 [ms]", "DP [ms]"],
        [[str(b), _ms(a1.per_batch_s[b]), _ms(dp.per_batch_s[b])] for b in p.batch_sizes],
        left=0,
    )
    if dp.fused_cpu:
        lines += [
            "",
            f"DP runs the whole network on the CPU as the fused CPU network: {_ms(dp.total_s)} ms for "
            f"the {m.n_images:,} images at batch {dp.batch}; no per-layer mapping beats it here.",
        ]
    elif all(x == CPU for x in dp.impls):
        lines += ["", "DP keeps every layer on the CPU: no GPU configuration beats it here."]
    return "\n".join(lines)


def _has_fused(m: Mapping) -> bool:
    return any(fused_cpu_layer_s(m.profile, b) is not None for b in m.profile.batch_sizes)


FUSED_BARS = {"algorithm1": ("black", 0.15), "dp": ("red", 0.35)}  # colour, offset right of the panel


def _fused_bar(ax, n_impls: int, first: int, last: int, algorithm: str) -> None:
    """A bar right of the panel's last column spanning a fused GPU kernel's layers (each
    algorithm's at its own offset, so both show when they fuse the same layers)."""
    colour, dx = FUSED_BARS[algorithm]
    x = n_impls - 0.5 + dx
    ax.plot([x, x], [first - 0.35, last + 0.35], color=colour, lw=3, solid_capstyle="butt", clip_on=False)


def write_heatmap(m: Mapping, path) -> Path | None:
    """PNG: one panel per batch size, layers x implementations, colour = log10 of the
    microseconds per image. In the panel of its batch size, each algorithm marks the cell it
    chose in every layer: Algorithm 1 with a white ring on the cell's left half, DP with a red
    diamond on its right half, so that the two stay visible when they choose the same cell; each
    run of layers a choice computes in one fused GPU kernel is a bar right of the panel over
    those layers. Returns None when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
        from matplotlib.lines import Line2D
    except ImportError:
        return None
    p = m.profile
    nb = len(p.batch_sizes)
    cols = min(nb, 4)
    rows = math.ceil(nb / cols)
    fig, axes = plt.subplots(
        rows,
        cols,
        figsize=(2.6 * cols + 3, 0.3 * len(p.layers) * rows + 1.6 * rows),
        squeeze=False,
        layout="constrained",
    )
    columns = {b: _columns_at(m, b) for b in p.batch_sizes}
    grids = {
        b: np.array(
            [[np.nan if t is None else max(t / b, 1e-12) * 1e6 for t in row] for row in columns[b][1]]
        )
        for b in p.batch_sizes
    }
    finite = np.concatenate([g[np.isfinite(g)] for g in grids.values()])
    vmin, vmax = np.log10(finite.min()), np.log10(finite.max())
    styles = {
        "algorithm1": dict(marker="o", s=46, facecolors="none", edgecolors="white", linewidths=1.6, dx=-0.22),
        "dp": dict(marker="D", s=30, c="red", edgecolors="white", linewidths=0.8, dx=0.22),
    }
    im = None
    for j, (ax, b) in enumerate(zip(axes.flat, p.batch_sizes, strict=True)):
        g = np.log10(grids[b])
        im = ax.imshow(np.ma.masked_invalid(g), cmap="viridis", vmin=vmin, vmax=vmax, aspect="auto")
        chosen = [NAMES[ch.algorithm] for ch in (m.algorithm1, m.dp) if ch.batch == b]
        ax.set_title(f"batch {b}" + (f" (chosen: {', '.join(chosen)})" if chosen else ""), fontsize=8)
        impls = columns[b][0]
        ax.set_xticks(range(len(impls)), impls, fontsize=7)
        ax.set_yticks(
            range(len(p.layers)),
            [f"{i} {n[:26]}" for i, n in enumerate(p.layers)] if j % cols == 0 else [],
            fontsize=7,
        )
        for ch in (m.algorithm1, m.dp):
            if ch.batch == b:
                style = dict(styles[ch.algorithm])
                dx = style.pop("dx")
                chosen = marked_impls(ch)
                ax.scatter([impls.index(x) + dx for x in chosen], range(len(chosen)), zorder=3, **style)
                for first, last in ch.fused_gpu:  # one fused GPU kernel: a bar over its layers
                    _fused_bar(ax, len(impls), first, last, ch.algorithm)
    for ax in list(axes.flat)[nb:]:
        ax.axis("off")
    handles = [
        Line2D(
            [],
            [],
            linestyle="none",
            marker="o",
            markerfacecolor="none",
            markeredgecolor="black",
            label="Algorithm 1's choice",
        ),
        Line2D(
            [],
            [],
            linestyle="none",
            marker="D",
            markerfacecolor="red",
            markeredgecolor="red",
            label="DP's choice",
        ),
    ]
    for ch in (m.algorithm1, m.dp):
        if ch.fused_gpu:
            colour, _ = FUSED_BARS[ch.algorithm]
            label = f"{NAMES[ch.algorithm]}: layers in one fused GPU kernel"
            handles.append(Line2D([], [], color=colour, lw=3, label=label))
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=8, frameon=False)
    title = f"{m.network}: time per image by layer and implementation ({p.source})"
    fig.suptitle(textwrap.fill(title, 20 + 22 * cols), fontsize=9)  # a long source wraps
    fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8, label="log10(us per image)")
    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)
    return path
