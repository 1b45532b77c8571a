"""The input contract of models/numerics/: every public function that checks its input refuses
bad input with a NumericsError whose one-line message names the argument and the bound (the
message is part of the user-facing contract, so it is compared exactly), accepts the bounds
themselves, and returns the dtypes and shapes its docstring promises.

Bounds are tried with int64 arrays: int_array skips a bound that the dtype already guarantees
(a uint8 cannot be 256), so only a wider dtype shows which bound is enforced. `make mutants
SCOPE=numerics` found these gaps; docs/verification.md lists what is left.
"""

import warnings

import numpy as np
import pytest

from models.checks import INT32_MAX, INT32_MIN, NumericsError
from models.numerics import bnn, sac

SEED = 20261202


def i64(*values):
    return np.array(values, dtype=np.int64)


def refused(fn, message, exc=NumericsError):
    with pytest.raises(exc) as info:
        fn()
    assert type(info.value) is exc
    assert str(info.value) == message


def above(name, value, hi):
    return f"{name} has value {value} above the allowed maximum {hi}"


def below(name, value, lo):
    return f"{name} has value {value} below the allowed minimum {lo}"


def window(emin, emax):
    return f"exponent window 2^{emin}..2^{emax} must hold 1..7 exponents (the array has 7 taps)"


def not_pow2(name, idx, value, kmax=6):
    return f"{name}[{idx}] = {value} is not 0 or +-2^k with 0 <= k <= {kmax}"


def group_msg(got):
    return f"group size must be an integer in 1..8, got {got}"


U8 = np.uint8
CW = np.array([[0x11, 0x00]], dtype=U8)  # one row, two columns of a group-2 layer
X2 = np.ones((2, 3), dtype=U8)  # data for K = 2 channels, 3 pixels
BIN = -np.ones((1, 2, 3, 3), dtype=np.int8)  # a +-1 activation [N, C, H, W]
WB = np.ones((1, 2, 3, 3), dtype=np.int8)  # +-1 conv weights [F, C, 3, 3]
W12 = i64(1, 1).reshape(1, 2)  # integer weights [N = 1, K = 2]
P2 = np.ones((1, 2), dtype=np.int8)  # +-1 dense input / weights [1, 2]

