"""The paper's own S-network: a small ResNet Fabric (B-ResNet, BSN Figure 1(a)), trained with
the FLOP (mult-add), parameter and parallel-step costs, to show that the algorithm reproduces
the paper's behaviour: the gated fabric converges to a cheaper sub-network at equal accuracy.

The fabric: a stem (3x3 conv, batch norm, ReLU), `stages` stages of `blocks` residual blocks
at widths width, 2*width, 4*width (the first block of every later stage is preceded by a strided
3x3 transition conv), global average pooling and a linear classifier. Every residual block has
`branches` parallel branches (3x3 conv, BN, ReLU, 3x3 conv, BN), each gated:

    block(u) = ReLU(u + sum_k H_k * branch_k(u))

With exactly one branch per block on, the sub-network is the ResNet the fabric is built
around (`baseline_arch`); the search's budget is naturally that ResNet's cost. The fabric is a
float PyTorch model (the paper's setting): it is not exported to the FPGA or GPU paths.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from workbench.search.gates import GateSet


@dataclass(frozen=True)
class FabricSpace:
    input_shape: tuple
    classes: int = 10
    width: int = 8
    stages: int = 3
    blocks: int = 2
    branches: int = 2

    def widths(self) -> list[int]:
        return [self.width << s for s in range(self.stages)]

    def spatial(self) -> list[int]:
        h = self.input_shape[1]
        return [max(1, -(-h // (1 << s))) for s in range(self.stages)]


@dataclass(frozen=True)
class FabricArch:
    branches: tuple  # on/off of every branch, stage-major, then block, then branch
    space: FabricSpace

    @property
    def stages(self) -> int:
        return self.space.stages

    @property
    def blocks(self) -> int:
        return self.space.blocks

    @property
    def per_block(self) -> int:
        return self.space.branches

    def describe(self) -> str:
        parts = []
        for s in range(self.stages):
            counts = [
                sum(self.branches[self._index(s, b, k)] for k in range(self.per_block))
                for b in range(self.blocks)
            ]
            parts.append(",".join(map(str, counts)))
        return "branches per block " + " | ".join(parts)

    def _index(self, s: int, b: int, k: int) -> int:
        return (s * self.blocks + b) * self.per_block + k

    def on(self, s: int, b: int, k: int) -> bool:
        return bool(self.branches[self._index(s, b, k)])

    def as_dict(self) -> dict:
        d = asdict(self)
        d["branches"] = [int(v) for v in self.branches]
        d["space"]["input_shape"] = list(self.space.input_shape)
        return d


def baseline_arch(space: FabricSpace) -> FabricArch:
    """The ResNet inside the fabric: the first branch of every block."""
    bits = [1 if k == 0 else 0 for _ in range(space.stages * space.blocks) for k in range(space.branches)]
    return FabricArch(tuple(bits), space)


def _conv(c_in: int, c_out: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)


class Branch(nn.Sequential):
    def __init__(self, c: int):
        super().__init__(_conv(c, c), nn.BatchNorm2d(c), nn.ReLU(), _conv(c, c), nn.BatchNorm2d(c))


class FabricSuperNet(nn.Module):
    family = "resnet-fabric"

    def __init__(self, space: FabricSpace, init_prob: float = 0.9, fixed: FabricArch | None = None):
        super().__init__()
        self.space = sp = space
        n = sp.stages * sp.blocks * sp.branches
        self.gates = GateSet([("branches", n, init_prob)])
        widths = sp.widths()
        self.stem = nn.Sequential(_conv(sp.input_shape[0], widths[0]), nn.BatchNorm2d(widths[0]), nn.ReLU())
        self.transitions = nn.ModuleList(
            [
                nn.Sequential(_conv(widths[s - 1], widths[s], 2), nn.BatchNorm2d(widths[s]), nn.ReLU())
                for s in range(1, sp.stages)
            ]
        )
        self.branch = nn.ModuleList(
            [
                Branch(widths[s])
                for s in range(sp.stages)
                for _ in range(sp.blocks)
                for _ in range(sp.branches)
            ]
        )
        self.head = nn.Linear(widths[-1], sp.classes)
        self.fixed = fixed  # a trained sub-network: branches not in it are never run

    def weight_parameters(self) -> list:
        return [p for n, p in self.named_parameters() if not n.startswith("gates.")]

    def decode(self, h_row: torch.Tensor) -> FabricArch:
        return self.decode_batch(h_row[None])[0]

    def decode_batch(self, h: torch.Tensor) -> list[FabricArch]:
        sp = self.space
        return [FabricArch(tuple(int(v > 0.5) for v in row), sp) for row in h.tolist()]

    def forward(self, x: torch.Tensor, h: torch.Tensor):
        sp = self.space
        a = self.stem(x / 255.0)
        g = self.gates.part(h, "branches")
        for s in range(sp.stages):
            if s:
                a = self.transitions[s - 1](a)
            for b in range(sp.blocks):
                out = a
                for k in range(sp.branches):
                    i = (s * sp.blocks + b) * sp.branches + k
                    if self.fixed is not None and not self.fixed.branches[i]:
                        continue
                    if self.fixed is None and not bool((g[:, i] > 0.5).any()):
                        continue
                    out = out + g[:, i, None, None, None] * self.branch[i](a)
                a = F.relu(out)
        logits = self.head(a.mean(dim=(2, 3)))
        return logits, x.new_zeros(len(x))


# ---------------------------------------------------------------------------------------------
# costs (static: the architecture decides them)
# ---------------------------------------------------------------------------------------------
def _conv_params(c_in: int, c_out: int) -> int:
    return 9 * c_in * c_out


def static_cost(name: str, arch: FabricArch, processors: int) -> int:
    """params (conv weights, batch-norm affine parameters, the classifier), flops (mult-adds of
    the convolutions and the classifier) or parallel (steps of the module graph: the stem, the
    transitions, each conv of a branch and the head are unit-time modules; the branches of a
    block can run at the same time, the next module waits for all of them)."""
    sp = arch.space
    widths, sizes = sp.widths(), sp.spatial()
    params = _conv_params(sp.input_shape[0], widths[0]) + 2 * widths[0]
    flops = _conv_params(sp.input_shape[0], widths[0]) * sizes[0] ** 2
    preds, last = {"stem": []}, ["stem"]
    for s in range(sp.stages):
        c = widths[s]
        if s:
            params += _conv_params(widths[s - 1], c) + 2 * c
            flops += _conv_params(widths[s - 1], c) * sizes[s] ** 2
            preds[f"t{s}"], last = list(last), [f"t{s}"]
        for b in range(sp.blocks):
            ends = []
            for k in range(sp.branches):
                if arch.on(s, b, k):
                    params += 2 * (_conv_params(c, c) + 2 * c)
                    flops += 2 * _conv_params(c, c) * sizes[s] ** 2
                    preds[f"b{s}.{b}.{k}a"] = list(last)
                    preds[f"b{s}.{b}.{k}b"] = [f"b{s}.{b}.{k}a"]
                    ends.append(f"b{s}.{b}.{k}b")
            last = ends or last  # the block's sum is free: its users wait for all ends
    params += widths[-1] * sp.classes + sp.classes
    flops += widths[-1] * sp.classes
    preds["head"] = list(last)
    if name == "params":
        return params
    if name == "flops":
        return flops
    if name == "parallel":
        from workbench.search.costs import parallel_steps

        return parallel_steps(preds, processors)
    raise ValueError(f"cost {name!r} is not defined for the resnet-fabric family")


# ---------------------------------------------------------------------------------------------
# the family's interface to the search (workbench/search/families.py)
# ---------------------------------------------------------------------------------------------
NAME = "resnet-fabric"
COSTS = ("params", "flops", "parallel")
ZOO: dict = {}
Arch = FabricArch


def make_space(input_shape: tuple, classes: int, options: dict) -> FabricSpace:
    opts = {k: v for k, v in options.items() if k in ("width", "stages", "blocks", "branches")}
    if "layers" in options:
        opts["blocks"] = int(options["layers"])
    return FabricSpace(input_shape=tuple(input_shape), classes=classes, **opts)


def supernet(space: FabricSpace, init_prob: float) -> FabricSuperNet:
    return FabricSuperNet(space, init_prob)


class FabricResult:
    """What train_final returns for the fabric: accuracies (no integer network to export)."""

    def __init__(self, accuracy: dict, seconds: float):
        self.accuracy, self.seconds = accuracy, seconds


def train_final(
    arch: FabricArch,
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
) -> FabricResult:
    """Train the sub-network `arch` from scratch (SGD, momentum 0.9, weight decay 1e-4, cosine
    learning rate, one-pixel shifts), the same recipe as the fixed ResNet baseline. It takes
    no checkpoints (`checkpoint_dir` is not used): it is seconds on digits. On the CPU (the
    family has no DEVICES: the search refuses another `device` before training)."""
    if device != "cpu":
        raise ValueError(f"the resnet-fabric family trains on the CPU, not {device}")
    from models.datasets import load_dataset
    from models.train.common import accuracy, random_shift, to_tensors, training_session

    t0 = time.perf_counter()
    epochs = epochs or 30
    with training_session(seed, threads) as gen:
        tr, va, te = (to_tensors(load_dataset(data, s)) for s in ("train", "val", "test"))
        net = FabricSuperNet(arch.space, fixed=arch)
        h = torch.tensor([arch.branches], dtype=torch.float32)

        class Fixed(nn.Module):  # the sub-network as a plain classifier
            def __init__(self):
                super().__init__()
                self.net = net

            def forward(self, x):
                return self.net(x, h.expand(len(x), -1))[0]

        model = Fixed()
        opt = torch.optim.SGD(net.weight_parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
        x, y = tr
        steps = epochs * -(-len(x) // 64)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
        for ep in range(epochs):
            model.train()
            perm = torch.randperm(len(x), generator=gen)
            for i in range(0, len(x), 64):
                idx = perm[i : i + 64]
                loss = F.cross_entropy(model(random_shift(x[idx], gen)), y[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                sched.step()
            if on_epoch_end is not None:
                on_epoch_end(
                    {
                        "desc": "train",
                        "epoch": ep + 1,
                        "epochs": epochs,
                        "val_accuracy": accuracy(model, *va),
                        "seconds": time.perf_counter() - t0,
                    }
                )
        acc = {
            "quantized_val": accuracy(model, *va),
            "quantized_test": accuracy(model, *te),
            "float_val": None,
            "float_test": None,
        }
    return FabricResult(acc, time.perf_counter() - t0)


def baseline(
    data: str,
    input_shape: tuple,
    classes: int,
    options: dict,
    *,
    seed: int = 0,
    epochs: int | None = None,
    processors: int = 2,
) -> dict:
    """The fixed ResNet inside the fabric, trained with the same recipe: the reference the
    search's models are compared with (the fabric family's "zoo model")."""
    sp = make_space(input_shape, classes, options)
    arch = baseline_arch(sp)
    res = train_final(
        arch,
        data,
        input_shape,
        classes,
        seed=seed,
        threads=1,
        epochs=epochs,
        float_epochs=None,
        name="resnet",
    )
    return {
        "name": f"ResNet ({sp.stages} stages x {sp.blocks} blocks, width {sp.width})",
        "arch": arch.as_dict(),
        "val": res.accuracy["quantized_val"],
        "test": res.accuracy["quantized_test"],
        "costs": {c: float(static_cost(c, arch, processors)) for c in COSTS},
    }
