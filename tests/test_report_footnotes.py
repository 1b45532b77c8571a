"""The compare report's footnotes: every `-` mismatch cell carries a mark `[k]`, and footnote k says
why that path has no output of that layer: the path did not run (and why), the layer is fused
into layer N (naming N, also when N is not the next layer), the path keeps no output of it. On
the console (`summary_lines`) and in report.md (`write_markdown`); the reasons come from the
compare job (`absent`, `fpga_fused_into`, `cpu_fused_into`), and one real run on the SAC digits
model checks them end to end."""

import json
from pathlib import Path

from workbench import report
from workbench.compare import PathResult, absent, cpu_fused_into, fpga_fused_into

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "models" / "zoo"

ZERO = {"count": 0, "first": None, "got": None, "want": None}
GPU_NOT_RUN = {"batch": None, "latency_ms_per_batch": None, "images_per_s": None, "energy_uj_per_image": None}
CPU_RAN = {"threads": 2, "wall_s": 0.001, "ms_per_image": 0.25, "images_per_s": 4000.0}


def make_report(n: int, cells: dict, absent_: dict, gpu: dict | None = None, cpu: dict | None = None) -> dict:
    """A report of `n` layers L0.. in which cells[(i, path)] is None (a `-`) for the listed cells,
    0 mismatches elsewhere; absent_[(i, path)] the reason recorded for a `-`."""
    layers, mapping = [], []
    for i in range(n):
        entry = {"index": i, "layer": f"L{i}", "absent": {}}
        for path in ("fpga", "gpu", "cpu"):
            entry[path] = None if (i, path) in cells else dict(ZERO)
            if (i, path) in absent_:
                entry["absent"][path] = absent_[(i, path)]
        layers.append(entry)
        mapping.append(
            {"index": i, "layer": f"L{i}", "fpga": "array (tiles 1)", "gpu": "X", "cpu": "kernel 1"}
        )
    return {
        "model": "m.onnx",
        "network": "net",
        "data": "random",
        "images": 4,
        "rtl_images": 0,
        "accuracy": {"golden": None, "gpu": None, "fpga": None, "cpu": None},
        "gpu_backend": "cupy",
        "mismatches": {"gpu": 0, "fpga": 0, "cpu": 0, "layers": layers},
        "fpga": {
            "array": "8x8",
            "clock_mhz": 170.0,
            "cycles_per_image": 100,
            "latency_ms": 0.1,
            "images_per_s": 10.0,
            "energy_uj_per_image": 1.0,
            "activity_per_image": 5.0,
            "rtl": {"images": 0, "sim": None},
            "layers": [],
            "host_layers": [],
        },
        "gpu": gpu
        or {"batch": 4, "latency_ms_per_batch": 1.0, "images_per_s": 4.0, "energy_uj_per_image": None},
        "cpu": cpu or dict(CPU_RAN),
        "golden": {"layer_s": [0.01] * n},
        "mapping": mapping,
    }


def table_and_notes(r: dict) -> tuple[list, list]:
    """(console table rows, console footnotes)."""
    lines = report.summary_lines(r)
    n = len(r["mapping"])
    rows = lines[3 : 3 + n]
    notes = []
    for line in lines[3 + n + 1 :]:
        if not line.startswith("["):
            break
        notes.append(line)
    return rows, notes


def md_notes(r: dict, tmp_path) -> tuple[list, list]:
    """(report.md table rows, report.md footnotes)."""
    report.write_markdown(r, tmp_path / "r.md", [])
    lines = (tmp_path / "r.md").read_text().splitlines()
    n = len(r["mapping"])
    head = lines.index(
        "| # | layer | FPGA path | GPU impl | CPU kernel | FPGA mismatches | GPU mismatches "
        "| CPU mismatches |"
    )
    rows = lines[head + 2 : head + 2 + n]
    at = lines.index("`- [k]`: no output of that layer on that path to compare, because:")
    notes = []
    for line in lines[at + 2 :]:
        if not line:
            break
        notes.append(line)
    return rows, notes


def cells(row: str) -> list:
    """The three mismatch cells of a report.md row (FPGA, GPU, CPU)."""
    return [c.strip() for c in row.strip("|").split("|")][-3:]


