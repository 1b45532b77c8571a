"""Shared training machinery: determinism, data tensors, a tqdm training loop, evaluation."""

from __future__ import annotations

import os
import random
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from models.datasets import Dataset
from safeio import atomic_path


def seed_everything(seed: int, threads: int = 1) -> torch.Generator:
    """Seed every generator, fix the thread count and ask for deterministic kernels: the same
    seed then gives the same model on the same machine and torch build."""
    random.seed(seed)
    np.random.seed(seed % (1 << 32))
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    g = torch.Generator()
    g.manual_seed(seed)
    return g


DEVICES = ("cpu", "cuda")


def training_device(name: str) -> torch.device:
    """The torch device a recipe trains on: "cpu" or "cuda" (the current CUDA device).
    ValueError, in one line, when CUDA is asked for and torch sees none."""
    if name not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {name!r}")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device cuda: torch {torch.__version__} sees no CUDA device")
    return torch.device(name)


@contextmanager
def training_session(seed: int, threads: int = 1, device: str = "cpu"):
    """`seed_everything` for the duration of a training run, then the process's previous torch
    thread count and deterministic-algorithms flag come back (tests share worker processes).

    On CUDA: TF32 is switched off for convolutions and matrix products, because the quantized
    models evaluate integer sums in float32 and TF32's 10-bit mantissa would round them (their
    accuracy would no longer be the golden network's); deterministic kernels are asked for
    where CUDA has them (warn_only: a GPU run is repeatable only where it can be), and cuBLAS
    gets the workspace setting that its deterministic mode needs."""
    prev_threads = torch.get_num_threads()
    prev_det = torch.are_deterministic_algorithms_enabled()
    prev_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    cuda = training_device(device).type == "cuda"
    if cuda:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        prev_tf32 = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        gen = seed_everything(seed, threads)
        if cuda:
            torch.use_deterministic_algorithms(True, warn_only=True)
        yield gen
    finally:
        torch.set_num_threads(prev_threads)
        torch.use_deterministic_algorithms(prev_det, warn_only=prev_warn)
        if cuda:
            torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = prev_tf32


