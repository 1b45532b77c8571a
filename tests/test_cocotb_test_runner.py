"""TB_RUNNER=cocotb-test: the same bench definition (tb/test_sdp_ram.py's pytest function) runs
through cocotb-test's runner on both simulators; an unknown runner is one clear error."""

import pytest

from tb import sim as tb_sim
from tb.sim import SIMULATORS
from tb.test_sdp_ram import test_sdp_ram as sdp_ram_bench


@pytest.mark.parametrize("sim", SIMULATORS)
def test_sdp_ram_bench_through_cocotb_test(sim, monkeypatch):
    monkeypatch.setenv("TB_RUNNER", "cocotb-test")
    sdp_ram_bench(sim, 8, 16, 1)
    bdir = tb_sim.build_dir(
        "sdp_ram", sim, {"WIDTH": 8, "DEPTH": 16, "AW": 4, "READ_OLD_ON_COLLISION": 1}, "cocotb-test"
    )
    assert list(bdir.glob("*results.xml")), f"cocotb-test wrote no results file in {bdir}"


def test_unknown_runner_is_named(monkeypatch):
    monkeypatch.setenv("TB_RUNNER", "vunit")
    with pytest.raises(ValueError, match="TB_RUNNER must be cocotb .default. or cocotb-test"):
        tb_sim.run("sdp_ram", "test_sdp_ram", "icarus", {"WIDTH": 8, "DEPTH": 16, "AW": 4})
