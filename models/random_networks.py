"""Random networks and data with a given seed, for tests, benches and benchmarks.

Weights are drawn so that activations neither all die nor all saturate, which keeps the
comparisons meaningful (ReLU & quantize outputs spread over 0..255, binary outputs mixed).
"""
from __future__ import annotations

import numpy as np

from models import ir
from models.numerics import sac
from models.numerics.sac import OutputMode


def random_pow2_matrix(rng: np.random.Generator, rows: int, cols: int, group: int,
                       density: float = 0.8) -> np.ndarray:
    """Integer power-of-two weights [rows, cols] with at most one nonzero per row and group."""
    w = np.zeros((rows, cols), dtype=np.int32)
    for r in range(rows):
        for g0 in range(0, cols, group):
            if rng.random() < density:
                c = g0 + int(rng.integers(0, min(group, cols - g0)))
                w[r, c] = int(rng.choice([-1, 1])) << int(rng.integers(0, 7))
    return w


def random_combined(rng, rows, cols, group, density=0.8) -> sac.CombinedWeights:
    return sac.combine_columns(random_pow2_matrix(rng, rows, cols, group, density), group)


def random_sac_network(rng: np.random.Generator, in_shape=(4, 8, 8), widths=(12, 16),
                       groups=(1, 2, 3), shift: bool = True, final: str = "pixel_sum",
                       classes: int = 10, s2d: int = 1) -> ir.Network:
    """A SAC network: [SpaceToDepth] then per width: [ChannelShift] PointwiseConv relu_quant,
    then a final layer: "pixel_sum" (raw + PixelSum), "raw", "binary" or "relu_quant"."""
    layers: list = []
    c, h, w = in_shape
    if s2d > 1:
        layers.append(ir.SpaceToDepth(factor=s2d))
        c, h, w = c * s2d * s2d, h // s2d, w // s2d
    for i, f in enumerate(widths):
        g = groups[i % len(groups)]
        if shift:
            layers.append(ir.ChannelShift(directions=rng.integers(0, 9, size=c)))
        wts = random_combined(rng, f, c, g)
        # bias around the mean pre-activation keeps roughly half the outputs positive
        layers.append(ir.PointwiseConv(weights=wts, bias=rng.integers(-3000, 3000, size=f),
                                       mode=OutputMode.RELU_QUANT, name=f"conv{i}"))
        c = f
    g = groups[len(widths) % len(groups)]
    mode = {"pixel_sum": OutputMode.RAW, "raw": OutputMode.RAW,
            "binary": OutputMode.BINARY, "relu_quant": OutputMode.RELU_QUANT}[final]
    layers.append(ir.PointwiseConv(weights=random_combined(rng, classes, c, g),
                                   bias=rng.integers(-2000, 2000, size=classes), mode=mode,
                                   name="final"))
    if final == "pixel_sum":
        layers.append(ir.PixelSum())
    return ir.Network(in_shape, "uint8", layers, name="random_sac")


def random_images(rng: np.random.Generator, n: int, shape, zero_fraction: float = 0.5) -> np.ndarray:
    """uint8 images with about `zero_fraction` zeros (what ReLU leaves) and the extremes."""
    x = rng.integers(0, 256, size=(n, *shape)).astype(np.uint8)
    x[rng.random(x.shape) < zero_fraction] = 0
    x.reshape(n, -1)[:, 0] = 255
    return x


def random_bnn_network(rng: np.random.Generator, in_shape=(1, 6, 6), channels=(4, 6),
                       hidden: int = 7, classes: int = 5, padding: int = 1) -> ir.Network:
    """A small BNN: IntConv2d, Step, MaxPool, BinConv2d, Step, MaxPool, Flatten, BinDense,
    Step, BinDense, with thresholds near the middle of each pre-activation's range."""
    pm = lambda *s: np.where(rng.random(s) < 0.5, -1, 1).astype(np.int8)  # noqa: E731
    c0, h, w = in_shape
    c1, c2 = channels
    layers = [ir.IntConv2d(weight=pm(c1, c0, 3, 3), bias=rng.integers(-1, 2, c1), padding=padding),
              ir.Step(threshold=rng.integers(-200, 200, c1), direction=pm(c1)),
              ir.MaxPool2d(),
              ir.BinConv2d(weight=pm(c2, c1, 3, 3), bias=rng.integers(-1, 2, c2), padding=padding),
              ir.Step(threshold=rng.integers(-6, 7, c2), direction=pm(c2)),
              ir.MaxPool2d(), ir.Flatten()]
    net = ir.Network(in_shape, "uint8", layers)
    k = net.output_shape[0]
    layers += [ir.BinDense(weight=pm(hidden, k), bias=rng.integers(-1, 2, hidden)),
               ir.Step(threshold=rng.integers(-3, 4, hidden), direction=pm(hidden)),
               ir.BinDense(weight=pm(classes, hidden), bias=rng.integers(-1, 2, classes))]
    return ir.Network(in_shape, "uint8", layers, name="random_bnn")
