"""Final training of one architecture with one seed, and what the protocol keeps of it.

Every model a search reports (its own, the random-search and width-scaling baselines', the zoo
architecture's) is trained by `run_final` with the same recipe (the family's zoo recipe for the
data set, `--final-epochs`/`--final-float-epochs` for every model alike) and the same seeds
0..N-1 (`--final-seeds N`). The result of one (architecture, seed) lives in
`DIR/models/<key>/seed<k>/`: `result.json` (counts of correct images on the validation and test
splits, exact costs, seconds), `outcomes.npz` (which images were right: the paired comparisons
need them), the ONNX model and its card. The key digests the family, architecture, data, recipe
and cost settings, so an architecture that two trials (or a trial and a baseline) return is
trained once per seed. An interrupted training continues from its checkpoints.

Accuracies are the golden integer network's on the splits' images: the validation split decides
everything a search selects; the test split is evaluated here, once per model and seed, and
only reported.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from models.datasets import load_dataset
from models.numerics.bnn import argmax
from safeio import OutputLock, atomic_path, write_json_atomic
from workbench.search.costs import CostModel, CostSettings
from workbench.search.families import family as get_family


@dataclass
class FinalJob:
    family: str
    arch: dict  # the family's Arch.as_dict()
    seed: int  # the final training's seed
    data: str
    out: str  # DIR/models/<key>/seed<k>
    epochs: int | None = None  # the recipe's (None: the zoo recipe's)
    float_epochs: int | None = None
    costs: dict = field(default_factory=dict)  # CostSettings fields
    energy_images: int = 200
    threads: int = 1
    device: str = "cpu"
    name: str = "model"
    export: bool = True  # the ONNX model and card (tests skip them for speed)


def model_key(family: str, arch: dict, data: str, epochs, float_epochs, costs: dict) -> str:
    """The folder name of an architecture's models: what decides its trained networks and
    costs (not its seed, which is a subfolder)."""
    text = json.dumps(
        {
            "family": family,
            "arch": arch,
            "data": str(data),
            "epochs": epochs,
            "float_epochs": float_epochs,
            "costs": costs,
        },
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def job_for(
    family: str,
    arch,
    data: str,
    seed: int,
    root: Path,
    *,
    epochs=None,
    float_epochs=None,
    costs: dict | None = None,
    threads: int = 1,
    device: str = "cpu",
    energy_images: int = 200,
    export: bool = True,
) -> FinalJob:
    """The job of training `arch` with `seed`, in `root`/<key>/seed<seed>."""
    arch_d = arch.as_dict() if hasattr(arch, "as_dict") else dict(arch)
    costs = dict(costs or {})
    key = model_key(family, arch_d, data, epochs, float_epochs, costs)
    return FinalJob(
        family,
        arch_d,
        int(seed),
        str(data),
        str(Path(root).resolve() / key / f"seed{seed}"),  # absolute: Ray's cwd
        epochs,
        float_epochs,
        costs,
        energy_images,
        threads,
        device,
        name=f"{family}_{key}_s{seed}",
        export=export,
    )


def read_final(out) -> dict | None:
    """A finished job's result.json (None when it has none); its files are those in `out`."""
    try:
        res = json.loads((Path(out) / "result.json").read_text())
    except (OSError, ValueError):
        return None
    res["files"] = {k: str(Path(out) / Path(v).name) for k, v in res.get("files", {}).items()}
    return res


def outcomes(out) -> dict:
    """{"val": bool[images], "test": bool[images]}: which images the model got right."""
    with np.load(Path(out) / "outcomes.npz") as z:
        return {k: z[k].astype(bool) for k in ("val", "test")}


def _correct(net, ds) -> np.ndarray:
    from models.train.recipes import golden_scores

    scores = golden_scores(net, ds.images)
    return argmax(scores.reshape(len(scores), -1)) == ds.labels


