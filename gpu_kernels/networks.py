"""The two HEP-BNN network shapes with seeded random parameters, for tests and benchmarks.

fashion: 1x28x28 uint8 -> C64 pad 1, step, MP, C64 pad 1, step, MP, FC64, step, FC10
         (the shape of ../shared/fixtures/hepbnn_fashion.onnx)
cifar10: 3x32x32 uint8 -> C128 C128 MP C256 C256 MP C512 C512 MP FC512 FC10, every conv pad 1
         and followed by a step, FC512 followed by a step (HEP-BNN's CIFAR-10 BNN)

Thresholds sit near the middle of each pre-activation's range for uniform random pixels, so
the binary activations stay mixed (neither all +1 nor all -1) through the network.
"""
from __future__ import annotations

import numpy as np

from models import ir

PIXEL_MEAN = 127.5


def _pm1(rng, *shape) -> np.ndarray:
    return np.where(rng.random(shape) < 0.5, -1, 1).astype(np.int8)


def _step(rng, centre: np.ndarray, spread: float, name: str) -> ir.Step:
    c = centre.shape[0]
    thr = np.round(centre + rng.normal(0.0, spread, size=c)).astype(np.int64)
    return ir.Step(threshold=thr, direction=_pm1(rng, c), name=name)


def _conv(rng, cls, c, f, name, pad=1):
    return cls(weight=_pm1(rng, f, c, 3, 3), bias=rng.integers(-2, 3, size=f), padding=pad, name=name)


def build_bnn(rng: np.random.Generator, in_shape, stages, dense, classes=10, name="bnn") -> ir.Network:
    """stages: list of lists of conv widths, each stage ends with a 2x2 max pool; dense: widths
    of the hidden fully connected layers (each followed by a step)."""
    layers: list = []
    c = in_shape[0]
    first = True
    for s, widths in enumerate(stages):
        for k, f in enumerate(widths):
            cls = ir.IntConv2d if first else ir.BinConv2d
            conv = _conv(rng, cls, c, f, f"conv{s}_{k}")
            # an integer conv of uniform pixels has mean 127.5 * sum(w) per channel
            centre = (PIXEL_MEAN * conv.weight.reshape(f, -1).sum(1) if first
                      else np.zeros(f)) + conv.bias
            spread = (0.3 * PIXEL_MEAN if first else 1.0) * np.sqrt(9 * c)
            layers += [conv, _step(rng, centre, 0.2 * spread, f"step{s}_{k}")]
            c, first = f, False
        layers.append(ir.MaxPool2d(name=f"pool{s}"))
    layers.append(ir.Flatten(name="flatten"))
    net = ir.Network(in_shape, "uint8", layers, name=name)   # to learn the flattened size
    k = net.output_shape[0]
    for i, f in enumerate(dense):
        fc = ir.BinDense(weight=_pm1(rng, f, k), bias=rng.integers(-2, 3, size=f), name=f"fc{i}")
        layers += [fc, _step(rng, fc.bias.astype(np.float64), 0.2 * np.sqrt(k), f"step_fc{i}")]
        k = f
    layers.append(ir.BinDense(weight=_pm1(rng, classes, k), bias=rng.integers(-2, 3, size=classes),
                              name="scores"))
    return ir.Network(in_shape, "uint8", layers, name=name)


def fashion_bnn(seed: int = 0) -> ir.Network:
    return build_bnn(np.random.default_rng(seed), (1, 28, 28), [[64], [64]], [64], name="fashion_bnn")


def cifar10_bnn(seed: int = 0) -> ir.Network:
    return build_bnn(np.random.default_rng(seed), (3, 32, 32), [[128, 128], [256, 256], [512, 512]],
                     [512], name="cifar10_bnn")


SHAPES = {"fashion": fashion_bnn, "cifar10": cifar10_bnn}


def random_images(seed: int, n: int, shape) -> np.ndarray:
    """n uniform uint8 images of `shape` (C, H, W)."""
    return np.random.default_rng(seed).integers(0, 256, size=(n, *shape)).astype(np.uint8)


def network_from_spec(spec: str, seed: int = 0) -> ir.Network:
    """'fashion' / 'cifar10' (seeded random parameters) or a path to an .onnx file."""
    if spec in SHAPES:
        return SHAPES[spec](seed)
    from gpu_kernels.runner import load_network        # noqa: PLC0415
    return load_network(spec)
