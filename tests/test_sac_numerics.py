"""SAC numerics: power-of-two quantization, packed bytes, column combining, the array
reference and its output modes, channel shift and input reshaping (docs/conventions.md)."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from models.checks import INT32_MAX, INT32_MIN, NumericsError
from models.numerics import sac
from models.random_networks import random_pow2_matrix

SEED = 20261129


# --- quantization ----------------------------------------------------------------------------
def test_quantize_known_values():
    q = sac.quantize_pow2([1.0, 0.5, -0.25, 2**-6, 0.0, 0.70, 0.71, -0.75])
    # log-domain rounding: boundary between 2^-1 and 2^0 is 2^-0.5 = 0.7071
    assert q.w_int.tolist() == [64, 32, -16, 1, 0, 32, 64, 64 * -1]
    assert q.values.tolist() == [1.0, 0.5, -0.25, 2**-6, 0.0, 0.5, 1.0, -1.0]
    assert q.n_below == 0 and q.n_above == 0


def test_quantize_below_window_is_zero_and_counted():
    q = sac.quantize_pow2([2**-7, -(2**-8), 2**-6.4, 2**-6.6])
    assert q.w_int.tolist() == [0, 0, 1, 0]
    assert q.n_below == 3


def test_quantize_above_window_policies():
    w = [1.0, 1.5, -4.0]
    with pytest.raises(NumericsError, match=r"2 weight\(s\) above the window.*index \(1,\)"):
        sac.quantize_pow2(w)
    sat = sac.quantize_pow2(w, overflow="saturate")
    assert sat.w_int.tolist() == [64, 64, -64] and sat.n_above == 2
    zero = sac.quantize_pow2(w, overflow="zero")
    assert zero.w_int.tolist() == [64, 0, 0] and zero.n_above == 2


def test_quantize_custom_window_and_bad_input():
    q = sac.quantize_pow2([0.25, 4.0], emin=-2, emax=2)
    assert q.w_int.tolist() == [1, 16]
    with pytest.raises(NumericsError, match="window"):
        sac.quantize_pow2([1.0], emin=-8, emax=0)  # 9 exponents > 7 taps
    with pytest.raises(NumericsError, match="NaN"):
        sac.quantize_pow2([np.nan])
    with pytest.raises(NumericsError, match="overflow policy"):
        sac.quantize_pow2([1.0], overflow="clip")


# --- packed bytes ----------------------------------------------------------------------------
def test_byte_layout_matches_paper_example():
    # Paper Fig. 8: -2^-1 at index 1 of its group -> index 001, sign 0, exponent 0110
    sign, code = sac.int_to_sign_code(np.array([-32]))
    b = sac.encode_byte(1, sign, code)
    assert int(b[0]) == 0b001_0_0110
    assert sac.cell_weight(b).tolist() == [-32]


def test_cell_weight_for_all_256_bytes():
    b = np.arange(256)
    w = sac.cell_weight(b)
    for byte in range(256):
        code, sign = byte & 15, (byte >> 4) & 1
        want = 0 if not 1 <= code <= 7 else (1 << (code - 1)) * (1 if sign else -1)
        assert w[byte] == want, byte


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 7), st.integers(0, 1), st.integers(0, 7))
def test_byte_round_trip(index, sign, code):
    b = sac.encode_byte(index, sign, code)
    assert [int(v) for v in sac.decode_byte(b)] == [index, sign, code]


def test_int_to_sign_code_refuses_non_powers():
    with pytest.raises(NumericsError, match=r"w_int\[1\] = 3"):
        sac.int_to_sign_code([4, 3])
    with pytest.raises(NumericsError, match="128"):
        sac.int_to_sign_code([128])


# --- column combining ------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.integers(1, 8), st.integers(1, 9), st.integers(1, 40), st.integers(0, 2**31))
def test_combine_decode_round_trip(group, rows, cols, seed):
    w = random_pow2_matrix(np.random.default_rng(seed), rows, cols, group)
    cw = sac.combine_columns(w, group)
    assert cw.packed.shape == (rows, -(-cols // group))
    assert np.array_equal(sac.decode_packed(cw.packed, group, cols), w)


def test_combine_error_names_row_and_group():
    w = np.zeros((3, 8), dtype=np.int32)
    w[2, 4] = 8
    w[2, 5] = -2
    with pytest.raises(NumericsError, match=r"row 2, group 1 \(channels 4\.\.7\).*\[4, 5\]"):
        sac.combine_columns(w, 4)


def test_combine_keep_largest_counts_drops():
    w = np.array([[2, -16, 16, 0, 0, 1]])
    cw = sac.combine_columns(w, 3, policy="keep_largest")
    # group 0: |-16| and |16| tie -> lowest channel (1) wins; group 1 keeps the single 1
    assert sac.decode_packed(cw.packed, 3, 6).tolist() == [[0, -16, 0, 0, 0, 1]]
    assert cw.n_dropped == 2


def test_decode_refuses_bad_bytes():
    with pytest.raises(NumericsError, match=r"0x09 at row 0, column 0"):
        sac.decode_packed(np.array([[0x09]]), 8, 8)  # reserved exponent code
    with pytest.raises(NumericsError, match=r"row 0, column 0.*index 3"):
        sac.decode_packed(np.array([[0x71]]), 2, 2)  # index 3 >= group 2
    with pytest.raises(NumericsError, match="columns"):
        sac.decode_packed(np.zeros((1, 3)).astype(np.uint8), 2, 8)


def test_array_weights_reads_any_byte_like_the_hardware():
    cells = np.array([[0x17, 0x29, 0x61, 0x00]], dtype=np.uint8)  # valid, reserved, idx 3, zero
    dense = sac.array_weights(cells, 2)
    want = np.zeros((1, 8), dtype=np.int32)
    want[0, 0] = 64  # 0x17: index 0, positive, code 7
    assert np.array_equal(dense, want)


@pytest.mark.parametrize("group", range(1, 8))
def test_array_weights_index_equal_to_group_selects_nothing(group):
    """The channel index must be below G: index == G (the first slot of the next group) is
    not a tap of this column, and the cell adds nothing."""
    at = np.array([[(group << 5) | 0x11]], dtype=np.uint8)  # index G, positive, 2^-6
    below = np.array([[((group - 1) << 5) | 0x11]], dtype=np.uint8)
    assert not sac.array_weights(at, group).any()
    assert sac.array_weights(below, group)[0, group - 1] == 1


# --- the array -------------------------------------------------------------------------------
@pytest.mark.parametrize("group", range(1, 9))
def test_matmul_equals_float64_product(group):
    rng = np.random.default_rng(SEED + group)
    print("seed", SEED + group)
    n, k, p = 7, 29, 11
    cw = sac.combine_columns(random_pow2_matrix(rng, n, k, group), group)
    x = rng.integers(0, 256, size=(k, p)).astype(np.uint8)
    x[rng.random(x.shape) < 0.5] = 0
    x[:, 0] = 255  # extremes
    x[:, 1] = 0
    bias = rng.integers(-(10**6), 10**6, size=n)
    acc = sac.sac_matmul(cw, x, bias)
    ref = sac.decode_packed(cw.packed, group, k).astype(np.float64) @ x.astype(np.float64)
    assert acc.dtype == np.int32
    assert np.array_equal(acc, (ref + bias[:, None]).astype(np.int64))


def test_matmul_wraps_at_32_bits():
    cw = sac.combine_columns(np.array([[64], [-64]]), 1)
    x = np.array([[255]], dtype=np.uint8)
    acc = sac.sac_matmul(cw, x, np.array([INT32_MAX, INT32_MIN]))
    # Python ints: (2^31 - 1 + 16320) mod 2^32 as signed, and the negative twin
    want = [((INT32_MAX + 16320 + 2**31) % 2**32) - 2**31, ((INT32_MIN - 16320 + 2**31) % 2**32) - 2**31]
    assert acc[:, 0].tolist() == want
    assert want[0] < 0 < want[1]


def test_matmul_per_pixel_init():
    cw = sac.combine_columns(np.array([[2, 0], [0, -1]]), 1)
    x = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.uint8)
    init = np.array([[10, 20, 30], [-1, -2, -3]])
    assert sac.sac_matmul(cw, x, init).tolist() == [[12, 24, 36], [-5, -7, -9]]


def test_output_modes_at_extremes():
    acc = np.array([INT32_MIN, -65, -64, -1, 0, 63, 64, 127, 16319, 16320, INT32_MAX])
    assert sac.relu_quant(acc).tolist() == [0, 0, 0, 0, 0, 0, 1, 1, 254, 255, 255]
    assert sac.binarize(acc).tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1]
    assert sac.apply_mode(acc, sac.OutputMode.RAW).tolist() == acc.tolist()
    s = sac.pixel_sum(np.array([[INT32_MAX, 1, 5]]))
    assert s.tolist() == [INT32_MIN + 5]


def test_cell_steps():
    assert sac.cell_step(0x17, 255, 0).tolist() == 64 * 255
    assert sac.cell_step(0x07, 255, 0).tolist() == -64 * 255
    assert sac.cell_step(0x0F, 255, 7).tolist() == 7  # reserved code: gated
    assert (
        sac.mac_cell_step(-128, 255, INT32_MIN).tolist() == ((INT32_MIN - 128 * 255 + 2**31) % 2**32) - 2**31
    )


def test_count_active():
    dense = np.array([[1, 0, -2], [0, 0, 0]])
    x = np.array([[0, 3], [5, 5], [7, 0]], dtype=np.uint8)
    assert sac.count_active(dense, x) == 2  # (w0, pixel 1) and (w2, pixel 0)


def test_matmul_refuses_bad_input():
    cw = sac.combine_columns(np.array([[1, 0]]), 2)
    with pytest.raises(NumericsError, match="integer array, got dtype float"):
        sac.sac_matmul(cw, np.ones((2, 3)), [0])
    with pytest.raises(NumericsError, match="above the allowed maximum 255"):
        sac.sac_matmul(cw, np.full((2, 3), 256), [0])
    with pytest.raises(NumericsError, match=r"shape \[\.\.\., 2, P\]"):
        sac.sac_matmul(cw, np.ones((3, 3), dtype=np.uint8), [0])
    with pytest.raises(NumericsError, match="bias must have shape"):
        sac.sac_matmul(cw, np.ones((2, 3), dtype=np.uint8), [0, 1])


# --- data-path transforms --------------------------------------------------------------------
def test_channel_shift_directions():
    x = np.arange(1, 10, dtype=np.uint8).reshape(1, 3, 3)
    # direction d reads the source pixel at (d // 3 - 1, d % 3 - 1)
    assert sac.channel_shift(x, [4])[0].tolist() == x[0].tolist()
    assert sac.channel_shift(x, [0])[0].tolist() == [[0, 0, 0], [0, 1, 2], [0, 4, 5]]
    assert sac.channel_shift(x, [8])[0].tolist() == [[5, 6, 0], [8, 9, 0], [0, 0, 0]]
    assert sac.channel_shift(x, [5], fill=7)[0].tolist() == [[2, 3, 7], [5, 6, 7], [8, 9, 7]]
    # the other five: with only 0, 4, 5 and 8, `d // 4` for `d // 3` survived (`make mutants`)
    assert sac.channel_shift(x, [1])[0].tolist() == [[0, 0, 0], [1, 2, 3], [4, 5, 6]]
    assert sac.channel_shift(x, [2])[0].tolist() == [[0, 0, 0], [2, 3, 0], [5, 6, 0]]
    assert sac.channel_shift(x, [3])[0].tolist() == [[0, 1, 2], [0, 4, 5], [0, 7, 8]]
    assert sac.channel_shift(x, [6])[0].tolist() == [[0, 4, 5], [0, 7, 8], [0, 0, 0]]
    assert sac.channel_shift(x, [7])[0].tolist() == [[4, 5, 6], [7, 8, 9], [0, 0, 0]]
    # leading batch axes are carried through, each image shifted alone
    batch = np.stack([x, x + 9])
    assert sac.channel_shift(batch, [0]).tolist() == [
        sac.channel_shift(x, [0]).tolist(),
        sac.channel_shift(x + 9, [0]).tolist(),
    ]
    with pytest.raises(NumericsError, match="above the allowed maximum 8"):
        sac.channel_shift(x, [9])
    with pytest.raises(NumericsError, match="2 shift directions for 1 channels"):
        sac.channel_shift(x, [1, 2])


def test_space_to_depth_matches_onnx():
    rng = np.random.default_rng(SEED)
    x = rng.integers(0, 256, size=(2, 3, 8, 4)).astype(np.float32)
    node = helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2)
    graph = helper.make_graph(
        [node],
        "s2d",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (2, 12, 4, 2))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = sess.run(None, {"x": x})[0]
    assert np.array_equal(sac.space_to_depth(x.astype(np.uint8), 2), ref.astype(np.uint8))
    with pytest.raises(NumericsError, match="does not divide"):
        sac.space_to_depth(x, 3)
    onnx.checker.check_model(model)
