"""pytest configuration of the tests/ suite: a report header that says which optional parts can
run here (so that the CuPy tests skipped on a machine without a GPU are no surprise), and one
run per case for the tests that a module imports from another (tests/test_gpu_cupy.py imports
the exactness matrix of tests/test_gpu_kernels.py). Helpers that are not hooks or fixtures are
in tests/helpers.py."""

from __future__ import annotations

import shutil


def pytest_report_header(config):
    from gpu_kernels.devices import cuda_available

    gpu = "CuPy with a CUDA device" if cuda_available() else "no CUDA device: CuPy cases skip"
    gxx = "g++ found" if shutil.which("g++") else "no g++: emulation and CPU-kernel cases skip"
    return [f"GPU path: {gpu}; {gxx}"]


def _imported(item) -> bool:
    """A test collected from a module that imported it rather than defined it."""
    function = getattr(item, "function", None)
    return function is not None and function.__module__ != item.module.__name__


def _key(item) -> tuple:
    spec = getattr(item, "callspec", None)
    return item.function, repr(sorted(spec.params.items())) if spec else ""


def pytest_collection_modifyitems(config, items):
    """A test that a module imports from another runs there only when its own module is not
    collected with the same parameters: `pytest tests/` runs each CuPy case of the matrix once
    (in tests/test_gpu_kernels.py), `pytest tests/test_gpu_cupy.py` (the GPU check) all of them."""
    imported = [item for item in items if _imported(item)]
    if not imported:
        return
    functions = {item.function for item in imported}
    at_home = {_key(i) for i in items if getattr(i, "function", None) in functions and not _imported(i)}
    copies = [item for item in imported if _key(item) in at_home]
    if copies:
        config.hook.pytest_deselected(items=copies)
        dropped = set(map(id, copies))
        items[:] = [item for item in items if id(item) not in dropped]
