"""The search's objective and front selection, as pure functions on hand-made models (seconds;
tests/test_search_protocol.py runs a whole search): workbench/search/pareto.py's `dominates`
and `pareto_front` (no worse in both, better in one; exact duplicates kept; by increasing cost)
and workbench/search/protocol.py's claims: the front on mean validation accuracy and exact cost,
the best model under a budget (ties: the cheaper), "dominates the zoo" (cost within the
fraction and not significantly worse), the per-budget comparisons, seed rows and intervals."""

import numpy as np
import pytest

from workbench.search import protocol, stats
from workbench.search.pareto import dominates, pareto_front


# -- pareto.py ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((0.9, 10), (0.8, 10), True),  # more accurate, same cost
        ((0.8, 9), (0.8, 10), True),  # cheaper, same accuracy
        ((0.9, 9), (0.8, 10), True),  # both
        ((0.8, 10), (0.8, 10), False),  # equal: neither
        ((0.9, 11), (0.8, 10), False),  # more accurate but dearer
        ((0.7, 9), (0.8, 10), False),  # cheaper but less accurate
        ((0.8, 10), (0.9, 10), False),
        ((0.8, 10), (0.8, 9), False),
    ],
)
def test_dominates_means_no_worse_in_both_and_better_in_one(a, b, expected):
    assert dominates(a, b) is expected


def test_the_front_keeps_the_non_dominated_by_increasing_cost():
    points = [(0.9, 30), (0.7, 10), (0.8, 30), (0.85, 20), (0.6, 10), (0.95, 40)]
    assert pareto_front(points) == [1, 3, 0, 5]


def test_the_front_keeps_exact_duplicates_and_orders_equal_costs_by_accuracy():
    assert pareto_front([(0.8, 10), (0.8, 10), (0.5, 5)]) == [2, 0, 1]
    assert pareto_front([]) == []
    assert pareto_front([(0.5, 1)]) == [0]


# -- protocol.py --------------------------------------------------------------------------------
def model(name, val, cost, **costs):
    return {"name": name, "accuracy": {"val": val}, "costs": {"cycles": cost, **costs}}


def test_pareto_names_the_front_on_validation_accuracy_and_the_chosen_cost():
    models = [model("a", 0.9, 30, params=5), model("b", 0.7, 10, params=50), model("c", 0.8, 30, params=1)]
    assert protocol.pareto(models, "cycles") == ["b", "a"]
    assert protocol.pareto(models, "params") == ["c", "a"]


def test_best_under_a_budget_is_the_most_accurate_that_fits_ties_the_cheaper():
    models = [model("a", 0.9, 30), model("b", 0.8, 10), model("c", 0.8, 8), model("d", 0.95, 31)]
    assert protocol.best_under(models, "cycles", 30)["name"] == "a"  # at the budget fits
    assert protocol.best_under(models, "cycles", 29)["name"] == "c"
    assert protocol.best_under(models, "cycles", 20, slack=1.5)["name"] == "a"
    assert protocol.best_under(models, "cycles", 7) is None
    assert protocol.best_under([], "cycles", 7) is None


@pytest.mark.parametrize(
    ("ratio", "verdict", "holds", "how"),
    [
        (
            0.5,
            "better",
            True,
            "cost 0.500x the zoo's (within 0.5x); validation accuracy significantly better",
        ),
        (
            0.25,
            "no significant difference",
            True,
            "cost 0.250x the zoo's (within 0.5x); validation accuracy not significantly different",
        ),
        (
            0.25,
            "worse",
            False,
            "cost 0.250x the zoo's (within 0.5x); validation accuracy significantly worse",
        ),
        (
            0.501,
            "better",
            False,
            "cost 0.501x the zoo's (over 0.5x); validation accuracy significantly better",
        ),
    ],
)
def test_dominance_needs_the_cost_fraction_and_no_significant_loss(ratio, verdict, holds, how):
    d = protocol.dominance(ratio, {"verdict": verdict, "p": 0.01234}, 0.5)
    assert d == {"dominates": holds, "how": f"{how} (p = 0.0123)"}


