"""Binarized CNN with an integer-input first layer: training with straight-through estimators
and an exact integer eval mode.

Architecture (per :class:`BnnConfig`): IntConv 3x3 (pixels x +-1) -> BN -> sign -> MaxPool,
then BinConv 3x3 blocks likewise, Flatten, optional hidden BinDense -> BN -> sign, and a final
BinDense with an integer bias whose outputs are the class scores.

Training mode: latent float weights binarized by sign (STE, gradient clipped to |w| <= 1),
batch norm on batch statistics, sign activations (STE with the hardtanh gradient).
Eval mode is the *quantized* model: every BN + sign is replaced by the integer step
``x >= t`` / ``x <= t`` that :func:`models.numerics.bnn.bn_step_params` reads off the batch norm
for every reachable integer pre-activation, so eval outputs equal the golden executor's on
:meth:`BnnNet.to_network` exactly (integers in float32, all far below 2^24).

The float twin (``binary=False``) has the same layers with float weights, ReLU activations and
a float bias: the baseline the quantized accuracy is compared with.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from models import ir
from models.numerics import bnn as bnn_num
from models.train.ste import RoundSTE, SignSTE


@dataclass(frozen=True)  # a shared default instance: immutable
class BnnConfig:
    input_shape: tuple = (1, 8, 8)
    channels: tuple = (64, 128)  # conv widths; each conv is followed by a 2x2 max pool
    hidden: int = 256  # hidden BinDense width (0: none)
    classes: int = 10
    input_max: int = 255  # largest input pixel (uint8 pixels)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["input_shape"] = list(self.input_shape)
        d["channels"] = list(self.channels)
        return d


class BnnNet(nn.Module):
    def __init__(self, cfg: BnnConfig = BnnConfig(), binary: bool = True):
        super().__init__()
        self.cfg, self.binary = cfg, binary
        c, h, w = cfg.input_shape
        self.convs = nn.ParameterList()
        self.bns = nn.ModuleList()
        for f in cfg.channels:
            self.convs.append(nn.Parameter(torch.empty(f, c, 3, 3).uniform_(-1, 1)))
            self.bns.append(nn.BatchNorm2d(f))
            c, h, w = f, h // 2, w // 2
        k = c * h * w
        self.flat = k
        self.dense = nn.ParameterList()
        self.dense_bns = nn.ModuleList()
        if cfg.hidden:
            self.dense.append(nn.Parameter(torch.empty(cfg.hidden, k).uniform_(-1, 1)))
            self.dense_bns.append(nn.BatchNorm1d(cfg.hidden))
            k = cfg.hidden
        self.out_w = nn.Parameter(torch.empty(cfg.classes, k).uniform_(-1, 1))
        self.out_b = nn.Parameter(torch.zeros(cfg.classes))
        # scores are integers of magnitude ~k; a learned positive scale makes them logits
        self.log_scale = nn.Parameter(torch.tensor(float(-np.log(k) / 2)))
        if not binary:
            for p in list(self.convs) + list(self.dense) + [self.out_w]:
                nn.init.kaiming_uniform_(p, a=5**0.5)
        self._frozen = None

    # -- weights -------------------------------------------------------------------------------
    def _w(self, p):
        return SignSTE.apply(p) if self.binary else p

    def latent_weights(self) -> list:
        return list(self.convs) + list(self.dense) + [self.out_w]

    def clip_latent(self):
        """Keep latent binary weights in [-1, 1] (where the STE passes gradients)."""
        if self.binary:
            with torch.no_grad():
                for p in list(self.convs) + list(self.dense) + [self.out_w]:
                    p.clamp_(-1, 1)
                for bn in self.bns:
                    bn.weight.clamp_(min=0.0)

    def train(self, mode: bool = True):
        if mode:  # weights may change: re-derive integer parameters at eval
            self._frozen = None
        return super().train(mode)

    def load_state_dict(self, *args, **kwargs):
        self._frozen = None  # new weights and batch norms: new integer parameters
        return super().load_state_dict(*args, **kwargs)

    # -- float / training forward ---------------------------------------------------------------
    def _act(self, z):
        return SignSTE.apply(z) if self.binary else F.relu(z)

    def _forward_train(self, x):
        for wp, bn in zip(self.convs, self.bns, strict=True):
            # pool before the sign: equal to sign-then-pool (the exported order) while the
            # batch norm is non-decreasing (gamma >= 0, kept by clip_latent), and the max
            # routes the gradient to the strongest response instead of the first of many ties
            x = self._act(F.max_pool2d(bn(F.conv2d(x, self._w(wp), padding=1)), 2))
        x = torch.flatten(x, 1)
        for wp, bn in zip(self.dense, self.dense_bns, strict=True):
            x = self._act(bn(F.linear(x, self._w(wp))))
        bias = RoundSTE.apply(self.out_b) if self.binary else self.out_b
        return (F.linear(x, self._w(self.out_w)) + bias) * self.log_scale.exp()

    # -- exact integer eval -----------------------------------------------------------------------
    def integer_params(self) -> dict:
        """Binary weights, integer biases and (threshold, direction) of every step, read from
        the current batch norms over every reachable integer pre-activation."""
        if self._frozen is not None:
            return self._frozen
        assert self.binary, "only the binary model has integer parameters"
        sgn = lambda p: np.where(p.detach().cpu().numpy() >= 0, 1, -1).astype(np.int8)  # noqa: E731
        layers = []
        in_max = self.cfg.input_max
        for i, (wp, bn) in enumerate(zip(self.convs, self.bns, strict=True)):
            w = sgn(wp)
            per_f = w.reshape(w.shape[0], -1)
            if i == 0:  # pixels 0..in_max: the sum lies between the negative and positive taps
                lo = -int((per_f == -1).sum(1).max()) * in_max
                hi = int((per_f == 1).sum(1).max()) * in_max
            else:
                lo, hi = -per_f.shape[1], per_f.shape[1]
            layers.append(("conv", w, np.zeros(w.shape[0], np.int64), self._steps(bn, lo, hi)))
        for wp, bn in zip(self.dense, self.dense_bns, strict=True):
            w = sgn(wp)
            layers.append(
                ("dense", w, np.zeros(w.shape[0], np.int64), self._steps(bn, -w.shape[1], w.shape[1]))
            )
        w = sgn(self.out_w)
        b = np.round(self.out_b.detach().cpu().numpy().astype(np.float64)).astype(np.int64)
        layers.append(("dense", w, b, None))
        self._frozen = layers
        return layers

    @staticmethod
    def _steps(bn, lo, hi):
        host = lambda v: v.detach().cpu().double().numpy()  # noqa: E731
        t, d = bnn_num.bn_step_params(
            host(bn.weight), host(bn.bias), host(bn.running_mean), host(bn.running_var), bn.eps, lo, hi
        )
        return t, d

    def _forward_int(self, x):
        def step(z, td):
            t, d = td
            shape = (1, -1) + (1,) * (z.dim() - 2)
            t = torch.as_tensor(t, dtype=z.dtype, device=z.device).view(shape)
            d = torch.as_tensor(d, dtype=z.dtype, device=z.device).view(shape)
            return torch.where(d * (z - t) >= 0, 1.0, -1.0).to(z.dtype)

        # every sum is an integer far below 2^24, exact in float32 when added directly; the
        # rounding undoes what a transform-based convolution (Winograd, FFT: cuDNN may choose
        # them on a GPU) adds, and is the identity on exact sums
        for kind, w, b, td in self.integer_params():
            wt = torch.as_tensor(w, dtype=x.dtype, device=x.device)
            bt = torch.as_tensor(b, dtype=x.dtype, device=x.device)
            if kind == "conv":
                x = F.max_pool2d(step(torch.round(F.conv2d(x, wt, bt, padding=1)), td), 2)
            else:
                x = torch.flatten(x, 1)
                x = torch.round(F.linear(x, wt, bt))
                if td is not None:
                    x = step(x, td)
        return x

    def logits(self, scores):
        """Eval-mode scores (integers) -> the logits training optimised."""
        return scores * self.log_scale.exp() if self.binary else scores

    def forward(self, x):
        if self.binary and not self.training:
            return self._forward_int(x)
        return self._forward_train(x)

    # -- network description ---------------------------------------------------------------------
    def to_network(self, name: str = "bnn") -> ir.Network:
        layers = []
        first = True
        for kind, w, b, td in self.integer_params():
            if kind == "conv":
                cls = ir.IntConv2d if first else ir.BinConv2d
                layers += [
                    cls(weight=w, bias=b, padding=1, name=f"conv{len(layers)}"),
                    ir.Step(threshold=td[0], direction=td[1]),
                    ir.MaxPool2d(),
                ]
            else:
                if not any(isinstance(layer, ir.Flatten) for layer in layers):
                    layers.append(ir.Flatten())
                layers.append(ir.BinDense(weight=w, bias=b, name=f"dense{len(layers)}"))
                if td is not None:
                    layers.append(ir.Step(threshold=td[0], direction=td[1]))
            first = False
        return ir.Network(self.cfg.input_shape, "uint8", layers, name=name, meta={"family": "bnn"})

    @classmethod
    def from_network(cls, net: ir.Network) -> BnnNet:
        """The quantized eval model holding the integer parameters of a network of this
        architecture (conv blocks of IntConv/BinConv -> Step -> MaxPool with padding 1, Flatten,
        BinDense [-> Step] ... BinDense), e.g. one imported from a zoo ONNX file."""
        layers = list(net.layers)
        params, convs, dense = [], [], []
        i = 0
        while i < len(layers) and isinstance(layers[i], (ir.IntConv2d, ir.BinConv2d)):
            conv, st, pool = layers[i : i + 3]
            block = isinstance(st, ir.Step) and isinstance(pool, ir.MaxPool2d)
            if not block or conv.padding != 1:
                raise ValueError(
                    f"{net.name}: layer {i} is not a conv -> step -> maxpool block with padding 1"
                )
            params.append(("conv", conv.weight, conv.bias.astype(np.int64), (st.threshold, st.direction)))
            convs.append(conv.weight.shape[0])
            i += 3
        if i >= len(layers) or not isinstance(layers[i], ir.Flatten):
            raise ValueError(f"{net.name}: expected Flatten after the conv blocks at layer {i}")
        i += 1
        while i < len(layers):
            d = layers[i]
            if not isinstance(d, ir.BinDense):
                raise ValueError(f"{net.name}: expected BinDense at layer {i}")
            st = layers[i + 1] if i + 1 < len(layers) else None
            td = (st.threshold, st.direction) if isinstance(st, ir.Step) else None
            params.append(("dense", d.weight, d.bias.astype(np.int64), td))
            dense.append(d.weight.shape[0])
            i += 2 if td is not None else 1
        if len(dense) > 2:
            raise ValueError(f"{net.name}: at most one hidden BinDense is supported")
        cfg = BnnConfig(
            input_shape=tuple(net.input_shape),
            channels=tuple(convs),
            hidden=dense[0] if len(dense) == 2 else 0,
            classes=dense[-1],
        )
        model = cls(cfg, binary=True)
        model.eval()
        model._frozen = params
        return model
