"""The compare job's mismatch reporting and report fields, without running the job: per layer,
`mismatches` gives the count of differing elements, the first differing index (row-major) and
the values found and expected there (or the shape difference, or None where a path does not
materialise the layer); `_inject` corrupts one element of a path's last output (the self-test);
`accuracy` and `mapping_table`; and how workbench/report.py shows them on the console
(`summary_lines`) and in report.md (`write_markdown`), for a GPU path that ran (measured or
modelled) and one that did not. Reports are built by hand so every field has a distinct value.
(tests/test_compare.py runs the whole job, RTL included; tests/test_report_footnotes.py the
footnotes of `-` cells, tests/test_cpu_path.py the CPU path.)"""

import copy
from types import SimpleNamespace

import numpy as np
import pytest

from workbench import report
from workbench.compare import CompareError, PathResult, _inject, accuracy, mapping_table, mismatches


# -- mismatches ---------------------------------------------------------------------------------
def test_no_path_or_an_unmaterialised_layer_has_no_entry():
    ref = PathResult({0: np.zeros(3), 1: np.zeros(3)})
    assert mismatches(ref, None, 2) == [None, None]
    assert mismatches(ref, PathResult({1: np.zeros(3)}), 2) == [
        None,
        {"count": 0, "first": None, "got": None, "want": None},
    ]


def test_equal_outputs_have_no_mismatch():
    want = np.arange(12, dtype=np.int32).reshape(3, 4)
    (m,) = mismatches(PathResult({0: want}), PathResult({0: want.tolist()}), 1)
    assert m == {"count": 0, "first": None, "got": None, "want": None}


def test_a_mismatch_reports_its_count_first_index_and_both_values():
    want = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    got = want.copy()
    got[1, 0, 2] = -7  # later in row-major order
    got[0, 2, 1] = 99  # the first
    got[0, 2, 3] = 98
    (m,) = mismatches(PathResult({0: want}), PathResult({0: got}), 1)
    assert m == {"count": 3, "first": [0, 2, 1], "got": 99, "want": 9}
    assert all(type(v) is int for v in (m["count"], m["got"], m["want"], *m["first"]))


def test_a_mismatch_at_the_first_element():
    want = np.array([[1, 2], [3, 4]])
    (m,) = mismatches(PathResult({0: want}), PathResult({0: np.array([[0, 2], [3, 5]])}), 1)
    assert m == {"count": 2, "first": [0, 0], "got": 0, "want": 1}


def test_a_shape_difference_counts_every_golden_element():
    ref = PathResult({0: np.zeros((2, 5), dtype=np.int8)})
    (m,) = mismatches(ref, PathResult({0: np.zeros((2, 4), dtype=np.int8)}), 1)
    assert m == {"count": 10, "first": None, "note": "shape (2, 4) != golden (2, 5)"}


def test_a_shape_difference_does_not_stop_the_next_layers():
    ref = PathResult({0: np.zeros(4), 1: np.array([1, 2])})
    path = PathResult({0: np.zeros(3), 1: np.array([1, 3])})
    assert mismatches(ref, path, 2) == [
        {"count": 4, "first": None, "note": "shape (3,) != golden (4,)"},
        {"count": 1, "first": [1], "got": 3, "want": 2},
    ]


def test_every_layer_is_compared_on_its_own():
    ref = PathResult({0: np.array([1, 2]), 1: np.array([3, 4]), 2: np.array([5, 6])})
    path = PathResult({0: np.array([1, 2]), 2: np.array([5, 0])})
    assert mismatches(ref, path, 3) == [
        {"count": 0, "first": None, "got": None, "want": None},
        None,
        {"count": 1, "first": [1], "got": 0, "want": 6},
    ]


# -- the injected fault -------------------------------------------------------------------------
def test_inject_flips_the_first_element_of_the_last_output_only():
    first, last = np.array([[1, 2]], dtype=np.int32), np.array([[5, 6], [7, 8]], dtype=np.int32)
    path = PathResult({0: first, 3: last})
    _inject(path, "fpga")
    assert path.outputs[3].tolist() == [[6, 6], [7, 8]]
    assert last.tolist() == [[5, 6], [7, 8]]  # a copy: the original is untouched
    assert path.outputs[0] is first and first.tolist() == [[1, 2]]


