"""The fused CPU network (gpu_kernels.cpu_impl.FusedCpuNetwork) as the CPU path users get:

* the compare job's `cpu` column: on a small BNN it runs, with its measured time, and every
  layer it materialises has zero mismatches against the golden model (an injected fault is
  counted like on any path); on a SAC network, and on a BNN outside its pattern, the column is
  `-` with a footnote saying why;
* `sacbench map`: the CPU's whole-network choice is the fused network's measured time (the DP
  takes it where no per-layer mapping is faster), shown in its own `fused cpu` column;
  a saved profile keeps the measurement; a network it cannot run says why.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from gpu_kernels import IMPLS
from gpu_kernels.cpu_impl import fused_support, measure_fused
from gpu_kernels.errors import GpuKernelError
from gpu_kernels.mapper import Choice, Mapping, fused_cpu_layer_s, map_network
from gpu_kernels.mapper_report import format_table, write_heatmap
from gpu_kernels.profiling import Profile
from models import golden, ir
from tests.helpers import needs_gxx
from tests.test_gpu_mapper import row, small_net, synthetic_profile
from workbench import compare
from workbench.commands import map as map_command

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "models" / "zoo"
pytestmark = needs_gxx


def compare_run(model, tmp_path, data="random:4", **kw):
    opts = compare.Options(
        model=model, data=data, images=5, rtl_images=0, out=tmp_path / "out", progress=False, **kw
    )
    return compare.run(opts)


def off_pattern_bnn() -> ir.Network:
    """A BNN the GPU kernels run but the fused CPU network does not: a binary conv without a
    Step after it."""
    rng = np.random.default_rng(5)
    pm = lambda *s: np.where(rng.random(s) < 0.5, -1, 1)  # noqa: E731
    return ir.Network(
        (1, 6, 6),
        "uint8",
        [
            ir.IntConv2d(weight=pm(8, 1, 3, 3), bias=np.zeros(8, int), padding=1),
            ir.Step(threshold=np.full(8, 300), direction=np.ones(8, int)),
            ir.BinConv2d(weight=pm(8, 8, 3, 3), bias=np.zeros(8, int), padding=1),
            ir.Flatten(),
        ],
        name="off_pattern",
    )


# -- the compare job ----------------------------------------------------------------------------
def test_compare_has_a_cpu_column_with_zero_mismatches_on_a_small_bnn(tmp_path):
    from workbench.report import summary_lines, write_markdown

    r, code = compare_run(ZOO / "bnn_digits.onnx", tmp_path, data="digits")  # labelled images
    assert code == 0
    cpu = r["cpu"]
    assert cpu["times"] == "measured" and cpu["wall_s"] > 0 and cpu["threads"] >= 1
    assert cpu["images_per_s"] == pytest.approx(5 / cpu["wall_s"])
    assert [(k["first"], k["last"]) for k in cpu["kernels"]] == [(0, 2), (3, 5), (6, 8), (9, 9)]
    assert r["mismatches"]["cpu"] == 0
    layers = r["mismatches"]["layers"]
    compared = [i for i, layer in enumerate(layers) if layer["cpu"] is not None]
    assert compared == [2, 5, 8, 9]  # each fused kernel's last layer, counted against golden
    assert all(layers[i]["cpu"]["count"] == 0 for i in compared)
    assert [layers[i]["absent"]["cpu"] for i in (0, 1, 3, 4, 6, 7)] == [
        {"fused_into": 2}, {"fused_into": 2}, {"fused_into": 5}, {"fused_into": 5},
        {"fused_into": 8}, {"fused_into": 8},
    ]  # fmt: skip
    assert [row["cpu"] for row in r["mapping"]] == ["kernel 1"] * 3 + ["kernel 2"] * 3 + ["kernel 3"] * 3 + [
        "kernel 4"
    ]
    assert r["accuracy"]["golden"] is not None and r["accuracy"]["cpu"] == r["accuracy"]["golden"]
    # the GPU column is the emulation's exactness, as before
    assert r["mismatches"]["gpu"] == 0
    lines = summary_lines(r)
    assert lines[2].split()[-6:] == ["FPGA", "mism.", "GPU", "mism.", "CPU", "mism."]
    assert "mismatching elements: FPGA 0, GPU 0, CPU 0" in lines
    assert (
        lines[-1].startswith("CPU (fused CPU network, ")
        and " images/s (golden executor, numpy: " in lines[-1]
    )
    write_markdown(r, tmp_path / "r.md", [])
    md = (tmp_path / "r.md").read_text()
    assert "| 9 | BinDense 256->10 | array (tiles 64) |" in md and "| kernel 4 | 0 | 0 | 0 |" in md
    assert "CPU path: layers 0, 1 fused into layer 2:" in md


def test_the_cpu_columns_outputs_are_the_fused_networks_own(tmp_path):
    """run_cpu's outputs are exactly the golden outputs of each kernel's last layer (the same
    arrays the report counts); the scores are those of the timed run."""
    net = compare.load_model(ZOO / "bnn_digits.onnx")
    x = np.random.default_rng(1).integers(0, 256, size=(7, *net.input_shape), dtype=np.uint8)
    res, why = compare.run_cpu(net, x)
    assert why is None and sorted(res.outputs) == [2, 5, 8, 9]
    want = golden.run(net, x)
    for i, out in res.outputs.items():
        np.testing.assert_array_equal(out, want.outputs[i])
    # the kernels' times on their last layers, the input's checks and layout on the first's:
    # the layers add up to the wall time (as the mapper's measurement: FusedTiming.layer_s)
    assert sum(res.info["layer_s"]) == pytest.approx(res.info["wall_s"])
    assert res.info["layer_s"][2] >= res.info["kernels"][0]["seconds"]
    assert [res.info["layer_s"][i] for i in (5, 8, 9)] == [k["seconds"] for k in res.info["kernels"][1:]]
    assert [res.info["layer_s"][i] for i in (0, 1, 3, 4, 6, 7)] == [0.0] * 6


def test_an_injected_cpu_fault_is_a_mismatch(tmp_path):
    r, code = compare_run(ZOO / "bnn_digits.onnx", tmp_path, inject_fault="cpu")
    assert code == 1 and r["mismatches"]["cpu"] == 1 and r["mismatches"]["gpu"] == 0
    assert r["mismatches"]["layers"][-1]["cpu"]["first"] == [0, 0]


def test_a_sac_network_has_no_cpu_path_and_says_why(tmp_path):
    r, code = compare_run(ZOO / "sac_digits.onnx", tmp_path)
    assert code == 0
    why = "the fused CPU network runs BNN layers only; layer 0 is a PointwiseConv"
    assert r["cpu"]["note"] == f"n/a: {why}" and r["cpu"]["wall_s"] is None
    assert r["mismatches"]["cpu"] is None and r["accuracy"]["cpu"] is None
    assert all(
        layer["cpu"] is None and layer["absent"]["cpu"] == {"not_run": why}
        for layer in r["mismatches"]["layers"]
    )
    assert all(row["cpu"] == "n/a" for row in r["mapping"])
    from workbench.report import summary_lines

    lines = summary_lines(r)
    assert lines[-1] == f"CPU path: not run ({why})"
    assert f"[2] CPU path not run: {why}." in lines  # [1]: the GPU path, also not run
    assert all(line.endswith("- [2]".rjust(12)) for line in lines[3:13])
    with pytest.raises(compare.CompareError, match="the cpu path did not run"):
        compare_run(ZOO / "sac_digits.onnx", tmp_path / "again", inject_fault="cpu")


def test_a_bnn_outside_the_fused_pattern_runs_on_the_gpu_path_only():
    net = off_pattern_bnn()
    why = fused_support(net)
    assert why == "layer 2 (BinConv2d): the fused CPU network needs a Step after every convolution"
    res, reason = compare.run_cpu(net, np.zeros((2, 1, 6, 6), np.uint8))
    assert res is None and reason == why
    assert compare.absent(4, res, reason, compare.cpu_fused_into(res)) == [{"not_run": why}] * 4


# -- the mapper ---------------------------------------------------------------------------------
def fused_meta(batch_s: dict) -> dict:
    """A fused CPU network measurement of small_net (kernels 0-1 and 2-3): per batch size its
    seconds per batch, split 3:1 between the two kernels."""
    return {
        "source": "synthetic",
        "kernels": [[0, 1], [2, 3]],
        "batch_s": {str(b): s for b, s in batch_s.items()},
        "layer_s": {str(b): [0.0, 0.75 * s, 0.0, 0.25 * s] for b, s in batch_s.items()},
    }


def with_fused(prof: Profile, batch_s: dict) -> Profile:
    prof.meta = {**prof.meta, "fused_cpu": fused_meta(batch_s)}
    return prof


def test_dp_runs_the_whole_network_as_the_fused_cpu_network_when_it_is_fastest():
    """The synthetic profile's best DP mapping costs 33 at batch 8 (every layer on the per-layer
    CPU implementation, one batch); the fused network does a batch of 8 in 3: DP takes it,
    Algorithm 1 cannot (it chooses per layer)."""
    net = small_net()
    m = map_network(net, [4, 8], with_fused(synthetic_profile(net), {4: 2.0, 8: 3.0}), n_images=8)
    dp = m.dp
    assert dp.fused_cpu and dp.impls == ["cpu"] * 4 and dp.batch == 8
    assert dp.layer_s == [0.0, 2.25, 0.0, 0.75] and dp.total_s == 3.0 and dp.transfers == []
    assert dp.per_batch_s == {4: 4.0, 8: 3.0} and (dp.gpu_kernel_s, dp.gpu_host_s) == (0.0, 0.0)
    assert not m.algorithm1.fused_cpu and not m.agree()
    text = format_table(m)
    assert text.splitlines()[1].startswith(
        "CPU: the whole network as the fused CPU network (fused cpu; synthetic)"
    )
    assert (
        "DP runs the whole network on the CPU as the fused CPU network: 3,000.000 ms for the 8 images" in text
    )
    table = [line for line in text.splitlines() if line.lstrip()[:2] in ("0 ", "1 ", "2 ", "3 ")]
    assert "fused cpu [ms]" in text and table[0].endswith("in 1d") and table[1].endswith("2,250.000d")
    assert table[2].endswith("in 3d") and table[3].endswith("750.000d")
    # the choice survives a JSON round trip
    back = Mapping.from_json(json.loads(json.dumps(m.to_json())))
    assert back.dp.fused_cpu and back.profile.meta["fused_cpu"]["kernels"] == [[0, 1], [2, 3]]
    assert Choice.from_dict({k: v for k, v in dp.as_dict().items() if k != "fused_cpu"}).fused_cpu is False


def test_dp_keeps_a_faster_gpu_mapping_over_the_fused_cpu_network(tmp_path):
    """Every layer 1 s in X, 10 s on the CPU, copies 0.5 s: all-X costs 5 s a batch, less than
    the fused network's 6 s."""
    net = small_net()
    prof = synthetic_profile_at(net, [4])
    prof.layer_s[4] = [row(cpu=10.0, X=1.0)] * 4
    prof.h2d_s[4] = prof.d2h_s[4] = [0.5] * 5
    m = map_network(net, [4], with_fused(prof, {4: 6.0}), n_images=4)
    assert not m.dp.fused_cpu and m.dp.impls == ["X"] * 4 and m.dp.total_s == 5.0
    text = format_table(m)
    assert "fused cpu [ms]" in text and "DP runs the whole network" not in text
    assert write_heatmap(m, tmp_path / "h.png").stat().st_size > 1000


