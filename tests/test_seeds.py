"""The benches' seeds replay: the seed a bench prints is the seed it used, and setting TB_SEED (or
cocotb's COCOTB_RANDOM_SEED) to it runs the same stimulus again (tb/seeds.py)."""

from __future__ import annotations

import ast
import re
import shutil

import pytest

import tb.sim
from tb.seeds import (
    BASE_SEED,
    SEED_VARIABLES,
    SeedError,
    bench_seed,
    default_seed,
    seed_from_environment,
)
from tests.helpers import ROOT

needs_icarus = pytest.mark.skipif(
    shutil.which("iverilog") is None, reason="Icarus Verilog is needed (make setup installs it)"
)


@pytest.mark.parametrize(
    "env,seed",
    [
        ({}, None),
        ({"TB_SEED": "1796"}, 1796),
        ({"COCOTB_RANDOM_SEED": " 42 "}, 42),
        ({"TB_SEED": "7", "COCOTB_RANDOM_SEED": "7"}, 7),
        ({"TB_SEED": ""}, None),
    ],
)
def test_seed_from_environment(env, seed):
    assert seed_from_environment(env) == seed


@pytest.mark.parametrize(
    "env,message",
    [
        ({"TB_SEED": "abc"}, "TB_SEED='abc' is not an integer seed"),
        ({"TB_SEED": "1.5"}, "TB_SEED='1.5' is not an integer seed"),
        ({"COCOTB_RANDOM_SEED": "-3"}, "COCOTB_RANDOM_SEED='-3': a seed must be in 0 .. 2^63-1"),
        ({"TB_SEED": "1", "COCOTB_RANDOM_SEED": "2"}, "set to different seeds (1 and 2): set one"),
    ],
)
def test_bad_seed_variables_are_one_line(env, message):
    with pytest.raises(SeedError) as info:
        seed_from_environment(env)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_bench_seed_is_the_derived_default_unless_set(monkeypatch, capsys):
    """The seed a bench gets is printed, and the printed seed is the one returned."""
    for name in SEED_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert bench_seed("sdp_ram", 64) == default_seed("sdp_ram", 64)
    out = capsys.readouterr().out
    seed = default_seed("sdp_ram", 64)
    assert f"bench sdp_ram-64: seed {seed}, derived from base seed {BASE_SEED}; TB_SEED={seed}" in out
    monkeypatch.setenv("TB_SEED", "5")
    assert bench_seed("sdp_ram", 64) == 5
    assert "seed 5, set in the environment; TB_SEED=5 replays it" in capsys.readouterr().out


def test_default_seeds_are_stable_and_distinct():
    """A bench's default seed is the same on every run and machine (docs/verification.md's
    replay example prints this one), and differs between benches and parameter sets."""
    assert default_seed("sdp_ram", 64) == 1862262761
    seeds = {
        default_seed(*key) for key in [("sdp_ram", 64), ("sdp_ram", 32), ("stream_fifo", 64), ("sdp_ram",)]
    }
    assert len(seeds) == 4 and all(0 <= s < 2**31 for s in seeds)
    for bad in [("",), ("sdp_ram", 1.5), ("sdp_ram", None)]:
        with pytest.raises(SeedError):
            default_seed(*bad)


def bench_sources():
    return sorted((ROOT / "tb").rglob("test_*.py"))


# benches that use another bench's seed on purpose (bench -> the bench whose seed it uses)
SHARED_SEEDS = {"accelerator_axi": "accelerator"}  # the same compiled programs


def bench_seed_names(tree) -> list[str]:
    """The bench names a module passes to bench_seed (a string constant each, or '?')."""
    return [
        c.args[0].value if c.args and isinstance(c.args[0], ast.Constant) else "?"
        for c in ast.walk(tree)
        if isinstance(c, ast.Call) and getattr(c.func, "id", None) == "bench_seed"
    ]


@pytest.mark.parametrize("path", bench_sources(), ids=lambda p: p.stem)
def test_every_randomized_bench_passes_its_seed_to_the_simulation(path):
    """A bench that draws random stimulus gets its seed from tb.seeds (so the printed seed is the
    one used) under its own name and hands it to the simulation; no bench keeps a seed constant
    of its own, reads TB_SEED or adds offsets itself."""
    text = path.read_text()
    tree = ast.parse(text)
    assert not re.search(r"^SEED\s*=", text, re.M), f"{path.name}: a seed constant (tb.seeds derives seeds)"
    if "seeded_rng(" not in text:
        return
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "run"]
    assert calls and all(any(k.arg == "seed" for k in c.keywords) for c in calls), (
        f"{path.name}: run(...) without seed=bench_seed(...)"
    )
    bench = path.stem.removeprefix("test_")
    names = bench_seed_names(tree)
    assert names and set(names) == {SHARED_SEEDS.get(bench, bench)}, (
        f"{path.name}: bench_seed({names}) instead of bench_seed({SHARED_SEEDS.get(bench, bench)!r}, ...)"
    )
    assert not re.search(r"environ\S*(TB_SEED|COCOTB_RANDOM_SEED)", text), (
        f"{path.name}: reads a seed variable itself (tb.seeds.bench_seed does)"
    )
    assert not re.search(r"seeded_rng\((?!dut\._log)", text), (
        f"{path.name}: seeded_rng takes the simulation's seed, not one of its own"
    )


def test_shared_seeds_name_real_benches():
    stems = {p.stem.removeprefix("test_") for p in bench_sources()}
    assert set(SHARED_SEEDS) | set(SHARED_SEEDS.values()) <= stems


def run_sdp_ram(monkeypatch, capfd, build, env) -> dict:
    """One run of the sdp_ram bench's 64x32bit configuration on Icarus (its own build folder, so
    that it never shares one with the bench running in another worker); what it printed."""
    from tb import test_sdp_ram

    monkeypatch.setattr(tb.sim, "BUILD", build)
    for name in SEED_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    capfd.readouterr()
    test_sdp_ram.test_sdp_ram("icarus", 32, 64, 1)
    cap = capfd.readouterr()
    out = cap.out + cap.err  # the seed line on stdout, the simulator's log (cocotb's seed) on stderr
    printed = re.search(r"seed (\d+) \(TB_SEED=(\d+) replays this run\)", out)
    cocotb_seed = re.search(r"Seeding Python random module with (\d+)", out)
    digest = re.search(r"stimulus ([0-9a-f]{12}): match", out)
    assert printed and cocotb_seed and digest, out[-2000:]
    assert printed.group(1) == printed.group(2) == cocotb_seed.group(1), (
        "the bench and cocotb must print the same seed"
    )
    return {"seed": int(printed.group(1)), "stimulus": digest.group(1)}


@needs_icarus
def test_the_printed_seed_replays_the_run(monkeypatch, capfd, tmp_path):
    """Default run, then TB_SEED=<printed seed>: same seed, same stimulus. The 64x32bit
    configuration's default seed is derived from its parameter set (the depth), the case that
    once printed one seed and replayed another. COCOTB_RANDOM_SEED is the same knob; another
    seed changes the stimulus (so the fingerprint can tell runs apart)."""
    build = tmp_path / "build"
    first = run_sdp_ram(monkeypatch, capfd, build, {})
    assert first["seed"] == default_seed("sdp_ram", 64)
    replay = run_sdp_ram(monkeypatch, capfd, build, {"TB_SEED": str(first["seed"])})
    assert replay == first
    other = run_sdp_ram(monkeypatch, capfd, build, {"COCOTB_RANDOM_SEED": str(first["seed"] + 1)})
    assert other["seed"] == first["seed"] + 1 and other["stimulus"] != first["stimulus"]
