"""The co-design search (workbench/search): the REINFORCE estimator, the Pareto front, the
parallel-step cost, the costs the super networks train with equal the compiler and cycle model
on the trained networks, a whole trial, the command line's errors, and a tiny sweep through
local Ray that can be interrupted and resumed."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from fpga.compiler import compile_network, fitted_config
from models.train.bnn import BnnNet
from models.train.sac import SacNet
from tests.helpers import ROOT
from workbench.search import bnn_family, families, resnet_fabric, sac_family
from workbench.search import costs as costs_module
from workbench.search.costs import CostModel, CostSettings, parallel_steps
from workbench.search.gates import GateSet, budget_penalty, reinforce_loss
from workbench.search.options import SearchOptions
from workbench.search.pareto import pareto_front
from workbench.search.trial import TrialConfig, run_trial, train_supernet

SEED = 2018  # BSN's year; every random draw below starts from it


def test_reinforce_moves_each_gate_towards_lower_quality_cost():
    """With D = sum_i c_i h_i, the estimator drives gates with c_i > 0 off and c_i < 0 on."""
    torch.manual_seed(SEED)
    gates = GateSet([("g", 4, 0.5)])
    c = torch.tensor([1.0, -1.0, 2.0, -2.0])
    opt = torch.optim.SGD(gates.parameters(), lr=0.5)
    for _ in range(200):
        h = gates.sample(64)
        loss = reinforce_loss(h @ c, gates.log_prob(h))
        opt.zero_grad()
        loss.backward()
        opt.step()
    p = gates.probs().detach()
    assert p[0] < 0.1 and p[2] < 0.1 and p[1] > 0.9 and p[3] > 0.9, p
    assert gates.deterministic().tolist() == [[0.0, 1.0, 0.0, 1.0]]


def test_budget_penalty_is_relative_and_one_sided():
    cost = torch.tensor([50.0, 100.0, 150.0, 300.0])
    assert budget_penalty(cost, 100.0, 2.0).tolist() == [0.0, 0.0, 1.0, 4.0]
    with pytest.raises(ValueError):
        budget_penalty(cost, 0.0, 1.0)


def test_pareto_front():
    pts = [(0.9, 10.0), (0.95, 20.0), (0.85, 30.0), (0.95, 15.0), (0.99, 50.0), (0.9, 10.0)]
    assert pareto_front(pts) == [0, 5, 3, 4]  # (0.95, 20) and (0.85, 30) are dominated


def test_parallel_steps():
    chain = {k: [k - 1] if k else [] for k in range(5)}
    assert parallel_steps(chain, 1) == parallel_steps(chain, 4) == 5
    fork = {"a": [], "b1": ["a"], "b2": ["a"], "b3": ["a"], "c": ["b1", "b2", "b3"]}
    assert parallel_steps(fork, 1) == 5 and parallel_steps(fork, 2) == 4
    assert parallel_steps(fork, 3) == 3


def _sample_archs(net, n, seed):
    g = torch.Generator().manual_seed(seed)
    probs = torch.rand(n, net.gates.size, generator=g)
    return {a for a in net.decode_batch(torch.bernoulli(probs, generator=g))}


# a staged fabric: poolings after layers 0 and 2, the final layer reads the flattened 2x2 map;
# layers 1 and 3 are as wide as the layer before them and can be skipped
STAGED = {"widths": (8, 8, 16, 16), "pools": (0, 2), "flatten_at": 4}


@pytest.mark.parametrize(
    "array,space_opts",
    [("8x8", {"layers": 3, "width": 24}), ("4x6", {"layers": 3, "width": 24}), ("8x8", STAGED)],
)
def test_sac_cost_equals_compiling_the_trained_networks_structure(array, space_opts):
    """The structure the search costs is the network SacNet.to_network builds for that
    architecture: same cycles (compile_network + cycle model) for random architectures."""
    space = sac_family.make_space((1, 8, 8), 10, space_opts)
    net = sac_family.supernet(space, 0.5)
    model = CostModel(sac_family, CostSettings(array=array), (1, 8, 8), 10)
    rows, cols = (int(v) for v in array.split("x"))
    torch.manual_seed(SEED)
    for arch in sorted(_sample_archs(net, 12, SEED), key=str)[:6]:
        sac = SacNet(arch.config((1, 8, 8), 10))
        sac.quantize_from_float(torch.rand(16, 1, 8, 8) * 255)
        for stage in range(4):  # column combining up to the final groups
            sac.set_stage_groups(stage, 4)
        real = sac.to_network()
        prog = compile_network(real, fitted_config(real, rows, cols))
        assert model.static("cycles", arch) == prog.cycles_per_image(), arch
        assert model.static("params", arch) == sac_family_params(real)


@pytest.mark.parametrize("array", ["8x8", "4x6", "16x16"])
def test_network_cycles_is_the_full_compile_on_the_zoo_fashion_space(array):
    """The search's cycles (fpga.compiler.network_cycles: each op shape's tiles emitted once)
    equal compile_network's program timed by the cycle model, for random architectures of the
    zoo Fashion space, and refuse the same architectures (16x16: a 128-channel window)."""
    from fpga.compiler import CompileError, fitted_config, network_cycles, network_footprint, roomy_config
    from workbench.search.costs import CostError

    print(f"seed {SEED}")
    space = sac_family.make_space((1, 28, 28), 10, sac_family.zoo_space("fashion"))
    net = sac_family.supernet(space, 0.5)
    model = CostModel(sac_family, CostSettings(array=array), (1, 28, 28), 10)
    rows, cols = (int(v) for v in array.split("x"))
    memo, refused = {}, 0
    for arch in sorted(_sample_archs(net, 24, SEED), key=str):
        network = model.network(arch)
        try:
            full = compile_network(network, roomy_config(rows, cols), encode_words=False).cycles_per_image()
        except CompileError as exc:
            refused += 1
            with pytest.raises(CompileError, match=re.escape(str(exc))):
                network_cycles(network, roomy_config(rows, cols), memo)
            with pytest.raises(CostError, match="does not compile for a 16x16 array"):
                model.static("cycles", arch)
            continue
        assert network_cycles(network, roomy_config(rows, cols), memo) == full, arch
        assert model.static("cycles", arch) == full, arch
        # the memories the joint search sizes from the counts are the full compile's
        footprint = network_footprint(network, roomy_config(rows, cols), memo)
        assert footprint.fitted(rows, cols, 64) == fitted_config(network, rows, cols), arch
    assert (refused > 0) == (array == "16x16")
    assert 0 < len(memo) < 6 * 24  # op shapes were shared between networks


def test_cost_model_keeps_few_programs_and_every_cost(monkeypatch):
    """Programs are megabytes and nearly every sampled architecture is new: the model keeps the
    last OBJECTS_KEPT networks and programs, all costs, and a program it dropped compiles again
    to the same cycles."""
    monkeypatch.setattr(costs_module, "OBJECTS_KEPT", 4)
    space = sac_family.make_space((1, 8, 8), 10, {"layers": 3, "width": 24})
    net = sac_family.supernet(space, 0.5)
    model = CostModel(sac_family, CostSettings(array="8x8"), (1, 8, 8), 10)
    archs = sorted(set(_sample_archs(net, 40, SEED)), key=str)[:10]
    first = [model.static("cycles", a) for a in archs]
    assert model.objects_kept == 4 and model.cached_architectures == 10
    fresh = CostModel(sac_family, CostSettings(array="8x8"), (1, 8, 8), 10)
    assert [fresh.program(a).cycles_per_image() for a in archs] == first
    assert model.program(archs[0]).cycles_per_image() == first[0]  # dropped, compiled again
    assert model.objects_kept == 4


def test_warmup_epochs_do_not_cost_the_sampled_architectures(monkeypatch):
    """The gates are held in warm-up, so no sampled architecture is costed there; the gated
    epochs cost every example's."""
    calls = []
    real = CostModel.per_example

    def counting(self, name, archs, activity):
        calls.append(len(archs))
        return real(self, name, archs, activity)

    monkeypatch.setattr(CostModel, "per_example", counting)
    cfg = TrialConfig(
        family="sac",
        cost="cycles",
        budget=8000,
        lam=1.0,
        seed=0,
        epochs=2,
        warmup_epochs=1,
        space={"layers": 2, "width": 16},
    )
    fam = families.family("sac")
    model = CostModel(sac_family, CostSettings(array="8x8"), (1, 8, 8), 10)
    gen = torch.Generator().manual_seed(SEED)
    x = torch.rand(40, 1, 8, 8) * 255
    y = torch.arange(40) % 10
    _, history = train_supernet(cfg, fam, model, (x, y), (x[:8], y[:8]), gen)
    assert sum(calls) == 40 and history[0]["sampled_cost"] is None
    assert history[1]["sampled_cost"] > 0 and history[1]["penalty"] >= 0


