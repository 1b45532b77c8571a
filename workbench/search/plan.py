"""What a search trains besides its own trials: the baselines' architectures and their final
trainings (workbench/search/protocol.py says why; baselines.py how they are drawn).

`baseline_plan` is deterministic (seeded by the trials' seeds), so a resumed search plans the
same architectures and finds their trainings finished. `final_jobs` lists the trainings of
every planned architecture with the protocol's seeds; a search trial trains its own returned
architecture itself (trial.py), with the same seeds and recipe, into the same models folder.
"""

from __future__ import annotations

from pathlib import Path

from models.datasets import load_dataset, parse_spec
from workbench.search.baselines import BaselineError, random_architectures, width_scaled
from workbench.search.costs import CostModel, Infeasible
from workbench.search.evaluation import FinalJob, job_for
from workbench.search.families import family as get_family

BASELINES = ("random", "width")


def has_zoo(fam, data: str) -> bool:
    try:
        fam.zoo_arch(data)
    except (ValueError, AttributeError):
        return False
    return True


def baseline_plan(configs: list, baselines: tuple) -> list[dict]:
    """The architectures of the baselines for the search trials `configs` (TrialConfig): the zoo
    architecture (when the family has a zoo model for the data), one random architecture per
    trial under that trial's budget (its seed draws it), the zoo architecture width-scaled to
    each budget. Each entry: role, name, arch (the family's Arch), its exact cost, and what made
    it (budget, trial, draws or factor). BaselineError when a budget admits no architecture."""
    first = configs[0]
    fam = get_family(first.family)
    val = load_dataset(first.data, "val")
    model = CostModel(fam, first.cost_settings(), val.image_shape, val.classes)
    plan = []
    zoo = fam.zoo_arch(first.data) if has_zoo(fam, first.data) else None
    if zoo is not None:
        entry = {"role": "zoo", "name": fam.ZOO[parse_spec(first.data)[0]], "arch": zoo}
        try:
            entry["cost"] = model.static(first.cost, zoo)
        except Infeasible as exc:  # the joint search on a chip the zoo model does not fit:
            entry["infeasible"] = str(exc)  # reported, not trained
        plan.append(entry)
    if "random" in baselines:
        net = fam.supernet(fam.make_space(val.image_shape, val.classes, first.space), first.init_prob)
        for cfg in configs:
            ((arch, cost, draws),) = random_architectures(
                net, model, cfg.cost, [cfg.budget], seed=cfg.seed * 1_000_003 + int(cfg.budget)
            )
            plan.append(
                {
                    "role": "random",
                    "name": f"random_{cfg.name}",
                    "arch": arch,
                    "cost": cost,
                    "budget": cfg.budget,
                    "for_trial": cfg.name,
                    "draws": draws,
                }
            )
    if "width" in baselines:
        if zoo is None:
            raise BaselineError(
                f"width scaling needs the {first.family} family's zoo model for "
                f"--data {first.data}, and there is none"
            )
        for budget in sorted({c.budget for c in configs}):
            arch, cost, factor = width_scaled(fam, zoo, model, first.cost, budget)
            plan.append(
                {
                    "role": "width",
                    "name": f"width_b{budget:g}",
                    "arch": arch,
                    "cost": cost,
                    "budget": budget,
                    "factor": factor,
                }
            )
    return plan


def final_jobs(configs: list, plan: list[dict], models_dir: Path) -> list[FinalJob]:
    """The final trainings of the planned architectures, seeds 0..final_seeds-1 (one job per
    distinct architecture and seed: the folders are keyed by architecture). `models_dir` is
    made absolute: Ray Tune runs a job in a working directory of its own."""
    first = configs[0]
    models_dir = Path(models_dir).resolve()
    jobs, seen = [], set()
    for entry in plan:
        if entry.get("infeasible"):
            continue
        for seed in range(first.final_seeds):
            job = model_job(first, entry["arch"], seed, models_dir)
            if job.out not in seen:
                seen.add(job.out)
                jobs.append(job)
    return jobs


def model_job(cfg, arch, seed: int, models_dir: Path) -> FinalJob:
    """The final training of `arch` with `seed` under the trial settings `cfg` (the recipe,
    costs, device and threads every model of the search shares)."""
    return job_for(
        cfg.family,
        arch,
        cfg.data,
        seed,
        models_dir,
        epochs=cfg.final_epochs,
        float_epochs=cfg.final_float_epochs,
        costs=cfg.costs,
        threads=cfg.threads,
        device=cfg.device,
        energy_images=cfg.energy_images,
        export=cfg.export,
    )
