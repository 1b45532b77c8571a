"""The package layout of docs/architecture.md, enforced: dependencies point one way, and no
product file manipulates sys.path.

    safeio  <-  models  <-  fpga, gpu_kernels  <-  tb (models, fpga)  <-  workbench  <-  scripts,
    benchmarks
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIRST_PARTY = ("safeio", "models", "fpga", "gpu_kernels", "tb", "workbench", "tests")
# package -> first-party packages it may import (itself included)
ALLOWED = {
    "safeio": {"safeio"},
    "models": {"safeio", "models"},
    "fpga": {"safeio", "models", "fpga"},
    "gpu_kernels": {"safeio", "models", "gpu_kernels"},
    "tb": {"safeio", "models", "fpga", "tb"},
    "workbench": {"safeio", "models", "fpga", "gpu_kernels", "tb", "workbench"},
    "scripts": {"safeio", "models", "fpga", "gpu_kernels", "tb", "workbench"},
    "benchmarks": {"safeio", "models", "fpga", "gpu_kernels", "tb", "workbench"},
}


def first_party_imports(path: Path) -> list[tuple[int, str]]:
    """(line, top-level package) of every first-party import, including imports inside
    functions (the lazy ones count too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [(node.lineno, n.split(".")[0]) for n in names if n.split(".")[0] in FIRST_PARTY]
    return found


def sources(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_follow_the_dependency_order(package):
    bad = [f"{p.relative_to(ROOT)}:{line} imports {dep}"
           for p in sources(package) for line, dep in first_party_imports(p)
           if dep not in ALLOWED[package]]
    assert not bad, f"{package} may import only {sorted(ALLOWED[package])}:\n" + "\n".join(bad)


def test_models_train_does_not_compile():
    """Training produces networks; compiling them for the array is the workbench's job."""
    bad = [f"{p.relative_to(ROOT)}" for p in sources("models/train")
           if any(dep == "fpga" for _, dep in first_party_imports(p))]
    assert not bad


def test_checker_sees_a_violation(tmp_path):
    """The test above can fail: a models file importing fpga is found."""
    f = tmp_path / "bad.py"
    f.write_text("def f():\n    from fpga.compiler import compile_network\n")
    assert first_party_imports(f) == [(2, "fpga")]


def test_no_sys_path_manipulation_outside_tests():
    bad = []
    for package in ALLOWED:
        for p in sources(package):
            for node in ast.walk(ast.parse(p.read_text())):
                if (isinstance(node, ast.Attribute) and node.attr == "path"
                        and isinstance(node.value, ast.Name) and node.value.id == "sys"):
                    bad.append(f"{p.relative_to(ROOT)}:{node.lineno}")
    assert not bad, "sys.path used outside tests/: " + ", ".join(bad)
