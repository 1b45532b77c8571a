"""One search trial: a (family, cost, budget, lambda, seed) run of Budgeted Super Networks.

1. Train the super network (BSN): for every example sample H ~ Gamma, compute the sampled
   sub-network, D = loss + lambda * max(0, C(H) - budget) / budget; the weights get the
   gradient of the loss (SGD, momentum 0.9, weight decay 1e-4, cosine decay), the gate logits
   the REINFORCE estimate with the batch mean of D as baseline (workbench/search/gates.py).
   After every epoch the deterministic architecture (gates with probability > 0.5) is
   evaluated on the validation split and reported.
2. The final architecture is trained with the family's zoo recipe into the exact integer network,
   whose validation and test accuracy (golden model) and exact costs (compiled for the array)
   are the trial's result; the cost the search trained with is checked against them.
3. The model is exported as ONNX with a JSON card (like the zoo's) into the trial's directory,
   and the result is written there as result.json (atomically: an interrupted sweep leaves the
   finished trials readable).
"""

from __future__ import annotations

import copy
import json
import math
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from models.datasets import load_dataset
from models.train.common import random_shift, save_checkpoint, to_tensors, training_session
from safeio import write_json_atomic
from workbench.search.costs import CostModel, CostSettings
from workbench.search.evaluation import read_final, run_final
from workbench.search.families import IntegerFamily
from workbench.search.families import family as get_family
from workbench.search.gates import budget_penalty, extracted_probability, reinforce_loss
from workbench.search.plan import model_job
from workbench.search.projection import project


@dataclass
class TrialConfig:
    family: str
    cost: str
    budget: float
    lam: float
    seed: int
    data: str = "digits"
    epochs: int = 20  # super-network epochs
    warmup_epochs: int = 3  # first epochs train the weights only (gates held)
    batch: int = 64
    optimizer: str = "adam"  # weights: "adam" (measured better) or "sgd" (the paper's)
    lr: float = 0.01  # adam: 0.01; sgd: momentum 0.9, weight decay 1e-4
    gate_optimizer: str = "sgd"  # gate logits: "sgd" (momentum below) or "adam"
    gate_lr: float = 0.1
    gate_momentum: float = 0.9
    gate_clip: float = 3.0  # |logit| <= this (0: no limit): p in [0.05, 0.95], so a
    #                                   pruned part is still sampled and can come back
    gate_clip_final: float = 8.0  # ... growing linearly to this by the last epoch (p up to
    #                                   0.9997), so that the gates settle on one architecture
    gate_entropy: float = 0.0  # weight of the gates' entropy in the objective in the
    gate_entropy_start: float = 0.67  # last gated epochs: 0 until this share of them, then
    #                                   growing linearly to gate_entropy: it settles the gates
    #                                   on 0/1 once the search has decided
    baseline: str = "leave-one-out"  # REINFORCE baseline (gates.BASELINES)
    penalty: str = "hinge"  # budget penalty form (gates.PENALTIES)
    masked: bool = True  # log-probabilities of the gates that matter only
    project: bool = True  # the returned architecture within the budget (projection)
    settle_epochs: int = 2  # then the weights train on it alone, gates fixed on it
    final_seeds: int = 3  # final trainings of the returned architecture (seeds 0..)
    init_prob: float = 0.9
    bn_images: int = 1000  # training images that recalibrate batch norms for eval
    augment: float = 1.0  # fraction of images shifted by up to one pixel
    space: dict = field(default_factory=dict)
    costs: dict = field(default_factory=dict)  # CostSettings fields
    final_epochs: int | None = None  # the family recipe's defaults when None
    final_float_epochs: int | None = None
    energy_images: int = 200  # validation images the exact energy is measured on
    threads: int = 1
    device: str = "cpu"  # where the trial trains: "cpu" or "cuda" (family.DEVICES)
    out: str = "out/search/trial"
    models_dir: str = ""  # where final trainings go (evaluation.py); "": out/models
    name: str = "trial"
    command: str = ""
    export: bool = True

    def cost_settings(self) -> CostSettings:
        return CostSettings(**self.costs)