def test_inject_negates_a_sign_output():
    path = PathResult({2: np.array([[1, -1]], dtype=np.int8)})
    _inject(path, "gpu")
    assert path.outputs[2].tolist() == [[-1, -1]] and path.outputs[2].dtype == np.int8


def test_inject_is_reported_as_a_mismatch():
    want = np.array([[4, 2]], dtype=np.int32)
    path = PathResult({0: want.copy()})
    _inject(path, "fpga")
    assert mismatches(PathResult({0: want}), path, 1) == [{"count": 1, "first": [0, 0], "got": 5, "want": 4}]


def test_inject_into_a_path_that_did_not_run_is_refused():
    with pytest.raises(CompareError, match=r"^--inject-fault gpu: the gpu path did not run for this model$"):
        _inject(None, "gpu")


# -- accuracy and mapping -----------------------------------------------------------------------
def test_accuracy_is_the_fraction_of_argmax_equal_to_the_label():
    scores = np.array([[[1, 5, 2]], [[7, 0, 7]], [[0, 0, 3]], [[2, 1, 0]]])  # [N, 1, classes]
    acc = accuracy(scores, np.array([1, 0, 2, 1]))  # argmax 1, 0 (first of a tie), 2, 0
    assert type(acc) is float and acc == 0.75
    assert accuracy(scores, None) is None
    assert accuracy(None, np.array([0])) is None


def layer(text):
    return SimpleNamespace(describe=lambda: text)


def test_mapping_table_says_where_each_layer_runs():
    net = SimpleNamespace(layers=[layer(f"L{i}") for i in range(5)])
    fpga = PathResult(
        {},
        {
            "layers": [{"first": 0, "layer": 1, "tiles": "2x1"}, {"first": 3, "layer": 3, "tiles": "1x4"}],
            "host_layers": [2],
        },
    )
    gpu = PathResult({}, {"impls": ["a", "b", "c", "d", "e"]})
    cpu = PathResult({}, {"kernels": [{"first": 0, "last": 2}, {"first": 3, "last": 4}]})
    assert mapping_table(net, fpga, gpu, cpu) == [
        {"index": 0, "layer": "L0", "fpga": "array (fused into layer 1)", "gpu": "a", "cpu": "kernel 1"},
        {"index": 1, "layer": "L1", "fpga": "array (tiles 2x1)", "gpu": "b", "cpu": "kernel 1"},
        {"index": 2, "layer": "L2", "fpga": "host", "gpu": "c", "cpu": "kernel 1"},
        {"index": 3, "layer": "L3", "fpga": "array (tiles 1x4)", "gpu": "d", "cpu": "kernel 2"},
        {"index": 4, "layer": "L4", "fpga": "-", "gpu": "e", "cpu": "kernel 2"},
    ]
    assert [row["gpu"] for row in mapping_table(net, fpga, None)] == ["n/a"] * 5
    assert [row["cpu"] for row in mapping_table(net, fpga, gpu)] == ["n/a"] * 5


# -- the report's cells -------------------------------------------------------------------------
def test_mismatch_cells():
    assert report._mm(None) == "-"
    assert report._mm({"count": 0, "first": None, "got": None, "want": None}) == "0"
    assert (
        report._mm({"count": 3, "first": [0, 2], "got": 5, "want": 4}) == "3 first at (0, 2) (got 5, want 4)"
    )
    assert report._mm({"count": 1, "first": [4], "got": 0, "want": -1}) == "1 first at (4,) (got 0, want -1)"
    assert report._mm({"count": 10, "first": None, "note": "shape (2,) != golden (5,)"}) == (
        "10 shape (2,) != golden (5,)"
    )
    assert report._mm({"count": 2, "first": [1]}) == "2 first at (1,)"


def test_percentages_and_numbers():
    assert report._pct(None) == "n/a"
    assert report._pct(0.98765) == "98.77%"
    assert report._pct(0) == "0.00%"
    assert report._num(None) == "n/a"
    assert report._num(1234.5678) == "1,234.568"
    assert report._num(0.25, "{:.3f} uJ") == "0.250 uJ"