# (id, call, exact message); every entry is one bad argument of one public function
SAC_BAD = [
    # quantize_pow2 / the exponent window
    ("quantize window reversed", lambda: sac.quantize_pow2([1.0], emin=0, emax=-1), window(0, -1)),
    ("quantize window of 8", lambda: sac.quantize_pow2([1.0], emin=-7, emax=0), window(-7, 0)),
    (
        "quantize policy",
        lambda: sac.quantize_pow2([1.0], overflow="clip"),
        "overflow policy must be 'error', 'saturate' or 'zero', got 'clip'",
    ),
    (
        "quantize strings",
        lambda: sac.quantize_pow2(np.array(["a"])),
        "weights must be numeric, got dtype <U1",
    ),
    (
        "quantize bools",
        lambda: sac.quantize_pow2(np.array([True])),
        "weights must be numeric, got dtype bool",
    ),
    ("quantize NaN", lambda: sac.quantize_pow2([0.5, np.nan]), "weights contain NaN or infinity"),
    ("quantize inf", lambda: sac.quantize_pow2([-np.inf]), "weights contain NaN or infinity"),
    (
        "quantize above",
        lambda: sac.quantize_pow2(np.array([[1.0, 0.5], [3.0, -4.0]])),
        "2 weight(s) above the window 2^-6..2^0, first np.float64(3.0) at index (1, 0); "
        "pass overflow='saturate' or 'zero'",
    ),
    (
        "quantize above custom window",
        lambda: sac.quantize_pow2([0.5, 1.0], emin=-3, emax=-1),
        "1 weight(s) above the window 2^-3..2^-1, first np.float64(1.0) at index (1,); "
        "pass overflow='saturate' or 'zero'",
    ),
    # int_to_sign_code
    (
        "sign_code float",
        lambda: sac.int_to_sign_code([1.0]),
        "w_int must be an integer array, got dtype float64",
    ),
    ("sign_code non-power", lambda: sac.int_to_sign_code([4, 3]), not_pow2("w_int", "1", 3)),
    ("sign_code 128", lambda: sac.int_to_sign_code(i64(64, -128)), not_pow2("w_int", "1", -128)),
    (
        "sign_code 2-D index",
        lambda: sac.int_to_sign_code(i64(1, 2, 6, 0).reshape(2, 2)),
        not_pow2("w_int", "1, 0", 6),
    ),
    ("sign_code named", lambda: sac.int_to_sign_code([5], name="conv1"), not_pow2("conv1", "0", 5)),
    ("sign_code window", lambda: sac.int_to_sign_code([1], emin=1, emax=0), window(1, 0)),
    (
        "sign_code custom window",
        lambda: sac.int_to_sign_code([4, 8], emin=-2, emax=0),
        not_pow2("w_int", "1", 8, kmax=2),
    ),
    # encode_byte / decode_byte / cell_weight
    ("encode index low", lambda: sac.encode_byte(i64(-1), 0, 0), below("index", -1, 0)),
    ("encode index high", lambda: sac.encode_byte(i64(8), 0, 0), above("index", 8, 7)),
    ("encode sign low", lambda: sac.encode_byte(0, i64(-1), 0), below("sign", -1, 0)),
    ("encode sign high", lambda: sac.encode_byte(0, i64(2), 0), above("sign", 2, 1)),
    ("encode code low", lambda: sac.encode_byte(0, 0, i64(-1)), below("exponent code", -1, 0)),
    ("encode code high", lambda: sac.encode_byte(0, 0, i64(8)), above("exponent code", 8, 7)),
    ("encode float", lambda: sac.encode_byte(0.0, 0, 0), "index must be an integer array, got dtype float64"),
    ("decode_byte low", lambda: sac.decode_byte(i64(-1)), below("packed byte", -1, 0)),
    ("decode_byte high", lambda: sac.decode_byte(i64(256)), above("packed byte", 256, 255)),
    ("cell_weight high", lambda: sac.cell_weight(i64(3, 256)), above("packed byte", 256, 255)),
    # the group size
    ("combine group 0", lambda: sac.combine_columns(np.zeros((1, 2), dtype=int), 0), group_msg(0)),
    ("combine group 9", lambda: sac.combine_columns(np.zeros((1, 2), dtype=int), 9), group_msg(9)),
    ("combine group float", lambda: sac.combine_columns(np.zeros((1, 2), dtype=int), 2.0), group_msg("2.0")),
    ("combine group str", lambda: sac.combine_columns(np.zeros((1, 2), dtype=int), "2"), group_msg("'2'")),
    ("decode_packed group 9", lambda: sac.decode_packed(np.zeros((1, 1), dtype=U8), 9, 9), group_msg(9)),
    ("array_weights group 0", lambda: sac.array_weights(np.zeros((1, 1), dtype=U8), 0), group_msg(0)),
    # combine_columns
    (
        "combine policy",
        lambda: sac.combine_columns(np.zeros((1, 2), dtype=int), 2, policy="max"),
        "policy must be 'error' or 'keep_largest', got 'max'",
    ),
    (
        "combine 1-D",
        lambda: sac.combine_columns(i64(1, 0, 0), 2),
        "w_int must have 2 dimensions, got shape (3,)",
    ),
    (
        "combine float",
        lambda: sac.combine_columns(np.zeros((1, 2)), 2),
        "w_int must be an integer array, got dtype float64",
    ),
    (
        "combine non-power",
        lambda: sac.combine_columns(i64(0, 3).reshape(1, 2), 2),
        not_pow2("w_int", "0, 1", 3),
    ),
    (
        "combine window",
        lambda: sac.combine_columns(i64(4, 8).reshape(1, 2), 1, emin=-2, emax=0),
        not_pow2("w_int", "0, 1", 8, kmax=2),
    ),
    (
        "combine crowded",
        lambda: sac.combine_columns(
            i64(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, -2, 0, 0, 0, 0, 0, 0).reshape(3, 8), 4
        ),
        "row 2, group 0 (channels 0..3) holds 2 nonzero weights at channels [0, 1]; column "
        "combining with G=4 allows one (use policy='keep_largest')",
    ),
    (
        "combine crowded last partial group",
        lambda: sac.combine_columns(
            i64(1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 2).reshape(2, 11), 4
        ),
        "row 1, group 2 (channels 8..10) holds 2 nonzero weights at channels [9, 10]; column "
        "combining with G=4 allows one (use policy='keep_largest')",
    ),
    # decode_packed
    (
        "decode_packed 1-D",
        lambda: sac.decode_packed(np.zeros(2, dtype=U8), 2, 4),
        "packed weights must have 2 dimensions, got shape (2,)",
    ),
    (
        "decode_packed low",
        lambda: sac.decode_packed(i64(-1).reshape(1, 1), 2, 2),
        below("packed weights", -1, 0),
    ),
    (
        "decode_packed high",
        lambda: sac.decode_packed(i64(256).reshape(1, 1), 2, 2),
        above("packed weights", 256, 255),
    ),
    (
        "decode_packed columns",
        lambda: sac.decode_packed(np.zeros((1, 3), dtype=U8), 2, 8),
        "packed weights have 3 columns; 8 channels in groups of 2 need 4",
    ),
    (
        "decode_packed columns, partial group",
        lambda: sac.decode_packed(np.zeros((1, 2), dtype=U8), 4, 9),
        "packed weights have 2 columns; 9 channels in groups of 4 need 3",
    ),
    (
        "decode_packed reserved code",
        lambda: sac.decode_packed(np.array([[0x11, 0x00], [0x18, 0x00]], dtype=U8), 8, 9),
        "packed byte 0x18 at row 1, column 0 is invalid for group size 8 and 9 channels "
        "(index 0, exponent code 8)",
    ),
    (
        "decode_packed index == group",
        lambda: sac.decode_packed(np.array([[0x71, 0x00]], dtype=U8), 3, 6),
        "packed byte 0x71 at row 0, column 0 is invalid for group size 3 and 6 channels "
        "(index 3, exponent code 1)",
    ),
    (
        "decode_packed past the last channel",
        lambda: sac.decode_packed(np.array([[0x00, 0x31]], dtype=U8), 4, 5),
        "packed byte 0x31 at row 0, column 1 is invalid for group size 4 and 5 channels "
        "(index 1, exponent code 1)",
    ),
    # array_weights
    (
        "array_weights 1-D",
        lambda: sac.array_weights(np.zeros(2, dtype=U8), 2),
        "cell bytes must have 2 dimensions, got shape (2,)",
    ),
    ("array_weights low", lambda: sac.array_weights(i64(-1).reshape(1, 1), 2), below("cell bytes", -1, 0)),
    (
        "array_weights high",
        lambda: sac.array_weights(i64(256).reshape(1, 1), 2),
        above("cell bytes", 256, 255),
    ),
    # dense_matmul / sac_matmul
    (
        "matmul weights float",
        lambda: sac.dense_matmul(np.ones((1, 2)), X2, [0]),
        "weights must be an integer array, got dtype float64",
    ),
    (
        "matmul weights 1-D",
        lambda: sac.dense_matmul(i64(1, 1), X2, [0]),
        "weights must have 2 dimensions, got shape (2,)",
    ),
    (
        "matmul weights high",
        lambda: sac.dense_matmul(i64(64, 65).reshape(1, 2), X2, [0]),
        above("weights", 65, 64),
    ),
    (
        "matmul weights low",
        lambda: sac.dense_matmul(i64(-64, -65).reshape(1, 2), X2, [0]),
        below("weights", -65, -64),
    ),
    ("matmul data low", lambda: sac.dense_matmul(W12, i64(0, -1).reshape(2, 1), [0]), below("data", -1, 0)),
    (
        "matmul data high",
        lambda: sac.dense_matmul(W12, i64(255, 256).reshape(2, 1), [0]),
        above("data", 256, 255),
    ),
    (
        "matmul data 1-D",
        lambda: sac.dense_matmul(W12, np.ones(2, dtype=U8), [0]),
        "data must have shape [..., 2, P], got (2,)",
    ),
    (
        "matmul data channels",
        lambda: sac.dense_matmul(W12, np.ones((3, 1), dtype=U8), [0]),
        "data must have shape [..., 2, P], got (3, 1)",
    ),
    (
        "matmul init high",
        lambda: sac.dense_matmul(W12, X2, i64(INT32_MAX + 1)),
        above("bias/init", INT32_MAX + 1, INT32_MAX),
    ),
    (
        "matmul init low",
        lambda: sac.dense_matmul(W12, X2, i64(INT32_MIN - 1)),
        below("bias/init", INT32_MIN - 1, INT32_MIN),
    ),
    (
        "matmul init float",
        lambda: sac.dense_matmul(W12, X2, [0.5]),
        "bias/init must be an integer array, got dtype float64",
    ),
    ("matmul bias length", lambda: sac.dense_matmul(W12, X2, [0, 1]), "bias must have shape (1), got (2,)"),
    (
        "matmul init shape",
        lambda: sac.dense_matmul(W12, X2, np.zeros((1, 2), dtype=int)),
        "init shape (1, 2) does not match result shape (1, 3)",
    ),
    (
        "sac_matmul data high",
        lambda: sac.sac_matmul(sac.CombinedWeights(CW, 2, 4), i64(0, 0, 0, 256).reshape(4, 1), [0]),
        above("data", 256, 255),
    ),
    (
        "sac_matmul bad byte",
        lambda: sac.sac_matmul(
            sac.CombinedWeights(np.array([[0x1F]], dtype=U8), 2, 2), np.ones((2, 1), dtype=U8), [0]
        ),
        "packed byte 0x1f at row 0, column 0 is invalid for group size 2 and 2 channels "
        "(index 0, exponent code 15)",
    ),
    # the cells
    ("cell_step byte", lambda: sac.cell_step(i64(256), 0, 0), above("packed byte", 256, 255)),
    ("cell_step data low", lambda: sac.cell_step(0x11, i64(-1), 0), below("data", -1, 0)),
    ("cell_step data high", lambda: sac.cell_step(0x11, i64(256), 0), above("data", 256, 255)),
    (
        "cell_step psum high",
        lambda: sac.cell_step(0x11, 1, i64(INT32_MAX + 1)),
        above("psum", INT32_MAX + 1, INT32_MAX),
    ),
    (
        "cell_step psum low",
        lambda: sac.cell_step(0x11, 1, i64(INT32_MIN - 1)),
        below("psum", INT32_MIN - 1, INT32_MIN),
    ),
    ("mac weight high", lambda: sac.mac_cell_step(i64(128), 1, 0), above("MAC weight", 128, 127)),
    ("mac weight low", lambda: sac.mac_cell_step(i64(-129), 1, 0), below("MAC weight", -129, -128)),
    ("mac data low", lambda: sac.mac_cell_step(1, i64(-1), 0), below("data", -1, 0)),
    ("mac data high", lambda: sac.mac_cell_step(1, i64(256), 0), above("data", 256, 255)),
    (
        "mac psum high",
        lambda: sac.mac_cell_step(1, 1, i64(INT32_MAX + 1)),
        above("psum", INT32_MAX + 1, INT32_MAX),
    ),
    (
        "mac psum low",
        lambda: sac.mac_cell_step(1, 1, i64(INT32_MIN - 1)),
        below("psum", INT32_MIN - 1, INT32_MIN),
    ),
    # output modes
    ("relu_quant high", lambda: sac.relu_quant(i64(INT32_MAX + 1)), above("acc", INT32_MAX + 1, INT32_MAX)),
    ("relu_quant low", lambda: sac.relu_quant(i64(INT32_MIN - 1)), below("acc", INT32_MIN - 1, INT32_MIN)),
    ("relu_quant float", lambda: sac.relu_quant([0.5]), "acc must be an integer array, got dtype float64"),
    ("binarize high", lambda: sac.binarize(i64(INT32_MAX + 1)), above("acc", INT32_MAX + 1, INT32_MAX)),
    ("binarize low", lambda: sac.binarize(i64(INT32_MIN - 1)), below("acc", INT32_MIN - 1, INT32_MIN)),
    ("pixel_sum high", lambda: sac.pixel_sum(i64(INT32_MAX + 1)), above("acc", INT32_MAX + 1, INT32_MAX)),
    ("pixel_sum low", lambda: sac.pixel_sum(i64(INT32_MIN - 1)), below("acc", INT32_MIN - 1, INT32_MIN)),
    (
        "apply_mode relu high",
        lambda: sac.apply_mode(i64(INT32_MAX + 1), sac.OutputMode.RELU_QUANT),
        above("acc", INT32_MAX + 1, INT32_MAX),
    ),
    (
        "apply_mode pixel sum low",
        lambda: sac.apply_mode(i64(INT32_MIN - 1), sac.OutputMode.PIXEL_SUM),
        below("acc", INT32_MIN - 1, INT32_MIN),
    ),
    # activity
    (
        "count_active weights 1-D",
        lambda: sac.count_active(i64(1, 1), X2),
        "weights must have 2 dimensions, got shape (2,)",
    ),
    (
        "count_active data high",
        lambda: sac.count_active(W12, i64(0, 256).reshape(2, 1)),
        above("data", 256, 255),
    ),
    ("count_active data low", lambda: sac.count_active(W12, i64(0, -1).reshape(2, 1)), below("data", -1, 0)),
    (
        "count_active data 1-D",
        lambda: sac.count_active(W12, np.ones(2, dtype=U8)),
        "data must have shape [..., 2, P], got (2,)",
    ),
    (
        "count_active data channels",
        lambda: sac.count_active_per_image(i64(1, 1).reshape(1, 2), np.ones((2, 3, 1), dtype=U8)),
        "data must have shape [..., 2, P], got (2, 3, 1)",
    ),
    # channel shift, space to depth, shift table
    ("shift data high", lambda: sac.channel_shift(i64(256).reshape(1, 1, 1), [4]), above("data", 256, 255)),
    ("shift data low", lambda: sac.channel_shift(i64(-1).reshape(1, 1, 1), [4]), below("data", -1, 0)),
    (
        "shift data 2-D",
        lambda: sac.channel_shift(np.ones((3, 3), dtype=U8), [4]),
        "data must have shape [..., C, H, W], got (3, 3)",
    ),
    (
        "shift directions 2-D",
        lambda: sac.channel_shift(np.ones((1, 3, 3), dtype=U8), [[4]]),
        "shift directions must have 1 dimensions, got shape (1, 1)",
    ),
    (
        "shift direction low",
        lambda: sac.channel_shift(np.ones((1, 3, 3), dtype=U8), i64(-1)),
        below("shift directions", -1, 0),
    ),
    (
        "shift direction high",
        lambda: sac.channel_shift(np.ones((1, 3, 3), dtype=U8), i64(9)),
        above("shift directions", 9, 8),
    ),
    (
        "shift direction count",
        lambda: sac.channel_shift(np.ones((2, 3, 3), dtype=U8), [4]),
        "1 shift directions for 2 channels",
    ),
    (
        "shift fill high",
        lambda: sac.channel_shift(np.ones((1, 3, 3), dtype=U8), [4], fill=256),
        above("fill", 256, 255),
    ),
    (
        "shift fill low",
        lambda: sac.channel_shift(np.ones((1, 3, 3), dtype=U8), [4], fill=-1),
        below("fill", -1, 0),
    ),
    (
        "s2d factor 0",
        lambda: sac.space_to_depth(np.ones((1, 2, 2)), 0),
        "space-to-depth factor must be a positive integer, got 0",
    ),
    (
        "s2d factor float",
        lambda: sac.space_to_depth(np.ones((1, 2, 2)), 2.0),
        "space-to-depth factor must be a positive integer, got 2.0",
    ),
    (
        "s2d 2-D",
        lambda: sac.space_to_depth(np.ones((4, 4)), 2),
        "data must have shape [..., C, H, W], got (4, 4)",
    ),
    (
        "s2d width",
        lambda: sac.space_to_depth(np.ones((1, 4, 6)), 4),
        "space-to-depth factor 4 does not divide 4x6",
    ),
    (
        "s2d height",
        lambda: sac.space_to_depth(np.ones((1, 6, 4)), 4),
        "space-to-depth factor 4 does not divide 6x4",
    ),
    ("table entry high", lambda: sac.table_directions(i64(15, 16)), above("shift-table entries", 16, 15)),
    ("table entry low", lambda: sac.table_directions(i64(-1, 0)), below("shift-table entries", -1, 0)),
]


