"""BNN numerics against PyTorch float arithmetic on +-1 tensors, and the packing conventions."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from models.checks import NumericsError
from models.numerics import bnn

SEED = 1129


def pm1(rng, *shape):
    return np.where(rng.random(shape) < 0.5, -1, 1).astype(np.int8)


# --- packing ---------------------------------------------------------------------------------
def test_bit_order_lsb_first_and_padding_zero():
    x = -np.ones(35, dtype=np.int8)
    x[0] = x[31] = x[32] = 1
    w = bnn.pack_bits(x, 32)
    assert w.dtype == np.uint32 and w.tolist() == [0x80000001, 0x1]  # bits 35..63 stay 0
    w64 = bnn.pack_bits(x, 64)
    assert w64.dtype == np.uint64 and w64.tolist() == [(1 << 32) | (1 << 31) | 1]


@settings(max_examples=80, deadline=None)
@given(st.sampled_from([32, 64]), st.integers(1, 150), st.integers(1, 4), st.integers(0, 2**31))
def test_pack_unpack_round_trip(word_bits, channels, lead, seed):
    x = pm1(np.random.default_rng(seed), lead, channels)
    w = bnn.pack_bits(x, word_bits)
    assert w.shape == (lead, -(-channels // word_bits))
    assert np.array_equal(bnn.unpack_bits(w, channels), x)
    # padding bits are zero
    extra = w.shape[1] * word_bits - channels
    if extra:
        assert not (int(w[0, -1]) >> (word_bits - extra))


def test_unpack_refuses_set_padding_bits():
    w = np.array([0xFFFFFFFF], dtype=np.uint32)
    with pytest.raises(NumericsError, match="padding bits past channel 5"):
        bnn.unpack_bits(w, 5)
    assert bnn.unpack_bits(w, 5, strict=False).tolist() == [1] * 5


def test_pack_nchw_layout():
    rng = np.random.default_rng(SEED)
    x = pm1(rng, 2, 40, 3, 5)
    w = bnn.pack_nchw(x, 32)
    assert w.shape == (2, 3, 5, 2)
    assert np.array_equal(bnn.unpack_nhwc(w, 40), x)
    c, y, xx = 33, 1, 4
    assert (int(w[1, y, xx, c // 32]) >> (c % 32)) & 1 == (x[1, c, y, xx] > 0)


@pytest.mark.parametrize("word_bits", [32, 64])
@pytest.mark.parametrize("n", [1, 31, 32, 33, 64, 100])
def test_xnor_dot_masks_padding(word_bits, n):
    rng = np.random.default_rng(SEED + n)
    a, b = pm1(rng, n), pm1(rng, n)
    wa, wb = bnn.pack_bits(a, word_bits), bnn.pack_bits(b, word_bits)
    if n % word_bits:  # set the padding bits of b: they must not count
        wb[-1] |= wb.dtype.type(((1 << word_bits) - 1) ^ ((1 << (n % word_bits)) - 1))
    assert bnn.xnor_dot(wa, wb, n) == int(a.astype(int) @ b.astype(int))


def test_refuses_non_pm1():
    with pytest.raises(NumericsError, match="only -1 and \\+1, found 0"):
        bnn.pack_bits(np.array([1, 0, -1]))
    with pytest.raises(NumericsError, match="word size"):
        bnn.pack_bits(np.array([1]), 16)


# --- layers vs torch -------------------------------------------------------------------------
@pytest.mark.parametrize("padding", [0, 1])
@pytest.mark.parametrize("channels", [1, 5, 32, 33, 64, 70])
def test_bin_conv_equals_torch(channels, padding):
    rng = np.random.default_rng(SEED + channels * 2 + padding)
    x = pm1(rng, 3, channels, 6, 7)
    w = pm1(rng, 9, channels, 3, 3)
    b = rng.integers(-5, 6, size=9)
    out = bnn.bin_conv3x3(x, w, b, padding)
    ref = F.conv2d(
        torch.tensor(x, dtype=torch.float32),
        torch.tensor(w, dtype=torch.float32),
        torch.tensor(b, dtype=torch.float32),
        padding=padding,
    )
    assert out.dtype == np.int32
    assert np.array_equal(out, ref.numpy().astype(np.int64))


@pytest.mark.parametrize("padding", [0, 1])
def test_int_conv_equals_torch(padding):
    rng = np.random.default_rng(SEED + padding)
    x = rng.integers(0, 256, size=(2, 3, 9, 8))
    w = pm1(rng, 16, 3, 3, 3)
    b = rng.integers(-1, 2, size=16)
    out = bnn.int_conv3x3(x, w, b, padding)
    ref = F.conv2d(
        torch.tensor(x, dtype=torch.float64),
        torch.tensor(w, dtype=torch.float64),
        torch.tensor(b, dtype=torch.float64),
        padding=padding,
    )
    assert np.array_equal(out, ref.numpy().astype(np.int64))


@pytest.mark.parametrize("k", [7, 32, 33, 64, 65, 3136])
def test_bin_dense_equals_torch(k):
    rng = np.random.default_rng(SEED + k)
    x, w = pm1(rng, 4, k), pm1(rng, 10, k)
    b = rng.integers(-1, 2, size=10)
    ref = F.linear(
        torch.tensor(x, dtype=torch.float64),
        torch.tensor(w, dtype=torch.float64),
        torch.tensor(b, dtype=torch.float64),
    )
    assert np.array_equal(bnn.bin_dense(x, w, b), ref.numpy().astype(np.int64))


def test_maxpool_ints_and_packed():
    rng = np.random.default_rng(SEED)
    x = rng.integers(-100, 100, size=(2, 3, 7, 6))
    ref = F.max_pool2d(torch.tensor(x, dtype=torch.float64), 2)
    assert np.array_equal(bnn.maxpool2x2(x), ref.numpy().astype(np.int64))
    b = pm1(rng, 2, 45, 7, 6)
    for wb in (32, 64):
        packed = bnn.maxpool2x2_packed(bnn.pack_nchw(b, wb))
        assert np.array_equal(bnn.unpack_nhwc(packed, 45), bnn.maxpool2x2(b))


def test_flatten_is_nchw():
    x = np.arange(2 * 3 * 2 * 2).reshape(2, 3, 2, 2)
    assert bnn.flatten(x)[1].tolist() == list(range(12, 24))
    assert np.array_equal(bnn.flatten(x), torch.flatten(torch.tensor(x), 1).numpy())


def test_argmax_first_on_ties():
    assert bnn.argmax(np.array([[1, 5, 5], [-3, -3, -4]])).tolist() == [1, 0]


# --- step vs batch norm ----------------------------------------------------------------------
@pytest.mark.parametrize("gamma", [2.0, -2.0])
@pytest.mark.parametrize("strict", [False, True])
def test_step_exactly_on_threshold(gamma, strict):
    # BN(x) = gamma * (x - 3) / 2 + beta: zero exactly at x = 2 (gamma > 0) or x = 4 (gamma < 0)
    beta, mean, var, eps = 1.0, 3.0, 3.75, 0.25
    x = np.arange(-3, 10).reshape(1, 1, -1)
    thr, d = bnn.bn_step_params([gamma], [beta], [mean], [var], eps, -3, 9, strict=strict)
    y = gamma * (x.astype(np.float64) - mean) / np.sqrt(var + eps) + beta
    want = np.where(y > 0 if strict else y >= 0, 1, -1)
    assert np.any(y == 0)
    assert np.array_equal(bnn.step(x, thr, d), want)


def test_step_matches_torch_batchnorm_random():
    rng = np.random.default_rng(SEED)
    c = 64
    gamma = rng.normal(0, 1, c)
    gamma[:5] = -np.abs(gamma[:5])  # negative gammas included
    gamma[5] = 0.0  # constant channel
    beta, mean = rng.normal(0, 1, c), rng.normal(0, 20, c)
    var = rng.uniform(1, 400, c)
    lo, hi = -577, 577  # range of a 64-channel 3x3 binary conv
    thr, d = bnn.bn_step_params(gamma, beta, mean, var, 1e-5, lo, hi)
    x = rng.integers(lo, hi + 1, size=(16, c, 5, 5))
    x[0, :, 0, 0] = np.clip(thr, lo, hi)  # exactly on the thresholds
    ref = F.batch_norm(
        torch.tensor(x, dtype=torch.float64),
        torch.tensor(mean),
        torch.tensor(var),
        torch.tensor(gamma),
        torch.tensor(beta),
        eps=1e-5,
    )
    want = np.where(ref.numpy() >= 0, 1, -1)
    assert np.array_equal(bnn.step(x, thr, d), want)
    assert (d == -1).sum() >= 5


def test_step_refuses_non_monotone_and_bad_args():
    with pytest.raises(NumericsError, match="not monotone"):
        bnn.step_from_table(0, [False, True, False])
    with pytest.raises(NumericsError, match="direction"):
        bnn.step(np.zeros((1, 2), dtype=int), [0, 0], [1, 0])
    with pytest.raises(NumericsError, match=r"step threshold must have shape \(3\)"):
        bnn.step(np.zeros((1, 3), dtype=int), [0, 0], [1, 1])
