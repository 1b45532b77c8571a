"""Markdown table of the launch geometry of every layer of a network in every configuration
(docs/gpu.md embeds the one of the Fashion-MNIST shape; a test keeps the two equal)."""

from __future__ import annotations

from gpu_kernels.configs import CONFIGS
from gpu_kernels.errors import LaunchError
from gpu_kernels.launch import DEFAULT_THREADS, plan
from gpu_kernels.layer_ops import prepare
from models.onnx import load_network


def launch_table(net, batch: int, word_bits: int = 32, threads: int = DEFAULT_THREADS) -> str:
    net = load_network(net)
    head = "| layer | kernel | work (n, p, f) | " + " | ".join(CONFIGS) + " |"
    lines = [head, "|" + " --- |" * (3 + len(CONFIGS))]
    for op in prepare(net, word_bits):
        if op.kernel is None:
            lines.append(
                f"| {op.index} {op.layer.describe()} | (none: already flat) | | "
                + " | ".join("" for _ in CONFIGS)
                + " |"
            )
            continue
        w = op.work(batch)
        cells = []
        for config in CONFIGS:
            try:
                lp = plan(w, config, threads=threads)
                cells.append(
                    f"g{lp.grid[0]}x{lp.grid[1]}x{lp.grid[2]} b{lp.block[0]}x{lp.block[1]}x{lp.block[2]}"
                )
            except LaunchError:
                cells.append("unmappable")
        lines.append(
            f"| {op.index} {op.layer.describe()} | `{op.kernel}` | ({w.n}, {w.p}, {w.f}) | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(lines)
