"""The mapper: Algorithm 1 (as published) and the transfer-aware DP pick the known optimum on
synthetic profiles; JSON round trip; a measured profile through the emulation. The command
line and the report: tests/test_map_command.py."""

import itertools
import json

import numpy as np
import pytest

from gpu_kernels import IMPLS, GpuKernelError, run_network
from gpu_kernels.mapper import Mapping, batch_range, evaluate, map_network
from gpu_kernels.mapper_report import format_table, write_heatmap
from gpu_kernels.profiling import MeasuredProfile, Profile
from models import golden, ir
from models.random_networks import fashion_bnn, random_images
from tests.helpers import HAVE_GXX, assert_same, needs_gxx

INF = None


def small_net():
    rng = np.random.default_rng(3)
    pm = lambda *s: np.where(rng.random(s) < 0.5, -1, 1)  # noqa: E731
    return ir.Network(
        (2, 4, 4),
        "uint8",
        [
            ir.IntConv2d(weight=pm(8, 2, 3, 3), bias=np.zeros(8, int), padding=1),
            ir.Step(threshold=np.zeros(8, int), direction=np.ones(8, int)),
            ir.Flatten(),
            ir.BinDense(weight=pm(10, 128), bias=np.zeros(10, int)),
        ],
        name="small",
    )


def row(**times):
    """Seconds for the 8 implementations; unnamed ones are slow (20)."""
    return [times.get(m, 20.0) for m in IMPLS]


def synthetic_profile(net) -> Profile:
    """Batch 4: Algorithm 1 alternates CPU/GPU and pays four copies; all-CPU is best with
    copies. Batch 8 costs 1.5x per batch for half the batches: both algorithms pick it."""
    layers4 = [row(cpu=10, X=8), row(cpu=1, X=3), row(cpu=10, XZ=9), row(cpu=1, Y=2)]
    layers8 = [[t * 1.5 for t in r] for r in layers4]
    copies = {4: [5.0] * 5, 8: [10.0] * 5}
    return Profile(
        net.name,
        [layer.describe() for layer in net.layers],
        [4, 8],
        {4: layers4, 8: layers8},
        copies,
        dict(copies),
        list(IMPLS),
        "synthetic",
    )


def test_synthetic_profile_known_optimum():
    net = small_net()
    m = map_network(net, [4, 8], synthetic_profile(net), n_images=8)
    a1, dp = m.algorithm1, m.dp
    # Algorithm 1: fastest per layer, ignoring copies; batch 8 has the lower sum (19 * 1.5)
    assert (a1.batch, a1.impls) == (8, ["X", "cpu", "XZ", "cpu"])
    assert a1.objective_s == pytest.approx(28.5)
    assert a1.per_batch_s == {4: pytest.approx(38.0), 8: pytest.approx(28.5)}
    # ... but its mapping copies in, out, in, out: 4 copies of 10
    assert [(c["boundary"], c["direction"]) for c in a1.transfers] == [
        (0, "h2d"),
        (1, "d2h"),
        (2, "h2d"),
        (3, "d2h"),
    ]
    assert a1.total_s == pytest.approx(68.5)
    # DP: staying on the CPU (22 * 1.5 = 33) beats every mix once copies count
    assert (dp.batch, dp.impls) == (8, ["cpu"] * 4)
    assert dp.total_s == pytest.approx(33.0) and dp.transfers == []


def test_dp_prefers_staying_on_gpu_when_copies_dominate():
    net = small_net()
    layers = [row(cpu=5, X=1), row(cpu=0.5, X=0.6), row(cpu=5, Z=1), row(cpu=0.5, XYZ=0.6)]
    prof = Profile(
        net.name,
        [layer.describe() for layer in net.layers],
        [16],
        {16: layers},
        {16: [0.1] + [3.0] * 3 + [0.1]},
        {16: [0.1] + [3.0] * 3 + [0.1]},
        list(IMPLS),
        "synthetic",
    )
    m = map_network(net, [16], prof, n_images=16)
    assert m.algorithm1.impls == ["X", "cpu", "Z", "cpu"]
    assert m.dp.impls == ["X", "X", "Z", "XYZ"]  # the fast CPU steps are not worth 2 copies
    assert m.dp.total_s == pytest.approx(0.1 + 1 + 0.6 + 1 + 0.6 + 0.1)


