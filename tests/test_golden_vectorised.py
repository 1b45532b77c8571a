"""The batched, chunked golden kernels equal the implementations they replaced.

The golden models are the single reference, so making them fast must not change one value or
one error: the previous implementations are kept below, verbatim, and every rewritten function
is compared with its predecessor on seeded random inputs (every dtype the checks accept, both
paddings, the float32 and float64 paths, batches split into several chunks, wrap-around,
overflow and bad input), value for value and error message for error message. (Empty
batches, on which some predecessors crashed in numpy's reshape, now give empty results.)
"""

import numpy as np
import pytest

from models import checks
from models.checks import (
    INT32_MAX,
    INT32_MIN,
    NumericsError,
    check_shape,
    fit_int32,
    int_array,
    pm1_array,
    wrap_int32,
)
from models.numerics import bnn, sac
from models.numerics.sac import MAX_CODE

SEED = 1212


# ---------------------------------------------------------------------------------------------
# the previous implementations, verbatim
# ---------------------------------------------------------------------------------------------
def old_int_array(x, name, *, ndim=None, lo=None, hi=None):
    a = np.asarray(x)
    if a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer):
        raise NumericsError(f"{name} must be an integer array, got dtype {a.dtype}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if a.ndim not in allowed:
            raise NumericsError(
                f"{name} must have {' or '.join(map(str, allowed))} dimensions, got shape {a.shape}"
            )
    if a.size and lo is not None and a.min() < lo:
        raise NumericsError(f"{name} has value {int(a.min())} below the allowed minimum {lo}")
    if a.size and hi is not None and a.max() > hi:
        raise NumericsError(f"{name} has value {int(a.max())} above the allowed maximum {hi}")
    return a


def old_conv3x3(x, w, bias, padding):
    n, c, h, wd = x.shape
    ho, wo = h + 2 * padding - 2, wd + 2 * padding - 2
    if ho < 1 or wo < 1:
        raise NumericsError(
            f"a 3x3 convolution with padding {padding} needs at least "
            f"{3 - 2 * padding}x{3 - 2 * padding} pixels, got {h}x{wd}"
        )
    bound = float(np.abs(x).max(initial=0)) * 9 * c + float(np.abs(bias).max(initial=0))
    if bound >= 2.0**52:
        raise NumericsError("convolution input values are too large for an exact int sum")
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    cols = np.empty((n, ho, wo, c, 3, 3), dtype=np.float64)
    for dy in range(3):
        for dx in range(3):
            cols[..., dy, dx] = xp[:, :, dy : dy + ho, dx : dx + wo].transpose(0, 2, 3, 1)
    out = cols.reshape(n * ho * wo, c * 9) @ w.reshape(w.shape[0], c * 9).T.astype(np.float64)
    out = out.reshape(n, ho, wo, -1).transpose(0, 3, 1, 2).astype(np.int64)
    return fit_int32(out + bias.astype(np.int64)[None, :, None, None], "convolution output")


def old_int_conv3x3(x, w, bias, padding):
    a = int_array(x, "integer conv input", ndim=4, lo=INT32_MIN, hi=INT32_MAX)
    wt, b = bnn._check_conv_args(w, bias, padding, a.shape[1])
    return old_conv3x3(a, wt, b, padding)


def old_bin_conv3x3(x, w, bias, padding):
    a = pm1_array(x, "binary conv input", ndim=4)
    wt, b = bnn._check_conv_args(w, bias, padding, a.shape[1])
    return old_conv3x3(a, wt, b, padding)


def old_step(x, threshold, direction):
    a = int_array(x, "step input")
    if a.ndim < 2:
        raise NumericsError(f"step input must be [N, C, ...], got shape {a.shape}")
    c = a.shape[1]
    t = int_array(threshold, "step threshold", ndim=1).astype(np.int64)
    d = int_array(direction, "step direction", ndim=1)
    check_shape(t, "step threshold", (c,))
    check_shape(d, "step direction", (c,))
    if not np.all((d == 1) | (d == -1)):
        raise NumericsError("step direction must hold only -1 and +1")
    shape = (1, c) + (1,) * (a.ndim - 2)
    t, d = t.reshape(shape), d.reshape(shape)
    a = a.astype(np.int64)
    on = np.where(d > 0, a >= t, a <= t)
    return np.where(on, 1, -1).astype(np.int8)


def old_maxpool2x2(x):
    a = int_array(x, "maxpool input", ndim=4)
    n, c, h, w = a.shape
    if h < 2 or w < 2:
        raise NumericsError(f"2x2 max pooling needs at least 2x2 pixels, got {h}x{w}")
    a = a[:, :, : h // 2 * 2, : w // 2 * 2]
    return a.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def old_bin_dense(x, w, bias):
    a = pm1_array(x, "dense input", ndim=2)
    wt = pm1_array(w, "dense weights", ndim=2)
    if wt.shape[1] != a.shape[1]:
        raise NumericsError(f"dense weights expect {wt.shape[1]} inputs, got {a.shape[1]}")
    b = int_array(bias, "dense bias", ndim=1)
    check_shape(b, "dense bias", (wt.shape[0],))
    out = (a.astype(np.float64) @ wt.T.astype(np.float64)).astype(np.int64)
    return fit_int32(out + b.astype(np.int64), "dense output")


def old_dense_matmul(dense, data, init):
    w = int_array(dense, "weights", ndim=2, lo=-(1 << (MAX_CODE - 1)), hi=1 << (MAX_CODE - 1))
    x = int_array(data, "data", lo=0, hi=255)
    if x.ndim < 2 or x.shape[-2] != w.shape[1]:
        raise NumericsError(f"data must have shape [..., {w.shape[1]}, P], got {x.shape}")
    b = int_array(init, "bias/init", lo=INT32_MIN, hi=INT32_MAX).astype(np.int64)
    if b.ndim == 1:
        check_shape(b, "bias", (w.shape[0],))
        b = b[:, None]
    acc = np.matmul(w.astype(np.float64), x.astype(np.float64)).astype(np.int64)
    try:
        return wrap_int32(acc + b)
    except ValueError:
        raise NumericsError(f"init shape {b.shape} does not match result shape {acc.shape}") from None


def old_relu_quant(acc, shift=sac.QUANT_SHIFT):
    a = int_array(acc, "acc", lo=INT32_MIN, hi=INT32_MAX).astype(np.int64)
    return np.clip(a >> shift, 0, 255).astype(np.uint8)


def old_count_active_per_image(dense, data):
    w = int_array(dense, "weights", ndim=2)
    x = int_array(data, "data", lo=0, hi=255)
    if x.ndim < 2 or x.shape[-2] != w.shape[1]:
        raise NumericsError(f"data must have shape [..., {w.shape[1]}, P], got {x.shape}")
    x3 = (x != 0).reshape(-1, x.shape[-2], x.shape[-1]).astype(np.float64)
    per_pixel = np.matmul((w != 0).astype(np.float64), x3)
    return per_pixel.sum(axis=(1, 2)).astype(np.int64)


# ---------------------------------------------------------------------------------------------
def same(new, old, *args, **kw):
    """new(*args) and old(*args) return equal arrays (dtype, shape, values) or raise the same
    NumericsError message."""
    try:
        want = old(*args, **kw)
    except NumericsError as exc:
        with pytest.raises(NumericsError) as got:
            new(*args, **kw)
        assert str(got.value) == str(exc)
        return None
    got = new(*args, **kw)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    assert np.array_equal(got, want)
    return got


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of a few images, so that every batch below is split."""
    monkeypatch.setattr(bnn, "CHUNK_BYTES", 1 << 14)


def pm1(rng, shape):
    return np.where(rng.random(shape) < 0.5, 1, -1).astype(np.int8)


INT_DTYPES = [np.uint8, np.int8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_int_array_skips_only_passes_that_cannot_fail(dtype):
    rng = np.random.default_rng(SEED)
    info = np.iinfo(dtype)
    for lo, hi in [(0, 255), (INT32_MIN, INT32_MAX), (-5, 5), (None, 10), (3, None), (None, None)]:
        for vals in (
            rng.integers(max(info.min, -300), min(info.max, 300), 50),
            [info.min, info.max],
            [],
            [0],
        ):
            a = np.asarray(vals, dtype=np.int64 if dtype != np.uint64 else np.uint64)
            a = a.astype(dtype) if len(vals) else a.astype(dtype)
            same(
                lambda v, lo=lo, hi=hi: checks.int_array(v, "t", lo=lo, hi=hi),
                lambda v, lo=lo, hi=hi: old_int_array(v, "t", lo=lo, hi=hi),
                a,
            )


@pytest.mark.parametrize("padding", [0, 1])
@pytest.mark.parametrize("c", [1, 3, 64])
def test_convolutions_equal_previous(small_chunks, padding, c):
    rng = np.random.default_rng([SEED, padding, c])
    w = pm1(rng, (5, c, 3, 3))
    empty = bnn.bin_conv3x3(pm1(rng, (0, c, 6, 5)), w, np.zeros(5, int), padding)
    assert empty.shape == (0, 5, 4 + 2 * padding, 3 + 2 * padding) and empty.dtype == np.int32
    for n in (1, 7):
        bias = rng.integers(-1000, 1000, 5)
        same(bnn.bin_conv3x3, old_bin_conv3x3, pm1(rng, (n, c, 6, 5)), w, bias, padding)
        for dtype in (np.uint8, np.int8, np.int32, np.int64):
            info = np.iinfo(dtype)
            x = rng.integers(max(info.min, -(2**20)), min(info.max, 2**20) + 1, (n, c, 5, 6)).astype(dtype)
            same(bnn.int_conv3x3, old_int_conv3x3, x, w, bias, padding)


def test_convolution_float64_path_overflow_and_errors(small_chunks):
    rng = np.random.default_rng(SEED + 1)
    w = pm1(rng, (4, 8, 3, 3))
    big = rng.integers(INT32_MIN, INT32_MAX, (5, 8, 4, 4)).astype(np.int64)  # float64 path
    same(bnn.int_conv3x3, old_int_conv3x3, big // 1000, w, np.zeros(4, int), 1)
    same(bnn.int_conv3x3, old_int_conv3x3, big, w, np.zeros(4, int), 1)  # overflows
    same(bnn.int_conv3x3, old_int_conv3x3, np.full((3, 8, 4, 4), INT32_MIN), w, np.zeros(4, int), 0)
    same(bnn.int_conv3x3, old_int_conv3x3, big[:, :, :2, :2], w, np.zeros(4, int), 0)
    same(bnn.int_conv3x3, old_int_conv3x3, big, w, np.full(4, 2**62), 1)  # bound
    same(bnn.int_conv3x3, old_int_conv3x3, big.astype(float), w, np.zeros(4, int), 1)
    same(bnn.bin_conv3x3, old_bin_conv3x3, np.zeros((2, 8, 3, 3), np.int8), w, np.zeros(4), 1)
    ones = np.ones((4, 8, 3, 3), np.int8)  # bias past int32, results inside it
    same(
        bnn.int_conv3x3,
        old_int_conv3x3,
        np.full((2, 8, 5, 5), -1000),
        ones,
        np.full(4, INT32_MAX + 50_000),
        0,
    )
    same(
        bnn.int_conv3x3,
        old_int_conv3x3,
        np.full((2, 8, 5, 5), -1000),
        ones,
        np.full(4, INT32_MAX + 50_000),
        1,
    )


def test_step_equals_previous(small_chunks):
    rng = np.random.default_rng(SEED + 2)
    c = 6
    t = rng.integers(-50, 50, c)
    d = np.where(rng.random(c) < 0.5, 1, -1)
    for dtype in INT_DTYPES:
        info = np.iinfo(dtype)
        x = rng.integers(max(info.min, -60), min(info.max, 60) + 1, (9, c, 4, 3)).astype(dtype)
        same(bnn.step, old_step, x, t, d)
        same(bnn.step, old_step, x.reshape(9, c, 12)[..., 0], t, d)  # flat [N, C]
    # uint64 at or above 2^63: the previous step read it as negative (an int64 copy); the
    # fixed one compares it exactly, pinned in tests/test_numerics_contracts.py
    same(bnn.step, old_step, np.zeros((0, c), np.int32), t, d)
    same(bnn.step, old_step, np.zeros((2, c), np.int32), t, np.full(c, 2))
    same(bnn.step, old_step, np.zeros(3, np.int32), t, d)


def test_maxpool_equals_previous(small_chunks):
    rng = np.random.default_rng(SEED + 5)
    for dtype in INT_DTYPES:
        info = np.iinfo(dtype)
        for shape in [(7, 3, 6, 4), (5, 2, 7, 5), (1, 1, 2, 3), (0, 2, 4, 4), (3, 2, 1, 4)]:
            x = rng.integers(max(info.min, -1000), min(info.max, 1000) + 1, shape).astype(dtype)
            same(bnn.maxpool2x2, old_maxpool2x2, x)
    same(bnn.maxpool2x2, old_maxpool2x2, np.zeros((2, 3, 4), np.int8))


def test_dense_equals_previous(small_chunks):
    rng = np.random.default_rng(SEED + 3)
    for n, k in [(0, 5), (1, 7), (40, 300), (3, 3000)]:
        w = pm1(rng, (11, k))
        same(bnn.bin_dense, old_bin_dense, pm1(rng, (n, k)), w, rng.integers(-99, 99, 11))
    x = pm1(rng, (4, 6))
    same(bnn.bin_dense, old_bin_dense, x, pm1(rng, (3, 6)), np.full(3, INT32_MAX))  # overflow
    same(bnn.bin_dense, old_bin_dense, x, pm1(rng, (3, 5)), np.zeros(3, int))


def test_dense_matmul_relu_and_activity_equal_previous():
    rng = np.random.default_rng(SEED + 4)
    lim = 1 << (MAX_CODE - 1)
    for lead, k, p in [
        ((), 8, 50),
        ((), 64, 7),
        ((5,), 8, 3),
        ((2, 3), 1, 4),
        ((), 1100, 9),
        ((4,), 1100, 2),
        ((0,), 3, 2),
    ]:
        w = rng.integers(-lim, lim + 1, (6, k))
        w[rng.random(w.shape) < 0.3] = 0
        x = rng.integers(0, 256, lead + (k, p)).astype(np.uint8)
        x[rng.random(x.shape) < 0.3] = 0
        for init in (
            rng.integers(-1000, 1000, 6),
            rng.integers(INT32_MIN, INT32_MAX, lead + (6, p), dtype=np.int64),
            np.full(6, INT32_MAX),
            np.full(6, INT32_MIN),
        ):
            acc = same(sac.dense_matmul, old_dense_matmul, w, x, init)
            same(sac.relu_quant, old_relu_quant, acc)
        if x.size:
            same(sac.count_active_per_image, old_count_active_per_image, w, x)
    w = rng.integers(-4, 4, (3, 5))
    x = rng.integers(0, 256, (5, 4)).astype(np.int64)
    same(sac.dense_matmul, old_dense_matmul, w, x, rng.integers(-9, 9, (2, 3, 4)))  # broadcast
    same(sac.dense_matmul, old_dense_matmul, w, x, rng.integers(-9, 9, (2, 4)))  # mismatch
    same(sac.dense_matmul, old_dense_matmul, w, x, rng.integers(-9, 9, 4))  # bias size
    same(sac.dense_matmul, old_dense_matmul, w * 100, x, np.zeros(3, int))  # weights
    same(sac.dense_matmul, old_dense_matmul, w, x + 300, np.zeros(3, int))  # data
    same(sac.dense_matmul, old_dense_matmul, w, x, np.full(3, 2**40))  # init
    same(sac.dense_matmul, old_dense_matmul, w, x.astype(np.uint64), np.zeros(3, np.uint64))
    same(sac.relu_quant, old_relu_quant, np.array([INT32_MAX, 70, 0], np.uint32))
    same(sac.relu_quant, old_relu_quant, np.array([2**31 + 5, 70], np.uint32))
    same(sac.relu_quant, old_relu_quant, np.array([INT32_MIN, -65, 16319, 16320, INT32_MAX]))
    same(sac.relu_quant, old_relu_quant, np.array([2**40]))
    same(sac.count_active_per_image, old_count_active_per_image, w, x[:4])
