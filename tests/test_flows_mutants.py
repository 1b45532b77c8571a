"""The parts of `make mutants` (workbench/flows/mutants.py, run by scripts/mutants.py) that need
no mutmut run and no simulator: the RTL mutant list applies to the current rtl/ (every original
line exactly once), a mutant changes exactly that line, the scopes name files and tests that
exist, and bad arguments are refused with one line and exit status 2 before any work."""

import subprocess
import sys
from pathlib import Path

import pytest

from workbench.flows import mutants

ROOT = Path(__file__).resolve().parents[1]

MUTANTS = mutants.load_rtl_mutants()


def test_the_list_covers_the_modules_the_issue_names():
    modules = {m["module"] for m in MUTANTS}
    assert len(MUTANTS) >= 12
    assert {
        "systolic_array",
        "sac_cell",
        "instruction_decoder",
        "output_accumulator",
        "relu_quant",
        "channel_shift",
        "data_feeder",
    } <= modules


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m["id"] for m in MUTANTS])
def test_each_mutant_applies_to_exactly_one_line(mutant):
    src = (ROOT / "rtl" / f"{mutant['module']}.v").read_text()
    assert (ROOT / "tb" / f"test_{mutant['module']}.py").is_file()
    mutated = mutants.apply_mutant(src, mutant)  # raises unless the line is there once
    before, after = src.splitlines(), mutated.splitlines()
    assert len(before) == len(after)
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert len(changed) == 1
    i = changed[0]
    assert before[i].strip() == mutant["original"].strip()
    assert after[i].strip() == mutant["replacement"].strip()
    indent = len(before[i]) - len(before[i].lstrip())
    assert after[i][:indent] == before[i][:indent]  # indentation kept


def test_a_missing_or_repeated_line_is_refused():
    m = dict(MUTANTS[0])
    with pytest.raises(mutants.BadInput, match="found 0 times"):
        mutants.apply_mutant("module x;\nendmodule\n", m)
    line = m["original"]
    with pytest.raises(mutants.BadInput, match="found 2 times"):
        mutants.apply_mutant(f"  {line}\n  {line}\n", m)


def test_a_malformed_list_is_refused(tmp_path):
    bad = tmp_path / "list.toml"
    bad.write_text('[[mutant]]\nid = "a"\nmodule = "sac_cell"\n')
    with pytest.raises(mutants.BadInput, match="lacks kind, original, replacement, description"):
        mutants.load_rtl_mutants(bad)
    bad.write_text("not toml [")
    with pytest.raises(mutants.BadInput, match="cannot read"):
        mutants.load_rtl_mutants(bad)


def test_the_python_scopes_name_existing_files_and_tests():
    scopes = mutants.python_scopes(mutants.load_pyproject())
    assert {"numerics", "lowering", "compiler", "cycle_model"} <= set(scopes)
    for scope in scopes.values():
        for pattern in scope["mutate"]:
            assert list(ROOT.glob(pattern)), pattern
        for test in scope["tests"]:
            assert (ROOT / test).is_file() and not test.startswith("tb/"), test
    staged = mutants.staged_pyproject(mutants.load_pyproject(), scopes["cycle_model"])
    assert 'only_mutate = ["fpga/cycle_model.py"]' in staged
    assert 'pytest_add_cli_args_test_selection = ["tests/test_compiler.py"]' in staged


def test_each_scope_stages_the_packages_of_its_files():
    pyproject = mutants.load_pyproject()
    scopes = mutants.python_scopes(pyproject)
    for name, scope in scopes.items():
        paths = mutants.scope_source_paths(pyproject, scope)
        for pattern in scope["mutate"]:
            assert pattern.split("/")[0] in paths, (name, pattern)
    assert mutants.scope_source_paths(pyproject, {}) == pyproject["tool"]["mutmut"]["source_paths"]
    assert mutants.scope_source_paths(pyproject, {"source_paths": ["safeio"]}) == ["safeio"]
    staged = mutants.staged_pyproject(
        pyproject, {"mutate": ["safeio/*"], "tests": ["t"], "source_paths": ["safeio"]}
    )
    assert 'source_paths = ["safeio"]' in staged


def test_a_scopes_functions_become_mutmut_name_patterns():
    scope = {"functions": ["workbench/compare.py::mismatches", "a/b.py::_f", "a/b.py::Cls.meth", "a/c.py::*"]}
    assert mutants.mutant_globs(scope) == [
        "workbench.compare.x_mismatches__mutmut_*",
        "a.b.x__f__mutmut_*",
        "a.b.x\u01c1Cls\u01c1meth__mutmut_*",
        "a.c.*",
    ]
    assert mutants.mutant_globs({}) == []
    for bad in ("a/b.py", "a/b::f", "a/b.py::"):
        with pytest.raises(mutants.BadInput, match="is not path/file.py::function"):
            mutants.mutant_globs({"functions": [bad]})
    staged = mutants.staged_pyproject(mutants.load_pyproject(), {"mutate": ["a"], "tests": ["t"], **scope})
    assert "functions" not in staged


@pytest.mark.parametrize(
    "args, message",
    [
        (["--scope", "nosuch"], "--scope: unknown scope nosuch"),
        (["--scope", ","], "--scope: unknown scope"),
        (["--sim", "xsim"], "--sim: unknown simulator 'xsim'"),
        (["--jobs", "0"], "--jobs must be at least 1"),
        (["--only", "no_such_mutant"], "--only: unknown mutant id no_such_mutant"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--scope", "cycle_model", "--only", "cell_sign_bit"], "--only names RTL mutants"),
    ],
)
def test_bad_arguments_are_one_line_and_status_2(args, message):
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "mutants.py"), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mutants: error: ") and message in lines[0]
    assert out.stdout == ""