@pytest.mark.parametrize("seed", range(6))
def test_dp_equals_brute_force_on_random_profiles(seed):
    """Over all 8^4 per-layer mappings and every batch size, DP finds the cheapest (with
    copies), and Algorithm 1's choice is never cheaper once its copies are counted."""
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    net = small_net()
    batches = [1, 2, 4]
    lt = {
        b: [
            [None if rng.random() < 0.1 and m != "cpu" else float(rng.uniform(0.1, 5)) for m in IMPLS]
            for _ in range(4)
        ]
        for b in batches
    }
    h2d = {b: list(rng.uniform(0, 3, 5)) for b in batches}
    d2h = {b: list(rng.uniform(0, 3, 5)) for b in batches}
    names = [layer.describe() for layer in net.layers]
    prof = Profile("small", names, batches, lt, h2d, d2h, list(IMPLS), "random")
    m = map_network(net, batches, prof, n_images=10)
    best = min(
        (evaluate(list(c), prof, b, 10)[2], b, c)
        for b in batches
        for c in itertools.product(IMPLS, repeat=4)
        if all(lt[b][i][IMPLS.index(x)] is not None for i, x in enumerate(c))
    )
    assert m.dp.total_s == pytest.approx(best[0])
    assert m.dp.total_s <= m.algorithm1.total_s + 1e-12
    # Algorithm 1 = per-layer argmin at the batch size with the lowest sum
    for b in batches:
        k = -(-10 // b)
        assert m.algorithm1.per_batch_s[b] == pytest.approx(
            sum(min(t for t in r if t is not None) * k for r in lt[b])
        )


def test_mapping_json_round_trip_and_runner_accepts_it(tmp_path):
    net = small_net()
    m = map_network(net, [4, 8], synthetic_profile(net), n_images=8)
    path = m.save(tmp_path / "m.json")
    back = Mapping.from_json(json.loads(path.read_text()))
    assert back.dp.impls == m.dp.impls and back.algorithm1.per_batch_s == m.algorithm1.per_batch_s
    assert back.profile.layer_s == m.profile.layer_s
    assert "Both choose batch 8" in format_table(m)  # the report: tests/test_map_command.py
    if not HAVE_GXX:
        return
    x = random_images(1, 9, net.input_shape)
    res = run_network(net, x, back, backend="emulation")  # the DP choice, its batch
    assert res.impls == m.dp.impls and res.batch == 8
    res1 = run_network(net, x, back.choice("algorithm1"), backend="emulation")
    assert res1.impls == m.algorithm1.impls
    assert_same(res1.scores, golden.run(net, x).scores, "scores")


def test_profile_errors_are_clear():
    net = small_net()
    prof = synthetic_profile(net)
    with pytest.raises(GpuKernelError, match="no times for batch sizes \\[16\\]"):
        map_network(net, [4, 16], prof, n_images=8)
    with pytest.raises(GpuKernelError, match="different network"):
        map_network(fashion_bnn(0), [4], prof)
    bad = prof.to_json()
    bad["layer_s"]["4"][0] = [None] * 8
    with pytest.raises(GpuKernelError, match="no implementation can run"):
        map_network(net, [4], bad)
    with pytest.raises(GpuKernelError, match="batch exponents"):
        batch_range(5, 2)


@needs_gxx
def test_measured_profile_through_the_emulation(tmp_path):
    net = small_net()
    src = MeasuredProfile(backend="emulation", repeats=1, warmup=0)
    m = map_network(net, [1, 2], src, n_images=4)
    p = m.profile
    assert "NOT GPU timings" in p.source and p.meta["statistic"] == "median"
    assert all(t is not None and t >= 0 for b in (1, 2) for r in p.layer_s[b] for t in r)
    assert len(p.h2d_s[2]) == 5 and all(t >= 0 for t in p.h2d_s[2])
    assert write_heatmap(m, tmp_path / "h.png").stat().st_size > 1000