@pytest.mark.parametrize("call, message", [e[1:] for e in SAC_BAD], ids=[e[0] for e in SAC_BAD])
def test_sac_refuses_bad_input_naming_it(call, message):
    refused(call, message)


def test_apply_mode_refuses_unknown_mode():
    refused(lambda: sac.apply_mode(i64(0), 4), "4 is not a valid OutputMode", exc=ValueError)


BNN_BAD = [
    # packing
    (
        "pack word size",
        lambda: bnn.pack_bits(np.ones(3, dtype=np.int8), 16),
        "word size must be 32 or 64 bits, got 16",
    ),
    ("pack zero", lambda: bnn.pack_bits(i64(1, 0, -1)), "binary tensor must hold only -1 and +1, found 0"),
    ("pack two", lambda: bnn.pack_bits(i64(1, -1, 2)), "binary tensor must hold only -1 and +1, found 2"),
    (
        "pack float",
        lambda: bnn.pack_bits(np.ones(3)),
        "binary tensor must be an integer array, got dtype float64",
    ),
    ("pack scalar", lambda: bnn.pack_bits(np.int8(1)), "binary tensor must have at least one dimension"),
    (
        "unpack dtype",
        lambda: bnn.unpack_bits(np.zeros(1, dtype=np.int32), 5),
        "packed words must be uint32 or uint64, got dtype int32",
    ),
    (
        "unpack words",
        lambda: bnn.unpack_bits(np.zeros(2, dtype=np.uint32), 5),
        "5 channels need 1 words of 32 bits in the last axis, got shape (2,)",
    ),
    (
        "unpack words 64",
        lambda: bnn.unpack_bits(np.zeros((3, 1), dtype=np.uint64), 65),
        "65 channels need 2 words of 64 bits in the last axis, got shape (3, 1)",
    ),
    (
        "unpack scalar",
        lambda: bnn.unpack_bits(np.uint32(1), 1),
        "1 channels need 1 words of 32 bits in the last axis, got shape ()",
    ),
    (
        "unpack first padding bit",
        lambda: bnn.unpack_bits(np.array([0x20], dtype=np.uint32), 5),
        "padding bits past channel 5 are set in packed words",
    ),
    (
        "unpack last padding bit",
        lambda: bnn.unpack_bits(np.array([1 << 63], dtype=np.uint64), 63),
        "padding bits past channel 63 are set in packed words",
    ),
    (
        "pack_nchw 2-D",
        lambda: bnn.pack_nchw(np.ones((2, 2), dtype=np.int8)),
        "binary activation must have 4 dimensions, got shape (2, 2)",
    ),
    (
        "pack_nchw zero",
        lambda: bnn.pack_nchw(np.zeros((1, 1, 1, 1), dtype=np.int8)),
        "binary activation must hold only -1 and +1, found 0",
    ),
    ("pack_nchw word size", lambda: bnn.pack_nchw(BIN, 8), "word size must be 32 or 64 bits, got 8"),
    (
        "unpack_nhwc 2-D",
        lambda: bnn.unpack_nhwc(np.zeros((1, 1), dtype=np.uint32), 3),
        "packed activation must be [N, H, W, words], got shape (1, 1)",
    ),
    (
        "unpack_nhwc padding",
        lambda: bnn.unpack_nhwc(np.full((1, 1, 1, 1), 8, dtype=np.uint32), 3),
        "padding bits past channel 3 are set in packed words",
    ),
    # convolutions
    (
        "conv input 3-D",
        lambda: bnn.bin_conv3x3(BIN[0], WB, [0], 0),
        "binary conv input must have 4 dimensions, got shape (2, 3, 3)",
    ),
    (
        "conv input zero",
        lambda: bnn.bin_conv3x3(0 * BIN, WB, [0], 0),
        "binary conv input must hold only -1 and +1, found 0",
    ),
    (
        "conv weights 3-D",
        lambda: bnn.bin_conv3x3(BIN, WB[0], [0], 0),
        "conv weights must have 4 dimensions, got shape (2, 3, 3)",
    ),
    (
        "conv weights zero",
        lambda: bnn.bin_conv3x3(BIN, 0 * WB, [0], 0),
        "conv weights must hold only -1 and +1, found 0",
    ),
    (
        "conv weights channels",
        lambda: bnn.bin_conv3x3(BIN, np.ones((1, 3, 3, 3), dtype=np.int8), [0], 0),
        "conv weights must have shape [F, 2, 3, 3], got (1, 3, 3, 3)",
    ),
    (
        "conv weights kernel",
        lambda: bnn.bin_conv3x3(BIN, np.ones((1, 2, 2, 2), dtype=np.int8), [0], 0),
        "conv weights must have shape [F, 2, 3, 3], got (1, 2, 2, 2)",
    ),
    (
        "conv bias 2-D",
        lambda: bnn.bin_conv3x3(BIN, WB, [[0]], 0),
        "conv bias must have 1 dimensions, got shape (1, 1)",
    ),
    (
        "conv bias float",
        lambda: bnn.bin_conv3x3(BIN, WB, [0.5], 0),
        "conv bias must be an integer array, got dtype float64",
    ),
    (
        "conv bias length",
        lambda: bnn.bin_conv3x3(BIN, WB, [0, 1], 0),
        "conv bias must have shape (1), got (2,)",
    ),
    ("conv padding 2", lambda: bnn.bin_conv3x3(BIN, WB, [0], 2), "padding must be 0 or 1, got 2"),
    ("conv padding -1", lambda: bnn.bin_conv3x3(BIN, WB, [0], -1), "padding must be 0 or 1, got -1"),
    ("conv padding str", lambda: bnn.bin_conv3x3(BIN, WB, [0], "1"), "padding must be 0 or 1, got '1'"),
    (
        "conv too low",
        lambda: bnn.bin_conv3x3(-np.ones((1, 2, 2, 5), dtype=np.int8), WB, [0], 0),
        "a 3x3 convolution with padding 0 needs at least 3x3 pixels, got 2x5",
    ),
    (
        "conv too narrow",
        lambda: bnn.bin_conv3x3(-np.ones((1, 2, 5, 2), dtype=np.int8), WB, [0], 0),
        "a 3x3 convolution with padding 0 needs at least 3x3 pixels, got 5x2",
    ),
    (
        "conv padded empty",
        lambda: bnn.bin_conv3x3(np.ones((1, 2, 0, 3), dtype=np.int8), WB, [0], 1),
        "a 3x3 convolution with padding 1 needs at least 1x1 pixels, got 0x3",
    ),
    (
        "conv overflow high",
        lambda: bnn.bin_conv3x3(-BIN, np.ones((2, 2, 3, 3), dtype=np.int8), i64(0, INT32_MAX), 0),
        "convolution output overflows int32 (range 18..2147483665)",
    ),
    (
        "conv overflow low",
        lambda: bnn.bin_conv3x3(BIN, np.ones((2, 2, 3, 3), dtype=np.int8), i64(INT32_MIN, 18), 0),
        "convolution output overflows int32 (range -2147483666..0)",
    ),
    (
        "conv overflow all above",
        lambda: bnn.bin_conv3x3(-BIN, np.ones((2, 2, 3, 3), dtype=np.int8), i64(INT32_MAX, INT32_MAX), 0),
        "convolution output overflows int32 (range 2147483665..2147483665)",
    ),
    (
        "conv overflow all below",
        lambda: bnn.bin_conv3x3(BIN, np.ones((2, 2, 3, 3), dtype=np.int8), i64(INT32_MIN, INT32_MIN), 0),
        "convolution output overflows int32 (range -2147483666..-2147483666)",
    ),
    (
        "conv too large for float",
        lambda: bnn.bin_conv3x3(BIN, WB, i64(2**52 - 18), 0),
        "convolution input values are too large for an exact int sum",
    ),
    (
        "conv just exact, overflows",
        lambda: bnn.bin_conv3x3(-BIN, np.ones((2, 2, 3, 3), dtype=np.int8), i64(0, 2**52 - 19), 0),
        "convolution output overflows int32 (range 18..4503599627370495)",
    ),
    (
        "int conv high",
        lambda: bnn.int_conv3x3(i64(*[0] * 8, INT32_MAX + 1).reshape(1, 1, 3, 3), WB[:, :1], [0], 0),
        above("integer conv input", INT32_MAX + 1, INT32_MAX),
    ),
    (
        "int conv low",
        lambda: bnn.int_conv3x3(i64(*[0] * 8, INT32_MIN - 1).reshape(1, 1, 3, 3), WB[:, :1], [0], 0),
        below("integer conv input", INT32_MIN - 1, INT32_MIN),
    ),
    (
        "int conv 3-D",
        lambda: bnn.int_conv3x3(np.zeros((1, 3, 3), dtype=int), WB[:, :1], [0], 0),
        "integer conv input must have 4 dimensions, got shape (1, 3, 3)",
    ),
    (
        "int conv float",
        lambda: bnn.int_conv3x3(np.zeros((1, 1, 3, 3)), WB[:, :1], [0], 0),
        "integer conv input must be an integer array, got dtype float64",
    ),
    (
        "int conv weights",
        lambda: bnn.int_conv3x3(np.zeros((1, 2, 3, 3), dtype=int), 0 * WB, [0], 0),
        "conv weights must hold only -1 and +1, found 0",
    ),
    (
        "int conv padding",
        lambda: bnn.int_conv3x3(np.zeros((1, 2, 3, 3), dtype=int), WB, [0], 3),
        "padding must be 0 or 1, got 3",
    ),
    # pooling
    (
        "maxpool 2-D",
        lambda: bnn.maxpool2x2(np.ones((2, 2), dtype=int)),
        "maxpool input must have 4 dimensions, got shape (2, 2)",
    ),
    (
        "maxpool float",
        lambda: bnn.maxpool2x2(np.ones((1, 1, 2, 2))),
        "maxpool input must be an integer array, got dtype float64",
    ),
    (
        "maxpool low",
        lambda: bnn.maxpool2x2(np.ones((1, 1, 1, 4), dtype=int)),
        "2x2 max pooling needs at least 2x2 pixels, got 1x4",
    ),
    (
        "maxpool narrow",
        lambda: bnn.maxpool2x2(np.ones((1, 1, 4, 1), dtype=int)),
        "2x2 max pooling needs at least 2x2 pixels, got 4x1",
    ),
    (
        "packed maxpool dtype",
        lambda: bnn.maxpool2x2_packed(np.zeros((1, 2, 2, 1), dtype=np.int32)),
        "packed maxpool input must be uint32/uint64 [N, H, W, words], got int32 (1, 2, 2, 1)",
    ),
    (
        "packed maxpool 3-D",
        lambda: bnn.maxpool2x2_packed(np.zeros((2, 2, 1), dtype=np.uint32)),
        "packed maxpool input must be uint32/uint64 [N, H, W, words], got uint32 (2, 2, 1)",
    ),
    (
        "packed maxpool low",
        lambda: bnn.maxpool2x2_packed(np.zeros((1, 1, 2, 1), dtype=np.uint64)),
        "2x2 max pooling needs at least 2x2 pixels, got 1x2",
    ),
    (
        "packed maxpool narrow",
        lambda: bnn.maxpool2x2_packed(np.zeros((1, 2, 1, 1), dtype=np.uint64)),
        "2x2 max pooling needs at least 2x2 pixels, got 2x1",
    ),
    # step
    ("step 1-D", lambda: bnn.step(i64(1, 2, 3), [0], [1]), "step input must be [N, C, ...], got shape (3,)"),
    (
        "step float",
        lambda: bnn.step(np.zeros((1, 2)), [0, 0], [1, 1]),
        "step input must be an integer array, got dtype float64",
    ),
    (
        "step threshold 2-D",
        lambda: bnn.step(np.zeros((1, 2), dtype=int), [[0, 0]], [1, 1]),
        "step threshold must have 1 dimensions, got shape (1, 2)",
    ),
    (
        "step threshold float",
        lambda: bnn.step(np.zeros((1, 2), dtype=int), [0.5, 0], [1, 1]),
        "step threshold must be an integer array, got dtype float64",
    ),
    (
        "step threshold length",
        lambda: bnn.step(np.zeros((1, 2), dtype=int), [0], [1, 1]),
        "step threshold must have shape (2), got (1,)",
    ),
    (
        "step direction 2-D",
        lambda: bnn.step(np.zeros((1, 2), dtype=int), [0, 0], [[1, 1]]),
        "step direction must have 1 dimensions, got shape (1, 2)",
    ),
    (
        "step direction length",
        lambda: bnn.step(np.zeros((1, 2), dtype=int), [0, 0], [1, 1, 1]),
        "step direction must have shape (2), got (3,)",
    ),
    (
        "step direction zero",
        lambda: bnn.step(np.zeros((1, 2), dtype=int), [0, 0], [1, 0]),
        "step direction must hold only -1 and +1",
    ),
    (
        "step direction two",
        lambda: bnn.step(np.zeros((1, 2), dtype=int), [0, 0], [-1, 2]),
        "step direction must hold only -1 and +1",
    ),
    (
        "step direction float",
        lambda: bnn.step(np.zeros((1, 2), dtype=int), [0, 0], [1.0, 1.0]),
        "step direction must be an integer array, got dtype float64",
    ),
    # flatten, dense, argmax
    ("flatten 1-D", lambda: bnn.flatten(i64(1, 2, 3)), "flatten input must be [N, ...], got shape (3,)"),
    (
        "dense input 1-D",
        lambda: bnn.bin_dense(i64(1, 1), P2, [0]),
        "dense input must have 2 dimensions, got shape (2,)",
    ),
    (
        "dense input zero",
        lambda: bnn.bin_dense(i64(1, 0).reshape(1, 2), P2, [0]),
        "dense input must hold only -1 and +1, found 0",
    ),
    (
        "dense weights 1-D",
        lambda: bnn.bin_dense(P2, i64(1, 1), [0]),
        "dense weights must have 2 dimensions, got shape (2,)",
    ),
    (
        "dense weights zero",
        lambda: bnn.bin_dense(P2, i64(0, 1).reshape(1, 2), [0]),
        "dense weights must hold only -1 and +1, found 0",
    ),
    (
        "dense inputs",
        lambda: bnn.bin_dense(P2, np.ones((1, 3), dtype=np.int8), [0]),
        "dense weights expect 3 inputs, got 2",
    ),
    (
        "dense bias 2-D",
        lambda: bnn.bin_dense(P2, P2, [[0]]),
        "dense bias must have 1 dimensions, got shape (1, 1)",
    ),
    (
        "dense bias float",
        lambda: bnn.bin_dense(P2, P2, [0.0]),
        "dense bias must be an integer array, got dtype float64",
    ),
    ("dense bias length", lambda: bnn.bin_dense(P2, P2, [0, 0]), "dense bias must have shape (1), got (2,)"),
    (
        "dense overflow high",
        lambda: bnn.bin_dense(P2, np.ones((2, 2), dtype=np.int8), i64(0, INT32_MAX)),
        "dense output overflows int32 (range 2..2147483649)",
    ),
    (
        "dense overflow low",
        lambda: bnn.bin_dense(-P2, np.ones((2, 2), dtype=np.int8), i64(INT32_MIN, 0)),
        "dense output overflows int32 (range -2147483650..-2)",
    ),
    (
        "dense overflow all above",
        lambda: bnn.bin_dense(P2, np.ones((2, 2), dtype=np.int8), i64(INT32_MAX, INT32_MAX)),
        "dense output overflows int32 (range 2147483649..2147483649)",
    ),
    ("argmax 1-D", lambda: bnn.argmax(i64(1, 2, 3)), "scores must have 2 dimensions, got shape (3,)"),
    (
        "argmax float",
        lambda: bnn.argmax(np.zeros((1, 2))),
        "scores must be an integer array, got dtype float64",
    ),
    # deriving step parameters
    ("table empty", lambda: bnn.step_from_table(0, []), "step: the table must be a non-empty 1-D bool array"),
    (
        "table 2-D",
        lambda: bnn.step_from_table(0, [[True]]),
        "step: the table must be a non-empty 1-D bool array",
    ),
    (
        "table named",
        lambda: bnn.step_from_table(0, [], name="channel 7"),
        "channel 7: the table must be a non-empty 1-D bool array",
    ),
    (
        "table up-down",
        lambda: bnn.step_from_table(-3, [False, False, True, True, False, False]),
        "step: output is not monotone in the input (turns at x=1)",
    ),
    (
        "table down-up",
        lambda: bnn.step_from_table(5, [True, True, False, False, True]),
        "step: output is not monotone in the input (turns at x=9)",
    ),
    (
        "bn empty range",
        lambda: bnn.bn_step_params([1.0], [0.0], [0.0], [1.0], 0.0, 5, 4),
        "empty input range 5..4",
    ),
]