def test_a_profile_without_or_with_a_bad_fused_measurement():
    net = small_net()
    plain = map_network(net, [4], synthetic_profile(net), n_images=8)
    assert not plain.dp.fused_cpu and fused_cpu_layer_s(plain.profile, 4) is None
    assert "CPU: the per-layer CPU implementation only (the profile holds no times" in format_table(plain)
    prof = synthetic_profile(net)
    prof.meta = {"fused_cpu": {"layer_s": {"4": [1.0, 2.0]}}}
    with pytest.raises(GpuKernelError, match="fused_cpu, batch 4: needs 4 non-negative times"):
        map_network(net, [4], prof, n_images=8)


def test_map_network_measures_the_fused_cpu_network():
    net = small_net()
    m = map_network(net, [1, 2], synthetic_profile_at(net, [1, 2]), n_images=4, fused_cpu=measure_fused)
    fused = m.profile.meta["fused_cpu"]
    assert fused["kernels"] == [[0, 1], [2, 3]] and fused["source"].startswith("measured: fused CPU network")
    for b in ("1", "2"):
        assert fused["batch_s"][b] > 0 and sum(fused["layer_s"][b]) == pytest.approx(fused["batch_s"][b])
        assert fused["layer_s"][b][0] == fused["layer_s"][b][2] == 0.0
    # a BNN it cannot run: the reason, no times, the per-layer CPU implementation only
    off = off_pattern_bnn()
    m = map_network(off, [1], synthetic_profile_at(off, [1]), n_images=4, fused_cpu=measure_fused)
    assert m.profile.meta["fused_cpu"] == {"reason": fused_support(off)} and not m.dp.fused_cpu
    assert format_table(m).splitlines()[1] == (
        "CPU: the per-layer CPU implementation only: layer 2 (BinConv2d): the fused CPU network "
        "needs a Step after every convolution."
    )


