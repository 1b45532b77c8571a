"""Random networks and data with a given seed, for tests, benches and benchmarks.

Weights are drawn so that activations neither all die nor all saturate, which keeps the
comparisons meaningful (ReLU & quantize outputs spread over 0..255, binary outputs mixed).

BNNs come from one builder, :func:`build_bnn`, with presets: :func:`random_bnn_network` (a tiny
BNN for the RTL benches) and the two HEP-BNN shapes (``SHAPES``):

fashion: 1x28x28 uint8 -> C64 pad 1, step, MP, C64 pad 1, step, MP, FC64, step, FC10
         (the shape of tests/fixtures/hepbnn_fashion.onnx)
cifar10: 3x32x32 uint8 -> C128 C128 MP C256 C256 MP C512 C512 MP FC512 FC10, every conv pad 1
         and followed by a step, FC512 followed by a step (HEP-BNN's CIFAR-10 BNN)

BNN thresholds sit near the middle of each pre-activation's range for uniform random pixels, so
the binary activations stay mixed (neither all +1 nor all -1) through the network.
"""

from __future__ import annotations

import numpy as np

from models import ir
from models.numerics import sac
from models.numerics.sac import OutputMode


def random_pow2_matrix(
    rng: np.random.Generator, rows: int, cols: int, group: int, density: float = 0.8
) -> np.ndarray:
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


def random_sac_network(
    rng: np.random.Generator,
    in_shape=(4, 8, 8),
    widths=(12, 16),
    groups=(1, 2, 3),
    shift: bool = True,
    final: str = "pixel_sum",
    classes: int = 10,
    s2d: int = 1,
) -> ir.Network:
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
        layers.append(
            ir.PointwiseConv(
                weights=wts,
                bias=rng.integers(-3000, 3000, size=f),
                mode=OutputMode.RELU_QUANT,
                name=f"conv{i}",
            )
        )
        c = f
    g = groups[len(widths) % len(groups)]
    mode = {
        "pixel_sum": OutputMode.RAW,
        "raw": OutputMode.RAW,
        "binary": OutputMode.BINARY,
        "relu_quant": OutputMode.RELU_QUANT,
    }[final]
    layers.append(
        ir.PointwiseConv(
            weights=random_combined(rng, classes, c, g),
            bias=rng.integers(-2000, 2000, size=classes),
            mode=mode,
            name="final",
        )
    )
    if final == "pixel_sum":
        layers.append(ir.PixelSum())
    return ir.Network(in_shape, "uint8", layers, name="random_sac")


# ---------------------------------------------------------------------------------------------
# Images
# ---------------------------------------------------------------------------------------------
def random_images(rng, n: int, shape, zero_fraction: float = 0.0) -> np.ndarray:
    """n uint8 images of `shape` (C, H, W), uniform over 0..255, with about `zero_fraction` of
    the pixels set to zero (what ReLU leaves; exercises zero skipping) and the first pixel of
    every image at 255 (the extreme). `rng` is a numpy Generator or an integer seed."""
    rng = np.random.default_rng(rng)
    x = rng.integers(0, 256, size=(n, *shape)).astype(np.uint8)
    if zero_fraction > 0:
        x[rng.random(x.shape) < zero_fraction] = 0
    x.reshape(n, -1)[:, 0] = 255
    return x


# ---------------------------------------------------------------------------------------------
# BNNs
# ---------------------------------------------------------------------------------------------
PIXEL_MEAN = 127.5


def _pm1(rng, *shape) -> np.ndarray:
    return np.where(rng.random(shape) < 0.5, -1, 1).astype(np.int8)


def _step(rng, centre: np.ndarray, spread: float, name: str) -> ir.Step:
    c = centre.shape[0]
    thr = np.round(centre + rng.normal(0.0, spread, size=c)).astype(np.int64)
    return ir.Step(threshold=thr, direction=_pm1(rng, c), name=name)


def build_bnn(
    rng: np.random.Generator, in_shape, stages, dense, classes: int = 10, name: str = "bnn", padding: int = 1
) -> ir.Network:
    """A random BNN. stages: list of lists of conv widths, each stage ends with a 2x2 max pool;
    dense: widths of the hidden fully connected layers (each followed by a step); every conv
    (3x3, `padding`) is followed by a step."""
    layers: list = []
    c = in_shape[0]
    first = True
    for s, widths in enumerate(stages):
        for k, f in enumerate(widths):
            cls = ir.IntConv2d if first else ir.BinConv2d
            conv = cls(
                weight=_pm1(rng, f, c, 3, 3),
                bias=rng.integers(-2, 3, size=f),
                padding=padding,
                name=f"conv{s}_{k}",
            )
            # an integer conv of uniform pixels has mean 127.5 * sum(w) per channel
            centre = (PIXEL_MEAN * conv.weight.reshape(f, -1).sum(1) if first else np.zeros(f)) + conv.bias
            spread = (0.3 * PIXEL_MEAN if first else 1.0) * np.sqrt(9 * c)
            layers += [conv, _step(rng, centre, 0.2 * spread, f"step{s}_{k}")]
            c, first = f, False
        layers.append(ir.MaxPool2d(name=f"pool{s}"))
    layers.append(ir.Flatten(name="flatten"))
    net = ir.Network(in_shape, "uint8", layers, name=name)  # to learn the flattened size
    k = net.output_shape[0]
    for i, f in enumerate(dense):
        fc = ir.BinDense(weight=_pm1(rng, f, k), bias=rng.integers(-2, 3, size=f), name=f"fc{i}")
        layers += [fc, _step(rng, fc.bias.astype(np.float64), 0.2 * np.sqrt(k), f"step_fc{i}")]
        k = f
    layers.append(
        ir.BinDense(weight=_pm1(rng, classes, k), bias=rng.integers(-2, 3, size=classes), name="scores")
    )
    return ir.Network(in_shape, "uint8", layers, name=name)


def random_bnn_network(
    rng: np.random.Generator,
    in_shape=(1, 6, 6),
    channels=(4, 6),
    hidden: int = 7,
    classes: int = 5,
    padding: int = 1,
) -> ir.Network:
    """A small BNN for the RTL benches: IntConv2d, Step, MaxPool, BinConv2d, Step, MaxPool,
    Flatten, BinDense, Step, BinDense."""
    return build_bnn(
        rng, in_shape, [[c] for c in channels], [hidden], classes, name="random_bnn", padding=padding
    )


def fashion_bnn(seed: int = 0) -> ir.Network:
    return build_bnn(np.random.default_rng(seed), (1, 28, 28), [[64], [64]], [64], name="fashion_bnn")


def cifar10_bnn(seed: int = 0) -> ir.Network:
    return build_bnn(
        np.random.default_rng(seed),
        (3, 32, 32),
        [[128, 128], [256, 256], [512, 512]],
        [512],
        name="cifar10_bnn",
    )


SHAPES = {"fashion": fashion_bnn, "cifar10": cifar10_bnn}


def network_from_spec(spec: str, seed: int = 0) -> ir.Network:
    """'fashion' / 'cifar10' (seeded random parameters) or a path to an .onnx file."""
    if spec in SHAPES:
        return SHAPES[spec](seed)
    from models.onnx import load_network  # noqa: PLC0415 (imports onnx)

    return load_network(spec)