# TrialConfig fields that name or place a trial but do not change what it computes, and how
# a trial ran rather than what it is (its device, its threads: a sweep may be resumed on
# another machine)
NOT_SETTINGS = {"out", "name", "command", "export", "device", "threads", "models_dir"}


def settings_of(cfg: TrialConfig) -> dict:
    """The fields of `cfg` that decide what the trial computes (as result.json holds them)."""
    now = json.loads(json.dumps(asdict(cfg)))
    return {k: v for k, v in now.items() if k not in NOT_SETTINGS}


def _checkpoint_dir(cfg: TrialConfig, log) -> Path:
    """DIR/trials/<trial>/checkpoint: the super network and the final training's phases of an
    unfinished trial; one made with other settings, or on another device or thread count
    (whose arithmetic differs: the resumed result would be neither run's), is removed."""
    folder = Path(cfg.out) / "checkpoint"
    meta = folder / "settings.json"
    now = {**settings_of(cfg), "device": cfg.device, "threads": cfg.threads}
    try:
        same = json.loads(meta.read_text()) == now
    except (OSError, ValueError):
        same = False
    if folder.exists() and not same:
        shutil.rmtree(folder)
        if log is not None:
            log(f"removed {folder}: made with other settings")
    folder.mkdir(parents=True, exist_ok=True)
    if not meta.exists():
        write_json_atomic(meta, now)
    return folder


def _read_checkpoint(path: Path) -> dict | None:
    """The state an interrupted run left in `path` (None: there is none)."""
    if not path.exists():
        return None
    return torch.load(path, map_location="cpu", weights_only=False)  # our own file


def _splits(data: str):
    return tuple(load_dataset(data, s) for s in ("train", "val", "test"))