# -- each reason -------------------------------------------------------------------------------
def test_a_path_that_did_not_run_has_one_footnote_saying_why(tmp_path):
    """No GPU path (a SAC network): every GPU cell points to one footnote with the reason."""
    n = 3
    r = make_report(
        n,
        {(i, "gpu") for i in range(n)},
        {(i, "gpu"): {"not_run": "the GPU kernels cover BNN layers only"} for i in range(n)},
        gpu={**GPU_NOT_RUN, "note": "n/a: the GPU kernels cover BNN layers only"},
    )
    rows, notes = table_and_notes(r)
    assert notes == ["[1] GPU path not run: the GPU kernels cover BNN layers only."]
    assert all(row.endswith(" " + "- [1]".rjust(12) + " " + "0".rjust(12)) for row in rows)
    rows, notes = md_notes(r, tmp_path)
    assert notes == ["1. GPU path not run: the GPU kernels cover BNN layers only."]
    assert [cells(row) for row in rows] == [["0", "- [1]", "0"]] * n


def test_a_layer_fused_into_a_later_layer_than_the_next_names_that_layer(tmp_path):
    """The SAC array computes a shift and a conv with the pixel sum two layers on: the footnote
    names layer 4, never 'the next one'."""
    r = make_report(5, {(2, "fpga"), (3, "fpga"), (0, "fpga")}, {
        (0, "fpga"): {"fused_into": 1},
        (2, "fpga"): {"fused_into": 4},
        (3, "fpga"): {"fused_into": 4},
    })  # fmt: skip
    rows, notes = table_and_notes(r)
    assert notes == [
        "[1] FPGA path: layer 0 fused into layer 1: computed together with layer 1 in one array "
        "operation, so only layer 1's output exists to compare.",
        "[2] FPGA path: layers 2, 3 fused into layer 4: computed together with layer 4 in one array "
        "operation, so only layer 4's output exists to compare.",
    ]
    md_rows, md = md_notes(r, tmp_path)
    assert md == [note.replace(f"[{k}]", f"{k}.", 1) for k, note in enumerate(notes, 1)]
    assert [cells(row)[0] for row in md_rows] == ["- [1]", "0", "- [2]", "- [2]", "0"]
    assert "next one" not in (tmp_path / "r.md").read_text()


def test_the_cpu_paths_fused_kernels_and_a_pattern_it_does_not_run(tmp_path):
    fused = make_report(
        4, {(0, "cpu"), (1, "cpu")}, {(0, "cpu"): {"fused_into": 2}, (1, "cpu"): {"fused_into": 2}}
    )
    _, notes = table_and_notes(fused)
    assert notes == [
        "[1] CPU path: layers 0, 1 fused into layer 2: computed inside the fused CPU network's kernel "
        "that writes layer 2, so only layer 2's output exists to compare."
    ]
    why = "layer 2 (BinConv2d): the fused CPU network needs a Step after every convolution"
    not_run = make_report(
        3,
        {(i, "cpu") for i in range(3)},
        {(i, "cpu"): {"not_run": why} for i in range(3)},
        cpu={"wall_s": None, "images_per_s": None, "note": f"n/a: {why}"},
    )
    rows, notes = table_and_notes(not_run)
    assert notes == [f"[1] CPU path not run: {why}."]
    assert all(row.endswith("- [1]".rjust(12)) for row in rows)
    assert report.summary_lines(not_run)[-1] == f"CPU path: not run ({why})"
    rows, md = md_notes(not_run, tmp_path)
    assert md == [f"1. CPU path not run: {why}."] and [cells(row)[2] for row in rows] == ["- [1]"] * 3


def test_a_layer_a_path_keeps_no_output_of(tmp_path):
    r = make_report(
        2, {(1, "gpu")}, {(1, "gpu"): {"not_materialised": "the path keeps no output of this layer"}}
    )
    _, notes = table_and_notes(r)
    assert notes == ["[1] GPU path: no output of layer 1 to compare: the path keeps no output of this layer."]


def test_footnotes_are_numbered_in_table_order_and_shared_by_their_cells():
    """Rows top to bottom, then FPGA, GPU, CPU within a row; one number per (path, reason)."""
    r = make_report(
        3,
        {(0, "cpu"), (0, "fpga"), (1, "cpu"), (1, "gpu"), (2, "gpu")},
        {
            (0, "fpga"): {"fused_into": 1},
            (0, "cpu"): {"fused_into": 2},
            (1, "cpu"): {"fused_into": 2},
            (1, "gpu"): {"not_run": "why"},
            (2, "gpu"): {"not_run": "why"},
        },
    )
    marks, notes = report.footnotes(r)
    assert marks == {(0, "fpga"): 1, (0, "cpu"): 2, (1, "gpu"): 3, (1, "cpu"): 2, (2, "gpu"): 3}
    assert [note.split(":")[0] for note in notes] == ["FPGA path", "CPU path", "GPU path not run"]


