"""benchmarks/paper_scale.py (`make paper-scale`): the one instance it builds per array holds
every layer of the seed CIFAR-10 network and sac_fashion at the paper's CMAX 512, at the cycles
each has on an instance with CMAX 1024 and every memory at its largest (the RTL run itself takes
hours at 128x64: it is the benchmark's, not a test's)."""

from __future__ import annotations

import importlib.util

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
