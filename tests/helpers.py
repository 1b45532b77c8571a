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


def assert_same(out: np.ndarray, ref: np.ndarray, what: str) -> None:
    """Equal dtype, shape and every value; on failure say how many and where the first is."""
    assert out.dtype == ref.dtype, f"{what}: dtype {out.dtype}, golden {ref.dtype}"
    assert out.shape == ref.shape, f"{what}: shape {out.shape}, golden {ref.shape}"
    bad = np.argwhere(out != ref)
    assert bad.size == 0, (
        f"{what}: {len(bad)} of {out.size} values differ; first at "
        f"{tuple(bad[0])}: got {out[tuple(bad[0])]}, golden {ref[tuple(bad[0])]}"
    )