def run_final(job: FinalJob, on_epoch_end=None) -> dict:
    """Train, evaluate and export one (architecture, seed); returns its result (the stored one
    when the job has finished before). Jobs of the same folder take turns (its lock)."""
    out = Path(job.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with OutputLock(out, "model folder", wait=True):
        done = read_final(out)
        if done is not None:
            return done
        return _train_and_evaluate(job, out, on_epoch_end)


def exact_costs(fam, cost_model: CostModel, net, x_val, energy_images: int, pick=None) -> dict:
    """The costs of a trained integer network, measured by the tools (not the search's cached
    model): compiled for a fitted array, energy from the interpreter's activity counts. `pick`:
    the joint search's array for the network (hardware.Pick; picked here when not given)."""
    from fpga.compiler import compile_network, fitted_config
    from fpga.energy import energy_uj_per_image
    from fpga.execute import interpret
    from workbench.search.costs import chain_modules, network_flops, network_params, parallel_steps

    s = cost_model.settings
    out = {"params": float(network_params(net)), "flops": float(network_flops(net))}
    if "cycles" in fam.COSTS:
        if s.joint:  # the array picked for the network on the chip, its memories fitted
            pick = pick or cost_model.pick_network(net)
            prog, mhz = compile_network(net, pick.config), pick.clock.mhz
        else:
            rows, cols = s.rows_cols
            prog, mhz = compile_network(net, fitted_config(net, rows, cols, s.cmax)), s.fixed_mhz
        out["cycles"] = float(prog.cycles_per_image())
        out["latency_ms"] = out["cycles"] / (mhz * 1e3)
        run = interpret(prog, x_val[:energy_images])
        _, act = run.instruction_stats(prog)
        per_image = sum(
            np.asarray(a, dtype=np.int64) * np.ones(len(x_val[:energy_images]), dtype=np.int64) for a in act
        )
        out["energy"] = energy_uj_per_image(prog, per_image)[0]
    n = chain_modules(net)
    out["parallel"] = float(parallel_steps({k: [k - 1] if k else [] for k in range(n)}, s.processors))
    if "gpu" in fam.COSTS:
        out["gpu"] = cost_model.gpu_model().ms_per_image(net) if s.gpu_profile else None
    return out


def _train_and_evaluate(job: FinalJob, out: Path, on_epoch_end) -> dict:
    from workbench.cards import write_model_and_card

    fam = get_family(job.family)
    arch = fam.arch_from_dict(job.arch)
    val, test = load_dataset(job.data, "val"), load_dataset(job.data, "test")
    t0 = time.perf_counter()
    ckdir = out / "checkpoint"
    final = fam.train_final(
        arch,
        job.data,
        val.image_shape,
        val.classes,
        seed=job.seed,
        threads=job.threads,
        epochs=job.epochs,
        float_epochs=job.float_epochs,
        name=job.name,
        on_epoch_end=on_epoch_end,
        checkpoint_dir=ckdir,
        device=job.device,
    )
    seconds = time.perf_counter() - t0
    right = {"val": _correct(final.net, val), "test": _correct(final.net, test)}
    cost_model = CostModel(fam, CostSettings(**job.costs), val.image_shape, val.classes)
    # the joint search: the array the network runs on, its resources and clock
    pick = cost_model.pick_network(final.net) if cost_model.settings.joint else None
    costs = exact_costs(fam, cost_model, final.net, val.images, job.energy_images, pick)
    hardware = pick.as_dict() if pick is not None else None
    with atomic_path(out / "outcomes.npz") as tmp:
        np.savez_compressed(tmp, **right)
    files = {"outcomes": "outcomes.npz"}
    if job.export:
        card = write_model_and_card(final, out / f"{job.name}.onnx", f"search final training {job.name}")
        files.update(onnx=f"{job.name}.onnx", card=f"{job.name}.json", onnx_sha256=card["sha256"])
    result = {
        "job": asdict(job),
        "arch_text": arch.describe(),
        "val_correct": int(right["val"].sum()),
        "val_total": int(right["val"].size),
        "test_correct": int(right["test"].sum()),
        "test_total": int(right["test"].size),
        "costs": costs,
        "hardware": hardware,
        "seconds": seconds,
        "files": {k: v for k, v in files.items() if k != "onnx_sha256"},
        "onnx_sha256": files.get("onnx_sha256"),
    }
    write_json_atomic(out / "result.json", result)
    shutil.rmtree(ckdir, ignore_errors=True)  # finished: the result is what counts
    return read_final(out)