def test_staged_space_skips_only_layers_that_keep_the_skeleton():
    """In the staged fabric pooling and flattening stay where the skeleton has them whatever
    the depth gates say, and every example's logits are those of its own sub-network."""
    space = sac_family.make_space((1, 8, 8), 10, STAGED)
    assert space.skippable == (1, 3) and space.s2d == (1,)
    net = sac_family.supernet(space, 0.5).eval()
    g = torch.Generator().manual_seed(SEED)
    h = net.gates.sample(6, generator=g)
    archs = net.decode_batch(h)
    for a in archs:
        # the kept layers: 0 and 2 (pooled) always, 1 and 3 when their gates say so
        assert len(a.widths) in (2, 3, 4) and a.flatten_at == len(a.widths)
        assert len(a.pools) == 2 and a.pools[0] == 0
    assert len({len(a.widths) for a in archs}) > 1, "every draw kept the same depth"
    x = torch.rand(6, 1, 8, 8, generator=g) * 255
    logits, _ = net(x, h)
    for k in range(6):
        alone, _ = net(x[k : k + 1], h[k : k + 1])
        assert torch.allclose(alone[0], logits[k], atol=1e-4), k


def test_zoo_space_holds_the_zoo_model_at_its_cycles():
    """--space zoo on Fashion-MNIST: the skeleton of sac_fashion, and its own architecture in
    that space costs what the zoo network compiles to."""
    from models import zoo

    opts = sac_family.zoo_space("fashion")
    cfg = zoo.card("sac_fashion")["architecture"]["config"]
    space = sac_family.make_space((1, 28, 28), 10, opts)
    assert space.max_widths == tuple(cfg["widths"]) and space.pools == tuple(cfg["pools"])
    arch = sac_family.SacArch(
        cfg["s2d"],
        tuple(cfg["widths"]),
        tuple(cfg["groups"]),
        cfg["final_group"],
        tuple(cfg["pools"]),
        cfg["flatten_at"],
    )
    model = CostModel(sac_family, CostSettings(array="8x8"), (1, 28, 28), 10)
    real = zoo.load("sac_fashion")
    assert model.static("cycles", arch) == compile_network(real, fitted_config(real, 8, 8)).cycles_per_image()
    bnn = zoo.card("bnn_fashion")["architecture"]["config"]
    assert bnn_family.zoo_space("fashion") == {"channels": bnn["channels"], "hidden": bnn["hidden"]}


def test_space_zoo_flag_sends_the_zoo_skeleton_to_every_trial():
    from workbench.commands.search import build_parser, options_from_args

    argv = ["--family", "sac", "--space", "zoo", "--data", "fashion", "--budgets", "200000"]
    opts = options_from_args(build_parser().parse_args(argv), argv)
    assert [c.space for c in opts.trial_configs()] == [sac_family.zoo_space("fashion")]
    assert opts.trial_configs()[0].space["pools"] == [1, 3]


def sac_family_params(net):
    from workbench.search.costs import network_params

    return network_params(net)


def test_bnn_cost_equals_compiling_the_trained_networks_structure():
    space = bnn_family.make_space((1, 8, 8), 10, {"channels": (16, 24), "hidden": 64})
    net = bnn_family.supernet(space, 0.5)
    model = CostModel(bnn_family, CostSettings(array="8x8"), (1, 8, 8), 10)
    for arch in sorted(_sample_archs(net, 8, SEED), key=str)[:3]:
        real = BnnNet(arch.config((1, 8, 8), 10), binary=True).eval().to_network()
        prog = compile_network(real, fitted_config(real, 8, 8))
        assert model.static("cycles", arch) == prog.cycles_per_image(), arch