def test_non_finite_figures_show_as_python_prints_them(tmp_path):
    assert report._num(float("nan")) == "nan"
    assert report._num(float("inf")) == "inf"
    r = variant(gpu__images_per_s=float("inf"))
    assert ", inf images/s, energy" in report.summary_lines(r)[-2]
    report.write_markdown(r, tmp_path / "r.md", [])
    assert "| throughput | 13,771 images/s | inf images/s | 2,400 images/s |" in (
        (tmp_path / "r.md").read_text().splitlines()
    )


def test_wrap_keeps_words_whole():
    assert report._wrap("0 PointwiseConv 8->16", 13) == "0\nPointwiseConv\n8->16"
    assert report._wrap("averyveryverylongword", 5) == "averyveryverylongword"
    assert report._wrap("", 5) == ""


def test_op_label_names_the_computing_layer_its_span_and_tiles():
    mapping = [
        {"layer": d} for d in ("ChannelShift 8", "PointwiseConv 8->16 g2", "Step 16", "BinDense 16->10")
    ]
    assert report._op_label({"first": 0, "layer": 2, "n_tiles": 2, "k_tiles": 3}, mapping) == (
        "layers 0-2\nPointwiseConv\n8->16 g2\n2x3 tiles"
    )
    assert report._op_label({"first": 3, "layer": 3, "n_tiles": 1, "k_tiles": 1}, mapping) == (
        "layer 3\nBinDense 16->10\n1x1 tiles"
    )
    # wrapped at 16 characters: "BinConv2d 16->100" is 17
    assert report._op_label(
        {"first": 4, "layer": 4, "n_tiles": 1, "k_tiles": 1}, [{"layer": "BinConv2d 16->100"}] * 5
    ) == ("layer 4\nBinConv2d\n16->100\n1x1 tiles")
    # no computing layer in the span: the last one names it
    assert report._op_label({"first": 2, "layer": 2, "n_tiles": 1, "k_tiles": 2}, mapping) == (
        "layer 2\nStep 16\n1x2 tiles"
    )


# -- a whole report -----------------------------------------------------------------------------
REPORT = {
    "model": "m.onnx",
    "network": "net",
    "data": "digits",
    "images": 6,
    "rtl_images": 1,
    "accuracy": {"golden": 0.5, "gpu": 0.25, "fpga": 0.125, "cpu": 0.375},
    "gpu_backend": "cupy",
    "mismatches": {
        "gpu": 0,
        "fpga": 3,
        "cpu": 0,
        "layers": [
            {
                "index": 0,
                "layer": "L0",
                "gpu": None,
                "fpga": None,
                "cpu": None,
                "absent": {"fpga": {"fused_into": 1}, "gpu": {"fused_into": 1}, "cpu": {"fused_into": 1}},
            },
            {
                "index": 1,
                "layer": "L1",
                "gpu": {"count": 0, "first": None, "got": None, "want": None},
                "fpga": {"count": 3, "first": [0, 2], "got": 5, "want": 4},
                "cpu": {"count": 0, "first": None, "got": None, "want": None},
                "absent": {},
            },
        ],
    },
    "fpga": {
        "array": "8x8",
        "clock_mhz": 170.0,
        "cycles_per_image": 12345,
        "latency_ms": 0.07262,
        "images_per_s": 13771.4,
        "energy_uj_per_image": 1.23456,
        "activity_per_image": 98765.4,
        "rtl": {"images": 1, "sim": "verilator", "cycles_match_model": True},
        "layers": [
            {"layer": 1, "first": 0, "n_tiles": 2, "k_tiles": 3, "load_cycles": 1000, "matmul_cycles": 20000}
        ],
        "host_layers": [],
    },
    "gpu": {
        "batch": 64,
        "latency_ms_per_batch": 1.5,
        "images_per_s": 42666.7,
        "energy_uj_per_image": 2.5,
        "device": "H200",
    },
    "cpu": {
        "threads": 2,
        "wall_s": 0.0025,
        "ms_per_image": 0.41667,
        "images_per_s": 2400.0,
        "timing": "perf_counter around one call, median of 3 runs",
        "layer_s": [0.0, 0.0025],
    },
    "golden": {"layer_s": [0.1, 0.2]},
    "mapping": [
        {"index": 0, "layer": "L0", "fpga": "array (fused into layer 1)", "gpu": "-", "cpu": "kernel 1"},
        {"index": 1, "layer": "L1", "fpga": "array (tiles 2x3)", "gpu": "dp", "cpu": "kernel 1"},
    ],
}