def test_seed_rows_are_the_counts_by_seed():
    results = [
        {
            "job": {"seed": s},
            "val_correct": 10 + s,
            "val_total": 20,
            "test_correct": 5 + s,
            "test_total": 30,
            "x": 1,
        }
        for s in (2, 0, 1)
    ]
    assert protocol.seed_rows(results) == [
        {"seed": s, "val_correct": 10 + s, "val_total": 20, "test_correct": 5 + s, "test_total": 30}
        for s in (0, 1, 2)
    ]


def test_accuracy_summary_is_the_mean_over_seeds_with_its_interval_cut_at_0_and_1():
    rows = [{"val_correct": c, "val_total": 100, "test_correct": 1, "test_total": 2} for c in (98, 100, 99)]
    s = protocol.accuracy_summary(rows, "val")
    mean, low, high = stats.mean_interval([0.98, 1.0, 0.99])
    assert s == {"mean": mean, "low": low, "high": 1.0, "seeds": 3} and high > 1.0
    low_rows = [{"test_correct": c, "test_total": 100} for c in (0, 2, 1)]
    t = protocol.accuracy_summary(low_rows, "test")
    assert t["low"] == 0.0 and t["high"] == pytest.approx(stats.mean_interval([0, 0.02, 0.01])[2])
    assert protocol.accuracy_summary([{"val_correct": 3, "val_total": 4}], "val") == {
        "mean": 0.75,
        "low": 0.75,
        "high": 0.75,
        "seeds": 1,
    }


def test_per_image_is_the_fraction_of_seeds_right():
    outs = [{"val": [1, 0, 1, 0]}, {"val": [1, 1, 0, 0]}]
    assert protocol.per_image(outs, "val").tolist() == [1.0, 0.5, 0.5, 0.0]


def test_paired_compares_per_image_fractions_with_a_verdict_and_mcnemar_per_seed():
    rng = np.random.default_rng(0)
    b = [{"val": (rng.random(400) < 0.6).astype(int)} for _ in range(2)]
    a = [{"val": np.maximum(o["val"], (rng.random(400) < 0.5).astype(int))} for o in b]  # better
    res = protocol.paired(a, b, "val", seed=3)
    ref = stats.paired_bootstrap(protocol.per_image(a, "val"), protocol.per_image(b, "val"), seed=3)
    assert {k: res[k] for k in ref} == ref
    assert res["verdict"] == "better" == stats.verdict(ref)
    assert res["mcnemar_p"] == [stats.mcnemar(x["val"], y["val"])["p"] for x, y in zip(a, b, strict=True)]
    # the bootstrap's draws start from the seed: 0 unless given
    assert protocol.paired(a, b, "val") == protocol.paired(a, b, "val", seed=0)
    assert protocol.paired(a, b, "val")["low"] != res["low"]
    assert protocol.paired(b, a, "val")["verdict"] == "worse"
    # mid-run, B may have fewer finished seeds: McNemar pairs the seeds both have
    partial = protocol.paired(a, b[:1], "val")
    assert partial["mcnemar_p"] == [stats.mcnemar(a[0]["val"], b[0]["val"])["p"]]


def test_budget_comparisons_pair_the_search_with_each_baseline_under_the_budget():
    good = {"val": [1] * 60 + [0] * 40, "test": [1] * 50 + [0] * 50}
    bad = {"val": [1] * 30 + [0] * 70, "test": [0] * 100}
    outcomes = {"s1": [good], "s2": [bad], "r1": [bad], "w1": [good]}
    by_role = {
        "search": [model("s1", 0.6, 10), model("s2", 0.3, 4)],
        "random": [model("r1", 0.3, 5)],
        "width": [model("w1", 0.6, 20)],
    }
    rows = protocol.budget_comparisons(by_role, "cycles", [3, 5, 20], lambda m: outcomes[m["name"]], seed=1)
    assert [r["budget"] for r in rows] == [3, 5, 20]
    assert rows[0] == {"budget": 3, "search": None, "random": {"model": None}, "width": {"model": None}}
    assert (
        rows[1]["search"] == "s2"
        and rows[1]["random"]["model"] == "r1"
        and rows[1]["width"] == {"model": None}
    )
    r1 = rows[1]["random"]
    assert r1["val"] == protocol.paired([bad], [bad], "val", 1)
    assert r1["test"] == protocol.paired([bad], [bad], "test", 1)
    assert r1["search_beats_it"] is False
    top = rows[2]
    assert top["search"] == "s1"
    assert top["random"]["val"] == protocol.paired([good], [bad], "val", 1)
    assert top["random"]["test"] == protocol.paired([good], [bad], "test", 1)

    assert top["random"]["search_beats_it"] is True and top["random"]["test"]["diff"] == pytest.approx(0.5)
    assert top["width"]["model"] == "w1" and top["width"]["search_beats_it"] is False
    assert protocol.budget_comparisons({}, "cycles", [1], lambda m: None) == [
        {"budget": 1, "search": None, "random": {"model": None}, "width": {"model": None}}
    ]