@torch.no_grad()
def recalibrate(net, x, h_row, batch: int = 256) -> None:
    """Batch-norm statistics of the architecture h_row, recomputed over x: the running
    averages collected while sampling many sub-networks do not describe any one of them."""
    bns = [m for m in net.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    saved = [m.momentum for m in bns]
    net.train()
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average over the pass
    for i in range(0, len(x), batch):
        xb = x[i : i + batch]
        net(xb, h_row.expand(len(xb), -1))
    for m, mom in zip(bns, saved, strict=True):
        m.momentum = mom


@torch.no_grad()
def _accuracy(net, x, y, h_row, batch: int = 512) -> float:
    net.eval()
    hits = 0
    for i in range(0, len(x), batch):
        xb = x[i : i + batch]
        logits, _ = net(xb, h_row.expand(len(xb), -1))
        hits += int((logits.argmax(1) == y[i : i + batch]).sum())
    return hits / max(1, len(x))


def _late(cfg: TrialConfig, epoch: int) -> float:
    """0 in the first gated epoch, growing linearly to 1 in the last (0 before: warm-up)."""
    gated = cfg.epochs - cfg.warmup_epochs
    if epoch < cfg.warmup_epochs:
        return 0.0
    return 1.0 if gated <= 1 else (epoch - cfg.warmup_epochs) / (gated - 1)


def gate_clip_at(cfg: TrialConfig, epoch: int) -> float:
    """The gate logits' limit in `epoch`: gate_clip in the first gated epoch, growing linearly
    to gate_clip_final in the last (early on a pruned part is still sampled and can come back;
    at the end the gates settle, so the network the super network trains is the one it
    returns). 0 (no limit) stays 0."""
    if not cfg.gate_clip or not cfg.gate_clip_final:
        return cfg.gate_clip
    return cfg.gate_clip + _late(cfg, epoch) * (cfg.gate_clip_final - cfg.gate_clip)


@torch.no_grad()
def subnet_accuracy(net, h_row, x_train, val, bn_images: int) -> float:
    """The super network's validation accuracy of one sub-network (gate vector `h_row`), its
    batch norms recalibrated for it: the search's own estimate of how good it is."""
    h = h_row.to(x_train.device)[None]
    recalibrate(net, x_train[:bn_images], h)
    return _accuracy(net, *val, h)


def train_supernet(
    cfg: TrialConfig,
    fam,
    cost_model: CostModel,
    train,
    val,
    gen,
    report=None,
    log=None,
    checkpoint=None,
    resume=None,
) -> tuple:
    """BSN training of the family's super network; returns (net, history).

    `checkpoint` (a file path): after every epoch the whole state of the training (network,
    both optimizers, schedule, the generator `gen` and torch's own, history, the cost model's
    cache) is written there. `resume` (that state, as read back from such a file) continues
    after its epoch with the state an uninterrupted run would have (on the CPU, to the bit).
    The caller removes the file."""
    x, y = train
    space = fam.make_space(tuple(x.shape[1:]), cost_model.classes, cfg.space)
    net = fam.supernet(space, cfg.init_prob).to(x.device)  # drawn on the CPU, then moved
    weights = net.weight_parameters()
    if cfg.optimizer == "sgd":
        opt_w = torch.optim.SGD(weights, lr=cfg.lr, momentum=0.9, weight_decay=1e-4)
    elif cfg.optimizer == "adam":
        opt_w = torch.optim.Adam(weights, lr=cfg.lr)
    else:
        raise ValueError(f"optimizer must be adam or sgd, got {cfg.optimizer!r}")
    if cfg.gate_optimizer == "adam":
        opt_g = torch.optim.Adam(net.gates.parameters(), lr=cfg.gate_lr)
    else:
        opt_g = torch.optim.SGD(net.gates.parameters(), lr=cfg.gate_lr, momentum=cfg.gate_momentum)
    steps = cfg.epochs * math.ceil(len(x) / cfg.batch)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt_w, T_max=max(1, steps))
    history, start = [], 0
    if resume is not None:
        ck = resume
        net.load_state_dict(ck["net"])
        opt_w.load_state_dict(ck["opt_w"])
        opt_g.load_state_dict(ck["opt_g"])
        sched.load_state_dict(ck["schedule"])
        gen.set_state(ck["generator"].cpu())
        torch.set_rng_state(ck["torch_rng"])
        cost_model.load_cache(ck["costs"])
        history, start = ck["history"], len(ck["history"])
        if log is not None:
            log(f"super network resumed after epoch {start}/{cfg.epochs} from {checkpoint}")
    for ep in range(start, cfg.epochs):
        net.train()
        t0 = time.perf_counter()
        # warm-up epochs train the weights only: the gates are held, so the sampled
        # architectures are not costed (a program per example is most of a gated step's time)
        gated = ep >= cfg.warmup_epochs
        clip = gate_clip_at(cfg, ep)
        entropy_weight = (
            cfg.gate_entropy
            * max(0.0, _late(cfg, ep) - cfg.gate_entropy_start)
            / max(1e-9, 1.0 - cfg.gate_entropy_start)
        )
        perm = torch.randperm(len(x), generator=gen).to(x.device)
        tot = {"loss": 0.0, "cost": 0.0, "penalty": 0.0, "n": 0}
        for i in range(0, len(x), cfg.batch):
            idx = perm[i : i + cfg.batch]
            if len(idx) < 2:  # batch norm and the batch-mean baseline need two examples
                continue
            xb, yb = x[idx], y[idx]
            if cfg.augment:
                xb = random_shift(xb, gen, prob=float(cfg.augment))
            h = net.gates.sample(len(idx), generator=gen)
            logits, activity = net(xb, h)
            loss = F.cross_entropy(logits, yb, reduction="none")
            objective = loss.mean()
            if gated:
                archs = net.decode_batch(h)
                cost = cost_model.per_example(cfg.cost, archs, activity).to(loss.device)
                penalty = budget_penalty(cost, cfg.budget, cfg.lam, cfg.penalty)
                relevant = net.relevant(h) if cfg.masked and hasattr(net, "relevant") else None
                objective = objective + reinforce_loss(
                    loss.detach() + penalty, net.gates.log_prob(h, relevant), cfg.baseline
                )
                if entropy_weight:
                    objective = objective + entropy_weight * net.gates.entropy()
            opt_w.zero_grad(set_to_none=True)
            opt_g.zero_grad(set_to_none=True)
            objective.backward()
            opt_w.step()
            if gated:
                opt_g.step()
                if clip:
                    with torch.no_grad():
                        net.gates.logits.clamp_(-clip, clip)
            sched.step()
            n = len(idx)
            tot["loss"] += float(loss.detach().sum())
            if gated:
                tot["cost"] += float(cost.sum())
                tot["penalty"] += float(penalty.sum())
            tot["n"] += n
        det = net.gates.deterministic()
        arch = net.decode(det[0])
        recalibrate(net, x[: cfg.bn_images], det)
        entry = {
            "epoch": ep + 1,
            "loss": tot["loss"] / tot["n"],
            "sampled_cost": tot["cost"] / tot["n"] if gated else None,
            "penalty": tot["penalty"] / tot["n"] if gated else None,
            "val_accuracy": _accuracy(net, *val, det),
            "arch": arch.describe(),
            "cost": cost_model.of(cfg.cost, arch),  # joint search: priced when over the chip
            **({"fits_chip": cost_model.feasible(arch)} if cost_model.settings.joint else {}),
            "architectures_seen": cost_model.cached_architectures,
            "gate_clip": clip if gated else None,
            "gate_entropy": float(net.gates.entropy().detach()) / net.gates.size,
            "seconds": time.perf_counter() - t0,
        }
        history.append(entry)
        if checkpoint is not None:  # before the report, which may be where the run stops
            save_checkpoint(
                checkpoint,
                {
                    "net": net.state_dict(),
                    "opt_w": opt_w.state_dict(),
                    "opt_g": opt_g.state_dict(),
                    "schedule": sched.state_dict(),
                    "generator": gen.get_state(),
                    "torch_rng": torch.get_rng_state(),
                    "costs": cost_model.cache(),
                    "history": history,
                },
            )
        if report is not None:
            report(entry)
        if log is not None:
            log(
                f"epoch {ep + 1}/{cfg.epochs}: val {100 * entry['val_accuracy']:.2f}%, "
                f"{cfg.cost} {entry['cost']:,.4g} (budget {cfg.budget:,.4g}), {arch.describe()}"
            )
    return net, history