def test_no_dash_no_footnote(tmp_path):
    r = make_report(2, set(), {})
    assert report.footnotes(r) == ({}, [])
    lines = report.summary_lines(r)
    assert lines[5] == "" and lines[6].startswith("mismatching elements")
    report.write_markdown(r, tmp_path / "r.md", [])
    assert "`- [k]`" not in (tmp_path / "r.md").read_text()


def test_a_report_without_recorded_reasons_still_says_why():
    """Reports written before `absent` existed: the GPU note, the FPGA column's 'fused into layer
    N' and the missing CPU path give the reasons."""
    r = make_report(3, {(i, "gpu") for i in range(3)} | {(0, "fpga")}, {}, gpu={**GPU_NOT_RUN})
    for layer in r["mismatches"]["layers"]:
        del layer["absent"], layer["cpu"]
    for row in r["mapping"]:
        del row["cpu"]
    r["mapping"][0]["fpga"] = "array (fused into layer 2)"
    del r["cpu"]
    _, notes = table_and_notes(r)
    assert notes == [
        "[1] FPGA path: layer 0 fused into layer 2: computed together with layer 2 in one array "
        "operation, so only layer 2's output exists to compare.",
        "[2] GPU path not run: the GPU kernels are for BNNs.",
        "[3] CPU path not run: this report has no CPU path.",
    ]


# -- where the reasons come from ----------------------------------------------------------------
def test_absent_gives_each_missing_layer_its_reason():
    fpga = PathResult(
        {1: 0, 2: 0, 4: 0},
        {"layers": [{"first": 0, "layer": 1}, {"first": 3, "layer": 4}, {"first": 2, "layer": 2}]},
    )
    assert fpga_fused_into(fpga) == {0: 1, 3: 4}
    cpu = PathResult({2: 0, 5: 0}, {"kernels": [{"first": 0, "last": 2}, {"first": 3, "last": 5}]})
    assert cpu_fused_into(cpu) == {0: 2, 1: 2, 3: 5, 4: 5} and cpu_fused_into(None) == {}
    assert absent(6, cpu, None, cpu_fused_into(cpu)) == [
        {"fused_into": 2}, {"fused_into": 2}, None, {"fused_into": 5}, {"fused_into": 5}, None,
    ]  # fmt: skip
    assert absent(2, None, "no BNN", {}) == [{"not_run": "no BNN"}] * 2
    assert absent(1, None, None, {}) == [{"not_run": "the path did not run"}]
    assert absent(2, PathResult({0: 0}), None, {}) == [
        None,
        {"not_materialised": "the path keeps no output of this layer"},
    ]


def test_a_sac_run_says_why_each_dash_is_a_dash(tmp_path, capsys):
    """sac_digits through the compare job: the array fuses layers 7 and 8 (a shift and a conv)
    into the pixel sum, layer 9; neither the GPU kernels nor the fused CPU network run it."""
    from workbench.commands import compare as compare_command

    out = tmp_path / "out"
    code = compare_command.main(
        ["--model", str(ZOO / "sac_digits.onnx"), "--data", "random:2", "--images", "3", "--rtl-images", "0",
         "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    text = capsys.readouterr().out
    r = json.loads((out / "report.json").read_text())
    layers = r["mismatches"]["layers"]
    assert layers[7]["absent"]["fpga"] == {"fused_into": 9} and layers[8]["absent"]["fpga"] == {
        "fused_into": 9
    }
    assert all(
        layer["absent"]["gpu"] == {"not_run": "the GPU kernels cover BNN layers only"} for layer in layers
    )
    assert all("BNN layers only" in layer["absent"]["cpu"]["not_run"] for layer in layers)
    md = (out / "report.md").read_text()
    for where in (text, md):
        assert (
            "FPGA path: layers 7, 8 fused into layer 9: computed together with layer 9 in one array "
            "operation, so only layer 9's output exists to compare." in where
        )
        assert "GPU path not run: the GPU kernels cover BNN layers only." in where
        assert (
            "CPU path not run: the fused CPU network runs BNN layers only; layer 0 is a PointwiseConv."
            in where
        )
        assert "next one" not in where