@pytest.mark.parametrize("call, message", [e[1:] for e in BNN_BAD], ids=[e[0] for e in BNN_BAD])
def test_bnn_refuses_bad_input_naming_it(call, message):
    refused(call, message)


# --- the bounds themselves are accepted; results have the documented dtypes ------------------
def test_quantize_accepts_integers_and_the_window_edges():
    q = sac.quantize_pow2(np.array([1, 0, -1]))  # integer weights are numeric too
    assert q.w_int.dtype == np.int32 and q.w_int.tolist() == [64, 0, -64]
    one = sac.quantize_pow2([0.25, 0.5, 1.0], emin=-1, emax=-1, overflow="saturate")
    assert one.w_int.tolist() == [0, 1, 1] and (one.n_below, one.n_above) == (1, 1)
    seven = sac.quantize_pow2([2.0**-7, 0.5], emin=-7, emax=-1)  # 7 exponents: the most
    assert seven.w_int.tolist() == [1, 64] and seven.values.tolist() == [2.0**-7, 0.5]


def test_int_to_sign_code_dtypes_and_edges():
    sign, code = sac.int_to_sign_code(i64(64, -64, 1, -1, 0, 2).reshape(2, 3))
    assert sign.dtype == np.uint8 and code.dtype == np.uint8 and sign.shape == (2, 3)
    assert sign.tolist() == [[1, 0, 1], [0, 0, 1]]
    assert code.tolist() == [[7, 7, 1], [1, 0, 2]]
    sign, code = sac.int_to_sign_code([4, -4], emin=-2, emax=0)  # 2^(emax - emin) = 4
    assert sign.tolist() == [1, 0] and code.tolist() == [3, 3]