def models_root(cfg: TrialConfig) -> Path:
    """Where the trial's final trainings go (shared by the trials of a search: DIR/models)."""
    return Path(cfg.models_dir) if cfg.models_dir else Path(cfg.out) / "models"


def run_trial(cfg: TrialConfig, report=None, log=print) -> dict:
    """Run one trial (see the module docstring); returns the result written to result.json."""
    fam = get_family(cfg.family)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    ckdir = _checkpoint_dir(cfg, log)
    supernet_file = ckdir / "supernet.pt"
    epochs_file = ckdir / "supernet_epochs.pt"  # the super network's training, epoch by epoch
    with training_session(cfg.seed, cfg.threads, cfg.device) as gen:
        train_ds, val_ds, test_ds = _splits(cfg.data)
        cost_model = CostModel(
            fam, cfg.cost_settings(), train_ds.image_shape, train_ds.classes, budget=cfg.budget
        )
        cost_model.check(cfg.cost)
        if supernet_file.exists():  # an interrupted trial: its super network is done
            saved = torch.load(supernet_file, weights_only=False)  # our own file
            net = fam.supernet(
                fam.make_space(train_ds.image_shape, train_ds.classes, cfg.space), cfg.init_prob
            )
            net.load_state_dict(saved["net"])
            history, t_before = saved["history"], saved["seconds"]
            if log is not None:
                log(f"super network from {supernet_file} ({len(history)} epochs)")
            h, flips, searched = saved["h"], saved["flips"], saved["searched"]
        else:
            train, val = to_tensors(train_ds, cfg.device), to_tensors(val_ds, cfg.device)
            resume = _read_checkpoint(epochs_file)
            done_before = len(resume["history"]) if resume is not None else 0
            net, history = train_supernet(
                cfg, fam, cost_model, train, val, gen, report, log, epochs_file, resume
            )
            h, flips = choose(cfg, net, cost_model)
            searched = copy.deepcopy(net.cpu().state_dict())  # as the search left it
            settle(cfg, net.to(cfg.device), h, train, gen, log)
            net = net.cpu()
            # the epochs an interrupted run had trained: their time counts too
            t_before = sum(e["seconds"] for e in history[:done_before])
            save_checkpoint(
                supernet_file,
                {
                    "net": net.state_dict(),
                    "history": history,
                    "h": h,
                    "flips": flips,
                    "searched": searched,
                    "seconds": time.perf_counter() - t_start + t_before,
                },
            )
            epochs_file.unlink(missing_ok=True)  # supernet.pt holds what it led to
        arch = net.decode(h)
        extracted = {
            "arch": arch,
            "flips": flips,
            "probability": extracted_probability(net, arch, seed=cfg.seed),
            "supernet_val": subnet_accuracy(
                net, h, to_tensors(train_ds)[0], to_tensors(val_ds), cfg.bn_images
            ),
        }
    t_start -= t_before
    t_super = time.perf_counter() - t_start
    arch = extracted["arch"]
    # joint search: Infeasible (the chip's reason) when the projection found no flip that fits
    searched_cost = cost_model.static(cfg.cost, arch)

    def final_progress(entry):  # the final training's epochs, as the search's are
        entry = {**entry, "phase": "final"}
        if report is not None:
            report(entry)
        if log is not None:
            log(
                f"final training, {entry['desc']}: epoch {entry['epoch']}/{entry['epochs']}, "
                f"val {100 * entry['val_accuracy']:.2f}%"
            )

    if isinstance(fam, IntegerFamily):  # integer networks: the protocol's final trainings
        final = _final_trainings(cfg, arch, final_progress)
    else:  # the fabric: one training, its costs the arch's
        final = _fabric_final(cfg, fam, arch, train_ds, ckdir, final_progress)
        final["costs"] = cost_model.all_static(arch)
    t_final = time.perf_counter() - t_start - t_super
    result = {
        "name": cfg.name,
        "family": cfg.family,
        "cost": cfg.cost,
        "budget": cfg.budget,
        "lambda": cfg.lam,
        "seed": cfg.seed,
        "data": cfg.data,
        "arch": arch.as_dict(),
        "arch_text": arch.describe(),
        "gates": net.gates.summary(),
        "searched_cost": searched_cost,  # what the super network was trained with
        "costs": final["costs"],  # measured on the final network (seed 0)
        "hardware": final.get("hardware"),  # the joint search's array for it (None: --array)
        "budget_ratio": final["costs"][cfg.cost] / cfg.budget,
        "projection": extracted["flips"],  # gates flipped to meet the budget
        "extracted_probability": extracted["probability"],
        "accuracy": {**final["accuracy"], "supernet_val": extracted["supernet_val"]},
        "finals": final.get("finals", []),
        "history": history,
        "seconds": {"supernet": t_super, "final": t_final, "total": time.perf_counter() - t_start},
        "config": asdict(cfg),
        "files": final.get("files", {}),
    }
    # the super network as the search left it (before settling): the rank agreement's
    save_checkpoint(out / "supernet.pt", {"net": searched, "arch": arch.as_dict()})
    write_json_atomic(out / "result.json", result)
    shutil.rmtree(ckdir, ignore_errors=True)  # finished: the result is what counts
    return result