def to_tensors(ds: Dataset, device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """uint8 pixels -> float32 tensor holding the same integers; labels -> int64; on `device`."""
    return (
        torch.from_numpy(ds.images.astype(np.float32)).to(device),
        torch.from_numpy(ds.labels.astype(np.int64)).to(device),
    )


def random_shift(
    x: torch.Tensor, gen: torch.Generator, max_shift: int = 1, prob: float = 1.0
) -> torch.Tensor:
    """Augmentation: move each image (each with probability `prob`) by up to `max_shift`
    pixels in each direction (zero fill). The random numbers come from the CPU generator `gen`
    whatever device `x` is on, so a seed draws the same shifts on every device."""
    n, _, h, w = x.shape
    p = max_shift
    padded = torch.nn.functional.pad(x, (p, p, p, p))
    dy = torch.randint(0, 2 * p + 1, (n,), generator=gen)
    dx = torch.randint(0, 2 * p + 1, (n,), generator=gen)
    rows = (dy[:, None] + torch.arange(h)[None, :]).to(x.device)  # [n, h]
    cols = (dx[:, None] + torch.arange(w)[None, :]).to(x.device)  # [n, w]
    idx_n = torch.arange(n, device=x.device)[:, None, None]
    out = padded.permute(0, 2, 3, 1)[idx_n, rows[:, :, None], cols[:, None, :]]
    out = out.permute(0, 3, 1, 2).contiguous()
    if prob < 1.0:
        keep = (torch.rand(n, generator=gen) >= prob).to(x.device)
        out[keep] = x[keep]
    return out


@dataclass
class History:
    epochs: list = field(default_factory=list)  # (epoch, loss, train_acc, val_acc, val_loss)
    best_val: float = -1.0
    best_val_loss: float = float("inf")
    best_epoch: int = -1
    seconds: float = 0.0


@torch.no_grad()
def evaluate(model, x: torch.Tensor, y: torch.Tensor, batch: int = 512) -> tuple[float, float]:
    """(accuracy, mean cross-entropy) in eval mode; the loss uses the model's `logits()` when
    it has one (quantized models return raw integer scores from forward)."""
    model.eval()
    hits, loss = 0, 0.0
    to_logits = getattr(model, "logits", None)
    for i in range(0, len(x), batch):
        out = model(x[i : i + batch])
        hits += int((out.argmax(1) == y[i : i + batch]).sum())
        lg = to_logits(out) if to_logits is not None else out
        loss += float(torch.nn.functional.cross_entropy(lg.float(), y[i : i + batch], reduction="sum"))
    n = max(1, len(x))
    return hits / n, loss / n


def accuracy(model, x: torch.Tensor, y: torch.Tensor, batch: int = 512) -> float:
    return evaluate(model, x, y, batch)[0]


def fit(
    model,
    train,
    val,
    *,
    epochs: int,
    lr: float,
    gen: torch.Generator,
    batch: int = 64,
    augment: float = 1.0,
    max_shift: int = 1,
    desc: str = "train",
    weight_decay: float = 0.0,
    on_epoch_start=None,
    after_step=None,
    before_eval=None,
    select_from: int = 0,
    teacher=None,
    kd_alpha: float = 0.7,
    kd_temperature: float = 2.0,
    select_best: bool = True,
    progress: bool = True,
    log_epochs: bool = False,
    on_epoch_end=None,
    checkpoint=None,
) -> History:
    """Adam + cosine learning rate, cross-entropy (plus distillation from `teacher`'s logits
    on the same batch when given), random shifts by up to `max_shift` pixels of a fraction
    `augment` of the images. With `select_best` it keeps the state with the best validation
    accuracy, then lowest validation loss (of epochs >= `select_from`), and restores it at the
    end; otherwise the last epoch's state stays (`best_epoch` still reports the best validation
    epoch). With `log_epochs` (and `progress`) every epoch also prints one line to stderr (long
    runs with their output in a log file). `on_epoch_end(entry)` gets {desc, epoch (from 1),
    epochs, train_loss, val_accuracy, seconds} after every epoch (a search trial's progress).

    `checkpoint` (a file path): after every epoch the whole state of the run (model, optimizer,
    schedule, the generator `gen`, history, best state) is written there, and a run that finds
    the file continues after its epoch, giving the model an uninterrupted run would have (on
    the CPU, to the bit). The caller keeps or removes the file."""
    if teacher is not None:
        teacher.eval()
    x, y = train
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, epochs))
    hist = History()
    best_state = None
    start, seconds_before = 0, 0.0
    if checkpoint is not None and Path(checkpoint).exists():
        ck = torch.load(checkpoint, map_location=x.device, weights_only=False)  # our own file
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        sched.load_state_dict(ck["schedule"])
        gen.set_state(ck["generator"].cpu())
        hist, best_state = ck["history"], ck["best_state"]
        start, seconds_before = ck["epoch"] + 1, hist.seconds
    t0 = time.perf_counter() - seconds_before
    bar = tqdm(
        range(start, epochs),
        desc=desc,
        unit="ep",
        disable=not progress,
        leave=False,
        initial=start,
        total=epochs,
    )
    for ep in bar:
        if on_epoch_start is not None:
            on_epoch_start(ep)
        model.train()
        perm = torch.randperm(len(x), generator=gen).to(x.device)
        tot, hits, seen = 0.0, 0, 0
        for i in range(0, len(x), batch):
            idx = perm[i : i + batch]
            xb, yb = x[idx], y[idx]
            if augment:
                xb = random_shift(xb, gen, max_shift=max_shift, prob=float(augment))
            out = model(xb)
            loss = torch.nn.functional.cross_entropy(out, yb)
            if teacher is not None:
                with torch.no_grad():
                    soft = torch.softmax(teacher(xb) / kd_temperature, dim=1)
                kd = torch.nn.functional.kl_div(
                    torch.log_softmax(out / kd_temperature, dim=1), soft, reduction="batchmean"
                )
                loss = (1 - kd_alpha) * loss + kd_alpha * kd_temperature**2 * kd
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if after_step is not None:
                after_step()
            tot += float(loss.detach()) * len(idx)
            hits += int((out.argmax(1) == yb).sum())
            seen += len(idx)
        sched.step()
        if before_eval is not None:
            before_eval()
        val_acc, val_loss = evaluate(model, *val)
        hist.epochs.append((ep, tot / seen, hits / seen, val_acc, val_loss))
        # best validation accuracy; among equals the lowest validation loss (the accuracy of a
        # small validation split saturates)
        if ep >= select_from and (val_acc, -val_loss) >= (hist.best_val, -hist.best_val_loss):
            hist.best_val, hist.best_val_loss, hist.best_epoch = val_acc, val_loss, ep
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        bar.set_postfix(loss=f"{tot / seen:.3f}", val=f"{val_acc:.3f}")
        if checkpoint is not None:
            hist.seconds = time.perf_counter() - t0
            save_checkpoint(
                checkpoint,
                {
                    "epoch": ep,
                    "model": model.state_dict(),
                    "optimizer": opt.state_dict(),
                    "schedule": sched.state_dict(),
                    "generator": gen.get_state(),
                    "history": hist,
                    "best_state": best_state,
                },
            )
        if on_epoch_end is not None:
            on_epoch_end(
                {
                    "desc": desc,
                    "epoch": ep + 1,
                    "epochs": epochs,
                    "train_loss": tot / seen,
                    "val_accuracy": val_acc,
                    "seconds": time.perf_counter() - t0,
                }
            )
        if progress and log_epochs:
            bar.write(
                f"{desc}: epoch {ep + 1}/{epochs} loss {tot / seen:.4f} train "
                f"{100 * hits / seen:.2f}% val {100 * val_acc:.2f}% (val loss "
                f"{val_loss:.4f}) {time.perf_counter() - t0:.0f} s",
                file=sys.stderr,
            )
    if select_best and best_state is not None:
        model.load_state_dict(best_state)
    hist.seconds = time.perf_counter() - t0
    return hist


def save_checkpoint(path, state: dict) -> None:
    """torch.save to a temporary file, flushed and renamed: an interruption or a full disk
    leaves the previous one."""
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


@torch.no_grad()
def recalibrate_batchnorm(model, x: torch.Tensor, batch: int = 256) -> None:
    """Replace every batch norm's running statistics by the exact mean/variance over `x`
    (cumulative average over one pass in train mode): the integer thresholds of the quantized
    model are then read off statistics of the final weights, not a lagging moving average."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    saved = [(m.momentum, m.training) for m in bns]
    was_training = model.training
    model.train()
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    for i in range(0, len(x), batch):
        model(x[i : i + batch])
    for m, (mom, _) in zip(bns, saved, strict=True):
        m.momentum = mom
    model.train(was_training)
