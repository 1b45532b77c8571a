"""The machine the fake CuPy pretends to be: FAKE_CUPY_MODE (see cupy/__init__.py)."""

import os

MODES = (
    "ok",
    "no_nvrtc",
    "old_driver",
    "no_device",
    "compile_error",
    "few_threads",
    "wrong_results",
    "slow_compile",
)


def mode() -> str:
    m = os.environ.get("FAKE_CUPY_MODE", "ok")
    if m not in MODES:
        raise RuntimeError(f"FAKE_CUPY_MODE={m!r}: use one of {', '.join(MODES)}")
    return m


NVRTC_MISSING = (
    "CuPy failed to load libnvrtc.so.13: OSError: libnvrtc.so.13: cannot open "
    "shared object file: No such file or directory"
)
