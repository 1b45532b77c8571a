"""RTL images in parallel (workbench/rtl_shards.py, `--rtl-jobs`, `--address`): shards are
contiguous and in order, and a sharded run, in local processes or as Ray tasks, gives exactly
the one-process run's results (every layer's output, every instruction's cycles and activity).
The simulator is the compare job's own build for the zoo SAC model (shared with
tests/test_compare.py and tb/test_accelerator_tb_wrapper.py)."""
import numpy as np
import pytest

from fpga.compiler import compile_network, fitted_config
from models import zoo
from models.datasets import load_for_network
from models.onnx import load_network
from workbench import rtl_shards
from workbench.commands import compare as compare_cmd


def test_shard_bounds_are_contiguous_balanced_and_in_order():
    for n in range(1, 12):
        for jobs in range(1, 6):
            b = rtl_shards.shard_bounds(n, jobs)
            assert len(b) == min(n, jobs)
            assert b[0][0] == 0 and b[-1][1] == n
            assert all(b[k][1] == b[k + 1][0] for k in range(len(b) - 1))
            sizes = [hi - lo for lo, hi in b]
            assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1


@pytest.fixture(scope="module")
def sac_job(tmp_path_factory):
    net = load_network(zoo.path("sac_digits"))
    prog = compile_network(net, fitted_config(net, 8, 8, 64))
    x, _ = load_for_network("digits", net, split="test")
    work = tmp_path_factory.mktemp("rtl")
    serial = rtl_shards.run(prog, x[:2], "verilator", 1, work / "serial", progress=False)
    return prog, x[:2], serial, work


def assert_same(a: dict, b: dict):
    assert len(a["results"]) == len(b["results"])
    for k, (ra, rb) in enumerate(zip(a["results"], b["results"])):
        assert ra["segments"] == rb["segments"], f"image {k}: cycles or activity differ"
        assert ra["outputs"].keys() == rb["outputs"].keys()
        for i in ra["outputs"]:
            assert np.array_equal(ra["outputs"][i], rb["outputs"][i]), f"image {k}, layer {i}"


def test_local_shards_equal_one_process(sac_job):
    prog, x, serial, work = sac_job
    assert serial["jobs"] == 1
    sharded = rtl_shards.run(prog, x, "verilator", 2, work / "two", progress=False)
    assert sharded["jobs"] == 2 and [s["images"] for s in sharded["shards"]] == [1, 1]
    assert_same(serial, sharded)


def test_ray_shards_equal_one_process(sac_job):
    pytest.importorskip("ray")
    prog, x, serial, work = sac_job
    sharded = rtl_shards.run(prog, x, "verilator", 2, work / "ray", address="local",
                             progress=False)
    assert sharded["jobs"] == 2
    assert_same(serial, sharded)


@pytest.mark.parametrize("args, message", [
    (["--rtl-jobs", "0"], "--rtl-jobs must be at least 1"),
    (["--address", " "], "--address must name a Ray cluster"),
])
def test_bad_sharding_options_exit_2_with_one_line(args, message, capsys, tmp_path):
    code = compare_cmd.main(["--model", str(zoo.path("sac_digits")), "--images", "1",
                             "--out", str(tmp_path), *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0]


def test_failed_simulator_build_exits_3_and_keeps_the_log(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(rtl_shards, "TOPLEVEL", "no_such_top")
    code = compare_cmd.main(["--model", str(zoo.path("sac_digits")), "--images", "1",
                             "--rtl-images", "1", "--out", str(tmp_path)])
    last = capsys.readouterr().err.strip().splitlines()[-1]      # after the progress bar
    assert code == 3 and last.startswith("compare_gpu_fpga: error: building the verilator "
                                         "simulator of no_such_top failed")
    assert (tmp_path / "rtl_failure.log").exists() and last.endswith(
        f"simulator log: {tmp_path / 'rtl_failure.log'}")
