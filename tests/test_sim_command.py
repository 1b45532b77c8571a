"""`make sim` / `sacbench sim`: bench test ids name the simulator and the parameter set
(`8x8`, not `shape0`), --shape and --sim select by whole id parts, and the user-facing make
targets print no command lines of their own."""

import re
import subprocess
import sys

import pytest

from tests.helpers import ROOT
from workbench.commands import sim as sim_command

AUTO_ID = re.compile(r"^[a-z_]+\d+$")  # pytest's own ids for objects: shape0, array1


def collect(*args) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode in (0, 5), out.stdout + out.stderr
    return [line for line in out.stdout.splitlines() if "::" in line]


def test_bench_ids_name_the_parameters():
    ids = collect("tb/")
    assert ids
    parts = {p for node in ids for p in node[node.index("[") + 1 : -1].split("-") if "[" in node}
    assert not [p for p in parts if AUTO_ID.match(p)], f"ids pytest made up: {sorted(parts)}"
    for wanted in (
        "tb/test_systolic_array.py::test_systolic_array[verilator-8x8]",
        "tb/test_popcount_pipe.py::test_popcount_pipe[icarus-64bit]",
        "tb/test_sdp_ram.py::test_sdp_ram[icarus-64x32bit]",
    ):
        assert wanted in ids


def test_shape_selects_whole_id_parts():
    """--shape 4bit picks the 4-bit pipe on both simulators, not 64bit or 257bit."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "workbench.cli",
            "sim",
            "popcount_pipe",
            "--shape",
            "4bit",
            "--",
            "--collect-only",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    nodes = [line.split("::")[-1] for line in out.stdout.splitlines() if "::" in line]
    assert nodes == ["test_popcount_pipe[icarus-4bit]", "test_popcount_pipe[verilator-4bit]"]


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["sdp_ram", "--shape", "99x99"],
            (
                "no test of tb/test_sdp_ram.py matches --shape 99x99 (its shapes: 16x8bit, 64x32bit, "
                "16x8bit_collision_x)"
            ),
        ),
        (["sac_cell", "--shape", "8x8"], "it has one parameter set: leave --shape out"),
        (["sdp_ram", "--sim", "modelsim"], "invalid choice: 'modelsim' (choose from 'icarus', 'verilator')"),
    ],
)
def test_selection_that_matches_nothing_says_what_there_is(args, message, capsys):
    try:
        code = sim_command.main(args)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and message in err, err


def test_bad_seed_stops_before_pytest(monkeypatch, capsys):
    monkeypatch.setenv("TB_SEED", "12abc")
    assert sim_command.main(["sdp_ram"]) == 2
    assert "sacbench sim: error: TB_SEED='12abc' is not an integer seed" in capsys.readouterr().err


@pytest.mark.parametrize("target", ["demo", "test", "sim", "lint", "synth", "bench"])
def test_user_facing_targets_echo_no_commands(target):
    """`make demo > out.txt` holds the demo's output, not the recipe's PATH=... line."""
    text = (ROOT / "Makefile").read_text()
    recipe = re.search(rf"^{target}:[^\n]*\n((?:\t[^\n]*\n)+)", text, re.M)
    assert recipe, target
    lines = [ln for ln in recipe.group(1).splitlines() if not ln.startswith("\t  ")]
    assert all(ln.startswith("\t@") for ln in lines), f"make {target} echoes: {lines}"
