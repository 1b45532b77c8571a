"""Integer-exact numerics of the Selector-Accumulator (SAC) systolic array.

Conventions (docs/conventions.md is the prose version; tests/test_sac_numerics.py pins them):

* Weights are zero or +-2^e with e in a window [emin, emax] (default 2^-6 .. 2^0). Their integer
  form is ``w_int = sign * 2**(e - emin)``, i.e. ``sign * 2**(e + 6)`` by default, so the
  accumulator holds values in units of 2^emin.
* Packed cell byte ``[index:3][sign:1][exp:4]``: index of the channel inside its column group in
  bits 7..5, sign in bit 4 (1 = positive), exponent code in bits 3..0 with code 1 = 2^emin ...
  code 7 = 2^(emin+6); code 0 = zero weight. Codes 8..15 are reserved: encoders refuse them and
  the hardware gates the cell (reads them as a zero weight), see :func:`cell_weight`.
* Data are uint8; accumulators are 32-bit two's complement and wrap modulo 2^32.
* Output modes: ReLU & quantize ``clip(acc >> shift, 0, 255)`` with an arithmetic shift
  (shift = -emin = 6); binary ``acc >= 0``; raw int32.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from models.checks import INT32_MAX, INT32_MIN, NumericsError, check_shape, int_array, wrap_int32

EMIN = -6  # smallest representable weight 2^EMIN
EMAX = 0  # largest representable weight 2^EMAX
MAX_CODE = 7  # the array has 7 register-chain taps: exponent codes 1..7
MAX_GROUP = 8  # 3-bit channel index: up to 8 channels combined per column
DATA_BITS = 8
ACC_BITS = 32
QUANT_SHIFT = -EMIN  # ReLU & quantize drops the 6 fraction bits of the accumulator


class OutputMode(IntEnum):
    """What the array writes for each row result (values are the ISA encoding)."""

    RELU_QUANT = 0  # clip(acc >> 6, 0, 255) -> uint8
    BINARY = 1  # acc >= 0 -> uint8 0/1
    RAW = 2  # int32 accumulator (partial sums, final scores)
    PIXEL_SUM = 3  # raw results summed over all pixels by the output accumulator


def _check_window(emin: int, emax: int) -> None:
    if emax < emin or emax - emin + 1 > MAX_CODE:
        raise NumericsError(
            f"exponent window 2^{emin}..2^{emax} must hold 1..{MAX_CODE} "
            f"exponents (the array has {MAX_CODE} taps)"
        )


# ----------------------------------------------------------------------------------------------
# Power-of-two quantization of float weights
# ----------------------------------------------------------------------------------------------
@dataclass
class Pow2Weights:
    """Result of :func:`quantize_pow2`. ``w_int`` is the integer form used everywhere else."""

    w_int: np.ndarray  # int32, sign * 2**(e - emin), 0 for zero weights
    emin: int
    emax: int
    n_below: int  # nonzero inputs that fell below the window (became 0)
    n_above: int  # inputs above the window, handled by `overflow`
    overflow: str

    @property
    def values(self) -> np.ndarray:
        """The real value each quantized weight stands for (float64, exact)."""
        return self.w_int.astype(np.float64) * 2.0**self.emin


def quantize_pow2(w, emin: int = EMIN, emax: int = EMAX, overflow: str = "error") -> Pow2Weights:
    """Quantize float weights to zero or +-2^e, e in [emin, emax].

    Rounding is to the nearest exponent in the log domain, e = floor(log2|w| + 1/2), so the
    boundary between 2^e and 2^(e+1) is 2^(e+1/2). Weights whose rounded exponent is below emin
    become zero (counted in ``n_below``). Weights whose exponent is above emax are out of the
    window: ``overflow="error"`` (default) raises, ``"saturate"`` clips them to +-2^emax and
    ``"zero"`` flushes them to 0; both are counted in ``n_above``, never silent.
    """
    _check_window(emin, emax)
    if overflow not in ("error", "saturate", "zero"):
        raise NumericsError(f"overflow policy must be 'error', 'saturate' or 'zero', got {overflow!r}")
    a = np.asarray(w)
    if not np.issubdtype(a.dtype, np.floating) and not np.issubdtype(a.dtype, np.integer):
        raise NumericsError(f"weights must be numeric, got dtype {a.dtype}")
    a = a.astype(np.float64)  # pragma: no mutate (astype(None) is float64 too)
    if not np.all(np.isfinite(a)):
        raise NumericsError("weights contain NaN or infinity")
    mag = np.abs(a)
    nz = mag > 0
    e = np.zeros(a.shape, dtype=np.int64)  # zero weights: never read (masked by nz)
    e[nz] = np.floor(np.log2(mag[nz]) + 0.5)  # integral floats, stored as int64
    above = nz & (e > emax)
    below = nz & (e < emin)
    n_above = int(above.sum())
    if n_above and overflow == "error":
        idx = tuple(int(i) for i in np.argwhere(above)[0])
        raise NumericsError(
            f"{n_above} weight(s) above the window 2^{emin}..2^{emax}, first "
            f"{a[idx]!r} at index {idx}; pass overflow='saturate' or 'zero'"
        )
    keep = nz & ~below & (~above | (overflow == "saturate"))
    # the lower bound only keeps the shifts of masked-out weights (where() drops them) >= 0
    e = np.clip(e, emin, emax)  # pragma: no mutate (lower bound never reaches a result)
    w_int = np.where(keep, np.sign(a).astype(np.int64) << (e - emin), 0)
    return Pow2Weights(w_int.astype(np.int32), emin, emax, int(below.sum()), n_above, overflow)


def int_to_sign_code(w_int, emin: int = EMIN, emax: int = EMAX, name: str = "w_int"):
    """Split integer weights into (sign bit, exponent code); refuse non-powers of two."""
    _check_window(emin, emax)
    w = int_array(w_int, name)
    mag = np.abs(w.astype(np.int64))
    limit = 1 << (emax - emin)
    is_pow2 = (mag & (mag - 1)) == 0
    bad = (mag > limit) | ~is_pow2
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise NumericsError(
            f"{name}[{', '.join(map(str, idx))}] = {int(w[idx])} is not 0 or "
            f"+-2^k with 0 <= k <= {emax - emin}"
        )
    code = np.zeros(w.shape, dtype=np.uint8)
    nz = mag > 0
    # log2 of an exact power of two is exact in float64 (stored into the uint8 array as it is)
    code[nz] = np.log2(mag[nz]) + 1
    sign = (w > 0).astype(np.uint8)
    return sign, code


# ----------------------------------------------------------------------------------------------
# Packed cell byte
# ----------------------------------------------------------------------------------------------
def encode_byte(index, sign, code):
    """Pack (index, sign, exponent code) into cell bytes; zero weights must have code 0."""
    index = int_array(index, "index", lo=0, hi=MAX_GROUP - 1)
    sign = int_array(sign, "sign", lo=0, hi=1)
    code = int_array(code, "exponent code", lo=0, hi=MAX_CODE)
    return ((index.astype(np.uint8) << 5) | (sign.astype(np.uint8) << 4) | code.astype(np.uint8)).astype(
        np.uint8
    )


def decode_byte(byte):
    """Split cell bytes into (index, sign, code) without judging them."""
    b = int_array(byte, "packed byte", lo=0, hi=255).astype(np.uint8)
    return (b >> 5) & 7, (b >> 4) & 1, b & 15


def cell_weight(byte, emin: int = EMIN):
    """The integer weight a SAC cell applies for a packed byte, for all 256 bytes.

    This is the hardware's reading: code 0 and the reserved codes 8..15 gate the cell (weight
    0); codes 1..7 give +-2**(code - 1) with sign bit 1 = positive.
    """
    _, sign, code = decode_byte(byte)
    valid = (code >= 1) & (code <= MAX_CODE)
    # code 0's shift count (masked by `valid`) kept >= 0
    mag = np.where(valid, np.left_shift(1, np.maximum(code.astype(np.int64) - 1, 0)), 0)
    return np.where(sign == 1, mag, -mag).astype(np.int32)


# ----------------------------------------------------------------------------------------------
# Column combining
# ----------------------------------------------------------------------------------------------
@dataclass
class CombinedWeights:
    """A dense N x K power-of-two weight matrix packed into N x ceil(K/G) cell bytes."""

    packed: np.ndarray  # uint8 [N, ceil(K / group)]
    group: int
    in_channels: int
    n_dropped: int = 0  # nonzeros removed by policy="keep_largest"

    @property
    def out_channels(self) -> int:
        return self.packed.shape[0]


def _check_group(group: int) -> int:
    if not isinstance(group, (int, np.integer)) or not 1 <= group <= MAX_GROUP:
        raise NumericsError(f"group size must be an integer in 1..{MAX_GROUP}, got {group!r}")
    return int(group)


def combine_columns(
    w_int, group: int, policy: str = "error", emin: int = EMIN, emax: int = EMAX
) -> CombinedWeights:
    """Column-combine integer power-of-two weights [N, K] into packed bytes [N, ceil(K/G)].

    Each group of G consecutive input channels becomes one array column; a filter (row) may keep
    at most one nonzero weight per group. With ``policy="error"`` a group holding more raises,
    naming the row and the group; ``policy="keep_largest"`` keeps the largest magnitude (the
    lowest channel on ties) and counts the rest in ``n_dropped``.
    """
    group = _check_group(group)
    if policy not in ("error", "keep_largest"):
        raise NumericsError(f"policy must be 'error' or 'keep_largest', got {policy!r}")
    w = int_array(w_int, "w_int", ndim=2)
    sign, code = int_to_sign_code(w, emin, emax)
    n, k = w.shape
    kc = -(-k // group)
    pad = kc * group - k
    # |w| <= 2^(emax - emin) here (int_to_sign_code refused the rest): abs cannot overflow w's dtype
    mag = np.pad(np.abs(w), ((0, 0), (0, pad))).reshape(n, kc, group)
    nnz = (mag > 0).sum(axis=2)
    crowded = np.argwhere(nnz > 1)
    n_dropped = int((nnz[nnz > 1] - 1).sum())
    if crowded.size and policy == "error":
        r, g = (int(v) for v in crowded[0])
        chans = [int(c) + g * group for c in np.flatnonzero(mag[r, g])]
        raise NumericsError(
            f"row {r}, group {g} (channels {g * group}..{min(k, (g + 1) * group) - 1}) "
            f"holds {int(nnz[r, g])} nonzero weights at channels {chans}; column "
            f"combining with G={group} allows one (use policy='keep_largest')"
        )
    index = np.argmax(mag, axis=2)  # first maximum: lowest channel on ties
    take = lambda a: np.take_along_axis(  # noqa: E731
        np.pad(a, ((0, 0), (0, pad))).reshape(n, kc, group), index[..., None], axis=2
    )[..., 0]
    sel_code = take(code)
    sel_sign = take(sign)
    index = np.where(sel_code == 0, 0, index)  # canonical zero byte 0x00
    sel_sign = np.where(sel_code == 0, 0, sel_sign)
    packed = encode_byte(index, sel_sign, sel_code)
    return CombinedWeights(packed, group, k, n_dropped)


def decode_packed(packed, group: int, in_channels: int, emin: int = EMIN) -> np.ndarray:
    """Expand packed cell bytes [N, Kc] back to the dense integer weights [N, K].

    Strict: reserved exponent codes, an index that points past the group or past the last
    channel, or a column count that does not match ``in_channels`` raise an error naming the
    row and column.
    """
    group = _check_group(group)
    p = int_array(packed, "packed weights", ndim=2, lo=0, hi=255).astype(np.uint8)
    n, kc = p.shape
    if kc != -(-in_channels // group):
        raise NumericsError(
            f"packed weights have {kc} columns; {in_channels} channels in "
            f"groups of {group} need {-(-in_channels // group)}"
        )
    index, sign, code = decode_byte(p)
    chan = np.arange(kc)[None, :] * group + index
    bad = (code > MAX_CODE) | ((code > 0) & ((index >= group) | (chan >= in_channels)))
    if bad.any():
        r, c = (int(v) for v in np.argwhere(bad)[0])
        raise NumericsError(
            f"packed byte 0x{int(p[r, c]):02x} at row {r}, column {c} is invalid "
            f"for group size {group} and {in_channels} channels (index "
            f"{int(index[r, c])}, exponent code {int(code[r, c])})"
        )
    dense = np.zeros((n, kc * group), dtype=np.int32)
    rows, cols = np.nonzero(code)
    dense[rows, chan[rows, cols]] = cell_weight(p[rows, cols])  # (the weight is integer: no emin)
    return dense[:, :in_channels]


# ----------------------------------------------------------------------------------------------
# The array: matrix product, output modes, activity
# ----------------------------------------------------------------------------------------------
def array_weights(cells, group: int, emin: int = EMIN) -> np.ndarray:
    """Dense integer weights [N, Kc*G] that a grid of cell bytes [N, Kc] applies, read the way
    the hardware reads them: reserved exponent codes and indices >= G select nothing (0)."""
    group = _check_group(group)
    p = int_array(cells, "cell bytes", ndim=2, lo=0, hi=255).astype(np.uint8)
    n, kc = p.shape
    index, _, _ = decode_byte(p)
    w = cell_weight(p)
    w = np.where(index < group, w, 0)
    dense = np.zeros((n, kc, group), dtype=np.int32)
    np.put_along_axis(dense, np.minimum(index, group - 1)[..., None].astype(np.int64), w[..., None], axis=2)
    return dense.reshape(n, kc * group)


def dense_matmul(dense, data, init) -> np.ndarray:
    """int32 acc[..., n, p] = init + sum_k dense[n, k] * data[..., k, p], wrapping mod 2^32.

    ``data`` is uint8 [..., K, P] (channels x pixels); ``init`` is a bias [N] added to every
    pixel or per-pixel partial sums [..., N, P].
    """
    w = int_array(dense, "weights", ndim=2, lo=-(1 << (MAX_CODE - 1)), hi=1 << (MAX_CODE - 1))
    x = int_array(data, "data", lo=0, hi=255)
    if x.ndim < 2 or x.shape[-2] != w.shape[1]:
        raise NumericsError(f"data must have shape [..., {w.shape[1]}, P], got {x.shape}")
    b = np.asarray(int_array(init, "bias/init", lo=INT32_MIN, hi=INT32_MAX), dtype=np.int32)
    if b.ndim == 1:
        check_shape(b, "bias", (w.shape[0],))
        b = b[:, None]
    # Exact in floating point: |w| <= 64 and x <= 255, so every partial sum is at most
    # 64 * 255 * K; float32 holds that exactly below 2^24 (K up to 1028), float64 below 2^53
    # (any K below 2^38). float32 moves half the bytes.
    # (`pragma: no mutate`: a stricter bound or a wider float only moves exact work to float64;
    # the looser ones are killed by tests/test_numerics_contracts.py before the pragma hid them)
    exact32 = w.shape[1] * 255 * (1 << (MAX_CODE - 1)) < (1 << 24)  # pragma: no mutate (dtype)
    ft = np.float32 if exact32 else np.float64  # pragma: no mutate (dtype)
    acc = np.matmul(w.astype(ft), x.astype(ft))  # pragma: no mutate (dtype)
    # the sum wraps mod 2^32: add the two's-complement bit patterns as uint32, i.e. the low 32
    # bits of the exact product (below 2^24 it fits int32 as it is)
    if exact32:
        low = acc.astype(np.int32).view(np.uint32)
    else:
        low = (acc.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32)
    try:
        total = low + b.view(np.uint32)  # uint32 + uint32: wraps mod 2^32
    except ValueError:
        raise NumericsError(f"init shape {b.shape} does not match result shape {acc.shape}") from None
    return total.view(np.int32)


def sac_matmul(weights: CombinedWeights, data, init) -> np.ndarray:
    """What the array computes for a column-combined layer: see :func:`dense_matmul`."""
    return dense_matmul(decode_packed(weights.packed, weights.group, weights.in_channels), data, init)


def cell_step(byte, data, psum_in, emin: int = EMIN) -> np.ndarray:
    """One SAC cell on one pixel: psum_in + cell_weight(byte) * data, wrapped to int32."""
    w = cell_weight(byte)
    x = int_array(data, "data", lo=0, hi=255)
    s = int_array(psum_in, "psum", lo=INT32_MIN, hi=INT32_MAX)
    # in int64; a mutant that computes in float64 is equivalent (exact below 2^53)
    total = s.astype(np.int64) + w.astype(np.int64) * x.astype(np.int64)  # pragma: no mutate (dtype)
    return wrap_int32(total)


def mac_cell_step(weight, data, psum_in) -> np.ndarray:
    """The 8-bit MAC baseline cell on one pixel: psum_in + int8 weight * uint8 data (int32 wrap)."""
    w = int_array(weight, "MAC weight", lo=-128, hi=127)
    x = int_array(data, "data", lo=0, hi=255)
    s = int_array(psum_in, "psum", lo=INT32_MIN, hi=INT32_MAX)
    # in int64; a mutant that computes in float64 is equivalent (exact below 2^53)
    total = s.astype(np.int64) + w.astype(np.int64) * x.astype(np.int64)  # pragma: no mutate (dtype)
    return wrap_int32(total)


def relu_quant(acc, shift: int = QUANT_SHIFT) -> np.ndarray:
    """ReLU & quantize: clip(acc >> shift, 0, 255) with an arithmetic shift, as uint8."""
    a = int_array(acc, "acc", lo=INT32_MIN, hi=INT32_MAX)
    return np.clip(a >> shift, 0, 255).astype(np.uint8)  # >> is arithmetic on signed ints


def binarize(acc) -> np.ndarray:
    """Binary output mode: 1 where acc >= 0, else 0 (uint8)."""
    a = int_array(acc, "acc", lo=INT32_MIN, hi=INT32_MAX)
    return (a >= 0).astype(np.uint8)


def pixel_sum(acc) -> np.ndarray:
    """Output accumulator: sum raw int32 results over the pixel axis (last), wrapping at 32 bits."""
    a = int_array(acc, "acc", lo=INT32_MIN, hi=INT32_MAX).astype(np.int64)
    return wrap_int32(a.sum(axis=-1))


def apply_mode(acc, mode: OutputMode) -> np.ndarray:
    """Apply an output mode to int32 accumulators [..., N, P]."""
    mode = OutputMode(mode)
    if mode == OutputMode.RELU_QUANT:
        return relu_quant(acc)
    if mode == OutputMode.BINARY:
        return binarize(acc)
    if mode == OutputMode.RAW:
        return np.asarray(acc, dtype=np.int32)
    return pixel_sum(acc)


def count_active_per_image(dense, data) -> np.ndarray:
    """Golden activity count per image: (cell, pixel) pairs whose weight and selected datum are
    both nonzero, for data [..., K, P] (leading axes flattened into images). Zero-skipping
    gates every other pair; a cell's `active` pulses once per such pair, so the RTL's activity
    counter is held to this number. ``dense`` as from :func:`array_weights`."""
    w = int_array(dense, "weights", ndim=2)
    x = int_array(data, "data", lo=0, hi=255)
    if x.ndim < 2 or x.shape[-2] != w.shape[1]:
        raise NumericsError(f"data must have shape [..., {w.shape[1]}, P], got {x.shape}")
    # sum over cells n, channels k, pixels p of [w(n,k) != 0] [x(b,k,p) != 0], summed over n
    # and p first: (nonzero data per channel) . (nonzero weights per channel)
    x3 = x.reshape(-1, x.shape[-2], x.shape[-1])  # pragma: no mutate (numpy reads -2 as -1 too)
    per_channel = np.count_nonzero(x3, axis=2).astype(np.int64)  # [B, K]
    return per_channel @ np.count_nonzero(w, axis=0).astype(np.int64)


def count_active(dense, data) -> int:
    """Total of :func:`count_active_per_image` over all images."""
    return int(count_active_per_image(dense, data).sum())


# ----------------------------------------------------------------------------------------------
# Data-path transforms: channel shift, input reshaping
# ----------------------------------------------------------------------------------------------
SHIFT_IDENTITY = 4


def shift_offset(direction: int) -> tuple[int, int]:
    """Source offset (dy, dx) of a shift direction 0..8: out[y, x] = in[y + dy, x + dx]."""
    return direction // 3 - 1, direction % 3 - 1


def channel_shift(x, directions, fill: int = 0) -> np.ndarray:
    """Move every channel by one pixel in one of 9 directions, filling the vacated border.

    ``x`` is [..., C, H, W]; ``directions`` [C] holds 0..8 where direction d reads the source
    pixel at offset (d // 3 - 1, d % 3 - 1); 4 is the identity. Pixels whose source lies outside
    the frame get ``fill`` (0, i.e. zero fill, for SAC networks).
    """
    a = int_array(x, "data", lo=0, hi=255)
    if a.ndim < 3:
        raise NumericsError(f"data must have shape [..., C, H, W], got {a.shape}")
    d = int_array(directions, "shift directions", ndim=1, lo=0, hi=8)
    c, h, w = a.shape[-3:]
    if d.shape[0] != c:
        raise NumericsError(f"{d.shape[0]} shift directions for {c} channels")
    int_array(fill, "fill", lo=0, hi=255)
    # (a mutant that pads more after the last channel, row or column is equivalent: never read)
    padded = np.pad(
        a,
        [(0, 0)] * (a.ndim - 3) + [(0, 0), (1, 1), (1, 1)],  # pragma: no mutate (pad)
        constant_values=fill,
    )
    out = np.empty_like(a)
    for ch in range(c):
        dy, dx = shift_offset(int(d[ch]))
        out[..., ch, :, :] = padded[..., ch, 1 + dy : 1 + dy + h, 1 + dx : 1 + dx + w]
    return out


def space_to_depth(x, factor: int) -> np.ndarray:
    """Input reshaping [..., C, H, W] -> [..., C*s*s, H/s, W/s] in ONNX SpaceToDepth order:
    output channel (dy * s + dx) * C + c holds input pixel (y*s + dy, x*s + dx) of channel c."""
    a = np.asarray(x)
    if not isinstance(factor, (int, np.integer)) or factor < 1:
        raise NumericsError(f"space-to-depth factor must be a positive integer, got {factor!r}")
    if a.ndim < 3:
        raise NumericsError(f"data must have shape [..., C, H, W], got {a.shape}")
    c, h, w = a.shape[-3:]
    if h % factor or w % factor:
        raise NumericsError(f"space-to-depth factor {factor} does not divide {h}x{w}")
    lead = a.shape[:-3]
    t = a.reshape(*lead, c, h // factor, factor, w // factor, factor)
    n = len(lead)
    t = t.transpose(*range(n), n + 2, n + 4, n, n + 1, n + 3)
    return t.reshape(*lead, c * factor * factor, h // factor, w // factor)


def table_directions(entries) -> np.ndarray:
    """Shift directions as the hardware reads 4-bit shift-table entries: 0..8 as they are,
    the unused codes 9..15 as the identity (4)."""
    e = int_array(entries, "shift-table entries", lo=0, hi=15)
    return np.where(e > 8, SHIFT_IDENTITY, e).astype(np.uint8)
