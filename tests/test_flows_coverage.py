"""The pieces of `make coverage` (workbench/flows/coverage.py, run by scripts/coverage.py) that
need no simulator: reading a Verilator coverage.dat and the per-module table with the uncovered
lines."""

from pathlib import Path

from workbench.flows import coverage

ROOT = Path(__file__).resolve().parents[1]


def point(file: str, line: int, page: str, count: int, comment: str = "") -> str:
    fields = {"f": file, "l": str(line), "page": page, "o": comment, "h": "TOP.x"}
    body = "".join(f"\x01{k}\x02{v}" for k, v in fields.items())
    return f"C '{body}' {count}"


def table_of(tmp_path, points: list):
    """code_table of a coverage.dat holding `points` (lines made by point())."""
    dat = tmp_path / "coverage.dat"
    dat.write_text("# SystemC::Coverage-3\n" + "\n".join(points) + "\n")
    return coverage.code_table(coverage.parse_coverage_dat(dat))


def test_table_counts_lines_and_toggles_per_module(tmp_path):
    stats, uncovered = table_of(
        tmp_path,
        [
            point("rtl/a.v", 10, "v_line/a", 5, "block"),
            point("rtl/a.v", 12, "v_branch/a", 0, "if"),
            point("rtl/a.v", 12, "v_branch/a", 3, "else"),
            point("rtl/a.v", 3, "v_toggle/a", 1, "x[0]:0->1"),
            point("rtl/a.v", 3, "v_toggle/a", 0, "x[0]:1->0"),
            point("rtl/b.v", 7, "v_line/b", 0, "block"),
            point("rtl/b.v", 8, "v_user/b", 0, "cover"),  # not line or toggle: ignored
        ],
    )
    assert stats["a"] == {"line_hit": 2, "line_total": 3, "toggle_hit": 1, "toggle_total": 2}
    assert stats["b"] == {"line_hit": 0, "line_total": 1, "toggle_hit": 0, "toggle_total": 0}
    assert uncovered == {"a": [12], "b": [7]}
    assert coverage.pct(1, 2).strip() == "50.0 %"


def test_bench_files_run_slowest_first_and_include_every_bench():
    files = coverage.bench_files()
    every = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tb").rglob("test_*.py"))
    assert sorted(files) == every and len(set(files)) == len(files)
    assert files[0] == "tb/tlm/test_isa_coverage.py"  # the longest run starts first
    assert files.index("tb/test_accelerator.py") < files.index("tb/test_sdp_ram.py")
    # the two users of the 8x8 accelerator build are not handed out one after the other
    assert files.index("tb/test_accelerator.py") - files.index("tb/tlm/test_isa_coverage.py") > 1


def test_a_point_of_a_parameterized_instance_counts_as_the_same_point(tmp_path):
    # the same branch of rtl/a.v in a module build (page v_branch/a) and inside a top
    # (Verilator names the parameterized instance a__pi2): one point, hit by either
    stats, uncovered = table_of(
        tmp_path,
        [
            point("rtl/a.v", 5, "v_branch/a", 2, "if"),
            point("rtl/a.v", 5, "v_branch/a__pi2", 0, "if"),
            point("rtl/a.v", 6, "v_branch/a__A9", 0, "else"),
            point("rtl/a.v", 6, "v_branch/a", 0, "else"),
        ],
    )
    assert stats["a"] == {"line_hit": 1, "line_total": 2, "toggle_hit": 0, "toggle_total": 0}
    assert uncovered == {"a": [6]}