def choose(cfg: TrialConfig, net, cost_model: CostModel) -> tuple:
    """(gate vector, flips): the architecture a trained super network returns, the gates above
    1/2, projected within the budget (projection.py) unless cfg.project is off."""
    h = net.gates.deterministic()[0].cpu()
    if not cfg.project:
        return h, []
    return project(net, h, cost_model, cfg.cost, cfg.budget)


def settle(cfg: TrialConfig, net, h_row: torch.Tensor, train, gen, log=None) -> None:
    """The last `settle_epochs` epochs of the super network: the gate logits fixed at
    +-gate_clip_final on the returned architecture (so a sample of the final gates is that
    architecture: extracted_probability), the weights trained on it alone with a tenth of the
    learning rate. Without them the super network never trains the network it returns; its own
    estimate of that network's accuracy (`supernet_val`) then says little."""
    if cfg.settle_epochs < 1:
        return
    limit = cfg.gate_clip_final or cfg.gate_clip or 8.0
    with torch.no_grad():
        net.gates.logits.copy_((2 * h_row.to(net.gates.logits) - 1) * limit)
    x, y = train
    opt = torch.optim.Adam(net.weight_parameters(), lr=0.1 * cfg.lr)
    net.train()
    for ep in range(cfg.settle_epochs):
        perm = torch.randperm(len(x), generator=gen).to(x.device)
        for i in range(0, len(x), cfg.batch):
            idx = perm[i : i + cfg.batch]
            if len(idx) < 2:
                continue
            xb = random_shift(x[idx], gen, prob=float(cfg.augment)) if cfg.augment else x[idx]
            logits, _ = net(xb, net.gates.sample(len(idx), generator=gen))
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(logits, y[idx]).backward()
            opt.step()
        if log is not None:
            log(f"settling on the returned architecture: epoch {ep + 1}/{cfg.settle_epochs}")


