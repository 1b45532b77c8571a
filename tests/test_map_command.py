"""`sacbench map` / scripts/map_bnn.py: the report reads right (units on every number, one table
when the algorithms agree, no raw JSON on stdout), results go to --out as a whole, and bad flags
get one line and exit status 2 before any measuring."""

import json
import subprocess
import sys

import pytest

from gpu_kernels import IMPLS
from gpu_kernels.mapper import map_network
from gpu_kernels.mapper_report import format_table
from gpu_kernels.profiling import Profile
from models.random_networks import fashion_bnn
from tests.helpers import ROOT
from tests.test_gpu_mapper import row, small_net, synthetic_profile
from workbench.commands import map as map_command


def saved_profile(tmp_path):
    """A fashion-shaped profile in which configuration X wins every layer at batch 2."""
    net = fashion_bnn(0)
    n = len(net.layers)
    prof = Profile(
        net.name,
        [layer.describe() for layer in net.layers],
        [1, 2],
        {b: [[0.001 * (i + 1) * (2 if m == "cpu" else 1) for m in IMPLS] for i in range(n)] for b in (1, 2)},
        {b: [1e-5] * (n + 1) for b in (1, 2)},
        {b: [1e-5] * (n + 1) for b in (1, 2)},
        list(IMPLS),
        "synthetic",
    )
    path = tmp_path / "p.json"
    path.write_text(json.dumps(prof.to_json()))
    return path, n


