"""The SAC family's super network: a fabric of the streamlined SAC CNN (channel shift + 1x1
power-of-two convolution + ReLU & quantize), gated over

* the input reshaping factor (space-to-depth by 1 or 2): gate "s2d";
* depth: every hidden layer but the first can be skipped (all hidden layers have the same
  maximum width, so a skipped layer is the identity): gates "depth";
* width: the channels of each hidden layer in blocks of `block` channels (the array's rows,
  the unit filters tile on), the first block always on: gates "width<i>";
* the column-combining group size of each layer but the first and of the final layer:
  three gates in a chain, G = 2^(number of leading gates on) = 1, 2, 4 or 8: gates "group<i>".

The default fabric is the digits-sized one: `layers` hidden layers of at most `width` channels
at full resolution and a pixel sum at the end. A staged fabric (`widths`, `pools`,
`flatten_at`: the skeleton of a zoo model such as sac_fashion, `--space zoo`) gives each layer
its own most channels, 2x2 max pooling after some layers and a dense layer on the flattened
map; there only a layer as wide as the one before it, without a pooling after it and not the
flattening one, can be skipped (a skipped layer is the identity), and pooling and flattening
stay where the skeleton has them.

The super network trains in float (batch norm, ReLU, average pooling, like the zoo recipe's
float twin) with the sampled sub-network's column-combining masks (in every group of G input
channels a filter keeps only its largest weight). Every sampled architecture is a network the
SAC compiler accepts (`structure` builds it; the cost models compile it). The chosen
architecture is then trained from scratch with the zoo's recipe (models.train.recipes.train_sac)
into the exact integer network the array runs.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from models import ir
from models.numerics import sac as sac_num
from models.numerics.sac import OutputMode
from models.train.sac import SacConfig, combine_mask, shift_directions, shift_kernel, space_to_depth
from workbench.search.gates import GateSet, chain_relevant, nested_count


@dataclass(frozen=True)
class SacArch:
    """One architecture of the SAC family (what the cost depends on; hashable)."""

    s2d: int
    widths: tuple  # widths of the hidden layers that are on, in order
    groups: tuple  # their column-combining group sizes (the first layer's is 1)
    final_group: int
    pools: tuple = ()  # layers (indices into widths) followed by a 2x2 max pooling
    flatten_at: int | None = None  # the layer that reads the flattened map (SacConfig's)

    def config(self, input_shape: tuple, classes: int) -> SacConfig:
        return SacConfig(
            input_shape=tuple(input_shape),
            s2d=self.s2d,
            widths=self.widths,
            groups=self.groups,
            final_group=self.final_group,
            final_shift=True,
            classes=classes,
            pools=self.pools,
            flatten_at=self.flatten_at,
        )

    def describe(self) -> str:
        text = (
            f"s2d {self.s2d}, widths {'/'.join(map(str, self.widths))}, groups "
            f"{'/'.join(map(str, self.groups))}, final group {self.final_group}"
        )
        if self.pools:
            text += f", pools after {'/'.join(map(str, self.pools))}"
        if self.flatten_at is not None:
            text += f", flatten at {self.flatten_at}"
        return text

    def as_dict(self) -> dict:
        d = asdict(self)
        d["widths"], d["groups"], d["pools"] = list(self.widths), list(self.groups), list(self.pools)
        if not self.pools and self.flatten_at is None:  # the plain fabric: as before
            del d["pools"], d["flatten_at"]
        return d


def structure(arch: SacArch, input_shape: tuple, classes: int) -> ir.Network:
    """The architecture as a network description with zero weights: the layers, shapes and
    group sizes that models.train.sac.SacNet.to_network produces for it, which is all the
    compiler's tiling and the cycle model look at."""
    layers: list = []
    c, h, w = input_shape
    if arch.s2d > 1:
        layers.append(ir.SpaceToDepth(factor=arch.s2d))
        c, h, w = c * arch.s2d * arch.s2d, h // arch.s2d, w // arch.s2d
    shapes = list(zip(arch.widths, arch.groups, strict=True)) + [(classes, arch.final_group)]
    flat = arch.flatten_at
    for i, (f, g) in enumerate(shapes):
        final = i == len(shapes) - 1
        if i == flat:
            layers.append(ir.SpaceToDepth(factor=h, name=f"flatten{i}"))
            c, h, w = c * h * w, 1, 1
        if i > 0 and (flat is None or i < flat):
            layers.append(ir.ChannelShift(directions=shift_directions(c), name=f"shift{i}"))
        packed = np.zeros((f, -(-c // g)), dtype=np.uint8)
        layers.append(
            ir.PointwiseConv(
                weights=sac_num.CombinedWeights(packed, g, c),
                bias=np.zeros(f, dtype=np.int32),
                mode=OutputMode.RAW if final else OutputMode.RELU_QUANT,
                name="final" if final else f"conv{i}",
            )
        )
        if i in arch.pools:
            layers.append(ir.MaxPool2d(name=f"pool{i}"))
            h, w = h // 2, w // 2
        c = f
    layers.append(ir.PixelSum())
    return ir.Network(tuple(input_shape), "uint8", layers, name="sac_arch", meta={"family": "sac"})


@dataclass(frozen=True)
class SacSpace:
    """The size of the SAC super network."""

    input_shape: tuple
    classes: int = 10
    layers: int = 4  # hidden 1x1 layers; the first is always on
    width: int = 64  # most channels of a hidden layer
    block: int = 8  # channels per width gate
    s2d: tuple = (1, 2)  # input reshaping factors to choose from (one or two)
    max_group: int = 8  # largest column-combining group (a power of two <= 8)
    widths: tuple = ()  # staged fabric: most channels of each layer (sets layers)
    pools: tuple = ()  # staged fabric: layers followed by a 2x2 max pooling
    flatten_at: int | None = None  # staged fabric: the layer that reads the flattened map

    def __post_init__(self):
        c, h, w = self.input_shape
        if self.widths:
            object.__setattr__(self, "widths", tuple(int(x) for x in self.widths))
            object.__setattr__(self, "layers", len(self.widths))
            object.__setattr__(self, "width", max(self.widths))
        object.__setattr__(self, "pools", tuple(sorted(int(p) for p in self.pools)))
        if self.block < 1 or any(x % self.block or x < self.block for x in self.max_widths):
            raise ValueError(f"widths {self.max_widths} must be multiples of the block {self.block}")
        if not 1 <= len(self.s2d) <= 2 or any(h % s or w % s for s in self.s2d):
            raise ValueError(f"s2d factors {self.s2d} must be one or two factors dividing the {h}x{w} input")
        if self.max_group not in (1, 2, 4, 8):
            raise ValueError(f"max_group must be 1, 2, 4 or 8, got {self.max_group}")
        if self.layers < 1:
            raise ValueError("the super network needs at least one hidden layer")
        if any(not 0 <= p < self.layers for p in self.pools) or len(set(self.pools)) != len(self.pools):
            raise ValueError(f"pools {list(self.pools)} must be distinct hidden layers 0..{self.layers - 1}")
        flat = self.flatten_at
        if flat is not None:
            if not (1 <= flat <= self.layers and all(p < flat for p in self.pools)):
                raise ValueError(f"flatten_at {flat} must lie in 1..{self.layers} and after every pool")
            if len(self.s2d) != 1:
                raise ValueError(
                    "a space that flattens takes one s2d factor (the flattened layer's inputs depend on it)"
                )
        for s in self.s2d:
            mh, mw = h // s >> len(self.pools), w // s >> len(self.pools)
            if min(mh, mw) < 1:
                raise ValueError(f"{len(self.pools)} poolings do not fit a {h}x{w} input at s2d {s}")
            if flat is not None and mh != mw:
                raise ValueError(f"flatten_at {flat}: the {mh}x{mw} map is not square")

    @property
    def max_widths(self) -> tuple:
        return self.widths or (self.width,) * self.layers

    @property
    def skippable(self) -> tuple:
        """The hidden layers a depth gate can skip: as wide as the layer before, no pooling
        after them, not the flattening layer (in the default fabric every layer but the first)."""
        mw = self.max_widths
        return tuple(
            i
            for i in range(1, self.layers)
            if mw[i] == mw[i - 1] and i not in self.pools and i != self.flatten_at
        )

    def blocks_of(self, i: int) -> int:
        return self.max_widths[i] // self.block

    @property
    def group_gates(self) -> int:
        return self.max_group.bit_length() - 1

    def flatten_factor(self) -> int:
        """The side of the map the flattening layer folds into channels."""
        return self.input_shape[1] // self.s2d[0] >> len(self.pools)

    def shifted(self, i: int) -> bool:
        """Whether layer i (len(widths): the final one) reads its input through a shift."""
        return i > 0 and (self.flatten_at is None or i < self.flatten_at)

    def in_channels(self, i: int, s2d: int) -> int:
        """Input channels of layer i (the final one at len(widths)) at the most widths."""
        if i == 0:
            return self.input_shape[0] * s2d * s2d
        c = self.max_widths[i - 1]
        return c * self.flatten_factor() ** 2 if i == self.flatten_at else c


class SacSuperNet(nn.Module):
    family = "sac"

    def __init__(self, space: SacSpace, init_prob: float = 0.9):
        super().__init__()
        self.space = space
        sp = space
        mw = sp.max_widths
        off = 1.0 - init_prob  # gates that make the network cheaper start off
        groups = [("s2d", len(sp.s2d) - 1, off), ("depth", len(sp.skippable), init_prob)]
        groups += [(f"width{i}", sp.blocks_of(i) - 1, init_prob) for i in range(sp.layers)]
        groups += [(f"group{i}", sp.group_gates, off) for i in range(1, sp.layers)]
        groups += [("group_final", sp.group_gates, off)]
        self.gates = GateSet(groups)
        self.first = nn.ParameterList([nn.Parameter(self._init(mw[0], sp.in_channels(0, s))) for s in sp.s2d])
        self.first_bn = nn.ModuleList([nn.BatchNorm2d(mw[0]) for _ in sp.s2d])
        s2d = sp.s2d[0]  # layers past the first see one input size (checked)
        self.hidden = nn.ParameterList(
            [nn.Parameter(self._init(mw[i], sp.in_channels(i, s2d))) for i in range(1, sp.layers)]
        )
        self.hidden_bn = nn.ModuleList([nn.BatchNorm2d(mw[i]) for i in range(1, sp.layers)])
        self.final_w = nn.Parameter(self._init(sp.classes, sp.in_channels(sp.layers, s2d)))
        self.final_b = nn.Parameter(torch.zeros(sp.classes))
        # one shift kernel per input width that is shifted (directions depend on the channel
        # index only, so the widest layer's kernel serves every narrower sub-network)
        for c in sorted({mw[i - 1] for i in range(1, sp.layers + 1) if sp.shifted(i)}):
            self.register_buffer(f"shift_k{c}", shift_kernel(shift_directions(c)).float())

    @staticmethod
    def _init(f: int, k: int) -> torch.Tensor:
        w = torch.empty(f, k)
        nn.init.kaiming_uniform_(w, a=5**0.5)
        return w

    def weight_parameters(self) -> list:
        return [p for n, p in self.named_parameters() if not n.startswith("gates.")]

    # -- decoding gates ---------------------------------------------------------------------
    def _groups(self, h: torch.Tensor, name: str) -> torch.Tensor:
        return torch.pow(2.0, nested_count(self.gates.part(h, name))).long()

    def _width_mask(self, h: torch.Tensor, i: int) -> torch.Tensor:
        """[n, width] 0/1 channel mask of layer i: block 0 always on."""
        blocks = torch.cat([torch.ones(len(h), 1), self.gates.part(h, f"width{i}")], dim=1)
        return blocks.repeat_interleave(self.space.block, dim=1)

    def _layer_on(self, h: torch.Tensor) -> torch.Tensor:
        """[n, layers] whether each hidden layer runs: depth gates on the skippable ones."""
        on = torch.ones(len(h), self.space.layers)
        if self.space.skippable:
            on[:, list(self.space.skippable)] = self.gates.part(h, "depth")
        return on

    def relevant(self, h: torch.Tensor) -> torch.Tensor:
        """[n, gates] 1 where a gate changes example n's sub-network (gates.py): the width and
        group gates of a skipped layer do not, nor the group gates after the first "off"."""
        rel = torch.ones_like(h)
        on = self._layer_on(h).to(h)
        for i in range(self.space.layers):
            rel[:, self.gates.groups[f"width{i}"].slice] *= on[:, i : i + 1]
        for i in range(1, self.space.layers):
            sl = self.gates.groups[f"group{i}"].slice
            rel[:, sl] = chain_relevant(h[:, sl]) * on[:, i : i + 1]
        sl = self.gates.groups["group_final"].slice
        rel[:, sl] = chain_relevant(h[:, sl])
        return rel

    def decode(self, h_row: torch.Tensor) -> SacArch:
        return self.decode_batch(h_row[None])[0]

    def encode(self, arch: SacArch) -> torch.Tensor | None:
        """A gate vector [gates] that decodes to `arch` (the inverse of decode; the gates that
        do not matter off), or None when `arch` is not in this space."""
        sp = self.space
        if arch.s2d not in sp.s2d:
            return None
        fixed = [i for i in range(sp.layers) if i not in sp.skippable]
        extra = len(arch.widths) - len(fixed)
        if not 0 <= extra <= len(sp.skippable):
            return None
        for chosen in itertools.combinations(sp.skippable, extra):  # which layers run
            h = self._encode_layers(arch, sorted(fixed + list(chosen)))
            if h is not None and self.decode(h) == arch:
                return h
        return None

    def _encode_layers(self, arch: SacArch, on: list) -> torch.Tensor | None:
        sp, g = self.space, self.gates
        h = torch.zeros(g.size)
        if len(sp.s2d) > 1:
            h[g.groups["s2d"].slice] = float(sp.s2d.index(arch.s2d))
        if sp.skippable:
            h[g.groups["depth"].slice] = torch.tensor([1.0 if i in on else 0.0 for i in sp.skippable])
        for k, i in enumerate(on):
            blocks, rest = divmod(arch.widths[k], sp.block)
            if rest or not 1 <= blocks <= sp.blocks_of(i):
                return None
            w = g.groups[f"width{i}"]
            h[w.start : w.start + blocks - 1] = 1.0
            if i == 0 and arch.groups[k] != 1:
                return None
            if i > 0 and not self._set_group(h, f"group{i}", arch.groups[k]):
                return None
        return h if self._set_group(h, "group_final", arch.final_group) else None

    def _set_group(self, h: torch.Tensor, name: str, group: int) -> bool:
        """Sets a group chain to G = `group` (log2 G leading ones); False if it cannot hold it."""
        gg = self.gates.groups[name]
        doublings = group.bit_length() - 1
        if group < 1 or 1 << doublings != group or doublings > gg.size:
            return False
        h[gg.start : gg.start + doublings] = 1.0
        return True

    def decode_batch(self, h: torch.Tensor) -> list[SacArch]:
        """The architecture of every row of h [n, gates]."""
        sp = self.space
        s2d = self.gates.part(h, "s2d").sum(dim=1).long().tolist() if len(sp.s2d) > 1 else [0] * len(h)
        on = self._layer_on(h) > 0.5
        width = (
            torch.stack(
                [self.gates.part(h, f"width{i}").sum(dim=1) + 1 for i in range(sp.layers)], dim=1
            ).long()
            * sp.block
        )
        group = torch.stack(
            [torch.ones(len(h), dtype=torch.long)]
            + [self._groups(h, f"group{i}") for i in range(1, sp.layers)],
            dim=1,
        )
        final = self._groups(h, "group_final").tolist()
        out = []
        for r, (o, w, g) in enumerate(zip(on.tolist(), width.tolist(), group.tolist(), strict=True)):
            kept = [i for i, k in enumerate(o) if k]  # pooled and flattening layers always run
            flat = (
                None
                if sp.flatten_at is None
                else (kept.index(sp.flatten_at) if sp.flatten_at < sp.layers else len(kept))
            )
            out.append(
                SacArch(
                    sp.s2d[s2d[r]],
                    tuple(w[i] for i in kept),
                    tuple(g[i] for i in kept),
                    final[r],
                    tuple(kept.index(p) for p in sp.pools),
                    flat,
                )
            )
        return out

    # -- forward ----------------------------------------------------------------------------
    def _pre(self, a: torch.Tensor, i: int) -> torch.Tensor:
        """The input of layer i (the final one at len(widths)): flattened or shifted."""
        sp = self.space
        if i == sp.flatten_at:
            return space_to_depth(a, sp.flatten_factor())
        if sp.shifted(i):
            return F.conv2d(a, getattr(self, f"shift_k{a.shape[1]}"), padding=1, groups=a.shape[1])
        return a

    @staticmethod
    def _pairs(x: torch.Tensor, wmask: torch.Tensor, out_mask: torch.Tensor) -> torch.Tensor:
        """Active (weight, datum) pairs per example: nonzero inputs x [n, K, H, W] times the
        nonzero weights [F, K] of the filters that are on (out_mask [n, F])."""
        nz = (x.detach() != 0).float().sum(dim=(2, 3))
        return ((nz @ wmask.t()) * out_mask).sum(dim=1)

    def _combined(self, x, w, groups, out_mask, bias=None):
        """1x1 conv of every example with w column-combined at that example's group size;
        returns (output, active pairs per example of the filters in out_mask [n, F])."""
        out = x.new_zeros((x.shape[0], w.shape[0]) + x.shape[2:])
        pairs = x.new_zeros(x.shape[0])
        for g in torch.unique(groups).tolist():
            sel = (groups == g).nonzero(as_tuple=True)[0]
            mask = combine_mask(w.detach(), torch.ones_like(w), int(g)) if g > 1 else torch.ones_like(w)
            wg = w * mask
            out = out.index_put((sel,), F.conv2d(x[sel], wg[:, :, None, None], bias))
            pairs = pairs.index_put((sel,), self._pairs(x[sel], (wg.detach() != 0).float(), out_mask[sel]))
        return out, pairs

    def _forward_res(self, x: torch.Tensor, h: torch.Tensor, r: int):
        sp = self.space
        m = self._width_mask(h, 0)
        w0 = self.first[r]
        a = F.relu(self.first_bn[r](F.conv2d(x, w0[:, :, None, None]))) * m[:, :, None, None]
        act = self._pairs(x, (w0.detach() != 0).float(), m)
        if 0 in sp.pools:
            a = F.max_pool2d(a, 2)
        layer_on = self._layer_on(h)
        for i in range(1, sp.layers):
            on = layer_on[:, i]
            m = self._width_mask(h, i)
            z, pairs = self._combined(self._pre(a, i), self.hidden[i - 1], self._groups(h, f"group{i}"), m)
            new = F.relu(self.hidden_bn[i - 1](z)) * m[:, :, None, None]
            a = torch.where(on[:, None, None, None] > 0.5, new, a) if i in sp.skippable else new
            act = act + on * pairs
            if i in sp.pools:
                a = F.max_pool2d(a, 2)
        z, pairs = self._combined(
            self._pre(a, sp.layers),
            self.final_w,
            self._groups(h, "group_final"),
            torch.ones(len(h), sp.classes),
            self.final_b,
        )
        return z.mean(dim=(2, 3)), act + pairs

    def forward(self, x: torch.Tensor, h: torch.Tensor):
        """Logits [n, classes] of each example's sampled sub-network, and the active (weight,
        datum) pairs of each example (an estimate from the float activations)."""
        sp = self.space
        if len(sp.s2d) == 1:
            return self._forward_res(space_to_depth(x, sp.s2d[0]), h, 0)
        pick = self.gates.part(h, "s2d")[:, 0] > 0.5
        logits = x.new_zeros((x.shape[0], sp.classes))
        act = x.new_zeros(x.shape[0])
        for r, s in enumerate(sp.s2d):
            sel = (pick == bool(r)).nonzero(as_tuple=True)[0]
            if len(sel):
                lg, ac = self._forward_res(space_to_depth(x[sel], s), h[sel], r)
                logits = logits.index_put((sel,), lg)
                act = act.index_put((sel,), ac)
        return logits, act


# ---------------------------------------------------------------------------------------------
# the family's interface to the search (workbench/search/families.py)
# ---------------------------------------------------------------------------------------------
NAME = "sac"
COSTS = ("params", "flops", "cycles", "latency_ms", "energy", "parallel")
ZOO = {"digits": "sac_digits", "fashion": "sac_fashion"}
Arch = SacArch


def make_space(input_shape: tuple, classes: int, options: dict) -> SacSpace:
    opts = dict(options)
    for key in ("widths", "pools"):
        if key in opts:
            opts[key] = tuple(int(v) for v in opts[key])
    if "s2d" in opts:
        opts["s2d"] = tuple(int(s) for s in opts["s2d"])
    elif opts.get("flatten_at") is not None:  # the flattened layer needs one input size
        opts["s2d"] = (1,)
    else:  # offer input reshaping where the image divides
        opts["s2d"] = (1, 2) if input_shape[1] % 2 == 0 and input_shape[2] % 2 == 0 else (1,)
    return SacSpace(input_shape=tuple(input_shape), classes=classes, **opts)


def zoo_space(data: str) -> dict:
    """Space options with the skeleton of the family's zoo model for `data` (`--space zoo`):
    its widths as the most channels per layer, its poolings, flattening and input reshaping."""
    from workbench.search.families import zoo_config

    cfg = zoo_config(ZOO, data)
    return {
        "widths": list(cfg["widths"]),
        "pools": list(cfg.get("pools", [])),
        "flatten_at": cfg.get("flatten_at"),
        "s2d": [int(cfg.get("s2d", 1))],
    }


def supernet(space: SacSpace, init_prob: float) -> SacSuperNet:
    return SacSuperNet(space, init_prob)


def arch_from_dict(d: dict) -> SacArch:
    """The architecture `SacArch.as_dict` wrote (result and model files)."""
    return SacArch(
        int(d["s2d"]),
        tuple(int(w) for w in d["widths"]),
        tuple(int(g) for g in d["groups"]),
        int(d["final_group"]),
        tuple(int(p) for p in d.get("pools", ())),
        d.get("flatten_at"),
    )


def zoo_arch(data: str) -> SacArch:
    """The architecture of the family's zoo model for `data` (ValueError without one)."""
    from workbench.search.families import zoo_config

    cfg = zoo_config(ZOO, data)
    return SacArch(
        int(cfg.get("s2d", 1)),
        tuple(cfg["widths"]),
        tuple(cfg["groups"]),
        int(cfg["final_group"]),
        tuple(cfg.get("pools", ())),
        cfg.get("flatten_at"),
    )


def scaled(arch: SacArch, factor: float) -> SacArch:
    """`arch` with every hidden layer's channels times `factor`, rounded to the array's block of
    SacSpace.block channels (at least one block): uniform width scaling."""
    block = SacSpace.block
    widths = tuple(max(block, block * round(w * factor / block)) for w in arch.widths)
    return SacArch(arch.s2d, widths, arch.groups, arch.final_group, arch.pools, arch.flatten_at)


def train_final(
    arch: SacArch,
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
    checkpoint_dir=None,
    device: str = "cpu",
):
    """The zoo recipe (float twin, then power-of-two QAT with progressive column combining)
    on the chosen architecture, from scratch (or from the checkpoints in `checkpoint_dir`), on
    the CPU (the family has no DEVICES: the search refuses another `device` before training)."""
    if device != "cpu":
        raise ValueError(f"the sac family trains on the CPU, not {device}")
    from models.train.recipes import train_sac
    from workbench.search.families import zoo_recipe

    kw = zoo_recipe(ZOO, data)
    kw.update({k: v for k, v in (("epochs", epochs), ("float_epochs", float_epochs)) if v is not None})
    return train_sac(
        data,
        seed=seed,
        threads=threads,
        cfg=arch.config(input_shape, classes),
        progress=False,
        name=name,
        on_epoch_end=on_epoch_end,
        checkpoint_dir=checkpoint_dir,
        **kw,
    )