def _final_trainings(cfg: TrialConfig, arch, progress) -> dict:
    """The returned architecture trained with seeds 0..final_seeds-1 (evaluation.py; an
    architecture another trial returned is read back, not trained again): counts per seed,
    mean accuracies, seed 0's costs and files."""
    finals = []
    for k in range(cfg.final_seeds):
        job = model_job(cfg, arch, k, models_root(cfg))
        # each epoch says which of the trial's trainings it is (the search's time left)
        res = run_final(job, on_epoch_end=lambda entry, k=k: progress({**entry, "training": k}))
        finals.append(
            {
                "seed": k,
                "dir": job.out,
                **{f"{s}_{c}": res[f"{s}_{c}"] for s in ("val", "test") for c in ("correct", "total")},
            }
        )
    mean = {s: float(np.mean([f[f"{s}_correct"] / f[f"{s}_total"] for f in finals])) for s in ("val", "test")}
    first = read_final(finals[0]["dir"])
    return {
        "finals": finals,
        "accuracy": mean,
        "costs": first["costs"],
        "hardware": first.get("hardware"),
        "files": {k: v for k, v in first["files"].items() if k in ("onnx", "card")},
    }


def _fabric_final(cfg: TrialConfig, fam, arch, train_ds, ckdir: Path, progress) -> dict:
    """The fabric's final training (a float network: no integer model, one seed)."""
    final = fam.train_final(
        arch,
        cfg.data,
        train_ds.image_shape,
        train_ds.classes,
        seed=cfg.seed,
        threads=cfg.threads,
        epochs=cfg.final_epochs,
        float_epochs=cfg.final_float_epochs,
        name=cfg.name,
        on_epoch_end=progress,
        checkpoint_dir=ckdir,
        device=cfg.device,
    )
    acc = final.accuracy
    return {"accuracy": {"val": acc["quantized_val"], "test": acc.get("golden_test", acc["quantized_test"])}}
