"""The `gpu` cost of a BNN: the mapper's transfer-aware DP latency (HEP-BNN's layer-to-device
mapping, gpu_kernels/mapper.py) for the network, per image.

Where the per-layer times come from:
* on a machine with CuPy and a CUDA device: measured for the network itself (a stochastic
  cost, as BSN allows);
* otherwise from a reference profile saved by `sacbench map --out DIR` (DIR/mapping.json) on
  some network (`--gpu-profile`): each layer's time in each implementation is the reference
  time of the layer of the same type whose work is closest, scaled by the ratio of work
  (mult-adds for convolutions and dense layers, elements for steps, pooling and flatten), and
  each copy's time by the ratio of bytes. A modelled profile: deterministic, exact in its
  bookkeeping, as good as the reference (a profile measured on the emulation says nothing
  about a GPU, and the result says where its profile came from).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from models import ir
from workbench.search.errors import CostError


def layer_work(net: ir.Network, i: int) -> float:
    layer = net.layers[i]
    in_shape, out_shape = net.shapes[i][0], net.shapes[i + 1][0]
    if isinstance(layer, (ir.IntConv2d, ir.BinConv2d)):
        return float(layer.weight.size * np.prod(out_shape[1:]))
    if isinstance(layer, ir.BinDense):
        return float(layer.weight.size)
    return float(np.prod(in_shape))


def boundary_bytes(net: ir.Network, word_bits: int = 32) -> list[float]:
    """Bytes per image of every tensor between layers (0 = the input .. L = the scores) in the
    kernels' formats."""
    from gpu_kernels.layer_ops import prepare

    ops = prepare(net, word_bits)
    fmts = [op.fin for op in ops] + [ops[-1].fout]
    return [float(np.prod(f.host_shape(1)) * np.dtype(f.dtype).itemsize) for f in fmts]


class ScaledProfile:
    """A profile source (gpu_kernels.mapper) for any BNN, scaled from a reference profile."""

    def __init__(self, path):
        from gpu_kernels.profiling import Profile
        from models.random_networks import network_from_spec

        self.path = Path(path)
        try:
            doc = json.loads(self.path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise CostError(f"--gpu-profile {self.path}: cannot read it ({exc})") from None
        try:
            self.ref = Profile.from_json(doc.get("profile", doc))
        except Exception as exc:  # noqa: BLE001 - the profile's own error names the problem
            raise CostError(f"--gpu-profile {self.path}: {exc}") from None
        spec = self.ref.meta.get("network_spec") or {"fashion_bnn": "fashion", "cifar10_bnn": "cifar10"}.get(
            self.ref.network
        )
        if spec is None:
            raise CostError(
                f"--gpu-profile {self.path}: the profile does not say which network "
                f"it measured (write it with `sacbench map --out`)"
            )
        self.ref_net = network_from_spec(spec, int(self.ref.meta.get("network_seed", 0)))
        self.word_bits = int(self.ref.meta.get("word_bits", 32))
        self.ref_bytes = boundary_bytes(self.ref_net, self.word_bits)

    @property
    def source(self) -> str:
        return f"scaled from {self.path} ({self.ref.source})"

    def profile(self, net: ir.Network, batch_sizes):
        from gpu_kernels.profiling import Profile

        missing = [b for b in batch_sizes if b not in self.ref.layer_s]
        if missing:
            raise CostError(
                f"--gpu-profile {self.path} has no times for batch sizes {missing} "
                f"(it has {sorted(self.ref.layer_s)})"
            )
        ref, rnet = self.ref, self.ref_net
        by_type: dict = {}
        for j, layer in enumerate(rnet.layers):
            by_type.setdefault(type(layer), []).append((layer_work(rnet, j), j))
        picks = []
        for i, layer in enumerate(net.layers):
            cands = by_type.get(type(layer))
            if not cands:
                raise CostError(
                    f"--gpu-profile {self.path}: the reference has no {layer.type_name} layer to scale from"
                )
            w = layer_work(net, i)
            wr, j = min(cands, key=lambda c: abs(np.log(max(c[0], 1.0) / max(w, 1.0))))
            picks.append((j, w / max(wr, 1.0)))
        nbytes = boundary_bytes(net, self.word_bits)

        def copy(table, b):
            out = []
            for nb in nbytes:
                k = int(np.argmin([abs(np.log(max(r, 1.0) / max(nb, 1.0))) for r in self.ref_bytes]))
                out.append(table[b][k] * nb / max(self.ref_bytes[k], 1.0))
            return out

        layer_s = {
            b: [[None if t is None else t * s for t in ref.layer_s[b][j]] for j, s in picks]
            for b in batch_sizes
        }
        return Profile(
            net.name,
            [layer.describe() for layer in net.layers],
            list(batch_sizes),
            layer_s,
            {b: copy(ref.h2d_s, b) for b in batch_sizes},
            {b: copy(ref.d2h_s, b) for b in batch_sizes},
            list(ref.impls),
            self.source,
            {"word_bits": self.word_bits},
        )


class GpuLatencyModel:
    def __init__(self, source, batch: int, n_images: int = 10_000):
        self.source, self.batch, self.n_images = source, batch, n_images

    @classmethod
    def from_settings(cls, settings) -> GpuLatencyModel:
        if settings.gpu_profile:
            return cls(ScaledProfile(settings.gpu_profile), settings.gpu_batch)
        from gpu_kernels import cuda_available

        if cuda_available():
            from gpu_kernels.profiling import MeasuredProfile

            return cls(MeasuredProfile(backend="cupy", repeats=3, warmup=1), settings.gpu_batch)
        raise CostError(
            "the gpu cost needs a CUDA device, or --gpu-profile with a profile saved "
            "by `sacbench map --out DIR` (DIR/mapping.json)"
        )

    def ms_per_image(self, net: ir.Network) -> float:
        from gpu_kernels.errors import GpuKernelError
        from gpu_kernels.mapper import map_network

        try:
            m = map_network(net, [self.batch], self.source, n_images=self.n_images)
        except GpuKernelError as exc:
            raise CostError(f"gpu cost of {net.name}: {exc}") from None
        return 1e3 * m.dp.total_s / self.n_images
