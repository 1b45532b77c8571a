"""The BNN family's super network: the zoo BNN's shape (3x3 conv blocks of conv -> batch norm
-> sign -> 2x2 max pool, then flatten, a hidden dense layer and the class scores), gated over

* depth: how many conv blocks run (a chain of gates: block k only if block k-1), "depth";
* width: each conv block's channels in blocks of `block` channels, the first (or the
  space's `min_channels`) always on, "width<k>";
* the hidden dense layer's width in blocks of `hidden_block`, the first always on, "hidden".

Examples that stop after k conv blocks flatten a different tensor, so the hidden layer has one
weight matrix per depth. The super network trains in float (ReLU instead of sign, like the zoo
recipe's float twin) or, with the space's `binary` (`--binary-supernet`), binarized like the
final model (sign activations, +-1 weights but the class scores'); the chosen architecture is
then trained from scratch with the zoo's BNN recipe (models.train.recipes.train_bnn) into the
exact integer network. Costs: on the SAC array (cycles, latency, energy: the BNN lowered onto the
array, docs/fpga_bnn.md) or on the GPU path (the mapper's latency), parameters, mult-adds,
parallel steps.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from models import ir
from models.train.bnn import BnnConfig
from models.train.common import DEVICES as TRAINING_DEVICES
from models.train.ste import SignSTE
from workbench.search.gates import GateSet, chain_relevant, nested_count


@dataclass(frozen=True)
class BnnArch:
    channels: tuple  # widths of the conv blocks that run
    hidden: int

    def config(self, input_shape: tuple, classes: int) -> BnnConfig:
        return BnnConfig(
            input_shape=tuple(input_shape), channels=self.channels, hidden=self.hidden, classes=classes
        )

    def describe(self) -> str:
        return f"conv {'/'.join(map(str, self.channels))}, hidden {self.hidden}"

    def as_dict(self) -> dict:
        d = asdict(self)
        d["channels"] = list(self.channels)
        return d


def structure(arch: BnnArch, input_shape: tuple, classes: int) -> ir.Network:
    """The architecture as a network description with +1 weights and zero thresholds: the
    layers models.train.bnn.BnnNet.to_network produces for it."""
    layers: list = []
    c, h, w = input_shape
    for k, f in enumerate(arch.channels):
        cls = ir.IntConv2d if k == 0 else ir.BinConv2d
        layers += [
            cls(
                weight=np.ones((f, c, 3, 3), np.int8), bias=np.zeros(f, np.int32), padding=1, name=f"conv{k}"
            ),
            ir.Step(threshold=np.zeros(f, np.int64), direction=np.ones(f, np.int8)),
            ir.MaxPool2d(),
        ]
        c, h, w = f, h // 2, w // 2
    flat = c * h * w
    layers += [
        ir.Flatten(),
        ir.BinDense(
            weight=np.ones((arch.hidden, flat), np.int8), bias=np.zeros(arch.hidden, np.int32), name="hidden"
        ),
        ir.Step(threshold=np.zeros(arch.hidden, np.int64), direction=np.ones(arch.hidden, np.int8)),
        ir.BinDense(
            weight=np.ones((classes, arch.hidden), np.int8), bias=np.zeros(classes, np.int32), name="scores"
        ),
    ]
    return ir.Network(tuple(input_shape), "uint8", layers, name="bnn_arch", meta={"family": "bnn"})


@dataclass(frozen=True)
class BnnSpace:
    input_shape: tuple
    classes: int = 10
    channels: tuple = (64, 128)  # most channels of each conv block
    block: int = 8  # channels per width gate (the array's rows)
    hidden: int = 256
    hidden_block: int = 32
    # False: the super network is the float twin (ReLU, float weights); True: it is binarized
    # like the final model (sign activations, +-1 conv and hidden weights, straight-through
    # gradients), so the accuracy the gates learn from includes what binarizing a narrow
    # layer costs (the float super network cannot see it: the Fashion-MNIST searches showed it)
    binary: bool = False
    # channels of each conv block that are always on (no width gates on them); () = one block
    # each. The Fashion searches always narrowed the first convolution, whose binarized
    # narrow form is what cost them their accuracy: (64, 8) keeps it whole and gates the rest.
    min_channels: tuple = ()

    def __post_init__(self):
        _, h, w = self.input_shape
        if (
            any(c % self.block or c <= 0 for c in self.channels)
            or self.hidden % self.hidden_block
            or self.hidden <= 0
        ):
            raise ValueError(
                f"channels {self.channels} and hidden {self.hidden} must be "
                f"positive multiples of their blocks ({self.block}, {self.hidden_block})"
            )
        if not self.min_channels:
            object.__setattr__(self, "min_channels", (self.block,) * len(self.channels))
        if len(self.min_channels) != len(self.channels) or any(
            m % self.block or not self.block <= m <= c
            for m, c in zip(self.min_channels, self.channels, strict=True)
        ):
            raise ValueError(
                f"min channels {self.min_channels} must give each of the "
                f"{len(self.channels)} conv blocks {self.channels} a multiple of "
                f"{self.block} between {self.block} and its channels"
            )
        if min(h, w) >> len(self.channels) < 1:
            raise ValueError(f"{len(self.channels)} conv blocks with 2x2 pooling do not fit a {h}x{w} input")


class BnnSuperNet(nn.Module):
    family = "bnn"

    def __init__(self, space: BnnSpace, init_prob: float = 0.9):
        super().__init__()
        self.space = sp = space
        groups = [("depth", len(sp.channels) - 1, init_prob)]
        groups += [
            (f"width{k}", (c - m) // sp.block, init_prob)
            for k, (c, m) in enumerate(zip(sp.channels, sp.min_channels, strict=True))
        ]
        groups += [("hidden", sp.hidden // sp.hidden_block - 1, init_prob)]
        self.gates = GateSet(groups)
        c, h, w = sp.input_shape
        self.convs = nn.ParameterList()
        self.bns = nn.ModuleList()
        self.dense_in = nn.ParameterList()  # one hidden-layer matrix per depth
        self.dense_bn = nn.ModuleList()
        for f in sp.channels:
            self.convs.append(nn.Parameter(self._init((f, c, 3, 3))))
            self.bns.append(nn.BatchNorm2d(f))
            c, h, w = f, h // 2, w // 2
            self.dense_in.append(nn.Parameter(self._init((sp.hidden, c * h * w))))
            self.dense_bn.append(nn.BatchNorm1d(sp.hidden))
        self.out_w = nn.Parameter(self._init((sp.classes, sp.hidden)))
        self.out_b = nn.Parameter(torch.zeros(sp.classes))

    @staticmethod
    def _init(shape) -> torch.Tensor:
        w = torch.empty(shape)
        nn.init.kaiming_uniform_(w, a=5**0.5)
        return w

    def weight_parameters(self) -> list:
        return [p for n, p in self.named_parameters() if not n.startswith("gates.")]

    def _mask(self, h: torch.Tensor, name: str, block: int, fixed: int = 1) -> torch.Tensor:
        """[n, channels] 0/1 mask: the first `fixed` blocks always on, then the gates'."""
        return torch.cat([h.new_ones(len(h), fixed), self.gates.part(h, name)], dim=1).repeat_interleave(
            block, dim=1
        )

    def _depth(self, h: torch.Tensor) -> torch.Tensor:
        return 1 + nested_count(self.gates.part(h, "depth")).long()

    def relevant(self, h: torch.Tensor) -> torch.Tensor:
        """[n, gates] 1 where a gate changes example n's sub-network (gates.py): the depth
        gates after the first "off" do not, nor the width gates of a conv block that does not
        run."""
        rel = torch.ones_like(h)
        sl = self.gates.groups["depth"].slice
        rel[:, sl] = chain_relevant(h[:, sl])
        depth = self._depth(h)
        for k in range(len(self.space.channels)):
            rel[:, self.gates.groups[f"width{k}"].slice] *= (depth > k).to(h)[:, None]
        return rel

    def decode(self, h_row: torch.Tensor) -> BnnArch:
        return self.decode_batch(h_row[None])[0]

    def encode(self, arch: BnnArch) -> torch.Tensor | None:
        """A gate vector [gates] that decodes to `arch` (the gates that do not matter off), or
        None when `arch` is not in this space."""
        sp, g = self.space, self.gates
        h = torch.zeros(g.size)
        depth = len(arch.channels)
        if not 1 <= depth <= len(sp.channels):
            return None
        d = g.groups["depth"]
        h[d.start : d.start + depth - 1] = 1.0
        for k, c in enumerate(arch.channels):
            blocks, rest = divmod(c - sp.min_channels[k], sp.block)
            w = g.groups[f"width{k}"]
            if rest or not 0 <= blocks <= w.size:
                return None
            h[w.start : w.start + blocks] = 1.0
        blocks, rest = divmod(arch.hidden, sp.hidden_block)
        hid = g.groups["hidden"]
        if rest or not 1 <= blocks <= hid.size + 1:
            return None
        h[hid.start : hid.start + blocks - 1] = 1.0
        return h if self.decode(h) == arch else None

    def decode_batch(self, h: torch.Tensor) -> list[BnnArch]:
        sp = self.space
        depth = self._depth(h).tolist()
        widths = (
            torch.stack(
                [
                    self.gates.part(h, f"width{k}").sum(dim=1) + m // sp.block
                    for k, m in enumerate(sp.min_channels)
                ],
                dim=1,
            ).long()
            * sp.block
        )
        hidden = ((self.gates.part(h, "hidden").sum(dim=1) + 1) * sp.hidden_block).long()
        return [
            BnnArch(tuple(w[:d]), hid)
            for d, w, hid in zip(depth, widths.tolist(), hidden.tolist(), strict=True)
        ]

    def _w(self, p: torch.Tensor) -> torch.Tensor:
        return SignSTE.apply(p) if self.space.binary else p

    def _act(self, z: torch.Tensor) -> torch.Tensor:
        """Sign (the masked channels are zeroed after it: they do not exist) or ReLU."""
        return SignSTE.apply(z) if self.space.binary else F.relu(z)

    @staticmethod
    def _nonzero(x: torch.Tensor) -> torch.Tensor:
        """Nonzero data per example as the array stores them: pixels > 0, and +1 activations
        (stored as 2; -1 is stored as 0), here the float network's positive activations."""
        return (x.detach() > 0).flatten(1).float().sum(dim=1)

    def forward(self, x: torch.Tensor, h: torch.Tensor):
        """Logits of each example's sub-network and its estimated active (weight, datum) pairs
        on the array: every nonzero input of a 3x3 conv meets 9 taps of each filter that is on
        (borders ignored), of a dense layer one weight of each output."""
        sp = self.space
        depth = self._depth(h)
        a, act = x, x.new_zeros(len(x))
        logits = x.new_zeros((len(x), sp.classes))
        for k, (w, bn) in enumerate(zip(self.convs, self.bns, strict=True)):
            m = self._mask(h, f"width{k}", sp.block, sp.min_channels[k] // sp.block)
            act = act + (depth > k) * self._nonzero(a) * 9 * m.sum(dim=1)
            # pool before the activation, as models.train.bnn (equal for a monotone one)
            a = self._act(F.max_pool2d(bn(F.conv2d(a, self._w(w), padding=1)), 2)) * m[:, :, None, None]
            sel = (depth == k + 1).nonzero(as_tuple=True)[0]
            if len(sel):
                flat = a[sel].flatten(1)
                mh = self._mask(h[sel], "hidden", sp.hidden_block)
                z = self._act(_batch_norm(self.dense_bn[k], F.linear(flat, self._w(self.dense_in[k])))) * mh
                logits = logits.index_put((sel,), F.linear(z, self.out_w, self.out_b))
                act = act.index_put(
                    (sel,), act[sel] + self._nonzero(flat) * mh.sum(dim=1) + self._nonzero(z) * sp.classes
                )
        return logits, act


# ---------------------------------------------------------------------------------------------
# the family's interface to the search (workbench/search/families.py)
# ---------------------------------------------------------------------------------------------
NAME = "bnn"


def _batch_norm(bn: torch.nn.BatchNorm1d, z: torch.Tensor) -> torch.Tensor:
    """`bn(z)`, except that a single example of a depth (no batch statistics) in training is
    normalized with the running statistics, which it then does not update."""
    if bn.training and len(z) < 2:
        return F.batch_norm(z, bn.running_mean, bn.running_var, bn.weight, bn.bias, False, 0.0, bn.eps)
    return bn(z)


COSTS = ("params", "flops", "cycles", "latency_ms", "energy", "gpu", "parallel")
ZOO = {"digits": "bnn_digits", "fashion": "bnn_fashion"}
DEVICES = TRAINING_DEVICES  # where its trials can train (--device): CPU and CUDA
Arch = BnnArch


def make_space(input_shape: tuple, classes: int, options: dict) -> BnnSpace:
    opts = dict(options)
    for key in ("channels", "min_channels"):  # lists when they come from JSON
        if key in opts:
            opts[key] = tuple(int(c) for c in opts[key])
    if "width" in opts:  # --width: the widest conv block; the others in proportion
        w = int(opts.pop("width"))
        opts["channels"] = tuple(max(8, w * c // 128) for c in BnnSpace.channels)
    if "layers" in opts:
        n = int(opts.pop("layers"))
        base = opts.get("channels", BnnSpace.channels)
        opts["channels"] = tuple(base[min(k, len(base) - 1)] for k in range(n))
    return BnnSpace(input_shape=tuple(input_shape), classes=classes, **opts)


def zoo_space(data: str) -> dict:
    """Space options with the zoo model's conv widths and hidden width as the largest."""
    from workbench.search.families import zoo_config

    cfg = zoo_config(ZOO, data)
    return {"channels": list(cfg["channels"]), "hidden": int(cfg["hidden"])}


def supernet(space: BnnSpace, init_prob: float) -> BnnSuperNet:
    return BnnSuperNet(space, init_prob)


def arch_from_dict(d: dict) -> BnnArch:
    """The architecture `BnnArch.as_dict` wrote (result and model files)."""
    return BnnArch(tuple(int(c) for c in d["channels"]), int(d["hidden"]))


def zoo_arch(data: str) -> BnnArch:
    """The architecture of the family's zoo model for `data` (ValueError without one)."""
    from workbench.search.families import zoo_config

    cfg = zoo_config(ZOO, data)
    return BnnArch(tuple(cfg["channels"]), int(cfg["hidden"]))


def scaled(arch: BnnArch, factor: float) -> BnnArch:
    """`arch` with its conv channels and hidden width times `factor`, rounded to blocks of
    BnnSpace.block and BnnSpace.hidden_block (at least one): uniform width scaling."""
    b, hb = BnnSpace.block, BnnSpace.hidden_block
    return BnnArch(
        tuple(max(b, b * round(c * factor / b)) for c in arch.channels),
        max(hb, hb * round(arch.hidden * factor / hb)),
    )


def train_final(
    arch: BnnArch,
    data: str,
    input_shape: tuple,
    classes: int,
    *,
    seed: int,
    threads: int,
    epochs: int | None,
    float_epochs: int | None,
    name: str,
    on_epoch_end=None,
    device: str = "cpu",
    checkpoint_dir=None,
):
    """The zoo recipe (float twin, then the binarized model distilled from it), from scratch
    (or from the checkpoints in `checkpoint_dir`), on `device`."""
    from models.train.recipes import train_bnn
    from workbench.search.families import zoo_recipe

    kw = zoo_recipe(ZOO, data)
    kw.update({k: v for k, v in (("epochs", epochs), ("float_epochs", float_epochs)) if v is not None})
    return train_bnn(
        data,
        seed=seed,
        threads=threads,
        cfg=arch.config(input_shape, classes),
        progress=False,
        name=name,
        on_epoch_end=on_epoch_end,
        device=device,
        checkpoint_dir=checkpoint_dir,
        **kw,
    )
