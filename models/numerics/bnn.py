"""Integer-exact numerics of binarized neural networks (BNNs).

Conventions (docs/conventions.md; pinned by tests/test_bnn_numerics.py):

* A binary tensor holds -1/+1 (int8). Packed, bit 1 means +1 and bit 0 means -1.
* Packing runs along channels, LSB first: channel c lives in word c // B at bit c % B
  (B = 32 or 64). Bits past the channel count are 0 and are masked out of every popcount, so
  they never count; :func:`unpack_bits` refuses words whose padding bits are set.
* Packed activations are NHWC: [N, H, W, ceil(C / B)] words.
* 3x3 convolutions have stride 1 and padding 0 or 1; a padded tap is skipped (contributes 0,
  the value the ONNX graph's zero padding gives in the +-1 domain).
* Step: out = +1 where x >= threshold (direction +1) or x <= threshold (direction -1), else -1.
  The direction makes batch norms with negative gamma exact.
* Flatten is NCHW order: index c * H * W + y * W + x (what ONNX Reshape/PyTorch flatten do).
* Argmax returns the first index of the maximum.
"""

from __future__ import annotations

import math

import numpy as np

from models.checks import (
    INT32_MAX,
    INT32_MIN,
    NumericsError,
    check_shape,
    fit_int32,
    int_array,
    pm1_array,
)

WORD_DTYPES = {32: np.uint32, 64: np.uint64}


def _word_dtype(word_bits: int):
    if word_bits not in WORD_DTYPES:
        raise NumericsError(f"word size must be 32 or 64 bits, got {word_bits!r}")
    return WORD_DTYPES[word_bits]