def variant(**changes):
    """REPORT with fields changed: keys like "gpu.device" reach into the dicts; None deletes."""
    r = copy.deepcopy(REPORT)
    for key, value in changes.items():
        *path, last = key.split("__")
        d = r
        for k in path:
            d = d[k]
        if value is None and last in ("device", "note", "times", "profile", "sim"):
            d.pop(last, None)
        else:
            d[last] = value
    return r


NOT_RUN = {
    "gpu": {"batch": None, "latency_ms_per_batch": None, "images_per_s": None, "energy_uj_per_image": None}
}
FOOTNOTES = [
    "[1] FPGA path: layer 0 fused into layer 1: computed together with layer 1 in one array operation, "
    "so only layer 1's output exists to compare.",
    "[2] GPU path: layer 0 fused into layer 1: computed inside layer 1's kernel, so only layer 1's "
    "output exists to compare.",
    "[3] CPU path: layer 0 fused into layer 1: computed inside the fused CPU network's kernel that "
    "writes layer 1, so only layer 1's output exists to compare.",
]
CPU_LINE = (
    "CPU (fused CPU network, 2 threads, measured): 6 images in 2.500 ms, 0.4167 ms/image, "
    "2,400 images/s (golden executor, numpy: 300.000 ms)"
)


def test_summary_lines_of_a_run_with_every_path():
    lines = report.summary_lines(REPORT)
    assert lines[0] == "model m.onnx (net), 6 images of digits, 1 on the RTL (verilator)"
    assert lines[1] == ""
    header, row0, row1 = lines[2:5]
    assert header.split() == [
        "#", "layer", "FPGA", "path", "GPU", "CPU", "FPGA", "mism.", "GPU", "mism.", "CPU", "mism.",
    ]  # fmt: skip
    assert row0.split() == [
        "0", "L0", "array", "(fused", "into", "layer", "1)", "-", "kernel", "1",
        "-", "[1]", "-", "[2]", "-", "[3]",
    ]  # fmt: skip
    assert row1.startswith("  1 L1 ")
    assert " array (tiles 2x3) " in row1 and " dp " in row1 and " kernel 1 " in row1
    assert row1.endswith(" 3 first at (0, 2) (got 5, want 4) " + "0".rjust(12) + " " + "0".rjust(12))
    # the mismatch columns end where their headings end
    assert len(header) == len(row0) and row0.endswith(" ".join(f"- [{k}]".rjust(12) for k in (1, 2, 3)))
    assert lines[5:] == [
        "",
        *FOOTNOTES,
        "",
        "mismatching elements: FPGA 3, GPU 0, CPU 0",
        "accuracy: golden 50.00%, GPU 25.00%, CPU 37.50%, FPGA 12.50%",
        "FPGA (8x8 SAC array at 170 MHz): 12,345 cycles per image, 0.073 ms, 13,771 images/s, "
        "1.235 uJ/image (op-energy model), 98,765 active cell ops/image; RTL cycles equal the cycle model",
        "GPU (cupy, H200, measured): batch 64, 1.500 ms/batch, 42,667 images/s, energy 2.500 uJ/image",
        CPU_LINE,
    ]


def test_summary_cuts_the_fpga_path_at_26_characters():
    r = variant(
        mapping=[{**REPORT["mapping"][0], "fpga": "array (fused into layer 12)"}, REPORT["mapping"][1]]
    )
    row = report.summary_lines(r)[3]
    assert " array (fused into layer 12 - " in row and "12)" not in row.split(" kernel")[0]


