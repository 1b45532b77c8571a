"""Instruction words: encode/decode and text round trips, and every error code."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fpga.arch import ArrayConfig
from fpga.isa import (
    AsmError,
    DecoderState,
    ErrorCode,
    Halt,
    IsaError,
    LoadWeights,
    Matmul,
    assemble,
    check,
    check_program,
    decode,
    disassemble,
    encode,
    from_text,
    to_text,
    words_to_u32,
)
from models.numerics.sac import OutputMode

CFG = ArrayConfig(rows=8, cols=8, cmax=64, ddepth=256, pdepth=128, wdepth=64, bdepth=32, sdepth=4)


def load_weights():
    return st.builds(
        LoadWeights,
        rows=st.integers(0, 255),
        cols=st.integers(0, 255),
        w_addr=st.integers(0, 2**24 - 1),
        b_addr=st.integers(0, 2**24 - 1),
        s_addr=st.integers(0, 2**24 - 1),
    )


@st.composite
def matmuls(draw):
    mode = draw(st.sampled_from(list(OutputMode)))
    shift_en = draw(st.booleans())
    acc_in = draw(st.booleans())
    return Matmul(
        height=draw(st.integers(0, 4095)),
        width=draw(st.integers(0, 4095)),
        in_addr=draw(st.integers(0, 2**20 - 1)),
        out_addr=draw(st.integers(0, 2**20 - 1)),
        mode=mode,
        group=draw(st.integers(1, 8)),
        acc_in=acc_in,
        shift_en=shift_en,
        fill=draw(st.integers(0, 255)) if shift_en else 0,
        in_ch=draw(st.integers(0, 4095)),
        out_ch=draw(st.integers(0, 4095)) if mode <= OutputMode.BINARY else 0,
        acc_addr=draw(st.integers(0, 2**20 - 1)) if acc_in else 0,
    )


instructions = st.one_of(load_weights(), matmuls(), st.just(Halt()))


@settings(max_examples=300, deadline=None)
@given(instructions)
def test_encode_decode_round_trip(ins):
    w = encode(ins)
    assert 0 <= w < 2**128
    assert decode(w) == ins
    assert from_text(to_text(ins)) == ins


@settings(max_examples=50, deadline=None)
@given(st.lists(instructions, min_size=1, max_size=12))
def test_assemble_disassemble_round_trip(prog):
    words = assemble(prog)
    text = disassemble(words)
    assert assemble(text) == words
    u32 = words_to_u32(words)
    assert [sum(int(v) << (32 * j) for j, v in enumerate(row)) for row in u32] == words


def test_field_positions():
    w = encode(
        Matmul(
            height=3,
            width=5,
            in_addr=7,
            out_addr=9,
            mode=OutputMode.BINARY,
            group=8,
            acc_in=True,
            shift_en=True,
            fill=1,
            in_ch=2,
            out_ch=4,
            acc_addr=6,
        )
    )
    assert w & 0xF == 2
    assert (w >> 4) & 3 == 1 and (w >> 6) & 1 and (w >> 7) & 1 and (w >> 8) & 7 == 7
    assert (w >> 12) & 0xFF == 1 and (w >> 20) & 0xFFF == 3 and (w >> 32) & 0xFFF == 5
    assert (w >> 44) & 0xFFFFF == 7 and (w >> 64) & 0xFFFFF == 9
    assert (w >> 84) & 0xFFF == 2 and (w >> 96) & 0xFFF == 4 and (w >> 108) == 6
    lw = encode(LoadWeights(rows=8, cols=3, w_addr=1, b_addr=2, s_addr=3))
    assert lw == 1 | 8 << 8 | 3 << 16 | 1 << 24 | 2 << 48 | 3 << 72
    assert encode(Halt()) == 15


@pytest.mark.parametrize("opcode", [0, 3, 4, 7, 8, 14])
def test_illegal_opcode_names_word(opcode):
    with pytest.raises(IsaError, match=rf"instruction 5 \(0x0+{opcode:x}\): ILLEGAL_OPCODE") as e:
        decode(opcode, 5)
    assert e.value.code == ErrorCode.ILLEGAL_OPCODE


@pytest.mark.parametrize("word", [15 | 1 << 4, 15 | 1 << 127, 1 | 1 << 100, 1 | 1 << 5, 2 | 1 << 11])
def test_reserved_bits(word):
    with pytest.raises(IsaError) as e:
        decode(word, 0)
    assert e.value.code == ErrorCode.RESERVED_BITS


@pytest.mark.parametrize("field", ["fill", "acc_addr", "out_ch"])
def test_unused_fields_must_be_zero(field):
    base = dict(height=1, width=1, in_addr=0, out_addr=0, mode=OutputMode.RAW)
    bad = Matmul(**base, **{field: 1})
    word = (
        2
        | (1 << 12 if field == "fill" else 1 << 108 if field == "acc_addr" else 1 << 96)
        | 2 << 4
        | 1 << 20
        | 1 << 32
    )
    with pytest.raises(IsaError, match="unused field"):
        encode(bad)
    with pytest.raises(IsaError, match="unused field"):
        decode(word)


def test_encode_refuses_values_that_do_not_fit():
    with pytest.raises(IsaError, match="rows=256"):
        encode(LoadWeights(rows=256, cols=1))
    with pytest.raises(IsaError, match="group=9"):
        encode(Matmul(height=1, width=1, in_addr=0, out_addr=0, group=9))
    with pytest.raises(IsaError, match="height=-1"):
        encode(Matmul(height=-1, width=1, in_addr=0, out_addr=0))


def mm(**kw):
    base = dict(height=4, width=4, in_addr=0, out_addr=16, mode=OutputMode.RELU_QUANT, group=1)
    base.update(kw)
    return Matmul(**base)


@pytest.mark.parametrize(
    "instr, code",
    [
        (LoadWeights(rows=0, cols=1), ErrorCode.BAD_TILE),
        (LoadWeights(rows=9, cols=1), ErrorCode.BAD_TILE),
        (LoadWeights(rows=1, cols=9), ErrorCode.BAD_TILE),
        (LoadWeights(rows=8, cols=8, w_addr=57), ErrorCode.WEIGHT_RANGE),
        (LoadWeights(rows=8, cols=8, b_addr=25), ErrorCode.WEIGHT_RANGE),
        (LoadWeights(rows=8, cols=8, s_addr=4), ErrorCode.WEIGHT_RANGE),
        (mm(height=0), ErrorCode.BAD_SHAPE),
        (mm(height=16, width=17), ErrorCode.BAD_SHAPE),
        (mm(in_addr=241), ErrorCode.DBUF_RANGE),
        (mm(in_ch=57, out_ch=0, out_addr=100), ErrorCode.DBUF_RANGE),  # 8 cols x G=1
        (mm(group=8, in_ch=1), ErrorCode.DBUF_RANGE),  # 64 slots from bank 1
        (mm(out_addr=241), ErrorCode.DBUF_RANGE),
        (mm(out_ch=57), ErrorCode.DBUF_RANGE),
        (mm(out_addr=8), ErrorCode.OVERLAP),
        (mm(mode=OutputMode.RAW, out_addr=113), ErrorCode.PBUF_RANGE),
        (mm(mode=OutputMode.PIXEL_SUM, out_addr=128), ErrorCode.PBUF_RANGE),
        (mm(mode=OutputMode.RAW, acc_in=True, acc_addr=113, out_addr=0), ErrorCode.PBUF_RANGE),
        (mm(mode=OutputMode.RAW, acc_in=True, acc_addr=0, out_addr=8), ErrorCode.OVERLAP),
    ],
)
def test_range_checks(instr, code):
    state = DecoderState(tile_rows=8, tile_cols=8)
    with pytest.raises(IsaError) as e:
        check(instr, CFG, state, 3, encode(instr))
    assert e.value.code == code
    assert "instruction 3 (0x" in str(e.value)


def test_valid_instructions_pass_and_update_state():
    state = DecoderState()
    check(LoadWeights(rows=5, cols=2, w_addr=59, b_addr=27, s_addr=3), CFG, state)
    assert (state.tile_rows, state.tile_cols) == (5, 2)
    check(mm(mode=OutputMode.RAW, acc_in=True, acc_addr=0, out_addr=0), CFG, state)  # in place
    check(mm(out_addr=0, out_ch=16, in_ch=0), CFG, state)  # same entries, other banks


def test_matmul_before_weights_and_missing_halt():
    with pytest.raises(IsaError, match="NO_WEIGHTS"):
        check_program(assemble([mm(), Halt()]), CFG)
    with pytest.raises(IsaError, match="PC_OVERFLOW"):
        check_program(assemble([LoadWeights(rows=1, cols=1)]), CFG)
    prog = check_program(assemble([LoadWeights(rows=1, cols=1), mm(), Halt()]) + [0], CFG)
    assert len(prog) == 3  # stops at HALT; what follows is never decoded


def test_text_errors_name_the_line():
    with pytest.raises(AsmError, match="line 2, column 14: unknown operand 'rowz=1'"):
        assemble("HALT\nLOAD_WEIGHTS rowz=1 cols=1\n")
    with pytest.raises(AsmError, match="line 1, column 46: mode must be one of"):
        assemble("MATMUL height=1 width=1 in_addr=0 out_addr=0 mode=relu\n")
    with pytest.raises(AsmError, match="line 3, column 1: expected LOAD_WEIGHTS"):
        assemble("# comment\n\nNOP\n")
    assert assemble("LOAD_WEIGHTS rows=0x2 cols=1 # tile\nHALT") == [
        encode(LoadWeights(rows=2, cols=1)),
        encode(Halt()),
    ]
    assert np.array_equal(words_to_u32([2**127]), [[0, 0, 0, 2**31]])


@pytest.mark.parametrize(
    "line,message",
    [
        ("MATMUL height=1", "column 16: MATMUL needs width, in_addr, out_addr"),
        ("LOAD_WEIGHTS rows=1 rows=2 cols=1", "column 21: rows is given twice"),
        ("MATMUL height=1 width=1 in_addr=0 out_addr=0 acc_in=-1", "acc_in must not be negative"),
        ("MATMUL height=1 width=1 in_addr=0 out_addr=0 shift_en=2", "shift_en must be 0 or 1"),
        ("LOAD_WEIGHTS rows=1.5 cols=1", "rows must be an integer, got '1.5'"),
        ("HALT rows=1", r"unknown operand 'rows=1' for HALT \(expected none\)"),
    ],
)
def test_malformed_text_is_refused_naming_line_and_column(line, message):
    with pytest.raises(AsmError, match=f"line 7, {message}" if "column" in message else message):
        from_text(line, 7)


def test_values_that_do_not_fit_name_the_line():
    with pytest.raises(IsaError, match="line 2: LOAD_WEIGHTS field rows=300 does not fit 8 bits"):
        assemble("HALT\nLOAD_WEIGHTS rows=300 cols=1")


@pytest.mark.parametrize("word", [True, False, -1, 1 << 128, 2.0, "2", None])
def test_decode_refuses_what_is_not_a_word(word):
    with pytest.raises(IsaError, match="not a 128-bit word"):
        decode(word)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="MATULODWEIGHSNP_=0123456789xabcdfhilmnoprstuvw -\t#", max_size=80))
def test_any_text_parses_or_raises_the_projects_error(text):
    """Whatever the text, assemble() returns words that decode back to the same program, or
    raises AsmError / IsaError: never another exception."""
    try:
        words = assemble(text)
    except (AsmError, IsaError):
        return
    assert assemble(disassemble(words)) == words


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=-2, max_value=(1 << 128) + 2))
def test_any_integer_decodes_or_raises_isa_error(word):
    try:
        ins = decode(word)
    except IsaError:
        return
    assert encode(ins) == word