def synthetic_profile_at(net, batches) -> Profile:
    """Every implementation 1 s per layer and batch, copies free."""
    names = [layer.describe() for layer in net.layers]
    layers = {b: [row(**dict.fromkeys(IMPLS, 1.0))] * len(names) for b in batches}
    copies = {b: [0.0] * (len(names) + 1) for b in batches}
    return Profile(net.name, names, list(batches), layers, copies, dict(copies), list(IMPLS), "synthetic")


def run_map(args, capsys):
    code = map_command.main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_sacbench_map_measures_the_fused_network_for_its_cpu_choice(tmp_path, capsys):
    """A measured map (the emulation's GPU times) of the zoo digits BNN times the fused CPU
    network at every batch size; a second map from the saved mapping.json keeps that
    measurement and makes the same choice without measuring."""
    out = tmp_path / "m"
    code, text, err = run_map(
        ["--network", ZOO / "bnn_digits.onnx", "--batch-exp", "0", "1", "--repeats", "1", "--warmup", "0",
         "--images", "100", "--out", out],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads((out / "mapping.json").read_text())
    fused = doc["profile"]["meta"]["fused_cpu"]
    assert sorted(fused["batch_s"]) == ["1", "2"] and all(t > 0 for t in fused["batch_s"].values())
    assert "CPU: the whole network as the fused CPU network (fused cpu; measured: fused CPU network" in text
    assert "fused cpu [ms]" in text
    again = tmp_path / "again"
    code, text2, err = run_map(
        ["--network", ZOO / "bnn_digits.onnx", "--profile", out / "mapping.json", "--batch-exp", "0", "1",
         "--images", "100", "--out", again],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    doc2 = json.loads((again / "mapping.json").read_text())
    assert doc2["profile"]["meta"]["fused_cpu"] == fused
    assert doc2["dp"]["fused_cpu"] == doc["dp"]["fused_cpu"] and doc2["dp"]["impls"] == doc["dp"]["impls"]
    # the same measurement with every per-layer time slow (1,000 s): the DP must take the fused
    # network, its time the measured batch's x the batches
    slow = json.loads((out / "mapping.json").read_text())
    slow["profile"]["layer_s"] = {
        b: [[None if t is None else 1e3 for t in times] for times in rows]
        for b, rows in slow["profile"]["layer_s"].items()
    }
    (tmp_path / "slow.json").write_text(json.dumps(slow))
    code, text3, err = run_map(
        ["--network", ZOO / "bnn_digits.onnx", "--profile", tmp_path / "slow.json", "--batch-exp", "0", "1",
         "--images", "100", "--out", tmp_path / "slow"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    dp = json.loads((tmp_path / "slow" / "mapping.json").read_text())["dp"]
    assert dp["fused_cpu"] and dp["impls"] == ["cpu"] * len(dp["impls"])
    b = dp["batch"]
    assert dp["total_s"] == pytest.approx(fused["batch_s"][str(b)] * -(-100 // b))
    assert "DP runs the whole network on the CPU as the fused CPU network" in text3
