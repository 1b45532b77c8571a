"""The SAC CNN: the seed paper's streamlined network scaled to small images, its float twin, and
quantization-aware training that ends in exactly the integer network the SAC array runs.

Architecture (per :class:`SacConfig`): input reshaping (SpaceToDepth by ``s2d``), a first 1x1
convolution without shift, then blocks of [channel shift -> 1x1 convolution] with quantized
batch norm folded in and ReLU & quantize, optionally a 2x2 max pooling after some of them (run
by the host between array segments: the max of 8-bit activations is exact), and a final
[shift ->] 1x1 convolution whose per-pixel raw results are summed (average pooling folded into
the last layer: the 1/P lives in the logit scale, which argmax does not see).

Two phases share one module:

1. **float twin** (``quantized=False``): float 1x1 weights, batch norm, ReLU, average pooling,
   a float final layer with bias. Its accuracy is the baseline.
2. **QAT** (:meth:`SacNet.quantize_from_float`): batch norms are folded into the weights and a
   fixed-point bias; each layer's activations get a power-of-two scale that maps them onto the
   integers 0..255 the hardware carries. Training then runs the hardware arithmetic in the
   forward pass: power-of-two weights (log-domain rounding, window 2^-6..2^0, straight-through
   gradient), biases on the 2^-6 grid, ``clip(floor(z), 0, 255)`` activations, and column
   combining by progressive pruning (each layer's group size doubles in stages up to its
   target; in every group of G consecutive input channels a filter keeps only its largest
   weight).

In eval mode the quantized module computes in float64 with integer-valued weights and data, so
its scores equal the golden executor's on :meth:`SacNet.to_network` exactly.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from models import ir
from models.numerics import sac as sac_num
from models.numerics.sac import EMIN, OutputMode
from models.train.ste import FloorSTE, Pow2STE


@dataclass(frozen=True)  # a shared default instance: immutable
class SacConfig:
    input_shape: tuple = (1, 8, 8)
    s2d: int = 1  # input reshaping factor (2 was less robust on 8x8 digits)
    widths: tuple = (32, 64, 64, 64)
    groups: tuple = (1, 2, 4, 4)  # column-combining group size of each hidden layer
    final_group: int = 2
    final_shift: bool = True
    classes: int = 10
    act_percentile: float = 99.9  # calibration of the power-of-two activation scales
    pools: tuple = ()  # hidden layers (0-based) followed by a 2x2 max pooling
    # index of the first 1x1 layer (len(widths) = the final one) that reads the whole remaining
    # map folded into channels by a SpaceToDepth (a dense layer on the flattened features, run
    # on the host); it and the layers after it have no shift. None: average pooling only.
    flatten_at: int | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in ("input_shape", "widths", "groups", "pools"):
            d[k] = list(d[k])
        return d


def space_to_depth(x: torch.Tensor, s: int) -> torch.Tensor:
    """ONNX SpaceToDepth order: output channel (dy * s + dx) * C + c."""
    if s == 1:
        return x
    n, c, h, w = x.shape
    t = x.reshape(n, c, h // s, s, w // s, s).permute(0, 3, 5, 1, 2, 4)
    return t.reshape(n, s * s * c, h // s, w // s)


def shift_directions(channels: int) -> np.ndarray:
    """Fixed assignment of the 9 shift directions: channel c moves in direction c % 9."""
    return (np.arange(channels) % 9).astype(np.uint8)


def shift_kernel(directions: np.ndarray) -> torch.Tensor:
    """One-hot depthwise 3x3 kernels: direction d reads the source pixel (d//3-1, d%3-1),
    i.e. kernel tap d of a cross-correlation with padding 1 (what the ONNX export uses)."""
    k = torch.zeros(len(directions), 1, 9, dtype=torch.float64)
    k[torch.arange(len(directions)), 0, torch.as_tensor(directions, dtype=torch.long)] = 1
    return k.view(-1, 1, 3, 3)


def channel_shift(x: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    return F.conv2d(x, kernel.to(x.dtype), padding=1, groups=x.shape[1])


def round_to_grid(b: torch.Tensor) -> torch.Tensor:
    """Bias on the 2^-6 grid of the accumulator (straight-through)."""
    scale = 2.0**-EMIN
    return b + (torch.round(b * scale) / scale - b).detach()


def combine_mask(w: torch.Tensor, mask: torch.Tensor, group: int) -> torch.Tensor:
    """Column-combining mask: among the still-unmasked weights of each (filter, group of
    `group` consecutive input channels) keep only the largest magnitude (lowest channel on
    ties, like models.numerics.sac.combine_columns)."""
    f, k = w.shape
    kc = -(-k // group)
    pad = kc * group - k
    mag = F.pad((w.abs() * mask), (0, pad)).view(f, kc, group)
    keep = torch.zeros_like(mag)
    keep.scatter_(2, mag.argmax(dim=2, keepdim=True), 1.0)
    keep = keep * (mag > 0)
    return keep.view(f, kc * group)[:, :k] * mask


# Activation scales are calibrated on at most this many images (the first of the training set):
# all 54,000 Fashion-MNIST training images would hold gigabytes of activations.
CALIBRATION_IMAGES = 10_000
QUANTILE_LIMIT = 1 << 24  # torch.quantile refuses larger inputs


def quantile(values: torch.Tensor, q: float) -> float:
    """torch.quantile's linear-interpolation quantile of a 1-D tensor of any size (above
    QUANTILE_LIMIT elements from the two order statistics around position q (n - 1))."""
    n = values.numel()
    if n <= QUANTILE_LIMIT:
        return float(torch.quantile(values, q))
    pos = q * (n - 1)
    lo = int(np.floor(pos))
    a = float(torch.kthvalue(values, lo + 1).values)
    b = float(torch.kthvalue(values, min(lo + 2, n)).values)
    return a + (b - a) * (pos - lo)


class SacNet(nn.Module):
    def __init__(self, cfg: SacConfig = SacConfig()):
        super().__init__()
        self.cfg = cfg
        c, h, w = cfg.input_shape
        s = cfg.s2d
        c, h, w = c * s * s, h // s, w // s
        n_hidden = len(cfg.widths)
        if any(not 0 <= i < n_hidden for i in cfg.pools):
            raise ValueError(f"pools {cfg.pools} must index hidden layers 0..{n_hidden - 1}")
        flat = cfg.flatten_at
        if flat is not None and not (1 <= flat <= n_hidden and all(i < flat for i in cfg.pools)):
            raise ValueError(f"flatten_at {flat} must lie in 1..{n_hidden} and after every pool")
        self.in_channels, self.flatten_factor = [], None
        self.weights = nn.ParameterList()
        self.bns = nn.ModuleList()
        for i in range(n_hidden + 1):
            if i == flat:
                if h != w:
                    raise ValueError(f"flatten_at {flat}: the {h}x{w} map is not square")
                self.flatten_factor, c, h, w = h, c * h * w, 1, 1
            self.in_channels.append(c)
            if i == n_hidden:
                break
            f = cfg.widths[i]
            self.weights.append(nn.Parameter(torch.empty(f, c)))
            nn.init.kaiming_uniform_(self.weights[-1], a=5**0.5)
            self.bns.append(nn.BatchNorm1d(f))
            c = f
            if i in cfg.pools:
                h, w = h // 2, w // 2
        self.pixels = h * w
        self.out_w = nn.Parameter(torch.empty(cfg.classes, c))
        nn.init.kaiming_uniform_(self.out_w, a=5**0.5)
        self.out_b = nn.Parameter(torch.zeros(cfg.classes))
        # quantized phase parameters (filled by quantize_from_float)
        self.quantized = False
        self.biases = nn.ParameterList()
        self.log_tau = nn.Parameter(torch.zeros(()), requires_grad=False)
        for i, k in enumerate(self.in_channels):
            f = cfg.widths[i] if i < len(cfg.widths) else cfg.classes
            self.register_buffer(f"mask{i}", torch.ones(f, k))
        self.stage_groups = [1] * len(self.in_channels)
        # shift directions of the input of each 1x1 layer (None: no shift before it)
        self.directions = [None] + [shift_directions(k) for k in self.in_channels[1:-1]]
        self.directions.append(shift_directions(c) if cfg.final_shift else None)
        if flat is not None:  # a shift of a 1x1 map would only zero channels
            self.directions[flat:] = [None] * (len(self.directions) - flat)
        self.shift_kernels = [None if d is None else shift_kernel(d) for d in self.directions]

    # ---------------------------------------------------------------------------------------
    @property
    def group_targets(self) -> list:
        return list(self.cfg.groups) + [self.cfg.final_group]

    def _mask(self, i):
        return getattr(self, f"mask{i}")

    def _all_weights(self):
        return list(self.weights) + [self.out_w]

    def _pre(self, x, i):
        if i == self.cfg.flatten_at:
            x = space_to_depth(x, self.flatten_factor)
        if self.shift_kernels[i] is not None:
            x = channel_shift(x, self.shift_kernels[i])
        return x

    @staticmethod
    def _pointwise(x, w, b=None):
        return F.conv2d(x, w[:, :, None, None], b)

    # -- float twin ------------------------------------------------------------------------------
    def _forward_float(self, x, collect=None):
        x = space_to_depth(x, self.cfg.s2d)
        for i, (w, bn) in enumerate(zip(self.weights, self.bns, strict=True)):
            z = self._pointwise(self._pre(x, i), w)
            n, f, h, wd = z.shape
            z = bn(z.reshape(n, f, h * wd)).reshape(n, f, h, wd)
            x = F.relu(z)
            if collect is not None:
                collect.append(x.detach())
            if i in self.cfg.pools:
                x = F.max_pool2d(x, 2)
        z = self._pointwise(self._pre(x, len(self.weights)), self.out_w, self.out_b)
        return z.mean(dim=(2, 3))

    # -- quantized (QAT and exact eval) ----------------------------------------------------------
    def quantized_params(self, i):
        w = Pow2STE.apply(self._all_weights()[i] * self._mask(i))
        return w, round_to_grid(self.biases[i])

    def _forward_quant(self, x):
        exact = not self.training
        if exact:  # float64: every value is an integer multiple of 2^-6 below 2^40
            x = x.double()
        x = space_to_depth(x, self.cfg.s2d)
        last = len(self.in_channels) - 1
        for i in range(last + 1):
            w, b = self.quantized_params(i)
            if exact:
                w, b = w.double(), b.double()
            z = self._pointwise(self._pre(x, i), w, b)
            if i < last:
                x = torch.clamp(FloorSTE.apply(z), 0, 255)
                if i in self.cfg.pools:
                    x = F.max_pool2d(x, 2)
        scores = z.sum(dim=(2, 3))  # PixelSum, in units of 1 (= acc / 64)
        if exact:
            return scores
        return scores * self.log_tau.exp() / self.pixels

    def logits(self, scores):
        """Eval-mode scores (exact PixelSum values) -> the logits training optimised."""
        if not self.quantized:
            return scores
        return scores * self.log_tau.exp() / self.pixels

    def forward(self, x):
        return self._forward_quant(x) if self.quantized else self._forward_float(x)

    # -- float -> quantized -----------------------------------------------------------------------
    @torch.no_grad()
    def quantize_from_float(self, calib_x: torch.Tensor) -> list:
        """Fold batch norms into the weights and a bias, pick each layer's power-of-two
        activation scale from the calibration data, and switch to the quantized forward.
        Returns the activation scales."""
        self.eval()
        acts = []
        self._forward_float(calib_x[:CALIBRATION_IMAGES], collect=acts)
        scales = [1.0]  # pixels are already integers
        for a in acts:
            positive = a.flatten()[a.flatten() > 0].float()
            hi = quantile(positive, self.cfg.act_percentile / 100) if positive.numel() else 1.0
            scales.append(2.0 ** np.floor(np.log2(255.0 / max(hi, 1e-6))))
        new_w, new_b = [], []
        for i, (w, bn) in enumerate(zip(self.weights, self.bns, strict=True)):
            s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
            c = bn.bias - bn.running_mean * s
            new_w.append(w * s[:, None] * (scales[i + 1] / scales[i]))
            new_b.append(c * scales[i + 1])
        # final layer: logits = mean_p(W a_p + b)
        #                     = (1/P) sum_p (kappa W x_p / s_L + kappa b) / kappa
        wl = self.out_w / scales[-1]
        kappa = 2.0 ** -np.ceil(np.log2(float(wl.abs().max())))
        new_w.append(wl * kappa)
        new_b.append(self.out_b * kappa)
        for p, w in zip(self._all_weights(), new_w, strict=True):
            p.copy_(w)
        self.biases = nn.ParameterList([nn.Parameter(b.clone()) for b in new_b])
        self.log_tau = nn.Parameter(torch.tensor(float(-np.log(kappa))))
        self.quantized = True
        return scales

    @staticmethod
    def group_chain(target: int) -> list:
        """Group sizes a layer passes through: doublings up to a power-of-two target (each
        grouping nests in the next, so masks only shrink to one weight per final group),
        else straight to the target."""
        if target & (target - 1) == 0:
            return [1 << j for j in range(target.bit_length())]
        return [1, target]

    def set_stage_groups(self, stage: int, n_stages: int) -> list:
        """Progressive column combining: at stage k of n a layer with group chain c uses
        c[floor((k+1) (len(c)-1) / n)] (1, 2, 4, 8 for G = 8 and 4 stages); masks only shrink."""
        groups = []
        with torch.no_grad():
            for i, (w, target) in enumerate(zip(self._all_weights(), self.group_targets, strict=True)):
                chain = self.group_chain(int(target))
                g = chain[(stage + 1) * (len(chain) - 1) // n_stages]
                if g > 1:
                    self._mask(i).copy_(combine_mask(w, self._mask(i), g))
                self.stage_groups[i] = g
                groups.append(g)
        return groups

    def clip_latent(self):
        if self.quantized:
            with torch.no_grad():
                for w in self._all_weights():
                    w.clamp_(-1.5, 1.5)

    # -- integer network -------------------------------------------------------------------------
    @torch.no_grad()
    def integer_layers(self) -> list:
        """(w_int [F, K], bias int [F], group) of every 1x1 layer, exactly as the eval forward."""
        out = []
        for i, g in enumerate(self.group_targets):
            w, b = self.quantized_params(i)
            w_int = torch.round(w.double() * 2.0**-EMIN).to(torch.int64).numpy()
            b_int = torch.round(b.double() * 2.0**-EMIN).to(torch.int64).numpy()
            out.append((w_int.astype(np.int32), b_int, g))
        return out

    def to_network(self, name: str = "sac") -> ir.Network:
        assert self.quantized, "quantize_from_float first"
        layers = []
        if self.cfg.s2d > 1:
            layers.append(ir.SpaceToDepth(factor=self.cfg.s2d))
        ints = self.integer_layers()
        for i, (w_int, b_int, g) in enumerate(ints):
            final = i == len(ints) - 1
            if i == self.cfg.flatten_at:
                layers.append(ir.SpaceToDepth(factor=self.flatten_factor, name=f"flatten{i}"))
            if self.directions[i] is not None:
                layers.append(ir.ChannelShift(directions=self.directions[i], name=f"shift{i}"))
            layers.append(
                ir.PointwiseConv(
                    weights=sac_num.combine_columns(w_int, g),
                    bias=b_int,
                    mode=OutputMode.RAW if final else OutputMode.RELU_QUANT,
                    name="final" if final else f"conv{i}",
                )
            )
            if i in self.cfg.pools:
                layers.append(ir.MaxPool2d(name=f"pool{i}"))
        layers.append(ir.PixelSum())
        return ir.Network(self.cfg.input_shape, "uint8", layers, name=name, meta={"family": "sac"})

    @torch.no_grad()
    def combining_stats(self) -> list:
        """Per layer: dense weight count, weights the combining masks removed, nonzeros left
        after power-of-two quantization, and array columns before/after combining."""
        stats = []
        for i, (w_int, _, g) in enumerate(self.integer_layers()):
            mask = self._mask(i)
            f, k = w_int.shape
            stats.append(
                {
                    "layer": i,
                    "shape": [f, k],
                    "group": g,
                    "removed_by_combining": float(1 - mask.sum() / mask.numel()),
                    "nonzero_after_quantization": int((w_int != 0).sum()),
                    "zero_fraction": float((w_int == 0).mean()),
                    "columns": [k, -(-k // g)],
                }
            )
        return stats

    @classmethod
    def from_network(cls, net: ir.Network) -> SacNet:
        """The quantized eval model holding the integer parameters of a network of this
        architecture ([SpaceToDepth] PointwiseConv relu_quant [MaxPool], ([ChannelShift]
        PointwiseConv relu_quant [MaxPool])*, [SpaceToDepth to 1x1, (PointwiseConv relu_quant)*]
        [ChannelShift] PointwiseConv raw, PixelSum), e.g. an imported zoo file."""
        layers = list(net.layers)
        s2d = 1
        if layers and isinstance(layers[0], ir.SpaceToDepth):
            s2d = int(layers.pop(0).factor)
        if not layers or not isinstance(layers[-1], ir.PixelSum):
            raise ValueError(f"{net.name}: expected a final PixelSum")
        convs, dirs, pools = [], [], []
        pending, flat, flat_factor = None, None, None
        for layer in layers[:-1]:
            if (
                isinstance(layer, ir.MaxPool2d)
                and convs
                and pending is None
                and (not pools or pools[-1] != len(convs) - 1)
            ):
                pools.append(len(convs) - 1)
            elif isinstance(layer, ir.SpaceToDepth) and convs and pending is None and flat is None:
                flat, flat_factor = len(convs), int(layer.factor)
            elif isinstance(layer, ir.ChannelShift):
                if int(layer.fill) != 0:
                    raise ValueError(f"{net.name}: {layer.name}: only zero-fill shifts")
                pending = layer.directions
            elif isinstance(layer, ir.PointwiseConv):
                convs.append(layer)
                dirs.append(pending)
                pending = None
            else:
                raise ValueError(f"{net.name}: unexpected {layer.type_name} {layer.name!r}")
        end = len(convs) - 1 if flat is None else flat
        if (
            dirs[0] is not None
            or any(d is None for d in dirs[1:end])
            or (flat is not None and any(d is not None for d in dirs[flat:]))
        ):
            raise ValueError(
                f"{net.name}: expected shifts before every hidden layer but the first "
                f"(and none after a flattening SpaceToDepth)"
            )
        cfg = SacConfig(
            input_shape=tuple(net.input_shape),
            s2d=s2d,
            widths=tuple(c.weights.out_channels for c in convs[:-1]),
            groups=tuple(c.weights.group for c in convs[:-1]),
            final_group=convs[-1].weights.group,
            final_shift=dirs[-1] is not None,
            classes=convs[-1].weights.out_channels,
            pools=tuple(pools),
            flatten_at=flat,
        )
        if pools and pools[-1] == len(convs) - 1:
            raise ValueError(f"{net.name}: no max pooling after the final layer")
        model = cls(cfg)
        if flat is not None and model.flatten_factor != flat_factor:
            raise ValueError(
                f"{net.name}: SpaceToDepth x{flat_factor} before layer {flat} does "
                f"not fold the whole map into channels"
            )
        model.directions = list(dirs)
        model.shift_kernels = [None if d is None else shift_kernel(d) for d in dirs]
        unit = 2.0**EMIN
        with torch.no_grad():
            for i, (p, conv) in enumerate(zip(model._all_weights(), convs, strict=True)):
                w = conv.dense().astype(np.float64)
                p.copy_(torch.from_numpy(w * unit))
                model._mask(i).copy_(torch.from_numpy((w != 0).astype(np.float32)))
            model.biases = nn.ParameterList(
                [nn.Parameter(torch.from_numpy(c.bias.astype(np.float64) * unit)) for c in convs]
            )
        model.quantized = True
        model.eval()
        return model