def test_a_mapping_and_mismatch_list_of_different_lengths_are_refused(tmp_path):
    r = variant(
        mapping=[*REPORT["mapping"], {"index": 2, "layer": "L2", "fpga": "host", "gpu": "-", "cpu": "n/a"}]
    )
    with pytest.raises(ValueError):
        report.summary_lines(r)
    with pytest.raises(ValueError):
        report.write_markdown(r, tmp_path / "r.md", [])
    assert not (tmp_path / "r.md").exists()


def test_summary_says_when_rtl_cycles_differ_and_when_no_image_ran_on_the_rtl():
    differ = report.summary_lines(
        variant(fpga__rtl={"images": 1, "sim": "icarus", "cycles_match_model": False})
    )
    assert differ[0].endswith("1 on the RTL (icarus)")
    assert differ[-3].endswith("; RTL cycles DIFFER FROM the cycle model")
    none = report.summary_lines(variant(rtl_images=0, fpga__rtl={"images": 0, "sim": None}))
    assert none[0] == "model m.onnx (net), 6 images of digits, 0 on the RTL (none)"
    assert none[-3].endswith("98,765 active cell ops/image")


def test_summary_of_a_modelled_gpu_and_one_without_a_device_name():
    modelled = report.summary_lines(
        variant(gpu__times="modelled", gpu__energy_uj_per_image=None, gpu__images_per_s=None)
    )
    assert modelled[-2] == (
        "GPU (no GPU here: kernels checked in the CPU emulation, mapping and times modelled for an "
        "H200): batch 64, 1.500 ms/batch, n/a images/s (modelled), energy n/a"
    )
    assert modelled[-1] == CPU_LINE  # the CPU path is measured whatever the GPU's times are
    plain = report.summary_lines(variant(gpu__device=None, gpu__times="measured"))
    assert plain[-2].startswith("GPU (cupy, measured): batch 64,")


def test_summary_without_a_gpu_run_leaves_the_gpu_out():
    lines = report.summary_lines(
        {**REPORT, "gpu": {**NOT_RUN["gpu"], "note": "n/a: the GPU kernels cover BNN layers only"}}
    )
    assert lines[-5:-3] == [
        "mismatching elements: FPGA 3, CPU 0",
        "accuracy: golden 50.00%, CPU 37.50%, FPGA 12.50%",
    ]
    assert lines[-2] == "GPU path: not run (the GPU kernels cover BNN layers only)"
    bare = report.summary_lines({**REPORT, **NOT_RUN})
    assert bare[-2] == "GPU path: not run (the GPU kernels are for BNNs)"
    no_cpu = report.summary_lines({**REPORT, "cpu": {"wall_s": None, "note": "n/a: not in the pattern"}})
    assert no_cpu[-5:-3] == [
        "mismatching elements: FPGA 3, GPU 0",
        "accuracy: golden 50.00%, GPU 25.00%, FPGA 12.50%",
    ]
    assert no_cpu[-1] == "CPU path: not run (not in the pattern)"


MARKDOWN = """\
# Compare report: net

- model: `m.onnx`
- data: digits, 6 images (1 through the RTL on verilator)
- GPU path: cupy, H200, measured
- CPU path: fused CPU network (gpu_kernels/cpu_impl.py), 2 threads, measured

## Agreement with the golden model (mismatching elements per layer)

| # | layer | FPGA path | GPU impl | CPU kernel | FPGA mismatches | GPU mismatches | CPU mismatches |
| --- | --- | --- | --- | --- | --- | --- | --- |
| 0 | L0 | array (fused into layer 1) | - | kernel 1 | - [1] | - [2] | - [3] |
| 1 | L1 | array (tiles 2x3) | dp | kernel 1 | 3 first at (0, 2) (got 5, want 4) | 0 | 0 |

`- [k]`: no output of that layer on that path to compare, because:

1. FOOTNOTE1
2. FOOTNOTE2
3. FOOTNOTE3

## Accuracy

| golden | GPU | FPGA | CPU |
| --- | --- | --- | --- |
| 50.00% | 25.00% | 12.50% | 37.50% |

## Cost

| | FPGA | GPU | CPU (measured) |
| --- | --- | --- | --- |
| latency | 0.073 ms per image (12,345 cycles at 170 MHz) | 1.500 ms per batch of 64 | CPU_LATENCY |
| throughput | 13,771 images/s | 42,667 images/s | 2,400 images/s |
| energy | 1.235 uJ/image (op-energy model, docs/energy.md) | 2.500 uJ/image | n/a |

CPU_NOTE

## FPGA cycles per layer

| layer | tiles (N x K) | weight loads | matmuls |
| --- | --- | --- | --- |
| 1 | 2 x 3 | 1,000 | 20,000 |

Host layers (run by the host, not the array): none.

![layer_times](layer_times.png)
![fpga_cycles](fpga_cycles.png)
"""
for k, note in enumerate(FOOTNOTES, 1):  # the long lines
    MARKDOWN = MARKDOWN.replace(f"FOOTNOTE{k}", note.removeprefix(f"[{k}] "))
