"""The joint search of the array and the network (workbench/search/hardware.py): the candidate
arrays, the feasibility rule (a network's instance, its memories fitted, within the chip's
utilisation limit), the pick (the fastest feasible candidate at its modelled clock) against the
full compiler and the area model, what an infeasible network costs, the command's flags."""

from __future__ import annotations

import traceback

import pytest
import torch

from fpga.compiler import CompileError, compile_network, fitted_config
from fpga.devices import fits, modelled_clock
from workbench.search import sac_family
from workbench.search.costs import CostError, CostModel, CostSettings, Infeasible
from workbench.search.hardware import HardwareSpace, default_shapes, parse_shapes
from workbench.search.trial import TrialConfig, run_trial

SEED = 20261205


def _networks(n: int, seed: int = SEED):
    """n distinct sampled architectures of the digits SAC space and their networks."""
    print(f"seed {seed}")
    space = sac_family.make_space((1, 8, 8), 10, {})
    net = sac_family.supernet(space, 0.5)
    model = CostModel(sac_family, CostSettings(), (1, 8, 8), 10)
    gen = torch.Generator().manual_seed(seed)
    archs = sorted({net.decode(h) for h in net.gates.sample(4 * n, generator=gen)}, key=str)[:n]
    return [(a, model.network(a)) for a in archs]


def test_default_candidates_run_from_4x4_to_the_papers_array():
    shapes = default_shapes()
    assert (4, 4, 64) in shapes and (128, 64, 512) in shapes and (8, 8, 64) in shapes
    assert all(c <= r and b >= 8 * c for r, c, b in shapes)
    assert len(shapes) == len(set(shapes)) == 64


def test_candidates_parse_with_cmax_64_by_default_and_bad_ones_are_named():
    assert parse_shapes("8x8, 16x16:128,8x8") == ((8, 8, 64), (16, 16, 128))
    for text, words in (
        ("8x", "'8x'"),
        ("8x8:0", "'8x8:0'"),
        (" , ", "names no array"),
        ("300x8", "'300x8'"),
    ):
        with pytest.raises(ValueError, match=words):
            parse_shapes(text)


@pytest.mark.parametrize("chip", ["XC7VX485T", "LFE5U-85F"])
def test_pick_is_the_fastest_candidate_whose_compiled_instance_fits(chip):
    """Against the full compiler (fitted memories, cycles) and the area model on each
    candidate: the pick is feasible, and no feasible candidate is faster."""
    # two CMAX per shape: the op-shape memo is shared between them
    shapes = parse_shapes("4x4,8x8,8x8:128,16x8:128,16x8:256,16x16:128,32x16:128,64x32:256")
    space = HardwareSpace(chip, 0.8, shapes)
    for arch, net in _networks(4):
        expected = []
        for rows, cols, cmax in space.shapes:
            try:
                cfg = fitted_config(net, rows, cols, cmax)
            except CompileError:
                continue
            fit = fits(cfg, chip, 0.8)
            if fit:
                cycles = compile_network(net, cfg, encode_words=False).cycles_per_image()
                expected.append((cycles / (modelled_clock(cfg, chip).mhz * 1e3), cfg))
        pick = space.pick(net)
        assert pick.fit and max(pick.fit.used.values()) <= 0.8, arch
        assert pick.clock.source == ("paper" if chip == "XC7VX485T" else "model")
        assert pick.latency_ms == pytest.approx(min(expected, key=lambda e: e[0])[0]), arch
        assert pick.config in [cfg for lat, cfg in expected if lat == pytest.approx(pick.latency_ms)]


def test_a_network_over_every_candidate_is_infeasible_and_priced_over_its_budget():
    """At a utilisation few instances meet, the cost model refuses an architecture that fits
    none (Infeasible, naming the chip), and the search's per-example cost of it is at least
    the budget times how far its closest instance is over the chip: always over the budget."""
    settings = CostSettings(fpga_device="LFE5U-85F", utilisation=0.3, arrays="4x4,8x8,16x8:128")
    model = CostModel(sac_family, settings, (1, 8, 8), 10, budget=0.05)
    space = sac_family.make_space((1, 8, 8), 10, {})
    net = sac_family.supernet(space, 0.5)
    archs = [a for a, _ in _networks(6)] + [net.decode(torch.ones(net.gates.size))]
    infeasible = 0
    for arch in archs:
        try:
            model.static("latency_ms", arch)
        except Infeasible as exc:
            assert "fits no candidate array on the LFE5U-85F within 30 %" in str(exc)
        else:
            continue
        infeasible += 1
        closest, over = model.hardware_space().closest(model.network(arch))
        assert over > 1 and not closest.fit and closest.clock.source == "model"
        assert model.of("latency_ms", arch) == max(closest.latency_ms, 0.05) * over > 0.05
        assert not model.feasible(arch)
        # the refusal is raised afresh each time: a kept exception's traceback grows per raise
        errors = []
        for _ in range(50):
            try:
                model.hardware(arch)
            except Infeasible as exc:
                errors.append(exc)
        assert len({id(e) for e in errors}) == 50 and len(traceback.extract_tb(errors[-1].__traceback__)) < 5
    assert infeasible


