"""Helpers shared by the tests: paths, the exact-equality assertion the GPU-path tests use, and
the g++ requirement of the CPU emulation. Fixtures live in tests/conftest.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
HAVE_GXX = shutil.which("g++") is not None
needs_gxx = pytest.mark.skipif(not HAVE_GXX, reason="g++ is needed for the CPU emulation and implementation")


def mismatch(out: np.ndarray, ref: np.ndarray) -> str | None:
    """None when dtype, shape and every value are equal; else what differs: the dtypes, the
    shapes, or how many values and the first mismatching index (with both values there)."""
    if out.dtype != ref.dtype:
        return f"dtype {out.dtype}, golden {ref.dtype}"
    if out.shape != ref.shape:
        return f"shape {out.shape}, golden {ref.shape}"
    bad = np.argwhere(out != ref)
    if bad.size == 0:
        return None
    first = tuple(int(i) for i in bad[0])
    return (
        f"shape {out.shape}: {len(bad)} of {out.size} values differ; first at "
        f"{first}: got {out[first]}, golden {ref[first]}"
    )


def assert_same(out: np.ndarray, ref: np.ndarray, what: str) -> None:
    """Equal dtype, shape and every value; on failure say how many and where the first is."""
    diff = mismatch(out, ref)
    assert diff is None, f"{what}: {diff}"