CPU_LATENCY = "2.500 ms for 6 images in one call (0.4167 ms per image)"
MARKDOWN = MARKDOWN.replace("CPU_LATENCY", CPU_LATENCY).replace(
    "CPU_NOTE",
    "CPU: the fused CPU network (2 threads), perf_counter around one call, median of 3 runs; the "
    "golden executor (numpy) took 300.000 ms for the same images.",
)


def test_markdown_is_the_documented_layout(tmp_path):
    """report.md as a whole for REPORT: its sections, tables and their order (a reader, or a
    tool, finds every figure under its heading)."""
    plots = [tmp_path / "layer_times.png", tmp_path / "fpga_cycles.png"]
    report.write_markdown(REPORT, tmp_path / "report.md", plots)
    assert (tmp_path / "report.md").read_text() == MARKDOWN


def test_markdown_of_a_run_with_every_path(tmp_path):
    plots = [tmp_path / "layer_times.png", tmp_path / "fpga_cycles.png"]
    report.write_markdown(REPORT, tmp_path / "report.md", plots)
    text = (tmp_path / "report.md").read_text()
    assert text.endswith("![fpga_cycles](fpga_cycles.png)\n")
    lines = text.splitlines()
    assert lines[:6] == [
        "# Compare report: net",
        "",
        "- model: `m.onnx`",
        "- data: digits, 6 images (1 through the RTL on verilator)",
        "- GPU path: cupy, H200, measured",
        "- CPU path: fused CPU network (gpu_kernels/cpu_impl.py), 2 threads, measured",
    ]
    row0 = "| 0 | L0 | array (fused into layer 1) | - | kernel 1 | - [1] | - [2] | - [3] |"
    row1 = "| 1 | L1 | array (tiles 2x3) | dp | kernel 1 | 3 first at (0, 2) (got 5, want 4) | 0 | 0 |"
    for line in (
        row0,
        row1,
        "| 50.00% | 25.00% | 12.50% | 37.50% |",
        "| | FPGA | GPU | CPU (measured) |",
        "| latency | 0.073 ms per image (12,345 cycles at 170 MHz) | 1.500 ms per batch of 64 | "
        f"{CPU_LATENCY} |",
        "| throughput | 13,771 images/s | 42,667 images/s | 2,400 images/s |",
        "| energy | 1.235 uJ/image (op-energy model, docs/energy.md) | 2.500 uJ/image | n/a |",
        "| 1 | 2 x 3 | 1,000 | 20,000 |",
        "Host layers (run by the host, not the array): none.",
        "![layer_times](layer_times.png)",
    ):
        assert line in lines, line
    assert lines.index(row0) < lines.index(row1)
    assert not any("CPU emulation" in line for line in lines)


