"""Input validation shared by every golden model.

Golden models are the reference for the RTL and the GPU kernels, so they must refuse bad input
with an error that names the argument and the problem, instead of letting numpy broadcast,
wrap or truncate silently.
"""

from __future__ import annotations

import numpy as np


class NumericsError(ValueError):
    """Bad input to a golden model: wrong dtype, shape or value range."""


def int_array(
    x, name: str, *, ndim: int | tuple[int, ...] | None = None, lo: int | None = None, hi: int | None = None
) -> np.ndarray:
    """Return `x` as an integer numpy array after checking dtype, rank and value range.

    Booleans and floats are refused: an image of float pixels or a weight tensor of 0.5s is a
    caller bug, not something to round.
    """
    a = np.asarray(x)
    if a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer):
        raise NumericsError(f"{name} must be an integer array, got dtype {a.dtype}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if a.ndim not in allowed:
            raise NumericsError(
                f"{name} must have {' or '.join(map(str, allowed))} dimensions, got shape {a.shape}"
            )
    # a bound the dtype already guarantees needs no pass over the data
    info = np.iinfo(a.dtype)
    if a.size and lo is not None and info.min < lo and a.min() < lo:
        raise NumericsError(f"{name} has value {int(a.min())} below the allowed minimum {lo}")
    if a.size and hi is not None and info.max > hi and a.max() > hi:
        raise NumericsError(f"{name} has value {int(a.max())} above the allowed maximum {hi}")
    return a


def pm1_array(x, name: str, *, ndim: int | tuple[int, ...] | None = None) -> np.ndarray:
    """Return `x` as an int8 array of +-1 values (a binary tensor), refusing anything else."""
    a = int_array(x, name, ndim=ndim)
    if a.size and not np.all((a == 1) | (a == -1)):
        bad = a[(a != 1) & (a != -1)].ravel()[0]
        raise NumericsError(f"{name} must hold only -1 and +1, found {int(bad)}")
    return a.astype(np.int8)


def check_shape(a: np.ndarray, name: str, shape: tuple) -> None:
    """Check that `a.shape` equals `shape`; None entries in `shape` match anything."""
    ok = a.ndim == len(shape) and all(s is None or s == d for s, d in zip(shape, a.shape, strict=True))
    if not ok:
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        raise NumericsError(f"{name} must have shape {want}, got {a.shape}")


INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


def wrap_int32(x: np.ndarray) -> np.ndarray:
    """Two's-complement wrap of an int64 array to int32 (what a 32-bit accumulator holds)."""
    x = np.asarray(x, dtype=np.int64)
    return (((x - INT32_MIN) & 0xFFFFFFFF) + INT32_MIN).astype(np.int32)


def fit_int32(x: np.ndarray, name: str) -> np.ndarray:
    """Cast an int64 result to int32, refusing values that would not fit (no silent wrap)."""
    x = np.asarray(x, dtype=np.int64)
    if x.size and (x.min() < INT32_MIN or x.max() > INT32_MAX):
        raise NumericsError(f"{name} overflows int32 (range {int(x.min())}..{int(x.max())})")
    return x.astype(np.int32)
