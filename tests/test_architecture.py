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
    bad = [
        f"{p.relative_to(ROOT)}:{line} imports {dep}"
        for p in sources(package)
        for line, dep in first_party_imports(p)
        if dep not in ALLOWED[package]
    ]
    assert not bad, f"{package} may import only {sorted(ALLOWED[package])}:\n" + "\n".join(bad)


def test_models_train_does_not_compile():
    """Training produces networks; compiling them for the array is the workbench's job."""
    bad = [
        f"{p.relative_to(ROOT)}"
        for p in sources("models/train")
        if any(dep == "fpga" for _, dep in first_party_imports(p))
    ]
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
                if (
                    isinstance(node, ast.Attribute)
                    and node.attr == "path"
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "sys"
                ):
                    bad.append(f"{p.relative_to(ROOT)}:{node.lineno}")
    assert not bad, "sys.path used outside tests/: " + ", ".join(bad)


# -- no import cycle between modules (lazy imports inside functions count too) --------------------
PRODUCT = ("safeio", "models", "fpga", "gpu_kernels", "tb", "workbench")


def module_graph(root: Path, packages=PRODUCT) -> dict[str, set[str]]:
    """module -> the project modules it imports (anywhere in the file)."""
    files = {}
    for pkg in packages:
        for p in (root / pkg).rglob("*.py"):
            name = ".".join(p.relative_to(root).with_suffix("").parts)
            files[name.removesuffix(".__init__")] = p

    def resolve(dotted: str) -> str | None:
        parts = dotted.split(".")
        return next(
            (".".join(parts[:k]) for k in range(len(parts), 0, -1) if ".".join(parts[:k]) in files), None
        )

    graph = {m: set() for m in files}
    for m, p in files.items():
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(node, ast.Import):
                targets = [resolve(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [resolve(f"{node.module}.{a.name}") or resolve(node.module) for a in node.names]
            else:
                continue
            graph[m] |= {t for t in targets if t and t != m}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_between_modules():
    found = cycles(module_graph(ROOT))
    assert not found, "modules importing each other (a lazy import hides a cycle too):\n" + "\n".join(
        " <-> ".join(c) for c in found
    )


def test_the_cycle_check_sees_a_planted_cycle(tmp_path):
    pkg = tmp_path / "workbench"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from workbench.b import thing\n")
    (pkg / "b.py").write_text("def thing():\n    from workbench import a\n")
    assert cycles(module_graph(tmp_path, ("workbench",))) == [["workbench.a", "workbench.b"]]
