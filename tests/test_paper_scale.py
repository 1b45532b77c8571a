"""benchmarks/paper_scale.py (`make paper-scale`): the one instance it builds per array holds
every layer of the seed CIFAR-10 network and sac_fashion at the paper's CMAX 512, at the cycles
each has on an instance with CMAX 1024 and every memory at its largest (the RTL run itself takes
hours at 128x64: it is the benchmark's, not a test's)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from fpga.compiler import compile_network, roomy_config
from tests.helpers import ROOT


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("shape", ["128x64", "32x32"])
def test_one_instance_holds_every_network_at_cmax_512(shape):
    ps = _load("paper_scale")
    rows, cols = (int(v) for v in shape.split("x"))
    nets = ps.seed_networks(None) + [ps.zoo_fashion()]
    cfg = ps.shared_config(rows, cols, 512, nets)
    assert (cfg.rows, cfg.cols, cfg.cmax) == (rows, cols, 512)
    roomy = roomy_config(rows, cols, 1024)
    for name, net in nets:
        cycles = compile_network(net, cfg, encode_words=False).cycles_per_image()
        assert cycles == compile_network(net, roomy, encode_words=False).cycles_per_image(), name
    assert len(nets) == 21


def test_a_layer_run_counts_the_array_layers_and_catches_a_wrong_output(monkeypatch, tmp_path):
    """run_layer with the RTL replaced by the interpreter: sac_fashion on an 8x8 instance is
    exact, its host layers are not counted as compared; one flipped bit of an array layer's
    output, or one cycle off the model, makes it inexact."""
    from fpga.execute import interpret
    from workbench import rtl_shards

    ps = _load("paper_scale")
    name, net = ps.zoo_fashion()
    cfg = ps.shared_config(8, 8, 64, [(name, net)])
    spoil = set()

    def fake_run(prog, x, sim, jobs, workdir, progress=True):
        assert workdir.is_absolute()  # the simulator runs in a directory of its own
        r = interpret(prog, x)
        outs = {i: o.copy() for i, o in r.outputs.items()}
        segments = [(list(st.cycles), []) for st in r.segments]
        if "output" in spoil:
            outs[max(i for i in outs if i not in prog.host_layers)].flat[0] ^= 1
        if "cycles" in spoil:
            segments[0][0][0] += 1
        return {
            "results": [{"outputs": outs, "segments": segments}],
            "shards": [{"sim_s": 1.0}],
            "wall_s": 2.0,
        }

    monkeypatch.setattr(rtl_shards, "run", fake_run)
    monkeypatch.chdir(tmp_path)
    run = lambda: ps.run_layer(name, net, cfg, "verilator", (ps.SEED, 0), Path("runs"))  # noqa: E731
    r = run()
    assert ps.exact(r) and r["host_layers"] and not set(r["host_layers"]) & set(r["array_layers_compared"])
    assert r["last_layer_compared"] and r["rtl_cycles"] == r["model_cycles"] > 0
    spoil.add("output")
    r = run()
    assert r["mismatching_elements"] == 1 and not ps.exact(r)
    spoil.clear()
    spoil.add("cycles")
    r = run()
    assert not r["cycles_match_model"] and not ps.exact(r)
