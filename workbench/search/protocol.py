"""The search's claims, made by a protocol a researcher can check.

1. **Selection on validation only.** The Pareto front, every "dominates" and every comparison
   with a baseline are decided on the validation split. The test split is evaluated once per
   reported model and training seed (workbench/search/evaluation.py) and only reported.
2. **One recipe, several seeds.** Every reported model (the search's, the baselines', the zoo
   architecture's) is trained with the identical final recipe over the same seeds 0..N-1;
   accuracies are reported as the mean over seeds with a 95% t interval, and stored as counts.
3. **Paired comparisons.** Two models are compared on the same images: per image, the fraction
   of training seeds that got it right; a bootstrap over images gives the difference, its 95%
   interval and a p-value (workbench/search/stats.py). "Dominates the zoo" means: exact cost at
   most `cost_fraction` of the zoo architecture's, and validation accuracy not significantly
   worse (the verdict says whether it is significantly better or not significantly different).
4. **Baselines at matched compute.** Random search gets one architecture per search trial, drawn
   under that trial's budget; width scaling gets the zoo architecture scaled to each budget
   (workbench/search/baselines.py). At every budget, the search's best model (on validation) is
   compared with each baseline's best under the same budget.

The functions here are pure: they take finished evaluations (counts and per-image outcomes) and
return the report's sections.
"""

from __future__ import annotations

import numpy as np

from workbench.search import stats
from workbench.search.pareto import pareto_front

ROLES = ("search", "random", "width", "zoo")


def seed_rows(results: list[dict]) -> list[dict]:
    """Per training seed: the counts (never rounded percentages)."""
    return [
        {
            "seed": r["job"]["seed"],
            "val_correct": r["val_correct"],
            "val_total": r["val_total"],
            "test_correct": r["test_correct"],
            "test_total": r["test_total"],
        }
        for r in sorted(results, key=lambda r: r["job"]["seed"])
    ]


def accuracy_summary(rows: list[dict], split: str) -> dict:
    """Mean accuracy over seeds with its 95% interval, from the counts (the t interval of three
    seeds near 100% reaches past it: it is cut at 0 and 1, where accuracies end)."""
    acc = [r[f"{split}_correct"] / r[f"{split}_total"] for r in rows]
    mean, low, high = stats.mean_interval(acc)
    return {"mean": mean, "low": max(0.0, low), "high": min(1.0, high), "seeds": len(acc)}


def per_image(outcome_list: list[dict], split: str) -> np.ndarray:
    """Per image of `split`: the fraction of the seeds' models that got it right."""
    return np.mean([o[split] for o in outcome_list], axis=0)


def paired(a: list[dict], b: list[dict], split: str, seed: int = 0) -> dict:
    """Model A (its seeds' outcomes) against model B on the same images of `split`: the
    paired bootstrap, its verdict, and McNemar's test on each seed pair's outcomes (seed k of A
    against seed k of B) for reference."""
    res = stats.paired_bootstrap(per_image(a, split), per_image(b, split), seed=seed)
    res["verdict"] = stats.verdict(res)
    # the seeds both have: while a search runs, one model may have finished more seeds than the
    # other (the report is rewritten after every training)
    res["mcnemar_p"] = [stats.mcnemar(x[split], y[split])["p"] for x, y in zip(a, b, strict=False)]
    return res


def dominance(cost_ratio: float, vs_zoo_val: dict, cost_fraction: float) -> dict:
    """Whether a model dominates the zoo architecture, and in which sense."""
    cheap = cost_ratio <= cost_fraction
    verdict = vs_zoo_val["verdict"]
    holds = cheap and verdict != "worse"
    how = (
        "validation accuracy significantly better"
        if verdict == "better"
        else "validation accuracy not significantly different"
        if verdict != "worse"
        else "validation accuracy significantly worse"
    )
    return {
        "dominates": holds,
        "how": f"cost {cost_ratio:.3f}x the zoo's "
        f"({'within' if cheap else 'over'} {cost_fraction:g}x); "
        f"{how} (p = {vs_zoo_val['p']:.3g})",
    }


def pareto(models: list[dict], cost: str) -> list[str]:
    """Names of the models on the (mean validation accuracy, exact cost) front."""
    points = [(m["accuracy"]["val"], m["costs"][cost]) for m in models]
    return [models[i]["name"] for i in pareto_front(points)]


def best_under(models: list[dict], cost: str, budget: float, slack: float = 1.0) -> dict | None:
    """The model with the best mean validation accuracy among those costing at most
    `slack` x `budget` (ties: the cheaper)."""
    fits = [m for m in models if m["costs"][cost] <= slack * budget]
    return max(fits, key=lambda m: (m["accuracy"]["val"], -m["costs"][cost]), default=None)


def budget_comparisons(
    by_role: dict, cost: str, budgets: list[float], outcomes_of, seed: int = 0
) -> list[dict]:
    """At each budget: the search's best model (on validation) against random search's best and
    width scaling's best under the same budget, paired on the validation images (and the test
    images, reported). `outcomes_of(model)` gives a model's per-seed outcomes."""
    rows = []
    for budget in budgets:
        mine = best_under(by_role.get("search", []), cost, budget)
        row = {"budget": budget, "search": mine and mine["name"]}
        for role in ("random", "width"):
            other = best_under(by_role.get(role, []), cost, budget)
            entry = {"model": other and other["name"]}
            if mine is not None and other is not None:
                a, b = outcomes_of(mine), outcomes_of(other)
                entry["val"] = paired(a, b, "val", seed)
                entry["test"] = paired(a, b, "test", seed)
                entry["search_beats_it"] = entry["val"]["verdict"] == "better"
            row[role] = entry
        rows.append(row)
    return rows


def rank_agreement(supernet_val: dict, final_val: dict) -> dict:
    """Kendall's tau between the super network's validation accuracy of sub-architectures and
    their validation accuracy after final training (both keyed by model name): how far the
    search's own ranking can be believed."""
    names = sorted(set(supernet_val) & set(final_val))
    if len(names) < 2:
        return {"tau": None, "p": None, "n": len(names)}
    return stats.kendall([supernet_val[n] for n in names], [final_val[n] for n in names])