def test_bytes_at_their_bounds():
    b = sac.encode_byte(i64(0, 7), i64(0, 1), i64(0, 7))
    assert b.dtype == np.uint8 and b.tolist() == [0x00, 0xF7]
    index, sign, code = sac.decode_byte(i64(0, 255, 0x97))
    for part in (index, sign, code):
        assert part.dtype == np.uint8
    assert (index.tolist(), sign.tolist(), code.tolist()) == ([0, 7, 4], [0, 1, 1], [0, 15, 7])
    w = sac.cell_weight(i64(0, 255, 0x17, 0x01).reshape(2, 2))
    assert w.dtype == np.int32 and w.tolist() == [[0, 0], [64, -1]]


@pytest.mark.parametrize("group", [1, 8, np.int64(3)])
def test_group_bounds_accepted(group):
    w = np.zeros((2, 9), dtype=np.int64)
    w[1, 8] = -4
    cw = sac.combine_columns(w, group)
    assert cw.packed.dtype == np.uint8 and cw.packed.shape == (2, -(-9 // int(group)))
    assert (cw.group, cw.in_channels, cw.n_dropped, cw.out_channels) == (int(group), 9, 0, 2)
    dense = sac.decode_packed(cw.packed, group, 9)
    assert dense.dtype == np.int32 and dense.tolist() == w.tolist()
    aw = sac.array_weights(cw.packed, group)
    assert aw.dtype == np.int32 and aw.shape == (2, cw.packed.shape[1] * int(group))


def test_combine_keep_largest_in_a_partial_group_and_canonical_zero():
    w = i64(0, 0, 0, 0, 0, 2, -8, 0, 1, 0, 0, 0, 0, 0).reshape(2, 7)
    cw = sac.combine_columns(w, 4, policy="keep_largest")
    # row 0: group 1 keeps -8 at channel 6 (index 2), drops 2; row 1: 1 at channel 1
    assert cw.packed.tolist() == [[0x00, 0x44], [0x31, 0x00]]
    assert cw.n_dropped == 1
    assert sac.decode_packed(cw.packed, 4, 7).tolist() == [[0, 0, 0, 0, 0, 0, -8], [0, 1, 0, 0, 0, 0, 0]]


def test_decode_packed_edges_accepted():
    """The last slot of a group (index G - 1), the last channel (chan = K - 1), exponent code 7,
    and a zero code with any index (a gated cell, whatever its index) are all valid."""
    assert sac.decode_packed(np.array([[0x51]], dtype=U8), 3, 3).tolist() == [[0, 0, 1]]
    assert sac.decode_packed(i64(0x00, 0x11).reshape(1, 2), 4, 5).tolist() == [[0, 0, 0, 0, 1]]
    assert sac.decode_packed(np.array([[0x17, 0x07]], dtype=U8), 1, 2).tolist() == [[64, -64]]
    dense = sac.decode_packed(np.array([[0xE0, 0x60]], dtype=U8), 2, 3)
    assert dense.dtype == np.int32 and dense.tolist() == [[0, 0, 0]]


def test_dense_matmul_bounds_accepted():
    w = i64(64, -64).reshape(1, 2)
    x = i64(255, 0, 255, 0).reshape(2, 2)  # [channel, pixel]
    acc = sac.dense_matmul(w, x, i64(INT32_MAX))
    assert acc.dtype == np.int32 and acc.tolist() == [[INT32_MAX, INT32_MAX]]
    assert sac.dense_matmul(w, x, i64(INT32_MIN)).tolist() == [[INT32_MIN, INT32_MIN]]
    # batch axes in front of [K, P], bias broadcast to every image and pixel
    xb = np.stack([np.eye(2, dtype=U8), 2 * np.eye(2, dtype=U8)])
    out = sac.dense_matmul(i64(1, -2, 4, 8).reshape(2, 2), xb, [10, 20])
    assert out.shape == (2, 2, 2) and out.dtype == np.int32
    assert out.tolist() == [[[11, 8], [24, 28]], [[12, 6], [28, 36]]]


@pytest.mark.parametrize("k", [1028, 1029, 2000])
@pytest.mark.parametrize("sign", [1, -1])
def test_dense_matmul_exact_at_the_float32_limit(k, sign):
    """Below K = 1029 every partial sum fits float32's 24 bits; past it the product runs in
    float64. The largest terms (64 * 255) plus one odd term: a float32 sum past 2^24 would
    lose the odd 1."""
    w = np.full((1, k), 64 * sign, dtype=np.int64)
    w[0, 0] = sign
    x = np.full((k, 1), 255, dtype=np.uint8)
    x[0, 0] = 1
    want = sign * (16320 * (k - 1) + 1)
    acc = sac.dense_matmul(w, x, [0])
    assert acc.dtype == np.int32 and acc.tolist() == [[want]]


def test_dense_matmul_wraps_on_the_float64_path():
    k = 270_000  # 64 * 255 * K > 2^32: the wrap of the exact sum
    w = np.full((2, k), 64, dtype=np.int64)
    w[1] = -64
    x = np.full((k, 1), 255, dtype=np.uint8)
    acc = sac.dense_matmul(w, x, [1, -1])
    total = 16320 * k
    assert acc.dtype == np.int32
    assert acc[:, 0].tolist() == [
        ((total + 1 + 2**31) % 2**32) - 2**31,
        ((-total - 1 + 2**31) % 2**32) - 2**31,
    ]


def test_cells_at_their_bounds():
    s = sac.cell_step(i64(0x17), i64(255), i64(INT32_MIN))
    assert s.dtype == np.int32 and s.tolist() == [INT32_MIN + 16320]
    assert sac.cell_step(0x07, i64(0), i64(INT32_MAX)).tolist() == [INT32_MAX]
    m = sac.mac_cell_step(i64(127), i64(255), i64(INT32_MAX))
    assert m.dtype == np.int32 and m.tolist() == [INT32_MAX + 127 * 255 - 2**32]
    assert sac.mac_cell_step(i64(-128, 0), i64(1, 0), i64(0, INT32_MIN)).tolist() == [-128, INT32_MIN]


def test_output_modes_dtypes_and_every_mode():
    acc = i64(INT32_MIN, -65, -1, 0, 63, 64, 16320, INT32_MAX).reshape(2, 4)
    relu = [[0, 0, 0, 0], [0, 1, 255, 255]]
    binary = [[0, 0, 0, 1], [1, 1, 1, 1]]
    sums = [INT32_MIN - 66 + 2**32, ((63 + 64 + 16320 + INT32_MAX + 2**31) % 2**32) - 2**31]
    for mode, dtype, want in [
        (sac.OutputMode.RELU_QUANT, np.uint8, relu),
        (sac.OutputMode.BINARY, np.uint8, binary),
        (sac.OutputMode.RAW, np.int32, acc.tolist()),
        (sac.OutputMode.PIXEL_SUM, np.int32, sums),
    ]:
        for m in (mode, int(mode)):  # the ISA encoding works as well
            out = sac.apply_mode(acc, m)
            assert out.dtype == dtype and out.tolist() == want, mode
    assert sac.relu_quant(acc).dtype == np.uint8 and sac.relu_quant(acc).tolist() == relu
    assert sac.binarize(acc).dtype == np.uint8 and sac.binarize(acc).tolist() == binary
    assert sac.pixel_sum(acc).dtype == np.int32 and sac.pixel_sum(acc).tolist() == sums
    # the pixel axis is the last one, whatever the leading axes
    p = sac.pixel_sum(np.arange(24, dtype=np.int64).reshape(2, 3, 4))
    assert p.shape == (2, 3) and p.tolist() == [[6, 22, 38], [54, 70, 86]]


def test_relu_quant_shift_and_unsigned_input():
    assert sac.relu_quant(i64(8, -8, 1023), shift=2).tolist() == [2, 0, 255]
    assert sac.relu_quant(i64(255, 256, -1), shift=0).tolist() == [255, 255, 0]
    u = sac.relu_quant(np.array([128, 2**31 - 1], dtype=np.uint32))  # unsigned input
    assert u.dtype == np.uint8 and u.tolist() == [2, 255]


def test_count_active_per_image_flattens_leading_axes():
    dense = i64(1, 0, -2, 0, 0, 4).reshape(2, 3)
    x = np.zeros((2, 3, 3, 2), dtype=np.int64)
    x[0, 0] = [[1, 1], [1, 0], [0, 0]]  # channel 0: 2 pixels (1 weight), channel 1: 1 (0)
    x[1, 2] = [[0, 0], [0, 0], [255, 255]]  # channel 2: 2 pixels, 2 weights
    per = sac.count_active_per_image(dense, x)
    assert per.dtype == np.int64 and per.shape == (6,)
    assert per.tolist() == [2, 0, 0, 0, 0, 4]
    assert sac.count_active(dense, x) == 6 and type(sac.count_active(dense, x)) is int


def test_channel_shift_keeps_the_dtype_and_accepts_the_bounds():
    x = np.arange(1, 19, dtype=np.int64).reshape(2, 3, 3)
    out = sac.channel_shift(x, i64(0, 8), fill=255)
    assert out.dtype == np.int64
    assert out.tolist() == [
        [[255, 255, 255], [255, 1, 2], [255, 4, 5]],
        [[14, 15, 255], [17, 18, 255], [255, 255, 255]],
    ]
    assert sac.channel_shift(x.astype(U8), [4, 4]).dtype == np.uint8
    assert sac.channel_shift(i64(0, 255).reshape(1, 1, 2), [4]).tolist() == [[[0, 255]]]


def test_space_to_depth_edges():
    x = np.arange(16).reshape(1, 4, 4)
    assert sac.space_to_depth(x, 1).tolist() == x.tolist()
    four = sac.space_to_depth(x, np.int64(4))
    assert four.shape == (16, 1, 1) and four[:, 0, 0].tolist() == list(range(16))


def test_table_directions_all_sixteen_codes():
    d = sac.table_directions(np.arange(16))
    assert d.dtype == np.uint8
    assert d.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8, 4, 4, 4, 4, 4, 4, 4]
    assert sac.table_directions(i64(8, 9).reshape(2, 1)).tolist() == [[8], [4]]


def test_shift_offsets():
    assert [sac.shift_offset(d) for d in range(9)] == [
        (-1, -1),
        (-1, 0),
        (-1, 1),
        (0, -1),
        (0, 0),
        (0, 1),
        (1, -1),
        (1, 0),
        (1, 1),
    ]
    assert sac.shift_offset(sac.SHIFT_IDENTITY) == (0, 0)


# --- bnn: documented dtypes and shapes, edges accepted -----------------------------------------
def test_unpack_dtypes_and_lenient_mode():
    x = bnn.unpack_bits(np.array([[0x5], [0x2]], dtype=np.uint32), 3)
    assert x.dtype == np.int8 and x.tolist() == [[1, -1, 1], [-1, 1, -1]]
    words = np.full((1, 1, 2, 1), 0xC, dtype=np.uint32)  # bit 3 is padding for C = 3
    a = bnn.unpack_nhwc(words, 3, strict=False)
    assert a.dtype == np.int8 and a.shape == (1, 3, 1, 2)
    assert a[0, :, 0, 0].tolist() == [-1, -1, 1]
    assert bnn.words_for(64, 64) == 1 and bnn.words_for(65, 64) == 2 and bnn.words_for(0, 32) == 0


@pytest.mark.parametrize("dtype", [np.int8, np.int64])
def test_maxpool_keeps_dtype_and_floors(dtype):
    x = np.arange(2 * 1 * 3 * 5, dtype=dtype).reshape(2, 1, 3, 5) - 7
    out = bnn.maxpool2x2(x)
    assert out.dtype == dtype and out.shape == (2, 1, 1, 2)
    assert out.tolist() == [[[[-1, 1]]], [[[14, 16]]]]
    assert bnn.maxpool2x2(np.array([[[[1, -1], [-1, -1]]]], dtype=dtype)).tolist() == [[[[1]]]]


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
def test_packed_maxpool_keeps_dtype_and_floors(dtype):
    w = np.zeros((1, 3, 3, 2), dtype=dtype)
    w[0, 1, 1] = [1, 2]  # inside the kept 2x2 window
    w[0, 2, 2] = [4, 8]  # the dropped odd row/column
    out = bnn.maxpool2x2_packed(w)
    assert out.dtype == dtype and out.shape == (1, 1, 1, 2) and out.tolist() == [[[[1, 2]]]]
    two = np.array([1, 2, 4, 8], dtype=dtype).reshape(1, 2, 2, 1)
    assert bnn.maxpool2x2_packed(two).tolist() == [[[[15]]]]


def test_step_dtype_directions_and_unsigned_input():
    x = i64(-1, 0, 1, -1, 0, 1).reshape(1, 2, 3)
    out = bnn.step(x, [0, 0], [1, -1])
    assert out.dtype == np.int8 and out.shape == (1, 2, 3)
    assert out.tolist() == [[[-1, 1, 1], [1, 1, -1]]]
    assert bnn.step(np.array([[5, 3]], dtype=np.uint64), [4, 4], [1, -1]).tolist() == [[1, 1]]
    # compared as integers, not floats: 2^60 + 1 and 2^60 + 2 are one float64
    big = np.array([[2**60 + 1, 2**60 + 2]], dtype=np.uint64)
    assert bnn.step(big, i64(2**60 + 2, 2**60 + 1), [1, -1]).tolist() == [[-1, -1]]
    assert bnn.step(big.astype(np.int64), i64(2**60 + 2, 2**60 + 1), [1, -1]).tolist() == [[-1, -1]]
    # uint64 at and above 2^63 is above every int64 threshold (it must not read as negative)
    top = np.array([[2**63, 2**64 - 1, 2**63]], dtype=np.uint64)
    assert bnn.step(top, i64(0, 2**63 - 1, -1), [1, -1, -1]).tolist() == [[1, -1, -1]]


def test_dense_edges():
    x = np.ones((1, 2), dtype=np.int8)
    w = np.ones((2, 2), dtype=np.int8)
    out = bnn.bin_dense(x, w, i64(INT32_MAX - 2, INT32_MIN))
    assert out.dtype == np.int32 and out.tolist() == [[INT32_MAX, INT32_MIN + 2]]
    none = bnn.bin_dense(x, np.ones((0, 2), dtype=np.int8), np.zeros(0, dtype=int))
    assert none.dtype == np.int32 and none.shape == (1, 0)
    empty = bnn.bin_dense(np.ones((0, 2), dtype=np.int8), w, [0, 0])
    assert empty.dtype == np.int32 and empty.shape == (0, 2)


def test_conv_edges():
    ones = np.ones((1, 2, 3, 3), dtype=np.int8)
    out = bnn.bin_conv3x3(ones, ones, i64(INT32_MAX - 18), 0)
    assert out.dtype == np.int32 and out.tolist() == [[[[INT32_MAX]]]]
    assert bnn.bin_conv3x3(-ones, ones, i64(INT32_MIN + 18), 0).tolist() == [[[[INT32_MIN]]]]
    # a bias beyond int32 whose sum still fits is exact (no int32 cast of the bias)
    assert bnn.bin_conv3x3(-ones, ones, i64(2**31 + 5), 0).tolist() == [[[[2**31 - 13]]]]
    assert bnn.bin_conv3x3(ones, ones, i64(-(2**31) - 5), 0).tolist() == [[[[-(2**31) + 13]]]]
    none = bnn.bin_conv3x3(ones, np.ones((0, 2, 3, 3), dtype=np.int8), np.zeros(0, dtype=int), 1)
    assert none.dtype == np.int32 and none.shape == (1, 0, 3, 3)
    empty = bnn.bin_conv3x3(np.ones((0, 2, 4, 5), dtype=np.int8), ones, [0], 1)
    assert empty.dtype == np.int32 and empty.shape == (0, 1, 4, 5)


def test_int_conv_exact_past_float32():
    """Integer inputs large enough that the partial sums pass 2^24 run in float64: an odd total
    above 2^24, and a sum above int32 brought back into range by the bias."""
    x = np.empty((1, 2, 3, 3), dtype=np.int64)
    x[0, 0], x[0, 1] = 2**20 + 1, 2**20 + 2
    w = np.ones((1, 2, 3, 3), dtype=np.int8)
    out = bnn.int_conv3x3(x, w, [7], 0)
    assert out.dtype == np.int32 and out.tolist() == [[[[9 * (2**21 + 3) + 7]]]]
    y = np.zeros((1, 1, 3, 3), dtype=np.int64)
    y[0, 0, 0, :2] = 2**30
    y[0, 0, 1, 0] = 100
    assert bnn.int_conv3x3(y, w[:, :1], i64(-200), 0).tolist() == [[[[2**31 - 100]]]]


def test_step_from_table_shapes_of_table():
    assert bnn.step_from_table(-2, [True, True, True]) == (-2, 1)  # always on
    assert bnn.step_from_table(-2, [False, True, True]) == (-1, 1)  # on from x = -1
    assert bnn.step_from_table(-2, [True, True, False]) == (-1, -1)  # on up to x = -1
    assert bnn.step_from_table(-2, [False, False]) == (0, 1)  # never on inside
    assert bnn.step_from_table(3, [True]) == (3, 1)
    assert bnn.step_from_table(3, [False]) == (4, 1)


def test_bn_step_params_one_point_range_and_dtypes():
    thr, d = bnn.bn_step_params([1.0, -1.0], [0.0, 0.0], [0.0, 0.0], [1.0, 1.0], 0.0, 0, 0)
    assert thr.dtype == np.int64 and d.dtype == np.int8
    assert thr.tolist() == [0, 0] and d.tolist() == [1, 1]
    thr, d = bnn.bn_step_params([1.0, -1.0], [0.0, 0.0], [0.0, 0.0], [1.0, 1.0], 0.0, 0, 0, strict=True)
    assert thr.tolist() == [1, 1] and d.tolist() == [1, 1]


# --- the helpers that size the work (private, but their contract is stated) ---------------------
def test_chunks_cover_all_images_within_the_budget():
    cb = bnn.CHUNK_BYTES
    assert bnn._chunks(0, 100) == []
    assert bnn._chunks(5, cb // 2) == [(0, 2), (2, 4), (4, 5)]
    assert bnn._chunks(3, 2 * cb) == [(0, 1), (1, 2), (2, 3)]  # at least one image each
    assert bnn._chunks(cb + 1, 1) == [(0, cb), (cb, cb + 1)]
    assert bnn._chunks(cb + 1, 0) == [(0, cb), (cb, cb + 1)]  # an empty image: 1 byte
    assert bnn._chunks(4, cb) == [(0, 1), (1, 2), (2, 3), (3, 4)]


def test_exact_dtype_boundary():
    assert bnn._exact_dtype(0) is np.float32
    assert bnn._exact_dtype(2.0**24 - 1) is np.float32
    assert bnn._exact_dtype(2.0**24) is np.float64


@pytest.mark.parametrize("chunk_bytes", [1, 200])
def test_chunked_kernels_equal_one_chunk(monkeypatch, chunk_bytes):
    """Split into chunks of one or a few images, every batched kernel gives the values of one
    chunk (the default budget holds the whole batch)."""
    rng = np.random.default_rng(SEED)
    print("seed", SEED)
    x = np.where(rng.random((5, 3, 6, 5)) < 0.5, -1, 1).astype(np.int8)
    w = np.where(rng.random((4, 3, 3, 3)) < 0.5, -1, 1).astype(np.int8)
    xi = rng.integers(-300, 300, size=(5, 3, 6, 5))
    b = rng.integers(-5, 6, size=4)
    xd, wd = x.reshape(5, -1), np.where(rng.random((4, 90)) < 0.5, -1, 1).astype(np.int8)
    one = (
        bnn.bin_conv3x3(x, w, b, 1),
        bnn.int_conv3x3(xi, w, b, 0),
        bnn.maxpool2x2(xi),
        bnn.step(xi, b[:3], [1, -1, 1]),
        bnn.bin_dense(xd, wd, b),
    )
    monkeypatch.setattr(bnn, "CHUNK_BYTES", chunk_bytes)
    many = (
        bnn.bin_conv3x3(x, w, b, 1),
        bnn.int_conv3x3(xi, w, b, 0),
        bnn.maxpool2x2(xi),
        bnn.step(xi, b[:3], [1, -1, 1]),
        bnn.bin_dense(xd, wd, b),
    )
    for a, c in zip(one, many, strict=True):
        assert a.dtype == c.dtype and np.array_equal(a, c)


def test_pixel_sum_exact_past_float_precision():
    """The sum is taken in int64: 2^22 + 1 pixels of INT32_MAX pass 2^53, where a float sum
    would round (33 MB, ~0.1 s)."""
    p = 2**22 + 1
    s = sac.pixel_sum(np.full((1, p), INT32_MAX, dtype=np.int64))
    assert s.dtype == np.int32 and s.tolist() == [((INT32_MAX * p + 2**31) % 2**32) - 2**31]


def test_defaults():
    """Default arguments are part of the signature: 32-bit words, strict unpacking, the
    default window 2^-6..2^0, policy "error", zero fill, ">= 0" steps."""
    x = np.ones((1, 33, 1, 1), dtype=np.int8)
    assert bnn.pack_nchw(x).dtype == np.uint32 and bnn.pack_nchw(x).shape == (1, 1, 1, 2)
    assert bnn.pack_bits(x[0, :, 0, 0]).dtype == np.uint32
    assert sac.quantize_pow2([1.0, 2.0**-6]).w_int.tolist() == [64, 1]
    assert [c.tolist() for c in sac.int_to_sign_code([64, -1])] == [[1, 0], [7, 1]]
    assert sac.combine_columns(i64(64, 1).reshape(2, 1), 1).packed.tolist() == [[0x17], [0x11]]
    with pytest.raises(NumericsError, match="policy='keep_largest'"):
        sac.combine_columns(i64(1, 1).reshape(1, 2), 2)
    thr, d = bnn.bn_step_params([1.0], [0.0], [0.0], [1.0], 0.0, -1, 1)
    assert (thr.tolist(), d.tolist()) == ([0], [1])


def test_quantize_accepts_every_float_width():
    for dtype in (np.float16, np.float32, np.float64):
        q = sac.quantize_pow2(np.array([0.5, -0.25], dtype=dtype))
        assert q.w_int.tolist() == [32, -16], dtype


def test_step_from_table_reads_truthiness():
    assert bnn.step_from_table(0, np.array([2, 1])) == (0, 1)  # both entries on
    assert bnn.step_from_table(0, [0.0, 0.5, 3.0]) == (1, 1)


def test_bn_step_params_evaluates_in_the_requested_dtype():
    """mean 0.1, beta -float32(2.9): in float32, 3 - 0.1 rounds to float32(2.9) and BN(3) is
    exactly 0 (on); in float64 it is -9.5e-8 (off until 4). The threshold follows the dtype."""
    beta = float(np.float32(-2.9))
    args = ([1.0], [beta], [0.1], [1.0], 0.0, 0, 6)
    assert bnn.bn_step_params(*args, dtype=np.float32)[0].tolist() == [3]
    assert bnn.bn_step_params(*args)[0].tolist() == [4]


def test_xnor_dot_dtype():
    a = bnn.pack_bits(np.ones((2, 40), dtype=np.int8))
    assert bnn.xnor_dot(a, a, 40).dtype == np.int64 and bnn.xnor_dot(a, a, 40).tolist() == [40, 40]
    assert bnn.xnor_dot(a, ~a, 40).tolist() == [-40, -40]  # ~a sets the padding bits too


def test_quantize_result_fields():
    q = sac.quantize_pow2([0.5, 2.0**-9, 4.0], emin=-4, emax=-1, overflow="zero")
    assert (q.emin, q.emax, q.overflow, q.n_below, q.n_above) == (-4, -1, "zero", 1, 1)
    assert q.w_int.tolist() == [8, 0, 0]


def test_flatten_accepts_two_dimensions():
    x = i64(1, 2, 3, 4, 5, 6).reshape(2, 3)
    assert bnn.flatten(x).tolist() == [[1, 2, 3], [4, 5, 6]]
    assert bnn.flatten(np.zeros((3, 0), dtype=int)).shape == (3, 0)


def test_conv_bound_from_the_input_actually_seen():
    """The exactness bound is max|x| * 9 * C + max|bias| over the images given: all-zero input
    (or no image) leaves the whole 2^52 to the bias."""
    zeros = np.zeros((1, 1, 3, 3), dtype=np.int64)
    refused(
        lambda: bnn.int_conv3x3(zeros, np.ones((2, 1, 3, 3), dtype=np.int8), i64(0, 2**52 - 5), 0),
        "convolution output overflows int32 (range 0..4503599627370491)",
    )
    none = bnn.bin_conv3x3(np.ones((0, 2, 3, 3), dtype=np.int8), WB, i64(2**52 - 5), 0)
    assert none.shape == (0, 1, 1, 1) and none.dtype == np.int32


def test_conv_range_pairs_each_filter_with_its_own_bias():
    """The int32 range check adds each filter's bias to that filter's extremes: a very
    negative bias on a filter whose sums are positive (and the mirror case) still fits."""
    x = np.ones((1, 2, 3, 3), dtype=np.int8)
    w = np.stack([-np.ones((2, 3, 3), dtype=np.int8), np.ones((2, 3, 3), dtype=np.int8)])
    low = bnn.bin_conv3x3(x, w, i64(0, INT32_MIN + 10), 0)
    assert low.tolist() == [[[[-18]], [[INT32_MIN + 28]]]]
    high = bnn.bin_conv3x3(x, w[::-1], i64(0, INT32_MAX - 10), 0)
    assert high.tolist() == [[[[18]], [[INT32_MAX - 28]]]]


def test_conv_without_input_channels_gives_the_bias():
    out = bnn.bin_conv3x3(
        np.ones((2, 0, 3, 4), dtype=np.int8), np.ones((2, 0, 3, 3), dtype=np.int8), [5, -7], 1
    )
    assert out.dtype == np.int32 and out.shape == (2, 2, 3, 4)
    assert (out[:, 0] == 5).all() and (out[:, 1] == -7).all()


def test_combine_columns_passes_its_window_on():
    refused(
        lambda: sac.combine_columns(i64(2, 8).reshape(2, 1), 1, emin=-3, emax=-1),
        not_pow2("w_int", "1, 0", 8, kmax=2),
    )
    cw = sac.combine_columns(i64(4, -1).reshape(2, 1), 1, emin=-3, emax=-1)
    assert cw.packed.tolist() == [[0x13], [0x01]]


def test_zero_weights_compute_without_float_warnings():
    """Zero weights never reach log2 (log2(0) = -inf would warn and cast to a garbage code)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sign, code = sac.int_to_sign_code(i64(0, 4, 0, -1))
        assert code.tolist() == [0, 3, 0, 1] and sign.tolist() == [0, 1, 0, 0]
        assert sac.combine_columns(i64(0, 0, 2, 0).reshape(2, 2), 2).packed.tolist() == [[0x00], [0x12]]