def test_budget_comparisons_draw_from_the_given_seed_0_unless_given():
    rng = np.random.default_rng(5)
    close = {
        n: [{"val": (rng.random(200) < 0.5).astype(int), "test": (rng.random(200) < 0.5).astype(int)}]
        for n in "sr"
    }
    by_role = {"search": [model("s", 0.5, 1)], "random": [model("r", 0.5, 1)]}
    seeded = protocol.budget_comparisons(by_role, "cycles", [1], lambda m: close[m["name"]], seed=7)
    default = protocol.budget_comparisons(by_role, "cycles", [1], lambda m: close[m["name"]])
    for split in ("val", "test"):
        assert seeded[0]["random"][split] == protocol.paired(close["s"], close["r"], split, 7)
        assert default[0]["random"][split] == protocol.paired(close["s"], close["r"], split, 0)
        assert seeded[0]["random"][split]["p"] != default[0]["random"][split]["p"]


def test_rank_agreement_is_kendall_over_the_common_names():
    sup = {"a": 0.1, "b": 0.3, "c": 0.2, "x": 0.9}
    fin = {"a": 0.5, "b": 0.7, "c": 0.6, "y": 0.1}
    assert protocol.rank_agreement(sup, fin) == stats.kendall([0.1, 0.3, 0.2], [0.5, 0.7, 0.6])
    assert protocol.rank_agreement(sup, fin)["tau"] == 1.0
    assert protocol.rank_agreement({"a": 1, "b": 2}, {"a": 2, "b": 1})["tau"] == -1.0
    assert protocol.rank_agreement({"a": 1}, {"a": 2, "b": 1}) == {"tau": None, "p": None, "n": 1}


def _plot_doc(front_costs):
    """A pareto.json-shaped document with one search model per cost, all on the front."""
    models = [
        {
            "cost": c,
            "budget": c,
            "on_front": True,
            "accuracy": {"val": 0.9},
            "intervals": {"val": [0.88, 0.92]},
        }
        for c in front_costs
    ]
    return {"models": models, "unit": "cycles per image", "cost": "cycles", "family": "sac", "data": "digits"}


@pytest.mark.parametrize("costs", [[1000], [1000, 2000]])
def test_plot_shows_a_front_of_any_size(costs, tmp_path, monkeypatch):
    """pareto.png marks the front's models themselves (a staircase alone draws nothing for a
    one-model front) and joins several with the staircase; the budgets are dotted lines."""
    import matplotlib.pyplot as plt

    from workbench.search import front

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)
    front.plot(_plot_doc(costs), tmp_path / "pareto.png")
    (ax,) = figures[0].axes
    marks = [ln for ln in ax.lines if ln.get_label().startswith("search's Pareto front")]
    assert len(marks) == 1 and list(marks[0].get_xdata()) == costs and marks[0].get_marker() == "o"
    staircases = [ln for ln in ax.lines if ln.get_drawstyle() == "steps-post"]
    assert len(staircases) == (len(costs) > 1)
    dotted = [ln for ln in ax.lines if ln.get_linestyle() == ":"]
    assert sorted(ln.get_xdata()[0] for ln in dotted) == costs
    assert (tmp_path / "pareto.png").stat().st_size > 0
