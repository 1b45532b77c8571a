"""End-to-end training recipes: float twin, then the quantized model, then the golden network.

Both recipes train the float twin first (its test accuracy is the baseline on the card), then
initialise the quantized model from it and fine-tune with the float twin as a distillation
teacher. Model selection uses the validation split only (SAC: best epoch of the last stage; BNN:
the last epoch); the test split is evaluated once at the end, on the quantized model in eval mode
(whose arithmetic is the golden network's).
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import torch

from models import golden, ir
from models.datasets import Dataset, load_dataset
from models.train import bnn as bnn_train
from models.train import sac as sac_train
from models.train.common import accuracy, fit, recalibrate_batchnorm, to_tensors, training_session


@dataclass
class TrainResult:
    family: str
    net: ir.Network
    model: torch.nn.Module
    float_model: torch.nn.Module
    accuracy: dict                      # float/quantized x val/test (+ golden test)
    seconds: float
    config: dict
    settings: dict
    extra: dict = field(default_factory=dict)


def _splits(data) -> tuple[Dataset, Dataset, Dataset]:
    return tuple(load_dataset(data, s) for s in ("train", "val", "test"))


def _golden_accuracy(net: ir.Network, ds: Dataset) -> float:
    return float((golden.run(net, ds.images).predictions == ds.labels).mean())


def train_bnn(data="digits", *, seed: int = 0, threads: int = 1, **kwargs) -> TrainResult:
    """Float twin, then the binarized model (see module docstring); deterministic per seed."""
    with training_session(seed, threads) as gen:
        return _train_bnn(data, gen=gen, seed=seed, threads=threads, **kwargs)


def train_sac(data="digits", *, seed: int = 0, threads: int = 1, **kwargs) -> TrainResult:
    """Float twin, then the SAC QAT stages (see module docstring); deterministic per seed."""
    with training_session(seed, threads) as gen:
        return _train_sac(data, gen=gen, seed=seed, threads=threads, **kwargs)


def _train_bnn(data, *, gen, epochs: int = 100, float_epochs: int = 60, seed: int = 0,
              threads: int = 1, cfg: bnn_train.BnnConfig | None = None, lr: float = 0.01,
              kd_alpha: float = 0.7, augment_prob: float = 0.0, batch: int = 64,
              progress: bool = True, name: str = "bnn") -> TrainResult:
    t0 = time.perf_counter()
    train_ds, val_ds, test_ds = _splits(data)
    tr, va, te = (to_tensors(d) for d in (train_ds, val_ds, test_ds))
    cfg = cfg or bnn_train.BnnConfig(input_shape=train_ds.image_shape)
    twin = bnn_train.BnnNet(cfg, binary=False)
    fit(twin, tr, va, epochs=float_epochs, lr=0.01, gen=gen, augment=True,
        desc="float twin", progress=progress)
    model = bnn_train.BnnNet(cfg, binary=True)
    with torch.no_grad():                      # start from the twin's signs and batch norms
        model.load_state_dict(twin.state_dict())
        for p in model.latent_weights():
            p.mul_(1.0 / p.abs().max().clamp_min(1e-12))
    hist = fit(model, tr, va, epochs=epochs, lr=lr, gen=gen, augment=augment_prob, batch=batch,
               after_step=model.clip_latent,
               before_eval=lambda: recalibrate_batchnorm(model, tr[0]),
               teacher=twin, kd_alpha=kd_alpha, select_best=False, desc="binary QAT",
               progress=progress)
    net = model.to_network(name)
    acc = {"float_val": accuracy(twin, *va), "float_test": accuracy(twin, *te),
           "quantized_val": accuracy(model, *va), "quantized_test": accuracy(model, *te),
           "golden_test": _golden_accuracy(net, test_ds)}
    return TrainResult("bnn", net, model, twin, acc, time.perf_counter() - t0, cfg.to_dict(),
                       {"epochs": epochs, "float_epochs": float_epochs, "seed": seed,
                        "threads": threads, "lr": lr, "kd_alpha": kd_alpha,
                        "augment_prob": augment_prob, "batch": batch,
                        "selection": "last epoch (best validation epoch "
                                     f"{hist.best_epoch}, {100 * hist.best_val:.2f}%)",
                        "data": str(data)})


def _train_sac(data, *, gen, epochs: int = 15, float_epochs: int = 40, seed: int = 0,
              threads: int = 1, cfg: sac_train.SacConfig | None = None, lr: float = 1e-2,
              kd_alpha: float = 0.7, stages: int = 4, augment_prob: float = 0.0,
              progress: bool = True, name: str = "sac") -> TrainResult:
    """`epochs` per pruning stage (the last stage runs twice as long)."""
    t0 = time.perf_counter()
    train_ds, val_ds, test_ds = _splits(data)
    tr, va, te = (to_tensors(d) for d in (train_ds, val_ds, test_ds))
    cfg = cfg or sac_train.SacConfig(input_shape=train_ds.image_shape)
    model = sac_train.SacNet(cfg)
    fit(model, tr, va, epochs=float_epochs, lr=0.01, gen=gen, augment=True,
        desc="float twin", progress=progress)
    recalibrate_batchnorm(model, tr[0])
    twin = copy.deepcopy(model)
    scales = model.quantize_from_float(tr[0])
    history = []
    for stage in range(stages):
        groups = model.set_stage_groups(stage, stages)
        last = stage == stages - 1
        h = fit(model, tr, va, epochs=epochs * (2 if last else 1), lr=lr, gen=gen,
                augment=augment_prob, after_step=model.clip_latent, teacher=twin,
                kd_alpha=kd_alpha, desc=f"QAT stage {stage + 1}/{stages} G={groups}",
                progress=progress)
        history.append({"groups": groups, "best_val": h.best_val, "best_epoch": h.best_epoch})
    net = model.to_network(name)
    acc = {"float_val": accuracy(twin, *va), "float_test": accuracy(twin, *te),
           "quantized_val": accuracy(model, *va), "quantized_test": accuracy(model, *te),
           "golden_test": _golden_accuracy(net, test_ds)}
    return TrainResult("sac", net, model, twin, acc, time.perf_counter() - t0, cfg.to_dict(),
                       {"epochs_per_stage": epochs, "float_epochs": float_epochs, "seed": seed,
                        "threads": threads, "lr": lr, "kd_alpha": kd_alpha, "stages": stages,
                        "augment_prob": augment_prob, "data": str(data)},
                       {"activation_scales": [float(s) for s in scales], "stages": history,
                        "column_combining": model.combining_stats()})