def words_for(channels: int, word_bits: int) -> int:
    """Number of words that hold `channels` bits."""
    return -(-channels // word_bits)


# ----------------------------------------------------------------------------------------------
# Bit packing
# ----------------------------------------------------------------------------------------------
def pack_bits(x, word_bits: int = 32) -> np.ndarray:
    """Pack a +-1 tensor [..., C] along its last axis into words [..., ceil(C / B)]."""
    dt = _word_dtype(word_bits)
    a = pm1_array(x, "binary tensor")
    if a.ndim < 1:
        raise NumericsError("binary tensor must have at least one dimension")
    c = a.shape[-1]
    nw = words_for(c, word_bits)
    bits = np.zeros(a.shape[:-1] + (nw * word_bits,), dtype=np.uint8)
    bits[..., :c] = a > 0
    # one byte per 8 bits, least significant bit first, and the bytes of a word in little-endian
    # order: bit k of word j is channel j * B + k (a bit per byte, not per uint64: 8x less memory)
    packed = np.packbits(bits, axis=-1, bitorder="little")
    return packed.view(np.dtype(dt).newbyteorder("<")).astype(dt)


def unpack_bits(words, channels: int, strict: bool = True) -> np.ndarray:
    """Unpack words [..., W] into a +-1 int8 tensor [..., channels] (inverse of pack_bits).

    With ``strict`` (default) padding bits past ``channels`` must be zero: a kernel that writes
    garbage there is caught instead of ignored.
    """
    w = np.asarray(words)
    if w.dtype not in (np.uint32, np.uint64):
        raise NumericsError(f"packed words must be uint32 or uint64, got dtype {w.dtype}")
    word_bits = w.dtype.itemsize * 8
    nw = words_for(channels, word_bits)
    if w.ndim < 1 or w.shape[-1] != nw:
        raise NumericsError(
            f"{channels} channels need {nw} words of {word_bits} bits in the last axis, got shape {w.shape}"
        )
    # the words' bytes in little-endian order, each unpacked least significant bit first: bit k
    # of word j lands at j * B + k (one byte per bit: the uint64 shift of every bit needed 8x the
    # memory, ~4 GB for 10,000 Fashion images of layer 1, and 27x the time)
    little = np.ascontiguousarray(w, dtype=w.dtype.newbyteorder("<"))
    bits = np.unpackbits(little.view(np.uint8), axis=-1, bitorder="little")
    if strict and bits[..., channels:].any():
        raise NumericsError(f"padding bits past channel {channels} are set in packed words")
    return (bits[..., :channels].astype(np.int8) << 1) - 1


def pack_nchw(x, word_bits: int = 32) -> np.ndarray:
    """Pack a +-1 activation [N, C, H, W] into NHWC words [N, H, W, ceil(C / B)]."""
    a = pm1_array(x, "binary activation", ndim=4)
    return pack_bits(a.transpose(0, 2, 3, 1), word_bits)


def unpack_nhwc(words, channels: int, strict: bool = True) -> np.ndarray:
    """Unpack NHWC words [N, H, W, nw] into a +-1 activation [N, C, H, W]."""
    w = np.asarray(words)
    if w.ndim != 4:
        raise NumericsError(f"packed activation must be [N, H, W, words], got shape {w.shape}")
    return unpack_bits(w, channels, strict).transpose(0, 3, 1, 2)


def popcount(words) -> np.ndarray:
    """Number of set bits per word."""
    return np.bitwise_count(np.asarray(words))


def xnor_dot(a_words, b_words, n_bits: int) -> np.ndarray:
    """+-1 dot product of two packed vectors over their first `n_bits` bits (last axis words):
    matches - mismatches = n_bits - 2 * popcount(a xor b), padding bits masked out."""
    a = np.asarray(a_words)
    b = np.asarray(b_words)
    word_bits = a.dtype.itemsize * 8
    nw = a.shape[-1]
    mask = ~np.zeros(nw, dtype=a.dtype)  # all bits set
    rem = n_bits - (nw - 1) * word_bits  # bits used in the last word; a full one keeps all
    mask[-1:] = a.dtype.type((1 << min(rem, word_bits)) - 1)  # (no word: nothing to mask)
    # int64 only guards against a uint64 wrap that the final astype would undo: equivalent mutants
    diff = popcount((a ^ b) & mask).sum(axis=-1, dtype=np.int64)  # pragma: no mutate (dtype)
    return (n_bits - 2 * diff).astype(np.int64)


# ----------------------------------------------------------------------------------------------
# Layers
# ----------------------------------------------------------------------------------------------
def _check_conv_args(w, bias, padding, channels):
    wt = pm1_array(w, "conv weights", ndim=4)
    if wt.shape[1:] != (channels, 3, 3):
        raise NumericsError(f"conv weights must have shape [F, {channels}, 3, 3], got {wt.shape}")
    b = int_array(bias, "conv bias", ndim=1)
    check_shape(b, "conv bias", (wt.shape[0],))
    if padding not in (0, 1):
        raise NumericsError(f"padding must be 0 or 1, got {padding!r}")
    return wt, b


# Working-set size of the batched golden kernels: images are processed in chunks whose
# temporaries (im2col windows, products) take about this many bytes.
CHUNK_BYTES = 1 << 26


def _chunks(n: int, bytes_per_image: int):
    """Consecutive [lo, hi) image ranges of about CHUNK_BYTES each."""
    step = max(1, CHUNK_BYTES // max(1, bytes_per_image))
    return [(s, min(n, s + step)) for s in range(0, n, step)]


def _exact_dtype(bound: float):
    """float32 where every partial sum (at most `bound`) is an integer below 2^24, else
    float64 (exact below 2^53): products of integers summed exactly, at BLAS speed."""
    return np.float32 if bound < 2.0**24 else np.float64


def _conv3x3(x: np.ndarray, w: np.ndarray, bias: np.ndarray, padding: int) -> np.ndarray:
    n, c, h, wd = x.shape
    ho, wo = h + 2 * padding - 2, wd + 2 * padding - 2
    if ho < 1 or wo < 1:
        raise NumericsError(
            f"a 3x3 convolution with padding {padding} needs at least "
            f"{3 - 2 * padding}x{3 - 2 * padding} pixels, got {h}x{wd}"
        )
    # `pragma: no mutate` below (docs/verification.md, mutation testing): (chunk) sizes a chunk,
    # (dtype) is the float type of an exact product or a wider int, (pad) builds padding never
    # read, (fast path) guards the int32 path, taken only where it is exact: memory and speed,
    # never a value
    spans = _chunks(n, ho * wo * max(9 * c, w.shape[0]) * 8)  # pragma: no mutate (chunk)
    x_max = max((float(np.abs(x[lo:hi]).max(initial=0)) for lo, hi in spans), default=0.0)
    reach = x_max * 9 * c  # the largest |sum of products| before the bias
    bound = reach + float(np.abs(bias).max(initial=0))
    if bound >= 2.0**52:
        raise NumericsError("convolution input values are too large for an exact int sum")
    ft = _exact_dtype(reach)
    f = w.shape[0]
    # im2col, image by image in chunks: windows [pixel, (dy, dx, channel)] against weights
    # [(dy, dx, channel), filter]; one matrix product per chunk
    wmat = w.transpose(2, 3, 1, 0).reshape(9 * c, f).astype(ft)  # pragma: no mutate (dtype)
    out = np.empty((n, f, ho, wo), dtype=np.int32)
    if not out.size:  # no image or no filter: nothing to compute or to range-check
        return out
    b64 = bias.astype(np.int64)  # pragma: no mutate (dtype: |bias| < 2^52, exact in float64 too)
    bias_fits = bool(b64.min() >= INT32_MIN and b64.max() <= INT32_MAX)  # pragma: no mutate (fast path)
    lo_all, hi_all = math.inf, -math.inf  # the real extremes, even all beyond int32
    for lo, hi in spans:
        m = hi - lo
        xp = np.zeros((m, h + 2 * padding, wd + 2 * padding, c), dtype=ft)  # pragma: no mutate (pad)
        xp[:, padding : padding + h, padding : padding + wd] = x[lo:hi].transpose(0, 2, 3, 1)
        cols = np.empty((m, ho, wo, 3, 3, c), dtype=ft)  # pragma: no mutate (dtype)
        for dy in range(3):
            for dx in range(3):
                cols[:, :, :, dy, dx] = xp[:, dy : dy + ho, dx : dx + wo]
        acc = (cols.reshape(m * ho * wo, 9 * c) @ wmat).reshape(m, ho, wo, f)
        # the range of acc + bias from each filter's extremes (exact integers in float: acc plus
        # the int64 bias is float64, exact below 2^53, which the bound above guarantees)
        c_lo = int((acc.min(axis=(0, 1, 2)) + b64).min())
        c_hi = int((acc.max(axis=(0, 1, 2)) + b64).max())
        lo_all, hi_all = min(lo_all, c_lo), max(hi_all, c_hi)
        fits = c_lo >= INT32_MIN and c_hi <= INT32_MAX  # pragma: no mutate (fast path)
        if ft is np.float32 and bias_fits and fits:  # pragma: no mutate (fast path)
            out[lo:hi] = acc.transpose(0, 3, 1, 2)  # integers below 2^24: exact
            out[lo:hi] += bias.astype(np.int32)[None, :, None, None]  # pragma: no mutate (dtype)
        else:
            out[lo:hi] = acc.transpose(0, 3, 1, 2).astype(np.int64) + b64[None, :, None, None]
    # the range of the whole output, as fit_int32 reports it
    fit_int32([lo_all, hi_all], "convolution output")
    return out


def bin_conv3x3(x, w, bias, padding: int) -> np.ndarray:
    """Binary 3x3 convolution: +-1 input [N, C, H, W], +-1 weights [F, C, 3, 3], integer bias
    [F] -> int32 [N, F, H', W'] with stride 1 and padding 0 or 1 (padded taps skipped)."""
    a = pm1_array(x, "binary conv input", ndim=4)
    wt, b = _check_conv_args(w, bias, padding, a.shape[1])
    return _conv3x3(a, wt, b, padding)


def int_conv3x3(x, w, bias, padding: int) -> np.ndarray:
    """Integer-input first layer: integer pixels [N, C, H, W] with +-1 weights, else as
    :func:`bin_conv3x3` (a padded tap is a zero pixel, i.e. skipped)."""
    a = int_array(x, "integer conv input", ndim=4, lo=INT32_MIN, hi=INT32_MAX)
    wt, b = _check_conv_args(w, bias, padding, a.shape[1])
    return _conv3x3(a, wt, b, padding)


def maxpool2x2(x) -> np.ndarray:
    """2x2 max pooling, stride 2, floor mode, on integers or +-1 values [N, C, H, W]."""
    a = int_array(x, "maxpool input", ndim=4)
    n, c, h, w = a.shape
    if h < 2 or w < 2:
        raise NumericsError(f"2x2 max pooling needs at least 2x2 pixels, got {h}x{w}")
    out = np.empty((n, c, h // 2, w // 2), dtype=a.dtype)
    for lo, hi in _chunks(n, a[:1].nbytes):  # pragma: no mutate (chunk)
        v = a[lo:hi]
        out[lo:hi] = np.maximum(
            np.maximum(v[:, :, 0 : h - 1 : 2, 0 : w - 1 : 2], v[:, :, 0 : h - 1 : 2, 1::2]),
            np.maximum(v[:, :, 1::2, 0 : w - 1 : 2], v[:, :, 1::2, 1::2]),
        )
    return out


def maxpool2x2_packed(words) -> np.ndarray:
    """2x2 max pooling on packed NHWC words: the max of +-1 values is the OR of their bits."""
    w = np.asarray(words)
    if w.dtype not in (np.uint32, np.uint64) or w.ndim != 4:
        raise NumericsError(
            f"packed maxpool input must be uint32/uint64 [N, H, W, words], got {w.dtype} {w.shape}"
        )
    n, h, wd, nw = w.shape
    if h < 2 or wd < 2:
        raise NumericsError(f"2x2 max pooling needs at least 2x2 pixels, got {h}x{wd}")
    w = w[:, : h // 2 * 2, : wd // 2 * 2]
    return np.bitwise_or.reduce(np.bitwise_or.reduce(w.reshape(n, h // 2, 2, wd // 2, 2, nw), axis=4), axis=2)


def step(x, threshold, direction) -> np.ndarray:
    """Per-channel threshold on integers [N, C, ...] -> +-1 int8 of the same shape.

    out = +1 where (direction = +1 and x >= threshold) or (direction = -1 and x <= threshold),
    else -1. Channel axis is 1.
    """
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
    up = d == 1
    out = np.empty(a.shape, dtype=np.int8)
    per_image = max(1, a[:1].size) * 8  # pragma: no mutate (chunk size)
    for lo, hi in _chunks(a.shape[0], per_image):
        # compared as they are: numpy 2 compares uint64 with int64 exactly (a uint64 at or
        # above 2^63 is above every threshold; cast to int64 it would read as negative)
        v = a[lo:hi]
        on = np.where(up, v >= t, v <= t)
        out[lo:hi] = np.where(on, np.int8(1), np.int8(-1))
    return out


def flatten(x) -> np.ndarray:
    """[N, C, H, W] -> [N, C*H*W] in NCHW order (c * H * W + y * W + x)."""
    a = np.asarray(x)
    if a.ndim < 2:
        raise NumericsError(f"flatten input must be [N, ...], got shape {a.shape}")
    return a.reshape(a.shape[0], -1)  # pragma: no mutate (numpy reads -2 as -1 too)


def bin_dense(x, w, bias) -> np.ndarray:
    """Binary fully connected layer: +-1 input [N, K], +-1 weights [F, K], integer bias [F]
    -> int32 [N, F]."""
    a = pm1_array(x, "dense input", ndim=2)
    wt = pm1_array(w, "dense weights", ndim=2)
    if wt.shape[1] != a.shape[1]:
        raise NumericsError(f"dense weights expect {wt.shape[1]} inputs, got {a.shape[1]}")
    b = int_array(bias, "dense bias", ndim=1)
    check_shape(b, "dense bias", (wt.shape[0],))
    n, k = a.shape
    ft = _exact_dtype(k)  # pragma: no mutate (dtype)  (+-1 products: partial sums at most K)
    # `pragma: no mutate`: the chunk size and the float dtype of the exact product change memory
    # and speed only (docs/verification.md, mutation testing)
    wmat = wt.T.astype(ft)  # pragma: no mutate (dtype)
    out = np.empty((n, wt.shape[0]), dtype=np.int32)
    if not out.size:  # no image or no filter: nothing to compute or to range-check
        return out
    lo_all, hi_all = math.inf, -math.inf  # the real extremes, even all beyond int32
    for lo, hi in _chunks(n, k * 8):  # pragma: no mutate (chunk)
        res = (a[lo:hi].astype(ft) @ wmat).astype(np.int64) + b.astype(np.int64)  # pragma: no mutate (dtype)
        lo_all, hi_all = min(lo_all, int(res.min())), max(hi_all, int(res.max()))
        out[lo:hi] = res
    fit_int32([lo_all, hi_all], "dense output")
    return out


def argmax(scores) -> np.ndarray:
    """Index of the largest score per row [N, classes] (the first on ties)."""
    s = int_array(scores, "scores", ndim=2)
    return np.argmax(s, axis=1)


# ----------------------------------------------------------------------------------------------
# Deriving step parameters
# ----------------------------------------------------------------------------------------------
def step_from_table(lo: int, on, name: str = "step") -> tuple[int, int]:
    """(threshold, direction) of a step whose output for x = lo, lo+1, ... is the bool table
    `on`. The table must be monotone (a batch norm followed by a comparison always is);
    a non-monotone one raises, naming the first place it turns."""
    on = np.asarray(on, dtype=bool)
    if on.ndim != 1 or on.size == 0:
        raise NumericsError(f"{name}: the table must be a non-empty 1-D bool array")
    d = np.diff(on.astype(np.int8))  # pragma: no mutate (dtype: diff of 0/1 as int8 or float)
    if (d > 0).any() and (d < 0).any():
        turn = int(np.flatnonzero(d)[1]) + lo + 1
        raise NumericsError(f"{name}: output is not monotone in the input (turns at x={turn})")
    if (d < 0).any():  # non-increasing: on for x <= the last True
        return int(lo + np.flatnonzero(on)[-1]), -1
    if on.any():
        return int(lo + np.flatnonzero(on)[0]), 1
    return int(lo + on.size), 1  # never on inside the range


def bn_step_params(
    gamma, beta, mean, var, eps: float, lo: int, hi: int, strict: bool = False, dtype=np.float64
) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (threshold, direction) equal to ``batchnorm(x) >= 0`` (``> 0`` if `strict`)
    evaluated in `dtype` for every integer x in [lo, hi]. Exact by construction: the step is
    read off the evaluated table, so float rounding near the threshold is reproduced."""
    g, b, m, v = (np.asarray(a, dtype=dtype).ravel() for a in (gamma, beta, mean, var))
    if hi < lo:
        raise NumericsError(f"empty input range {lo}..{hi}")
    x = np.arange(lo, hi + 1, dtype=dtype)
    thr = np.empty(g.size, dtype=np.int64)
    direction = np.empty(g.size, dtype=np.int8)
    for c in range(g.size):
        y = (x - m[c]) / np.sqrt(v[c] + dtype(eps)) * g[c] + b[c]
        # the name is for step_from_table's error, which a batch norm (monotone) cannot raise
        on = y > 0 if strict else y >= 0
        thr[c], direction[c] = step_from_table(lo, on, f"channel {c}")  # pragma: no mutate (name)
    return thr, direction
