"""End-to-end training recipes: float twin, then the quantized model, then the golden network.

Both recipes train the float twin first (its test accuracy is the baseline on the card), then
initialise the quantized model from it and fine-tune with the float twin as a distillation
teacher. Model selection uses the validation split only (SAC: best epoch of the last stage; BNN:
the last epoch); the test split is evaluated once at the end, on the quantized model in eval mode
(whose arithmetic is the golden network's).
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from models import golden, ir
from models.datasets import Dataset, DatasetError, load_dataset, parse_spec
from models.numerics.bnn import argmax
from models.train import bnn as bnn_train
from models.train import sac as sac_train
from models.train.common import accuracy, fit, recalibrate_batchnorm, to_tensors, training_session
from safeio import write_json_atomic


@dataclass
class TrainResult:
    family: str
    net: ir.Network
    model: torch.nn.Module
    float_model: torch.nn.Module
    accuracy: dict  # float/quantized x val/test (+ golden test)
    seconds: float
    config: dict
    settings: dict
    extra: dict = field(default_factory=dict)


def _splits(data) -> tuple[Dataset, Dataset, Dataset]:
    name, split = parse_spec(data)
    if split is not None:
        raise DatasetError(
            f"{data}: training uses the train, val and test splits of a data set; "
            f"give {name!r} without a split"
        )
    return tuple(load_dataset(data, s) for s in ("train", "val", "test"))


GOLDEN_CHUNK = 1000  # images per golden call: 10,000 28x28 images at once need ~10 GB


def golden_scores(net: ir.Network, images, chunk: int = GOLDEN_CHUNK):
    """The golden executor's final scores on `images`, `chunk` images at a time (its im2col
    holds every window of the batch in float64)."""
    parts = [golden.run(net, images[i : i + chunk]).scores for i in range(0, len(images), chunk)]
    return np.concatenate(parts)


def _golden_accuracy(net: ir.Network, ds: Dataset) -> float:
    scores = golden_scores(net, ds.images)
    return float((argmax(scores.reshape(len(scores), -1)) == ds.labels).mean())


def _checkpoints(folder, settings: dict):
    """name -> the file of a training phase's checkpoint in `folder` (None: no checkpoints).
    `folder`/recipe.json holds the run's settings (recipe, architecture, epochs, seed, threads,
    device, data...): checkpoints of another run are refused (ValueError), not resumed."""
    if folder is None:
        return lambda name: None
    folder = Path(folder)
    meta = folder / "recipe.json"
    now = json.loads(json.dumps(settings))
    if meta.exists():
        try:
            old = json.loads(meta.read_text())
        except ValueError:
            old = None
        if old != now:
            diff = next(
                (
                    f"{k}: was {(old or {}).get(k)!r}, now {now.get(k)!r}"
                    for k in sorted(set(now) | set(old or {}))
                    if (old or {}).get(k) != now.get(k)
                ),
                "unreadable",
            )
            raise ValueError(f"{folder}: its checkpoints are of another training run ({diff})")
    else:
        write_json_atomic(meta, now, indent=1)
    return lambda name: folder / f"{name}.pt"


def train_bnn(
    data="digits", *, seed: int = 0, threads: int = 1, device: str = "cpu", **kwargs
) -> TrainResult:
    """Float twin, then the binarized model (see module docstring); deterministic per seed (on
    the CPU; on "cuda" where CUDA's kernels are, see training_session). The models come back on
    the CPU."""
    with training_session(seed, threads, device) as gen:
        return _train_bnn(data, gen=gen, seed=seed, threads=threads, device=device, **kwargs)


def train_sac(data="digits", *, seed: int = 0, threads: int = 1, **kwargs) -> TrainResult:
    """Float twin, then the SAC QAT stages (see module docstring); deterministic per seed."""
    with training_session(seed, threads) as gen:
        return _train_sac(data, gen=gen, seed=seed, threads=threads, **kwargs)


def _train_bnn(
    data,
    *,
    gen,
    epochs: int = 100,
    float_epochs: int = 60,
    seed: int = 0,
    threads: int = 1,
    cfg: bnn_train.BnnConfig | None = None,
    lr: float = 0.01,
    float_lr: float = 0.01,
    kd_alpha: float = 0.7,
    augment_prob: float = 0.0,
    batch: int = 64,
    float_batch: int = 64,
    max_shift: int = 1,
    progress: bool = True,
    log_epochs: bool = False,
    name: str = "bnn",
    on_epoch_end=None,
    device: str = "cpu",
    checkpoint_dir=None,
) -> TrainResult:
    """`max_shift`: augmentation shifts (float twin: every image; QAT: a fraction
    `augment_prob`). `checkpoint_dir`: each phase's state after every epoch (see `fit`), and
    a run that finds them continues where they end (one of other settings: ValueError)."""
    t0 = time.perf_counter()
    train_ds, val_ds, test_ds = _splits(data)
    tr, va, te = (to_tensors(d, device) for d in (train_ds, val_ds, test_ds))
    cfg = cfg or bnn_train.BnnConfig(input_shape=train_ds.image_shape)
    settings = {
        "epochs": epochs,
        "float_epochs": float_epochs,
        "seed": seed,
        "threads": threads,
        "device": device,
        "lr": lr,
        "float_lr": float_lr,
        "kd_alpha": kd_alpha,
        "augment_prob": augment_prob,
        "max_shift": max_shift,
        "batch": batch,
        "float_batch": float_batch,
        "data": str(data),
    }
    ck = _checkpoints(checkpoint_dir, {"recipe": "bnn", "config": cfg.to_dict(), **settings})
    # parameters are drawn on the CPU (the same initial weights for a seed on every device)
    twin = bnn_train.BnnNet(cfg, binary=False).to(device)
    fit(
        twin,
        tr,
        va,
        epochs=float_epochs,
        lr=float_lr,
        gen=gen,
        augment=True,
        max_shift=max_shift,
        batch=float_batch,
        desc="float twin",
        progress=progress,
        log_epochs=log_epochs,
        on_epoch_end=on_epoch_end,
        checkpoint=ck("float_twin"),
    )
    model = bnn_train.BnnNet(cfg, binary=True).to(device)
    with torch.no_grad():  # start from the twin's signs and batch norms
        model.load_state_dict(twin.state_dict())
        for p in model.latent_weights():
            p.mul_(1.0 / p.abs().max().clamp_min(1e-12))
    hist = fit(
        model,
        tr,
        va,
        epochs=epochs,
        lr=lr,
        gen=gen,
        augment=augment_prob,
        batch=batch,
        max_shift=max_shift,
        after_step=model.clip_latent,
        before_eval=lambda: recalibrate_batchnorm(model, tr[0]),
        teacher=twin,
        kd_alpha=kd_alpha,
        select_best=False,
        desc="binary QAT",
        progress=progress,
        log_epochs=log_epochs,
        on_epoch_end=on_epoch_end,
        checkpoint=ck("binary_qat"),
    )
    net = model.to_network(name)
    acc = {
        "float_val": accuracy(twin, *va),
        "float_test": accuracy(twin, *te),
        "quantized_val": accuracy(model, *va),
        "quantized_test": accuracy(model, *te),
        "golden_test": _golden_accuracy(net, test_ds),
    }
    model, twin = model.cpu(), twin.cpu()
    selection = f"last epoch (best validation epoch {hist.best_epoch}, {100 * hist.best_val:.2f}%)"
    return TrainResult(
        "bnn",
        net,
        model,
        twin,
        acc,
        time.perf_counter() - t0,
        cfg.to_dict(),
        {**settings, "selection": selection},
    )


def _train_sac(
    data,
    *,
    gen,
    epochs: int = 15,
    float_epochs: int = 40,
    seed: int = 0,
    threads: int = 1,
    cfg: sac_train.SacConfig | None = None,
    lr: float = 1e-2,
    float_lr: float = 1e-2,
    kd_alpha: float = 0.7,
    stages: int = 4,
    augment_prob: float = 0.0,
    batch: int = 64,
    float_batch: int = 64,
    max_shift: int = 1,
    progress: bool = True,
    log_epochs: bool = False,
    name: str = "sac",
    on_epoch_end=None,
    checkpoint_dir=None,
) -> TrainResult:
    """`epochs` per pruning stage (the last stage runs twice as long); `checkpoint_dir` as
    for the BNN recipe."""
    t0 = time.perf_counter()
    train_ds, val_ds, test_ds = _splits(data)
    tr, va, te = (to_tensors(d) for d in (train_ds, val_ds, test_ds))
    cfg = cfg or sac_train.SacConfig(input_shape=train_ds.image_shape)
    settings = {
        "epochs_per_stage": epochs,
        "float_epochs": float_epochs,
        "seed": seed,
        "threads": threads,
        "lr": lr,
        "float_lr": float_lr,
        "kd_alpha": kd_alpha,
        "stages": stages,
        "augment_prob": augment_prob,
        "max_shift": max_shift,
        "batch": batch,
        "float_batch": float_batch,
        "data": str(data),
    }
    ck = _checkpoints(checkpoint_dir, {"recipe": "sac", "config": cfg.to_dict(), **settings})
    model = sac_train.SacNet(cfg)
    fit(
        model,
        tr,
        va,
        epochs=float_epochs,
        lr=float_lr,
        gen=gen,
        augment=True,
        max_shift=max_shift,
        batch=float_batch,
        desc="float twin",
        progress=progress,
        log_epochs=log_epochs,
        on_epoch_end=on_epoch_end,
        checkpoint=ck("float_twin"),
    )
    recalibrate_batchnorm(model, tr[0])
    twin = copy.deepcopy(model)
    scales = model.quantize_from_float(tr[0])
    history = []
    for stage in range(stages):
        groups = model.set_stage_groups(stage, stages)
        last = stage == stages - 1
        h = fit(
            model,
            tr,
            va,
            epochs=epochs * (2 if last else 1),
            lr=lr,
            gen=gen,
            augment=augment_prob,
            max_shift=max_shift,
            batch=batch,
            after_step=model.clip_latent,
            teacher=twin,
            kd_alpha=kd_alpha,
            desc=f"QAT stage {stage + 1}/{stages} G={groups}",
            progress=progress,
            log_epochs=log_epochs,
            on_epoch_end=on_epoch_end,
            checkpoint=ck(f"qat_stage{stage + 1}"),
        )
        history.append({"groups": groups, "best_val": h.best_val, "best_epoch": h.best_epoch})
    net = model.to_network(name)
    acc = {
        "float_val": accuracy(twin, *va),
        "float_test": accuracy(twin, *te),
        "quantized_val": accuracy(model, *va),
        "quantized_test": accuracy(model, *te),
        "golden_test": _golden_accuracy(net, test_ds),
    }
    return TrainResult(
        "sac",
        net,
        model,
        twin,
        acc,
        time.perf_counter() - t0,
        cfg.to_dict(),
        settings,
        {
            "activation_scales": [float(s) for s in scales],
            "stages": history,
            "column_combining": model.combining_stats(),
        },
    )