def test_markdown_of_a_modelled_gpu_names_its_profile(tmp_path):
    r = variant(gpu__times="modelled", gpu__profile="H200 profile X", fpga__host_layers=[2, 5])
    report.write_markdown(r, tmp_path / "a.md", [])
    lines = (tmp_path / "a.md").read_text().splitlines()
    assert "| | FPGA | GPU (modelled) | CPU (measured) |" in lines
    assert lines[4].startswith("- GPU path: no GPU here: kernels checked in the CPU emulation")
    assert (
        "No GPU on this machine: the CUDA kernels ran in the CPU emulation (that is what the GPU "
        "mismatches column checks); the mapping and the GPU times come from a model (H200 profile X), "
        "the same in every run, not from measurements."
    ) in lines
    # the notes stand between the cost table and the cycles, a blank line either side: the
    # GPU's, then the CPU path's measured time
    at = lines.index("| energy | 1.235 uJ/image (op-energy model, docs/energy.md) | 2.500 uJ/image | n/a |")
    assert lines[at + 1] == "" and lines[at + 2].startswith("No GPU")
    assert lines[at + 3 : at + 7] == [
        "",
        "CPU: the fused CPU network (2 threads), perf_counter around one call, median of 3 runs; the "
        "golden executor (numpy) took 300.000 ms for the same images.",
        "",
        "## FPGA cycles per layer",
    ]
    assert lines[-1] == "" and lines[-2] == "Host layers (run by the host, not the array): 2, 5."
    # no plots: the text ends after the host line and a blank
    report.write_markdown(variant(gpu__times="modelled"), tmp_path / "b.md", [])
    assert "a model (gpu_kernels/gpu_model.py)" in (tmp_path / "b.md").read_text()


def test_markdown_without_a_gpu_run(tmp_path):
    r = {**REPORT, "gpu": {**NOT_RUN["gpu"], "note": "n/a: the GPU kernels cover BNN layers only"}}
    r["fpga"] = {**r["fpga"], "rtl": {"images": 0, "sim": None}}
    report.write_markdown(r, tmp_path / "r.md", [])
    lines = (tmp_path / "r.md").read_text().splitlines()
    assert lines[3] == "- data: digits, 6 images (1 through the RTL on none)"
    assert lines[4] == "- GPU path: not run (the GPU kernels cover BNN layers only)"
    assert "| 50.00% | not run | 12.50% | 37.50% |" in lines
    assert f"| latency | 0.073 ms per image (12,345 cycles at 170 MHz) | not run | {CPU_LATENCY} |" in lines
    assert "| throughput | 13,771 images/s | not run | 2,400 images/s |" in lines
    assert "| energy | 1.235 uJ/image (op-energy model, docs/energy.md) | not run | n/a |" in lines
    r["cpu"] = {
        "wall_s": None,
        "images_per_s": None,
        "note": "n/a: the fused CPU network runs BNN layers only",
    }
    report.write_markdown(r, tmp_path / "r.md", [])
    lines = (tmp_path / "r.md").read_text().splitlines()
    assert lines[5] == "- CPU path: not run (the fused CPU network runs BNN layers only)"
    assert "| 50.00% | not run | 12.50% | not run |" in lines and "| | FPGA | GPU | CPU |" in lines
    assert "| throughput | 13,771 images/s | not run | not run |" in lines
    assert not any(line.startswith("CPU: ") for line in lines)


def test_markdown_of_a_gpu_without_figures_says_n_a(tmp_path):
    r = variant(gpu__images_per_s=None, gpu__energy_uj_per_image=None, gpu__latency_ms_per_batch=None)
    report.write_markdown(r, tmp_path / "r.md", [])
    lines = (tmp_path / "r.md").read_text().splitlines()
    assert (
        "| latency | 0.073 ms per image (12,345 cycles at 170 MHz) | n/a ms per batch of 64 | "
        "2.500 ms for 6 images in one call (0.4167 ms per image) |"
    ) in lines
    assert "| throughput | 13,771 images/s | n/a images/s | 2,400 images/s |" in lines
    assert "| energy | 1.235 uJ/image (op-energy model, docs/energy.md) | n/a | n/a |" in lines


def test_more_rtl_images_than_images_is_said_not_silently_cut():
    from workbench.commands.compare import rtl_images_note

    assert rtl_images_note(2, 5) is None and rtl_images_note(5, 5) is None
    note = rtl_images_note(10, 5)
    assert note.startswith("sacbench compare: note: --rtl-images 10 is more than --images 5")
    assert "\n" not in note