def test_bnn_supernet_trains_on_batches_where_a_depth_has_one_example(tmp_path):
    """Per-example sampling can give a depth a single example of the batch: the dense batch norm
    of that exit has no batch statistics then, and the step must still run; the search's cost
    check needs no GPU when the gpu cost is not the one searched."""
    space = bnn_family.make_space((1, 8, 8), 10, {"channels": (16, 24), "hidden": 64})
    net = bnn_family.supernet(space, 0.5).train()
    g = torch.Generator().manual_seed(SEED)
    x = torch.rand(2, 1, 8, 8, generator=g)
    singles = 0
    for _ in range(40):
        h = net.gates.sample(2, generator=g)
        depths = [len(a.channels) for a in net.decode_batch(h)]
        singles += depths[0] != depths[1]
        logits, _ = net(x, h)
        assert torch.isfinite(logits).all()
    assert singles, "no draw put the two examples at different depths"
    from workbench.search.options import SearchOptions, check_options

    check_options(
        SearchOptions(family="bnn", cost="cycles", budgets=[1e5], data="digits", out=tmp_path / "s")
    )


def test_bnn_min_channels_keep_a_block_whole_and_gate_the_rest():
    """min_channels (64, 16): the first conv block has no width gates and always runs 64
    channels, the second at least 16; every sampled architecture says so and costs like its
    structure."""
    space = bnn_family.make_space((1, 8, 8), 10, {"channels": [64, 128], "min_channels": [64, 16]})
    net = bnn_family.supernet(space, 0.5)
    assert net.gates.part(torch.zeros(1, net.gates.size), "width0").shape[1] == 0
    assert net.gates.part(torch.zeros(1, net.gates.size), "width1").shape[1] == (128 - 16) // 8
    archs = _sample_archs(net, 40, SEED)
    assert all(a.channels[0] == 64 for a in archs)
    assert all(a.channels[1] >= 16 for a in archs if len(a.channels) > 1)
    assert {a.channels[1] for a in archs if len(a.channels) > 1} - {16} != set()
    h = torch.zeros(3, net.gates.size)
    logits, _ = net(torch.rand(3, 1, 8, 8) * 255, h)  # every gate off: 64 channels run
    assert logits.shape == (3, 10)
    assert net.decode(h[0]).channels == (64,)
    assert net._mask(h, "width0", 8, 64 // 8).sum(dim=1).tolist() == [64, 64, 64]
    assert net._mask(h, "width1", 8, 16 // 8).sum(dim=1).tolist() == [16, 16, 16]


def test_hidden_widens_the_zoo_space_and_its_samples(tmp_path):
    """--hidden 512 with --space zoo: the zoo's conv widths, the hidden layer gated up to 512
    in blocks of 32, and sampled architectures wider than the zoo's 256 hidden units."""
    from workbench.commands.search import build_parser, options_from_args

    argv = [
        "--family",
        "bnn",
        "--space",
        "zoo",
        "--data",
        "fashion",
        "--hidden",
        "512",
        "--budgets",
        "100",
        "--out",
        str(tmp_path / "o"),
    ]
    space_opts = options_from_args(build_parser().parse_args(argv), argv).trial["space"]
    assert space_opts == {"channels": [64, 128], "hidden": 512}
    space = bnn_family.make_space((1, 28, 28), 10, space_opts)
    net = bnn_family.supernet(space, 0.9)
    assert net.gates.part(torch.zeros(1, net.gates.size), "hidden").shape[1] == 512 // 32 - 1
    archs = _sample_archs(net, 40, SEED)
    assert max(a.hidden for a in archs) > 256 and all(a.hidden % 32 == 0 for a in archs)


def test_binary_bnn_supernet_sees_only_the_signs_of_its_weights():
    """--binary-supernet: conv and hidden weights enter as +-1 (scaling them changes nothing),
    while the float super network's logits move with them."""
    g = torch.Generator().manual_seed(SEED)
    x = torch.rand(4, 1, 8, 8, generator=g) * 255
    for binary in (True, False):
        space = bnn_family.make_space((1, 8, 8), 10, {"channels": [16, 24], "hidden": 64, "binary": binary})
        net = bnn_family.supernet(space, 0.5).eval()
        h = net.gates.sample(4, generator=g)
        before, _ = net(x, h)
        with torch.no_grad():
            for p in list(net.convs) + list(net.dense_in):
                p.mul_(0.5)
        after, _ = net(x, h)
        assert torch.equal(before, after) == binary, binary


def test_fabric_params_are_the_modules_parameters():
    space = resnet_fabric.make_space((1, 8, 8), 10, {})
    net = resnet_fabric.supernet(space, 0.9)
    full = net.decode(torch.ones(net.gates.size))
    assert resnet_fabric.static_cost("params", full, 2) == sum(p.numel() for p in net.weight_parameters())
    base = resnet_fabric.baseline_arch(space)
    assert resnet_fabric.static_cost("params", base, 2) < resnet_fabric.static_cost("params", full, 2)
    # two branches per block run side by side on two processors, not on one
    assert resnet_fabric.static_cost("parallel", full, 2) < resnet_fabric.static_cost("parallel", full, 1)


@pytest.mark.parametrize("space", [{"layers": 2, "width": 16}, STAGED], ids=["plain", "staged"])
def test_sac_trial_end_to_end(tmp_path, space):
    """A tiny trial: the super network trains, the architecture it returns is within the budget
    (projected) and its searched cycles equal those of the trained integer network compiled for
    the array; the architecture is trained with two seeds (counts kept), ONNX and cards
    written in the models folder."""
    cfg = TrialConfig(
        family="sac",
        cost="cycles",
        budget=8000,
        lam=1.0,
        seed=0,
        epochs=2,
        warmup_epochs=1,
        final_epochs=1,
        final_float_epochs=1,
        out=str(tmp_path),
        name="tiny",
        space=dict(space),
        energy_images=8,
        final_seeds=2,
    )
    lines = []
    res = run_trial(cfg, log=lines.append)
    assert res["searched_cost"] == res["costs"]["cycles"] <= cfg.budget
    assert res["budget_ratio"] == res["costs"]["cycles"] / cfg.budget <= 1.0
    assert 0 <= res["accuracy"]["supernet_val"] <= 1
    # progress: the super network's epochs, its settling on the returned architecture, then
    # every epoch of each seed's final training
    assert [s.split(":")[0] for s in lines[:5]] == [
        "epoch 1/2",
        "epoch 2/2",
        "settling on the returned architecture",
        "settling on the returned architecture",
        "final training, float twin",
    ]
    assert res["extracted_probability"] > 0.9  # the gates settled on what it returns
    finals = [s for s in lines[4:] if s.startswith("final training, float twin")]
    assert len(finals) == 2 and all(s.startswith("final training, ") for s in lines[4:])
    assert lines[-1].startswith("final training, QAT stage 4/4") and "epoch 2/2" in lines[-1]
    assert len(res["history"]) == 2 and 0 <= res["accuracy"]["val"] <= 1
    assert [f["seed"] for f in res["finals"]] == [0, 1]
    assert all(f["val_total"] == 183 and 0 <= f["val_correct"] <= 183 for f in res["finals"])
    assert res["accuracy"]["val"] == pytest.approx(sum(f["val_correct"] / 183 for f in res["finals"]) / 2)
    card = json.loads(Path(res["files"]["card"]).read_text())
    assert card["architecture"]["config"]["widths"] == res["arch"]["widths"]
    assert Path(res["files"]["onnx"]).exists() and (tmp_path / "supernet.pt").exists()
    assert json.loads((tmp_path / "result.json").read_text())["name"] == "tiny"
    again = run_trial(
        TrialConfig(
            **{
                **cfg.__dict__,
                "name": "same",
                "out": str(tmp_path / "b"),
                "models_dir": str(tmp_path / "models"),
            }
        ),
        log=None,
    )
    assert again["finals"][0]["dir"] == res["finals"][0]["dir"]  # trained once, read back


@pytest.mark.parametrize("fam", [bnn_family, sac_family])
def test_final_model_is_trained_with_the_zoo_models_recipe_of_the_data_set(fam, monkeypatch):
    """Like for like: a trial's final model gets the training settings on the card of the zoo
    model it is compared with (Fashion-MNIST: the zoo's short, large-batch recipe); on digits
    those are the recipe's defaults; --final-epochs and --final-float-epochs still win."""
    import inspect

    from models import zoo
    from models.train import recipes

    calls = []
    monkeypatch.setattr(recipes, f"train_{fam.NAME}", lambda data, **kw: calls.append(kw))
    arch = fam.supernet(fam.make_space((1, 28, 28), 10, {}), 0.9).decode(
        torch.ones(fam.supernet(fam.make_space((1, 28, 28), 10, {}), 0.9).gates.size)
    )
    common = dict(seed=0, threads=1, name="t")
    fam.train_final(arch, "fashion", (1, 28, 28), 10, epochs=None, float_epochs=None, **common)
    settings = zoo.card(fam.ZOO["fashion"])["training"]["settings"]
    per_stage = "epochs_per_stage" if fam.NAME == "sac" else "epochs"
    assert calls[-1]["epochs"] == settings[per_stage]
    assert calls[-1]["float_epochs"] == settings["float_epochs"]
    assert calls[-1]["batch"] == settings["batch"] != 64
    fam.train_final(arch, "fashion", (1, 28, 28), 10, epochs=2, float_epochs=1, **common)
    assert (calls[-1]["epochs"], calls[-1]["float_epochs"]) == (2, 1)
    fam.train_final(arch, "digits", (1, 8, 8), 10, epochs=None, float_epochs=None, **common)
    defaults = inspect.signature(getattr(recipes, f"_train_{fam.NAME}")).parameters
    for k, v in calls[-1].items():
        if k in defaults and k not in (*common, "cfg", "progress"):
            assert v == defaults[k].default, k
    fam.train_final(arch, "/some/data.npz", (1, 28, 28), 10, epochs=None, float_epochs=None, **common)
    assert set(calls[-1]) <= {"cfg", "progress", "on_epoch_end", "device", "checkpoint_dir", *common}


def _search(*args, timeout=600):
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "search.py"), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    "args,message",
    [
        (["--budgets", "0"], "--budgets must be positive"),
        (["--budgets=-5,10"], "--budgets must be positive"),
        (["--budgets", "nan"], "--budgets must be finite numbers"),
        (["--budgets", "100", "--clock-mhz", "inf"], "--clock-mhz must be a finite number"),
        (["--budgets", "100", "--epochs", "0"], "--epochs must be at least 1"),
        (["--budgets", "100", "--first-seed", "-1"], "--first-seed must be at least 0, got -1"),
        (["--budgets", "abc"], "--budgets must be comma-separated numbers"),
        (["--budgets", "100", "--family", "sac", "--cost", "gpu"], "not defined for the sac family"),
        (["--budgets", "100", "--cost", "watts"], "invalid choice: 'watts'"),
        (["--budgets", "100", "--array", "0x8"], "rows and columns must be 1..255"),
        (["--budgets", "100", "--data", "/nonexistent"], "--data"),
        (
            ["--budgets", "100", "--address", "127.0.0.1:1"],
            "--address 127.0.0.1:1: cannot reach a Ray cluster there",
        ),
        (["--budgets", "100", "--address", "head"], "--address must look like HOST:PORT"),
        (["--budgets", "100", "--family", "bnn", "--cost", "gpu"], "the gpu cost needs"),
        (["--budgets", "100", "--space", "zoo", "--layers", "2"], "drop --layers and --width"),
        (["--budgets", "100", "--binary-supernet"], "--binary-supernet is for the bnn family"),
        (["--budgets", "100", "--min-channels", "64,8"], "--min-channels is for the bnn family"),
        (
            ["--budgets", "100", "--family", "bnn", "--min-channels", "64,x"],
            "--min-channels must be comma-separated channel counts, got '64,x'",
        ),
        (
            ["--budgets", "100", "--family", "bnn", "--min-channels", "64,12"],
            "bnn search space: min channels (64, 12) must give each of the 2 conv blocks",
        ),
        (
            ["--budgets", "100", "--family", "bnn", "--min-channels", "64"],
            "bnn search space: min channels (64,) must give each of the 2 conv blocks",
        ),
        (["--budgets", "100", "--hidden", "512"], "--hidden is for the bnn family"),
        (
            ["--budgets", "100", "--family", "bnn", "--hidden", "500"],
            "bnn search space: channels (64, 128) and hidden 500 must be positive multiples",
        ),
        (["--budgets", "100", "--family", "bnn", "--hidden", "0"], "--hidden must be at least 1, got 0"),
        (["--budgets", "100", "--clock-mhz", "5e-324"], "--clock-mhz must be at least 0.001"),
        (["--budgets", "100", "--seeds", "10000"], "--seeds must be at most 1,000"),
        (["--budgets", "100", "--first-seed", str(10**23)], "--first-seed must be at most"),
        (["--budgets", "100", "--lr", "inf"], "--lr must be a finite number"),
        (["--budgets", "100", "--width", "1_0"], "--width must be a whole number, got '1_0'"),
        (
            ["--budgets", "100", "--family", "resnet-fabric", "--cost", "params", "--space", "zoo"],
            "the resnet-fabric family has no zoo model",
        ),
        (
            ["--budgets", "100", "--family", "sac", "--device", "cuda"],
            "--device cuda: the sac family trains on cpu",
        ),
        (["--budgets", "100", "--device", "tpu"], "--device tpu: neither a training device (cpu or cuda)"),
        (["--budgets", "100", "--collect-only"], "--collect-only: no trial of these options has finished in"),
        pytest.param(
            ["--budgets", "100", "--family", "bnn", "--device", "cuda"],
            "--device cuda: torch",
            marks=pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is here"),
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path, capsys):
    from workbench.commands.search import main

    try:
        code = main([*map(str, args), "--out", str(tmp_path / "o")])
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o").exists()


SWEEP = [
    "--family",
    "sac",
    "--cost",
    "cycles",
    "--budgets",
    "6000,20000",
    "--epochs",
    "1",
    "--warmup-epochs",
    "0",
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
    "1",
    "--baselines",
    "none",
]


def test_sweep_through_local_ray(tmp_path):
    """Two trials as Ray Tune trials on a local Ray: pareto.json lists both with every cost
    and the zoo model, the front's models are published with their cards."""
    out = _search(*SWEEP, "--out", tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    doc = json.loads((tmp_path / "pareto.json").read_text())
    assert doc["complete"] and len(doc["models"]) == 2
    assert set(doc["models"][0]["costs"]) >= {"params", "flops", "cycles", "energy"}
    assert any(m["on_front"] for m in doc["models"]) and (tmp_path / "pareto.png").exists()
    assert list((tmp_path / "front").glob("*.onnx")) and doc["zoo"]["name"] == "sac_digits"
    assert np.isfinite([m["accuracy"]["test"] for m in doc["models"]]).all()
    assert "sac_cycles_b6000_l1_s0: epoch 1/1" in out.stderr  # progress per trial, on stderr
    # the final training's progress (a trial whose architecture another trial returned first
    # reads it back instead of training it again)
    assert any(
        f"sac_cycles_b{b}_l1_s0: final training, float twin epoch 1/1" in out.stderr for b in (6000, 20000)
    )
    # nothing of Ray's on the console (its logs go to files): only the search's own lines, and
    # stdout holds the results alone
    assert all(line.startswith("[search") for line in out.stderr.strip().splitlines()), out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("[search] done in"), out.stderr
    assert "[search" not in out.stdout and "pareto.json" in out.stdout, out.stdout


def test_an_address_where_something_else_answers_is_bad_input(tmp_path, capsys):
    """--address of a port where a server that is not Ray listens (here one that answers as
    a web server would): exit 2 and one line before any work, not a minute in ray.init."""
    import socket
    import threading

    from workbench.commands.search import main

    server = socket.create_server(("127.0.0.1", 0))

    def answer():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    conn.recv(64)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
                except OSError:
                    pass

    threading.Thread(target=answer, daemon=True).start()
    port = server.getsockname()[1]
    try:
        code = main([*ONE_TRIAL, "--address", f"127.0.0.1:{port}", "--out", str(tmp_path / "o")])
    finally:
        server.close()
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0] == (
        f"sacbench search: error: --address 127.0.0.1:{port}: 127.0.0.1:{port} "
        f"does not answer as a Ray cluster does (not gRPC)"
    ), err[0]
    assert not (tmp_path / "o").exists()


# one trial (seed 0), on one CPU: about the smallest sweep that trains a super network and a
# final model; two QAT epochs, so that the final training outlasts a signal's handling
ONE_TRIAL = [
    "--family",
    "sac",
    "--cost",
    "cycles",
    "--budgets",
    "6000",
    "--epochs",
    "1",
    "--warmup-epochs",
    "0",
    "--final-epochs",
    "2",
    "--final-float-epochs",
    "1",
    "--layers",
    "2",
    "--width",
    "16",
    "--cpus",
    "1",
    "--first-seed",
    "0",
    "--final-seeds",
    "1",
    "--baselines",
    "none",
]


@pytest.mark.parametrize(
    "sig, to_group, words",
    [
        ("SIGINT", True, "interrupted (SIGINT)"),  # Ctrl-C: the terminal's process group
        ("SIGTERM", False, "terminated (SIGTERM)"),  # kill PID
        ("SIGHUP", True, "terminated (SIGHUP)"),  # a closed terminal: its process group
    ],
)
def test_a_signal_shuts_ray_down_and_the_same_command_resumes(sig, to_group, words, tmp_path):
    """A signal while a trial trains (its super network done, its final model training): exit
    128 + the signal with one line on stderr that says the same command resumes, no traceback
    and nothing of Ray's on the console, no process of the run left (Ray's local processes
    included: a closed terminal's SIGHUP reaches them too), nothing of the trial's result
    written. The same command then resumes: the trial continues from its super network's
    checkpoint and the sweep finishes. What a resume reads (the super network's checkpoint,
    written before the signal, and no result) does not depend on the signal, which the checks
    above cover for each, so only SIGINT's run resumes (a second Ray start and the rest of the
    trial: a minute of `make test` per signal)."""
    import os
    import signal
    import time

    from tests.test_rtl_shards import _default_sigint, alive, descendants

    print("seed 0")
    signum = getattr(signal, sig)
    args = [sys.executable, str(ROOT / "scripts" / "search.py"), *ONE_TRIAL, "--out", str(tmp_path)]
    job = subprocess.Popen(
        args,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_default_sigint,
    )
    supernet = tmp_path / "trials" / "sac_cycles_b6000_l1_s0" / "checkpoint" / "supernet.pt"
    seen, deadline = {}, time.monotonic() + 240
    while job.poll() is None and not supernet.exists() and time.monotonic() < deadline:
        seen.update(descendants(job.pid))
        time.sleep(0.05)
    seen.update(descendants(job.pid))
    assert supernet.exists() and job.poll() is None, job.communicate()
    (os.killpg if to_group else os.kill)(job.pid, signum)
    t0 = time.monotonic()
    out, err = job.communicate(timeout=120)
    assert job.returncode == 128 + signum, err
    assert time.monotonic() - t0 < 30, "Ray's shutdown took too long"
    lines = [line for line in err.strip().splitlines() if not line.startswith("[search")]  # progress
    assert len(lines) == 1 and lines[0].startswith(
        f"sacbench search: {words}; 0 of 1 trial(s) finished and kept in {tmp_path}"
    ), err
    assert "run the same command again to resume" in lines[0]
    assert err.strip().splitlines()[-1] == lines[0] and not out.strip(), out
    deadline = time.monotonic() + 15  # Ray's processes end with their parent: a moment
    while alive(seen) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(seen), {p: seen[p] for p in alive(seen)}
    ray_tmp = Path(err.splitlines()[0].split("Ray's logs in ")[1].split(",")[0])
    assert not ray_tmp.exists(), "the temporary files were not removed"
    assert not (tmp_path / "trials" / "sac_cycles_b6000_l1_s0" / "result.json").exists()
    if sig != "SIGINT":
        return

    again = _resume_or_explain(args, tmp_path / "trials" / "sac_cycles_b6000_l1_s0" / "trial.log")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "1 trial(s) (0 already done" in again.stderr  # progress: stderr
    assert "sac_cycles_b6000_l1_s0: epoch 1/1" not in again.stderr  # not trained again
    assert "sac_cycles_b6000_l1_s0 done (" in again.stderr
    log = (tmp_path / "trials" / "sac_cycles_b6000_l1_s0" / "trial.log").read_text()
    assert log.count("started in process") == 2 and "super network from " in log, log
    assert json.loads((tmp_path / "pareto.json").read_text())["complete"]
    assert again.stderr.strip().splitlines()[-1].startswith("[search] done in"), again.stderr


def _resume_or_explain(args: list[str], log: Path, timeout: int = 600):
    """The resumed search (`args`, the same command again); when it outlasts `timeout`, the
    failure says where it stood: its stderr (the progress lines, the first naming Ray's logs),
    the trial's own `log` and the machine's load and free memory (a stall and a starved machine
    look alike from the console alone)."""
    import os
    import signal

    job = subprocess.Popen(
        args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        stdout, stderr = job.communicate(timeout=timeout)
        return subprocess.CompletedProcess(args, job.returncode, stdout, stderr)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)  # the run's own group (Ray may start workers in others)
        try:
            err = job.communicate(timeout=30)[1]
        except subprocess.TimeoutExpired:  # a process outside the group holds the pipes
            err = "(its pipes are still held by another process)"
    meminfo = Path("/proc/meminfo")
    memory = (
        "; ".join(" ".join(line.split()) for line in meminfo.read_text().splitlines()[:3])
        if meminfo.exists()
        else "-"
    )
    lines = err.splitlines()
    pytest.fail(
        f"the resumed search did not end in {timeout} s; load {os.getloadavg()}; {memory}\n"
        f"its stderr (the first line, then the last 3000 characters):\n{lines[0] if lines else ''}\n"
        f"{err[-3000:]}\n{log}:\n{log.read_text()[-3000:] if log.exists() else '(none)'}"
    )


def test_cpus_are_shared_out_among_fewer_trials():
    """On local Ray a trial trains on the CPUs the other trials leave (torch threads, and as
    many Ray CPUs): one trial on --cpus 2 gets 2, two trials get 1 each, 3 trials on 8 CPUs
    get 2; on a cluster (--address) each trial gets 1. A resumed sweep counts all its trials,
    so its finished trials keep matching."""
    from workbench.search.options import SearchOptions

    def threads(budgets, cpus, address=None):
        opts = SearchOptions(budgets=budgets, cpus=cpus, address=address)
        return {c.threads for c in opts.trial_configs()}

    assert threads([1000], 2) == {2}
    assert threads([1000, 2000], 2) == {1}
    assert threads([1, 2, 3], 8) == {2}
    assert threads([1000], 2, address="ray://head:10001") == {1}
    opts = SearchOptions(budgets=[1000], cpus=2, trial={"threads": 1})  # an explicit choice
    assert opts.trial_configs()[0].threads == 1


def test_first_seed_names_and_seeds_the_trials():
    """--first-seed K --seeds N runs seeds K..K+N-1 (more seeds of a sweep without rerunning
    the ones done): each trial's seed and name carry it."""
    from workbench.commands.search import build_parser, options_from_args

    args = ["--budgets", "1000,2000", "--seeds", "2", "--first-seed", "3"]
    cfgs = options_from_args(build_parser().parse_args(args), args).trial_configs()
    assert [(c.budget, c.seed) for c in cfgs] == [(1000, 3), (1000, 4), (2000, 3), (2000, 4)]
    assert cfgs[0].name == "sac_cycles_b1000_l1_s3"


def test_interrupted_search_keeps_finished_trials_and_resumes(tmp_path, capsys):
    """Trials that finished before an interruption are read back, not rerun: with every
    trial's result.json present the search writes the front without starting Ray."""
    from workbench.commands.search import build_parser, options_from_args
    from workbench.search.driver import run_search

    args = [*SWEEP, "--out", str(tmp_path)]
    opts = options_from_args(build_parser().parse_args(args), args)
    for cfg in opts.trial_configs():
        run_trial(
            TrialConfig(
                **{**cfg.__dict__, "epochs": 1, "final_epochs": 1, "final_float_epochs": 1, "export": False}
            ),
            log=None,
        )
    doc = run_search(opts)
    assert "2 already done" in capsys.readouterr().err
    assert doc["complete"] and len(doc["models"]) == 2 and doc["unfinished"] == []


def test_collect_only_writes_the_front_of_the_finished_trials_and_trains_nothing(tmp_path, capsys):
    """--collect-only (a sweep stopped at a deadline, its rest left for later): the front of
    the trials that finished, the others named as unfinished in pareto.json and on the console,
    and nothing trained: no Ray, no folder for the unfinished trial."""
    from workbench.commands.search import build_parser, main, options_from_args

    args = [*SWEEP, "--out", str(tmp_path)]
    done, left = options_from_args(build_parser().parse_args(args), args).trial_configs()
    run_trial(TrialConfig(**{**done.__dict__, "export": False}), log=None)
    assert main([*args, "--collect-only"]) == 0
    out, err = capsys.readouterr()
    assert f"--collect-only: 1 not finished and not trained: {left.name}" in out  # its result
    assert f"(1 trial(s) not finished: {left.name})" in out
    doc = json.loads((tmp_path / "pareto.json").read_text())
    assert not doc["complete"] and doc["unfinished"] == [left.name]
    assert [m["name"] for m in doc["models"]] == [done.name] and doc["models"][0]["on_front"]
    assert not Path(left.out).exists() and not (tmp_path / "ray").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is here")
def test_collect_only_needs_neither_the_gpu_nor_the_ray_cluster_it_trained_on(tmp_path, capsys):
    """A sweep trained with --device cuda on a cluster is collected with the same arguments
    on a machine that has neither: nothing trains, so neither is checked (here nothing has
    finished, which is the error that remains)."""
    from workbench.commands.search import main

    code = main(
        [
            "--family",
            "bnn",
            "--budgets",
            "100",
            "--device",
            "cuda",
            "--address",
            "127.0.0.1:1",
            "--collect-only",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "--collect-only: no trial of these options has finished" in err


def test_resuming_refuses_a_finished_trial_made_with_other_settings(tmp_path, capsys):
    """A result.json of the same trial name but other settings (here: more super-network
    epochs) is not mixed into the front: one line naming the file and the setting, exit 2,
    and the finished trial is left as it was."""
    from dataclasses import asdict

    from workbench.commands.search import build_parser, main, options_from_args

    args = [*SWEEP, "--out", str(tmp_path)]
    cfg = options_from_args(build_parser().parse_args(args), args).trial_configs()[0]
    stored = {**asdict(cfg), "epochs": 7}
    result = tmp_path / "trials" / cfg.name / "result.json"
    result.parent.mkdir(parents=True)
    result.write_text(json.dumps({"name": cfg.name, "config": stored}))
    before = result.read_text()
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(result) in err and "epochs: was 7, now 1" in err
    assert result.read_text() == before and not (tmp_path / "pareto.json").exists()


def test_device_and_threads_are_how_a_trial_ran_not_what_it_is(tmp_path):
    """A finished trial trained on another device or with other threads (the GPU machine's
    trials, resumed here) is the same trial; other epochs are not."""
    from dataclasses import asdict

    from workbench.search.results import settings_differ

    cfg = TrialConfig(family="bnn", cost="cycles", budget=1e5, lam=1.0, seed=0, threads=1)
    stored = json.loads(json.dumps(asdict(cfg)))
    assert settings_differ(cfg, {**stored, "device": "cuda", "threads": 2}) is None
    assert settings_differ(cfg, {k: v for k, v in stored.items() if k != "device"}) is None
    assert settings_differ(cfg, {**stored, "epochs": 7}) == "epochs: was 7, now 20"


class _Interrupt(Exception):
    pass


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        pytest.param(
            "cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
        ),
    ],
)
def test_an_interrupted_trial_resumes_from_its_checkpoints(tmp_path, device):
    """A trial stopped in its final training (as when a search is interrupted) and run again
    continues from DIR/trials/<trial>/checkpoint: the super network is not trained again, the
    result equals an uninterrupted run's, and the checkpoints are gone once it has finished.
    A checkpoint made with other settings is not used."""

    def cfg(out, **kw):
        return TrialConfig(
            **{
                **dict(
                    family="bnn",
                    cost="cycles",
                    budget=1e9,
                    lam=1.0,
                    seed=3,
                    device=device,
                    epochs=1,
                    warmup_epochs=0,
                    final_epochs=2,
                    final_float_epochs=1,
                    out=str(out),
                    name="t",
                    export=False,
                    final_seeds=1,
                    space={"layers": 2, "width": 16, "hidden": 64},
                    energy_images=8,
                ),
                **kw,
            }
        )

    whole = run_trial(cfg(tmp_path / "whole"), log=None)

    def stop(entry):
        if entry.get("phase") == "final" and entry["desc"] == "binary QAT":
            raise _Interrupt

    with pytest.raises(_Interrupt):
        run_trial(cfg(tmp_path / "cut"), report=stop, log=None)
    ck = tmp_path / "cut" / "checkpoint"
    assert {p.name for p in ck.iterdir()} >= {"settings.json", "supernet.pt"}
    (final,) = (tmp_path / "cut" / "models").glob("*/seed0/checkpoint")  # the final training's
    assert {p.name for p in final.iterdir()} >= {"float_twin.pt", "binary_qat.pt"}
    lines, reports = [], []
    again = run_trial(cfg(tmp_path / "cut"), log=lines.append, report=reports.append)
    assert lines[0].startswith("super network from ") and "(1 epochs)" in lines[0]
    # only what was left: the second epoch of the binarized QAT
    assert [(e["desc"], e["epoch"]) for e in reports] == [("binary QAT", 2)]
    for key in ("arch", "accuracy", "costs", "searched_cost"):
        assert again[key] == whole[key], key
    untimed = lambda h: [{k: v for k, v in e.items() if k != "seconds"} for e in h]  # noqa: E731
    assert untimed(again["history"]) == untimed(whole["history"])
    assert not ck.exists() and not final.exists() and (tmp_path / "cut" / "result.json").exists()

    with pytest.raises(_Interrupt):
        run_trial(cfg(tmp_path / "other"), report=stop, log=None)
    lines = []
    run_trial(cfg(tmp_path / "other", final_epochs=1), log=lines.append)
    assert lines[0] == f"removed {tmp_path / 'other' / 'checkpoint'}: made with other settings"
    assert lines[1].startswith("epoch 1/1")


def test_a_super_network_interrupted_between_epochs_continues_after_its_last_epoch(tmp_path):
    """A trial stopped after its super network's first epoch (of two) and run again trains only
    the second epoch: the history, architecture, accuracy and costs equal an uninterrupted
    run's, the costs computed before the stop are not computed again, and the epochs' file is
    gone once the super network is done."""

    def cfg(out):
        return TrialConfig(
            family="sac",
            cost="cycles",
            budget=6000,
            lam=1.0,
            seed=5,
            epochs=2,
            warmup_epochs=0,  # both epochs sample and cost architectures
            final_epochs=1,
            final_float_epochs=1,
            out=str(out),
            name="t",
            export=False,
            final_seeds=1,
            space={"layers": 2, "width": 16},
            energy_images=8,
        )

    whole = run_trial(cfg(tmp_path / "whole"), log=None)

    def stop(entry):
        if entry.get("phase") != "final" and entry["epoch"] == 1:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        run_trial(cfg(tmp_path / "cut"), report=stop, log=None)
    ck = tmp_path / "cut" / "checkpoint"
    assert (ck / "supernet_epochs.pt").exists() and not (ck / "supernet.pt").exists()
    lines, reports = [], []
    again = run_trial(cfg(tmp_path / "cut"), log=lines.append, report=reports.append)
    assert lines[0] == f"super network resumed after epoch 1/2 from {ck / 'supernet_epochs.pt'}"
    assert [e["epoch"] for e in reports if e.get("phase") != "final"] == [2]
    for key in ("arch", "accuracy", "costs", "searched_cost", "projection"):
        assert again[key] == whole[key], key
    untimed = lambda h: [{k: v for k, v in e.items() if k != "seconds"} for e in h]  # noqa: E731
    assert untimed(again["history"]) == untimed(whole["history"])
    assert again["seconds"]["supernet"] >= again["history"][0]["seconds"]
    assert not ck.exists()


def test_a_checkpoint_of_another_device_or_thread_count_is_not_resumed(tmp_path):
    """Arithmetic differs across devices and thread counts, so a trial's checkpoints are only
    resumed by a run on the same ones (the finished result, unlike them, is accepted)."""
    from workbench.search.trial import _checkpoint_dir

    cfg = TrialConfig(family="bnn", cost="cycles", budget=1e9, lam=1.0, seed=0, threads=1, out=str(tmp_path))
    marker = _checkpoint_dir(cfg, None) / "supernet.pt"
    marker.write_bytes(b"x")
    assert _checkpoint_dir(cfg, None) and marker.exists()  # the same run: kept
    for other in ({"threads": 2}, {"device": "cuda"}, {"epochs": 3}):
        lines = []
        _checkpoint_dir(TrialConfig(**{**cfg.__dict__, **other}), lines.append)
        assert not marker.exists() and lines == [
            f"removed {tmp_path / 'checkpoint'}: made with other settings"
        ], other
        _checkpoint_dir(cfg, None)
        marker.write_bytes(b"x")


def test_trials_share_one_gpu_in_shares_ray_can_hold():
    """--device cuda: each of N trials at once gets a share of the GPU that Ray, which keeps
    four decimals, can fit N times into 1 (1/6 rounded up to 0.1667 would fit only 5)."""
    from workbench.search.ray_backend import trial_resources

    for n in range(1, 17):
        opts = SearchOptions(family="bnn", budgets=[1.0] * n, cpus=n, trial={"device": "cuda"})
        share = trial_resources(opts, 1, n)["gpu"]
        assert n * round(share, 4) <= 1.0 and share > 1.0 / n - 1e-4, n
    assert "gpu" not in trial_resources(SearchOptions(cpus=2), 1, 2)


BNN_TINY = [
    "--family",
    "bnn",
    "--cost",
    "cycles",
    "--budgets",
    "1e9",
    "--epochs",
    "1",
    "--warmup-epochs",
    "0",
    "--final-epochs",
    "1",
    "--final-float-epochs",
    "1",
    "--layers",
    "2",
    "--width",
    "16",
    "--hidden",
    "64",
    "--seeds",
    "2",
    "--cpus",
    "2",
    "--final-seeds",
    "1",
    "--baselines",
    "none",
]


def test_trials_run_without_ray_are_picked_up_by_the_search(tmp_path, capsys):
    """benchmarks/search_trials_gpu.py (the GPU machine has no Ray) runs a search's trials
    in worker processes; the search started afterwards with the same arguments, here on the
    folder moved elsewhere (as when it comes back from the GPU machine), finds them finished,
    trains nothing and writes the front from the moved folder's files."""
    from workbench.commands.search import build_parser, options_from_args
    from workbench.search.driver import run_search

    made, moved = tmp_path / "gpu", tmp_path / "here"
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "search_trials_gpu.py"),
            "--workers",
            "2",
            "--",
            *BNN_TINY,
            "--out",
            str(made),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "2 trial(s), 0 already done" in run.stdout and "1 baseline training(s) to do" in run.stdout
    assert "3 finished, 0 failed" in run.stdout  # the zoo architecture's training too
    assert "bnn_cycles_b1e+09_l1_s1: epoch 1/1" in run.stdout
    made.rename(moved)
    args = [*BNN_TINY, "--out", str(moved)]
    doc = run_search(options_from_args(build_parser().parse_args(args), args))
    assert "2 trial(s) (2 already done" in capsys.readouterr().err
    assert doc["complete"] and len(doc["models"]) == 2
    assert all(Path(m["files"]["onnx"]).parents[2] == moved / "models" for m in doc["models"])
    assert list((moved / "front").glob("*.onnx"))


def test_cost_speed_benchmark_checks_its_samples_against_the_full_compile():
    """benchmarks/search_cost_speed.py runs (digits, one batch) and reports every checked
    sample equal to the full compile (it exits 1 naming the architecture otherwise)."""
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "search_cost_speed.py"),
            "--data",
            "digits",
            "--batches",
            "1",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "16 of 64 samples checked equal" in run.stdout and "speed-up" in run.stdout