def test_projection_brings_an_architecture_over_the_chip_onto_it():
    """From the space's largest architecture, over the chip at this utilisation, the projection
    flips gates until the architecture fits an array and meets the budget."""
    from workbench.search.projection import project

    settings = CostSettings(fpga_device="LFE5U-85F", utilisation=0.3, arrays="4x4,8x8,16x8:128")
    model = CostModel(sac_family, settings, (1, 8, 8), 10, budget=0.05)
    net = sac_family.supernet(sac_family.make_space((1, 8, 8), 10, {}), 0.5)
    print(f"seed {SEED}")
    gen = torch.Generator().manual_seed(SEED)
    h = next(h for h in net.gates.sample(64, generator=gen) if not model.feasible(net.decode(h)))
    h, flips = project(net, h, model, "latency_ms", 0.05)
    arch = net.decode(h)
    assert flips and model.feasible(arch) and model.static("latency_ms", arch) <= 0.05


def test_a_zoo_model_the_chip_cannot_hold_is_reported_not_trained(tmp_path):
    """The zoo baseline of a joint search on a chip its architecture fits no array of: the plan
    says why and plans no training of it; the report says there is no zoo baseline."""
    from workbench.search import front
    from workbench.search.options import SearchOptions
    from workbench.search.plan import baseline_plan, final_jobs

    costs = {"fpga_device": "LFE5U-85F", "clock_mhz": None, "utilisation": 0.3, "arrays": "4x4"}
    opts = SearchOptions(
        cost="latency_ms", budgets=[0.1], out=tmp_path, baselines=(), trial={"costs": costs, "final_seeds": 1}
    )
    plan = baseline_plan(opts.trial_configs(), ())
    assert [p["role"] for p in plan] == ["zoo"] and "fits no candidate array" in plan[0]["infeasible"]
    assert final_jobs(opts.trial_configs(), plan, tmp_path / "models") == []
    doc = front.build(opts, [], plan)
    assert doc["zoo"] is None and doc["hardware"]["device"] == "LFE5U-85F"
    assert "no zoo baseline: the zoo architecture s2d 1" in front.summary(doc)


def test_a_chip_no_candidate_fits_is_one_line():
    with pytest.raises(
        CostError, match="no candidate array fits the LFE5U-25F: 128x64 CMAX 512 does not fit"
    ):
        HardwareSpace("LFE5U-25F", 0.8, ((128, 64, 512),))
    with pytest.raises(CostError, match="unknown device 'VU9P'"):
        HardwareSpace("VU9P")


def test_joint_trial_returns_a_pair_within_budget_with_its_array(tmp_path):
    """A tiny trial searched on the LFE5U-85F: the returned network's latency on its array is
    within the budget, the final network's exact costs are those of its pick, and the result
    names the array, its resources and its clock."""
    cfg = TrialConfig(
        family="sac",
        cost="latency_ms",
        budget=0.03,
        lam=1.0,
        seed=0,
        epochs=2,
        warmup_epochs=1,
        final_epochs=1,
        final_float_epochs=1,
        out=str(tmp_path),
        name="joint",
        energy_images=8,
        final_seeds=1,
        export=False,
        costs={"fpga_device": "LFE5U-85F", "clock_mhz": None, "arrays": "8x8,16x8:128,32x16:128"},
    )
    res = run_trial(cfg, log=None)
    hw = res["hardware"]
    assert res["costs"]["latency_ms"] == pytest.approx(res["searched_cost"]) and res["searched_cost"] <= 0.03
    assert hw["device"] == "LFE5U-85F" and hw["array"] in ("8x8", "16x8", "32x16")
    assert hw["clock"]["source"] == "model" and max(hw["used"].values()) <= 0.8
    assert hw["latency_ms"] == pytest.approx(res["costs"]["latency_ms"])
    assert hw["cycles"] == res["costs"]["cycles"]


