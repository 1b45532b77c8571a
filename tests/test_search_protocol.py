"""The search's protocol (workbench/search/protocol.py, stats.py, baselines.py) and estimator
(gates.py, the families' `relevant` and `encode`): the statistics against their definitions,
the masks against what the decoder does, the baselines within their budgets, the verdicts on
outcomes built to have a known answer. Every random draw starts from SEED."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.search import baselines, bnn_family, protocol, sac_family, stats
from workbench.search.costs import CostModel, CostSettings
from workbench.search.gates import chain_relevant, extracted_probability, reinforce_loss

SEED = 2018
print(f"seed {SEED}")

SPACES = [
    (sac_family, {}, (1, 8, 8)),
    (sac_family, "zoo:fashion", (1, 28, 28)),
    (bnn_family, {}, (1, 8, 8)),
    (bnn_family, {"min_channels": [64, 8]}, (1, 28, 28)),
]


def _net(fam, opts, shape):
    if opts == "zoo:fashion":
        opts = fam.zoo_space("fashion")
    return fam.supernet(fam.make_space(shape, 10, opts), 0.9)


# -- the estimator -------------------------------------------------------------------------
@pytest.mark.parametrize("fam, opts, shape", SPACES, ids=["sac", "sac-zoo-fashion", "bnn", "bnn-min64"])
def test_a_gate_is_relevant_exactly_when_flipping_it_changes_the_sub_network(fam, opts, shape):
    net = _net(fam, opts, shape)
    g = torch.Generator().manual_seed(SEED)
    for _ in range(150):
        h = torch.bernoulli(torch.full((net.gates.size,), 0.5), generator=g)
        arch = net.decode(h)
        rel = net.relevant(h[None])[0]
        for j in range(net.gates.size):
            flipped = h.clone()
            flipped[j] = 1 - flipped[j]
            assert (net.decode(flipped) != arch) == bool(rel[j]), (j, arch)


@pytest.mark.parametrize("fam, opts, shape", SPACES, ids=["sac", "sac-zoo-fashion", "bnn", "bnn-min64"])
def test_encode_inverts_decode(fam, opts, shape):
    net = _net(fam, opts, shape)
    g = torch.Generator().manual_seed(SEED)
    for _ in range(200):
        arch = net.decode(torch.bernoulli(torch.full((net.gates.size,), 0.5), generator=g))
        h = net.encode(arch)
        assert h is not None and net.decode(h) == arch
        assert fam.arch_from_dict(arch.as_dict()) == arch


def test_encode_refuses_an_architecture_outside_the_space():
    net = _net(sac_family, {}, (1, 8, 8))
    wide = sac_family.SacArch(1, (32, 128), (1, 1), 1)
    assert net.encode(wide) is None
    assert _net(bnn_family, {}, (1, 8, 8)).encode(bnn_family.BnnArch((64, 128, 8), 256)) is None


def test_chain_relevance():
    h = torch.tensor([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0]])
    assert chain_relevant(h).tolist() == [[1, 1, 1], [1, 0, 0], [1, 1, 0]]


def test_leave_one_out_baseline_is_the_mean_of_the_others():
    d = torch.tensor([1.0, 2.0, 4.0, 9.0])
    logp = torch.zeros(4, requires_grad=True)
    reinforce_loss(d, logp).backward()
    others = torch.tensor([(16 - v) / 3 for v in d.tolist()])
    assert torch.allclose(logp.grad, (d - others) / 4)
    logp.grad = None
    reinforce_loss(d, logp, baseline="batch-mean").backward()
    assert torch.allclose(logp.grad, (d - d.mean()) / 4)
    with pytest.raises(ValueError, match="baseline must be one of"):
        reinforce_loss(d, logp, baseline="median")


def test_masked_log_prob_leaves_irrelevant_gates_without_gradient():
    net = _net(bnn_family, {}, (1, 8, 8))
    h = torch.zeros(1, net.gates.size)  # depth 1: block 1's width gates do not run
    logp = net.gates.log_prob(h, net.relevant(h))
    logp.sum().backward()
    idle = net.gates.groups["width1"].slice
    assert torch.all(net.gates.logits.grad[idle] == 0)
    assert torch.all(net.gates.logits.grad[net.gates.groups["width0"].slice] != 0)


def test_extracted_probability_is_one_for_saturated_gates():
    net = _net(sac_family, {}, (1, 8, 8))
    with torch.no_grad():
        net.gates.logits.copy_(torch.where(torch.rand(net.gates.size) > 0.5, 30.0, -30.0))
    arch = net.decode(net.gates.deterministic()[0])
    assert extracted_probability(net, arch, samples=2000) == 1.0
    with torch.no_grad():
        net.gates.logits.zero_()
    assert extracted_probability(net, arch, samples=2000) < 0.05


# -- statistics -----------------------------------------------------------------------------
def test_mean_interval_is_students_t():
    mean, low, high = stats.mean_interval([0.90, 0.92, 0.94])
    assert mean == pytest.approx(0.92)
    assert high - mean == pytest.approx(4.302653 * 0.02 / 3**0.5, rel=1e-5)
    assert stats.mean_interval([0.5]) == (0.5, 0.5, 0.5)


def test_paired_bootstrap_sees_a_real_difference_and_not_a_fake_one():
    rng = np.random.default_rng(SEED)
    a = (rng.random(2000) < 0.95).astype(float)
    b = a.copy()
    b[rng.choice(2000, 100, replace=False)] = 0.0  # B misses 100 more images
    res = stats.paired_bootstrap(a, b, seed=SEED)
    assert res["diff"] > 0 and res["low"] > 0 and res["p"] < 0.001
    assert stats.verdict(res) == "better"
    same = stats.paired_bootstrap(a, rng.permutation(a), seed=SEED)
    assert same["p"] > 0.05 and stats.verdict(same) == "no significant difference"
    assert stats.paired_bootstrap(a, a, seed=SEED)["p"] == 1.0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=300))
def test_paired_bootstrap_is_antisymmetric_and_bounded(pairs):
    a = np.array([p[0] for p in pairs], float)
    b = np.array([p[1] for p in pairs], float)
    ab, ba = (
        stats.paired_bootstrap(a, b, rounds=500, seed=SEED),
        stats.paired_bootstrap(b, a, rounds=500, seed=SEED),
    )
    assert ab["diff"] == pytest.approx(-ba["diff"]) and ab["p"] == pytest.approx(ba["p"])
    assert 0.0 <= ab["p"] <= 1.0 and ab["low"] <= ab["diff"] + 1e-12 <= ab["high"] + 2e-12


def test_mcnemar_counts_the_discordant_images():
    a = np.array([1, 1, 1, 0, 0, 1], bool)
    b = np.array([1, 0, 0, 0, 1, 1], bool)
    res = stats.mcnemar(a, b)
    assert (res["only_a"], res["only_b"]) == (2, 1) and res["p"] == pytest.approx(1.0)


def test_kendall():
    assert stats.kendall([1, 2, 3, 4], [10, 20, 30, 40])["tau"] == pytest.approx(1.0)
    assert stats.kendall([1, 2, 3, 4], [4, 3, 2, 1])["tau"] == pytest.approx(-1.0)


# -- the protocol's verdicts ------------------------------------------------------------------
def _model(name, correct_per_seed, cost, total=100):
    rows = [
        {"seed": k, "val_correct": c, "val_total": total, "test_correct": c, "test_total": total}
        for k, c in enumerate(correct_per_seed)
    ]
    return {
        "name": name,
        "rows": rows,
        "accuracy": {"val": protocol.accuracy_summary(rows, "val")["mean"]},
        "costs": {"cycles": cost},
    }


def _outcomes(correct_per_seed, total=100):
    return [{"val": np.arange(total) < c, "test": np.arange(total) < c} for c in correct_per_seed]


def test_dominance_needs_the_cost_and_an_accuracy_not_significantly_worse():
    zoo = _outcomes([90, 90, 90])
    better = protocol.paired(_outcomes([99, 99, 99]), zoo, "val", SEED)
    worse = protocol.paired(_outcomes([80, 80, 80]), zoo, "val", SEED)
    tie = protocol.paired(_outcomes([90, 90, 90]), zoo, "val", SEED)
    assert better["verdict"] == "better" and worse["verdict"] == "worse"
    assert tie["verdict"] == "no significant difference"
    assert protocol.dominance(0.5, better, 1.0)["dominates"]
    assert "significantly better" in protocol.dominance(0.5, better, 1.0)["how"]
    assert protocol.dominance(0.9, tie, 1.0)["dominates"]
    assert not protocol.dominance(0.5, worse, 1.0)["dominates"]
    assert not protocol.dominance(1.2, better, 1.0)["dominates"]


def test_front_and_budget_comparisons_decide_on_validation():
    models = {
        "search": [_model("s1", [95, 96, 97], 10), _model("s2", [80, 80, 80], 5)],
        "random": [_model("r1", [85, 85, 86], 9)],
        "width": [_model("w1", [96, 96, 96], 12)],
    }
    outs = {
        "s1": _outcomes([95, 96, 97]),
        "s2": _outcomes([80, 80, 80]),
        "r1": _outcomes([85, 85, 86]),
        "w1": _outcomes([96, 96, 96]),
    }
    assert protocol.pareto(models["search"], "cycles") == ["s2", "s1"]
    rows = protocol.budget_comparisons(models, "cycles", [10.0, 12.0], lambda m: outs[m["name"]], SEED)
    at10, at12 = rows
    assert at10["search"] == "s1" and at10["random"]["model"] == "r1"
    assert at10["random"]["search_beats_it"] and at10["width"]["model"] is None
    assert at12["width"]["model"] == "w1" and not at12["width"]["search_beats_it"]


def test_counts_are_kept_not_rounded():
    rows = protocol.seed_rows(
        [
            {
                "job": {"seed": 1},
                "val_correct": 357,
                "val_total": 364,
                "test_correct": 360,
                "test_total": 364,
            },
            {
                "job": {"seed": 0},
                "val_correct": 357,
                "val_total": 364,
                "test_correct": 358,
                "test_total": 364,
            },
        ]
    )
    assert [r["seed"] for r in rows] == [0, 1] and rows[0]["val_correct"] == 357
    assert protocol.accuracy_summary(rows, "val")["mean"] == 357 / 364


# -- the baselines --------------------------------------------------------------------------
@pytest.mark.parametrize("fam", [sac_family, bnn_family])
def test_baselines_stay_within_their_budgets(fam):
    net = _net(fam, {}, (1, 8, 8))
    model = CostModel(fam, CostSettings(), (1, 8, 8), 10)
    zoo = fam.zoo_arch("digits")
    zoo_cost = model.static("cycles", zoo)
    budgets = [0.5 * zoo_cost, 0.8 * zoo_cost]
    drawn = baselines.random_architectures(net, model, "cycles", budgets, SEED)
    assert [c <= b for (_, c, _), b in zip(drawn, budgets, strict=True)] == [True, True]
    again = baselines.random_architectures(net, model, "cycles", budgets, SEED)
    assert [a for a, _, _ in again] == [a for a, _, _ in drawn]  # seeded
    for budget in budgets:
        arch, c, factor = baselines.width_scaled(fam, zoo, model, "cycles", budget)
        assert c == model.static("cycles", arch) <= budget and factor < 1
        bigger = fam.scaled(zoo, factor + 1 / 64)
        assert (
            bigger == arch or model.static("cycles", bigger) > budget or model.static("cycles", bigger) <= c
        )
    assert baselines.width_scaled(fam, zoo, model, "cycles", zoo_cost)[0] == zoo
    with pytest.raises(baselines.BaselineError, match="never costs at most"):
        baselines.width_scaled(fam, zoo, model, "cycles", 1.0)


# -- the budget projection ----------------------------------------------------------------------
@pytest.mark.parametrize("fam", [sac_family, bnn_family])
def test_projection_brings_the_architecture_within_the_budget(fam):
    from workbench.search.projection import project

    net = _net(fam, {}, (1, 8, 8))
    model = CostModel(fam, CostSettings(), (1, 8, 8), 10)
    h = net.gates.deterministic()[0]
    full = model.static("cycles", net.decode(h))
    for share in (0.3, 0.6, 0.9):
        projected, flips = project(net, h, model, "cycles", share * full)
        cost = model.static("cycles", net.decode(projected))
        assert cost <= share * full and flips and flips[-1]["cost"] == cost
        assert all(a["cost"] > b["cost"] for a, b in pairwise(flips))
    same, none = project(net, h, model, "cycles", full)  # within already: unchanged
    assert none == [] and torch.equal(same, h)


def test_projection_flips_the_least_confident_gates_first():
    from workbench.search.projection import project

    net = _net(sac_family, {}, (1, 8, 8))
    model = CostModel(sac_family, CostSettings(), (1, 8, 8), 10)
    with torch.no_grad():
        net.gates.logits.fill_(5.0)  # every gate confidently on
        doubt = net.gates.groups["width3"].start  # but one
        net.gates.logits[doubt] = 0.1
    h = net.gates.deterministic()[0]
    full = model.static("cycles", net.decode(h))
    _, flips = project(net, h, model, "cycles", full - 1)
    assert flips[0]["gate"] == doubt


# -- the protocol end to end: a tiny digits sweep with both baselines and two final seeds ------
PROTOCOL_SWEEP = [
    "--family",
    "sac",
    "--cost",
    "cycles",
    "--budgets",
    "6000,20000",
    "--epochs",
    "2",
    "--warmup-epochs",
    "1",
    "--final-epochs",
    "1",
    "--final-float-epochs",
    "1",
    "--layers",
    "2",
    "--width",
    "16",
    "--cpus",
    "2",
    "--final-seeds",
    "2",
    "--baselines",
    "random,width",
]


def test_the_protocol_end_to_end(tmp_path):
    import json
    import subprocess
    import sys

    from tests.helpers import ROOT

    # a relative --out, as users give it (Ray runs the trainings in directories of its own)
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "search.py"), *PROTOCOL_SWEEP, "--out", "sweep"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=900,
    )
    tmp_path = tmp_path / "sweep"
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    doc = json.loads((tmp_path / "pareto.json").read_text())
    assert doc["complete"] and doc["protocol"]["final_seeds"] == 2
    zoo = doc["zoo"]
    assert zoo["name"] == "sac_digits" and [r["seed"] for r in zoo["seeds"]] == [0, 1]
    assert {len(doc["baselines"]["random"]), len(doc["baselines"]["width"])} == {2}
    for m in doc["models"] + doc["baselines"]["random"] + doc["baselines"]["width"]:
        # counts, never rounded percentages; the mean is theirs; the interval holds the mean
        assert [r["val_total"] for r in m["seeds"]] == [183, 183]
        assert [r["test_total"] for r in m["seeds"]] == [364, 364]
        assert m["accuracy"]["val"] == pytest.approx(sum(r["val_correct"] for r in m["seeds"]) / (2 * 183))
        lo, hi = m["intervals"]["val"]
        assert lo <= m["accuracy"]["val"] <= hi
        assert m["cost"] <= m["budget"]  # every model within its budget
        assert 0.0 <= m["vs_zoo"]["val"]["p"] <= 1.0 and "verdict" in m["vs_zoo"]["val"]
        assert m["dominates_zoo"] == (m["cost_vs_zoo"] <= 1.0 and m["vs_zoo"]["val"]["verdict"] != "worse")
    for m in doc["models"]:
        assert m["budget_ratio"] <= 1.0 and 0.0 <= m["extracted_probability"] <= 1.0
    assert [b["budget"] for b in doc["budgets"]] == [6000.0, 20000.0]
    assert all("p" in b["random"]["val"] for b in doc["budgets"])
    assert doc["rank_agreement"]["n"] >= 2
    assert "At each budget" in run.stdout and "Kendall tau" in run.stdout
    # the same command again: everything is read back, nothing trained
    again = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "search.py"), *PROTOCOL_SWEEP, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert "2 trial(s) (2 already done" in again.stderr and ": final training," not in again.stderr
    assert json.loads((tmp_path / "pareto.json").read_text())["models"] == doc["models"]


def test_every_family_satisfies_its_protocol():
    from workbench.search import resnet_fabric
    from workbench.search.families import FAMILIES, Family, IntegerFamily, family

    assert set(FAMILIES) == {"sac", "bnn", "resnet-fabric"}
    for name in FAMILIES:
        assert isinstance(family(name), Family), name
    assert isinstance(sac_family, IntegerFamily) and isinstance(bnn_family, IntegerFamily)
    assert not isinstance(resnet_fabric, IntegerFamily)  # float networks: no protocol


def test_a_model_with_fewer_finished_seeds_is_compared_on_the_seeds_both_have():
    """While a search runs, its report is rewritten after every training: one model may have 1
    seed done while the other has 3. McNemar pairs seed k with seed k, so it has one p-value
    per seed both have (a strict pairing once failed every report written mid-run)."""
    one_seed = protocol.paired(_outcomes([99]), _outcomes([90, 90, 90]), "val", SEED)
    assert len(one_seed["mcnemar_p"]) == 1 and one_seed["verdict"] == "better"
    other_way = protocol.paired(_outcomes([80, 80, 80]), _outcomes([90, 90]), "val", SEED)
    assert len(other_way["mcnemar_p"]) == 2 and other_way["verdict"] == "worse"