def run_map(args, capsys):
    try:
        code = map_command.main([str(a) for a in args])
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_saved_profile_writes_out_and_prints_tables_with_units(tmp_path, capsys):
    profile, n = saved_profile(tmp_path)
    out_dir = tmp_path / "o"
    code, out, err = run_map(
        ["--network", "fashion", "--profile", profile, "--batch-exp", "0", "1", "--out", out_dir], capsys
    )
    assert code == 0, err
    doc = json.loads((out_dir / "mapping.json").read_text())
    assert doc["dp"]["impls"] == ["X"] * n and doc["dp"]["batch"] == 2
    assert (out_dir / "heatmap.png").stat().st_size > 1000
    assert sorted(p.name for p in out_dir.iterdir()) == [".sacbench.json", "heatmap.png", "mapping.json"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "temporary left behind"
    assert "BinConv2d 64->64" in out and f"wrote mapping.json, heatmap.png in {out_dir}" in out
    assert not any(line.lstrip().startswith("{") for line in out.splitlines()), "raw JSON"
    # units in every column header; both algorithms agree here: one layer table
    assert "cpu [ms]" in out and "XYZ [ms]" in out and "total [ms]" in out
    assert out.count("Layer times at batch") == 1
    assert "Algorithm 1 and DP choose the same mapping: batch 2" in out


def test_bad_network_is_refused(tmp_path, capsys):
    profile, _ = saved_profile(tmp_path)
    code, _, err = run_map(
        ["--network", "cifar10", "--profile", profile, "--batch-exp", "0", "1", "--out", tmp_path / "o"],
        capsys,
    )
    assert code == 2 and "different network" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_table_marks_each_algorithm_when_they_differ():
    """The synthetic profile of tests/test_gpu_mapper.py: both choose batch 8, Algorithm 1 mixes
    devices, DP stays on the CPU: one table, `a` and `d` marks, Algorithm 1's copies listed."""
    net = small_net()
    m = map_network(net, [4, 8], synthetic_profile(net), n_images=8)
    text = format_table(m)
    assert text.count("Layer times at batch 8") == 1 and "Layer times at batch 4" not in text
    assert "they differ in layer(s) 0, 2" in text
    rows = [line for line in text.splitlines() if line.lstrip()[:2] in ("0 ", "1 ", "2 ", "3 ")]
    assert "a" in rows[0] and "d" in rows[0] and "*" in rows[1]
    assert "Algorithm 1 copies to the GPU before layer 0" in text
    assert "Algorithm 1 copies to the host after layer 3" not in text  # 3 runs on the CPU


def test_table_has_one_per_batch_size_when_batches_differ():
    """Batch 8 has the fastest GPU layers (Algorithm 1 takes them) but dear copies; at batch 4
    staying on the CPU is cheapest with copies (DP)."""
    net = small_net()
    names = [layer.describe() for layer in net.layers]
    layers = {4: [row(cpu=2, X=1.9)] * 4, 8: [row(cpu=10, X=0.5)] * 4}
    copies = {4: [5.0] * 5, 8: [1000.0] * 5}
    prof = Profile(net.name, names, [4, 8], layers, copies, dict(copies), list(IMPLS), "synthetic")
    m = map_network(net, [4, 8], prof, n_images=8)
    assert (m.algorithm1.batch, m.dp.batch) == (8, 4)
    text = format_table(m)
    assert "Algorithm 1 chooses batch 8 (marked a), DP batch 4 (marked d)" in text
    assert "Layer times at batch 8 (1 batches)" in text and "Layer times at batch 4 (2 batches)" in text


@pytest.mark.parametrize(
    "args,message",
    [
        (["--network", "nope"], "--network nope: not a named shape (fashion, cifar10) and is no such file"),
        (["--network", "tests"], "--network tests: not a named shape (fashion, cifar10) and is a directory"),
        (["--seed", "-1"], "--seed must be at least 0, got -1"),
        (["--batch-exp", "5", "2"], "--batch-exp 5 2: BL must not be larger than BU"),
        (["--batch-exp", "0", "21"], "--batch-exp must be in 0..20, got 21"),
        (["--batch-exp", "-1", "2"], "--batch-exp must be in 0..20, got -1"),
        (["--batch-exp", "1"], "--batch-exp: expected 2 arguments"),
        (["--images", "0"], "--images must be at least 1, got 0"),
        (["--images", "1e3"], "--images must be an integer, got '1e3'"),
        (["--repeats", "0"], "--repeats must be at least 1, got 0"),
        (["--warmup", "-1"], "--warmup must be at least 0, got -1"),
        (["--threads", "0"], "--threads must be in 1..768, got 0"),
        (["--threads", "5000"], "--threads must be in 1..768, got 5000"),
        (["--word-bits", "16"], "invalid choice: 16 (choose from 32, 64)"),
        (["--backend", "opencl"], "invalid choice: 'opencl'"),
        (["--profile", "/no/such/profile.json"], "--profile /no/such/profile.json: cannot read profile"),
        (["--out", "/proc/sacbench/map"], "--out /proc/sacbench/map: is under /proc, a virtual file"),
        (["--out", "."], "--out .: holds the current directory"),
        (["--out", "/"], "--out /: is the root directory"),
    ],
)
def test_bad_flags_one_line_exit_2_before_work(args, message, tmp_path, capsys):
    """Every bad flag is refused before any measuring (the default profile is 'measured': a run
    that got that far would print its progress bar)."""
    out_dir = tmp_path / "o"
    code, out, err = run_map(args + ([] if "--out" in args else ["--out", out_dir]), capsys)
    assert code == 2 and message in err, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("sacbench map: error: "), err
    assert "profiling" not in err and not out and not out_dir.exists()


@pytest.mark.parametrize(
    "fused,message",
    [
        ({"kernels": [[0]]}, "kernels: needs [first, last] layer pairs, 0 <= first <= last < 10, got [[0]]"),
        ({"kernels": [[0, 10]]}, "kernels: needs [first, last] layer pairs"),
        ({"kernels": [[2, 1]]}, "kernels: needs [first, last] layer pairs"),
        ({"kernels": [["0", 1]]}, "kernels: needs [first, last] layer pairs"),
        ({"kernels": "0-1"}, "kernels: needs [first, last] layer pairs"),
        ({"layer_s": [1.0]}, "layer_s: needs an object (batch size: times)"),
        ({"batch_s": {"1": -1.0}}, "batch_s: needs non-negative seconds"),
        ("fast", "profile meta fused_cpu: needs an object"),
    ],
)
def test_a_saved_profile_with_a_bad_fused_cpu_measurement_is_exit_2(fused, message, tmp_path, capsys):
    """A saved profile's fused CPU network measurement (meta fused_cpu) is checked like its
    times: one line, exit 2, nothing written."""
    profile, n = saved_profile(tmp_path)
    doc = json.loads(profile.read_text())
    doc.setdefault("meta", {})["fused_cpu"] = fused
    profile.write_text(json.dumps(doc))
    out_dir = tmp_path / "o"
    code, out, err = run_map(
        ["--network", "fashion", "--profile", profile, "--batch-exp", "0", "1", "--out", out_dir], capsys
    )
    assert code == 2 and message in err, err
    assert len(err.strip().splitlines()) == 1 and err.startswith(
        "sacbench map: error: profile meta fused_cpu"
    )
    assert not out and not out_dir.exists()


def test_out_is_a_file_or_holds_other_files(tmp_path, capsys):
    profile, _ = saved_profile(tmp_path)
    common = ["--profile", profile, "--batch-exp", "0", "1", "--out"]
    afile = tmp_path / "file"
    afile.write_text("mine")
    code, _, err = run_map(common + [afile], capsys)
    assert code == 2 and f"--out {afile}: is a file, not a directory" in err
    assert afile.read_text() == "mine"
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    code, _, err = run_map(common + [other], capsys)
    assert code == 2 and "already holds 1 entry (notes.txt); give --force" in err
    # --force replaces only a directory this command wrote: notes.txt is the user's
    code, _, err = run_map(common + [other, "--force"], capsys)
    assert code == 2 and "holds files but is not a directory sacbench map wrote" in err
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]
    assert (other / "notes.txt").read_text() == "mine"
    mine = tmp_path / "mine"
    code, _, err = run_map(common + [mine], capsys)
    assert code == 0, err
    # an earlier mapping is replaced with --force, and not without
    code, _, err = run_map(common + [mine], capsys)
    assert code == 2 and "give --force" in err
    code, _, err = run_map(common + [mine, "--force"], capsys)
    assert code == 0, err
    assert sorted(p.name for p in mine.iterdir()) == [".sacbench.json", "heatmap.png", "mapping.json"]
    # ... unless the user has put a file of their own into it since
    (mine / "notes.txt").write_text("mine too")
    code, _, err = run_map(common + [mine, "--force"], capsys)
    assert code == 2 and "also holds notes.txt, which sacbench map did not write" in err
    assert (mine / "notes.txt").read_text() == "mine too"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_help_shows_defaults_and_examples_once():
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "map_bnn.py"), "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 0
    text = " ".join(out.stdout.split())  # argparse wraps the help lines
    for default in (
        "(default: fashion)",
        "(default: measured)",
        "(default: out/map)",
        "(default: 10000)",
        "(default: 0 4",
        "(default: 256)",
    ):
        assert default in text, default
    assert text.count("Map a BNN's layers") == 1
    assert "tests/fixtures/hepbnn_fashion.onnx" in text
    assert (ROOT / "tests" / "fixtures" / "hepbnn_fashion.onnx").exists()