@pytest.mark.parametrize(
    "args,message",
    [
        ([], "give the budgets: --budgets B1,B2"),
        (["--latency-ms", "0.1", "--budgets", "5"], "--latency-ms gives the budgets: drop --budgets"),
        (["--latency-ms", "0.1", "--cost", "energy"], "--latency-ms budgets the latency: drop --cost energy"),
        (
            ["--latency-ms", "0.1", "--device", "XC7VX485T", "--array", "8x8"],
            "the joint search picks the array",
        ),
        (["--budgets", "100", "--device", "VC707"], "the cost must be latency_ms (--latency-ms T) or energy"),
        (["--latency-ms", "0.1", "--arrays", "8x8"], "--arrays is for the joint search of the array"),
        (["--latency-ms", "0.1", "--utilisation", "0.5"], "--utilisation is for the joint search"),
        (["--latency-ms", "0.1", "--cost", "cycles"], "--latency-ms budgets the latency: drop --cost cycles"),
        (["--latency-ms", "0.1", "--device", "XC7VX485T", "--device", "LFE5U-85F"], "two FPGAs given"),
        (["--latency-ms", "0.1", "--device", "tpu"], "--device tpu: neither a training device"),
        (["--latency-ms", "0.1", "--device", "LFE5U-85F", "--arrays", "8x"], "--arrays entry '8x'"),
        (
            ["--latency-ms", "0.1", "--device", "LFE5U-85F", "--utilisation", "1.5"],
            "--utilisation must be at most",
        ),
        (
            ["--latency-ms", "0.1", "--device", "LFE5U-25F", "--arrays", "32x16:128"],
            "no candidate array fits the LFE5U-25F",
        ),
        (
            ["--latency-ms", "0.1", "--device", "LFE5U-85F", "--family", "resnet-fabric"],
            "not defined for the resnet-fabric family",
        ),
    ],
)
def test_bad_joint_input_is_one_line_and_exit_2(args, message, tmp_path, capsys):
    from workbench.commands.search import main

    try:
        code = main([*map(str, args), "--out", str(tmp_path / "o")])
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_device_gives_the_training_device_and_the_chip_apart():
    from workbench.commands.search import build_parser, options_from_args

    argv = ["--latency-ms", "0.02,0.05", "--device", "cuda", "--device", "vc707", "--family", "bnn"]
    opts = options_from_args(build_parser().parse_args(argv), argv)
    assert opts.cost == "latency_ms" and opts.budgets == [0.02, 0.05]
    assert opts.trial["device"] == "cuda" and opts.trial["costs"]["fpga_device"] == "XC7VX485T"
    assert "array" not in opts.trial["costs"] and opts.trial["costs"]["clock_mhz"] is None
    same = [["--arrays", "16x16:128, 8x8"], ["--arrays", "8x8:64,16x16:128,8x8"]]
    texts = {
        options_from_args(build_parser().parse_args(argv + a), argv + a).trial["costs"]["arrays"]
        for a in same
    }
    assert texts == {"8x8:64,16x16:128"}  # one search, whatever the spelling
    argv = ["--budgets", "100"]
    plain = options_from_args(build_parser().parse_args(argv), argv)
    assert plain.trial["device"] == "cpu" and "fpga_device" not in plain.trial["costs"]
    assert plain.trial["costs"]["array"] == "8x8"


def test_report_and_verify_use_each_models_array():
    from workbench.commands.search import _verify_array
    from workbench.search.front import hardware_text
    from workbench.search.options import SearchOptions

    hw = {
        "array": "32x16",
        "cmax": 128,
        "device": "LFE5U-85F",
        "clock": {"mhz": 77.01, "source": "model"},
        "used": {"luts": 0.64, "ffs": 0.3, "brams": 0.5},
    }
    assert hardware_text(hw) == "32x16 CMAX 128, 77.01 MHz (model), 64 % of the LFE5U-85F"
    assert hardware_text(None) == "-"
    opts = SearchOptions(trial={"costs": {"array": "8x8"}})
    assert _verify_array({"hardware": hw}, opts) == {"array": "32x16", "cmax": 128}
    assert _verify_array({}, opts) == {"array": "8x8"}
