"""Instruction set of the SAC accelerator: 128-bit words, assembler and disassembler.

docs/isa.md is the specification; this module is its executable form and the RTL decoder
(rtl/instruction_decoder.v) implements the same checks with the same error codes.

Field layout (bit ranges inclusive, LSB = bit 0):

    all        [3:0]   opcode: 1 LOAD_WEIGHTS, 2 MATMUL, 15 HALT; anything else is illegal
    LOAD_WEIGHTS
               [15:8]  rows     tile rows (filters), 1..ROWS
               [23:16] cols     tile columns (channel groups), 1..COLS
               [47:24] w_addr   first weight-memory word (one word per tile row)
               [71:48] b_addr   first bias-memory word
               [95:72] s_addr   shift-table word (directions of the tile's channel slots)
               other bits reserved, must be 0
    MATMUL
               [5:4]   mode     0 ReLU&quantize, 1 binary, 2 raw, 3 pixel-sum
               [6]     acc_in   rows start from partial sums at acc_addr instead of the bias
               [7]     shift_en apply the loaded channel-shift directions
               [10:8]  group-1  channels combined per column (G = 1..8)
               [11]    reserved, 0
               [19:12] fill     value of shifted-in border pixels (0 unless shift_en)
               [31:20] height   input height H >= 1
               [43:32] width    input width W >= 1
               [63:44] in_addr  data-buffer entry of input pixel 0
               [83:64] out_addr data-buffer entry (modes 0, 1) or partial-sum entry (2, 3)
               [95:84] in_ch    data-buffer bank (channel) of the tile's first channel slot
               [107:96] out_ch  data-buffer bank of the tile's first output row (modes 0, 1)
               [127:108] acc_addr partial-sum entry of pixel 0's initial value (acc_in)
    HALT       all other bits 0
"""

from __future__ import annotations

import re
from dataclasses import MISSING, dataclass, fields
from enum import IntEnum

import numpy as np

from fpga.arch import ArrayConfig
from models.numerics.sac import OutputMode

WORD_BITS = 128


class Opcode(IntEnum):
    LOAD_WEIGHTS = 1
    MATMUL = 2
    HALT = 15


class ErrorCode(IntEnum):
    """Why the decoder halted with `error` (the RTL reports the same number)."""

    NONE = 0
    ILLEGAL_OPCODE = 1
    RESERVED_BITS = 2  # a reserved or unused field is nonzero
    BAD_TILE = 3  # LOAD_WEIGHTS rows/cols out of range
    WEIGHT_RANGE = 4  # weight, bias or shift-table address past its memory
    NO_WEIGHTS = 5  # MATMUL before any LOAD_WEIGHTS
    BAD_SHAPE = 6  # H or W zero, or H*W past the buffers
    DBUF_RANGE = 7  # data-buffer entries or banks out of range
    PBUF_RANGE = 8  # partial-sum entries out of range
    OVERLAP = 9  # output region overlaps the input region it is still reading
    PC_OVERFLOW = 10  # ran past the last instruction without HALT


class IsaError(ValueError):
    """A malformed or out-of-range instruction; names the word."""

    def __init__(self, code: ErrorCode, index, word, message: str):
        self.code = ErrorCode(code)
        self.index = index
        self.word = word
        self.detail = message
        where = f"instruction {index}" if index is not None else "instruction"
        hexword = f" (0x{word:032x})" if isinstance(word, int) else ""
        super().__init__(f"{where}{hexword}: {self.code.name}: {message}")


# (name, lsb, width) per opcode; everything not listed is reserved
_LW_FIELDS = (("rows", 8, 8), ("cols", 16, 8), ("w_addr", 24, 24), ("b_addr", 48, 24), ("s_addr", 72, 24))
_MM_FIELDS = (
    ("mode", 4, 2),
    ("acc_in", 6, 1),
    ("shift_en", 7, 1),
    ("group", 8, 3),
    ("fill", 12, 8),
    ("height", 20, 12),
    ("width", 32, 12),
    ("in_addr", 44, 20),
    ("out_addr", 64, 20),
    ("in_ch", 84, 12),
    ("out_ch", 96, 12),
    ("acc_addr", 108, 20),
)
_LAYOUT = {Opcode.LOAD_WEIGHTS: _LW_FIELDS, Opcode.MATMUL: _MM_FIELDS, Opcode.HALT: ()}


def _used_mask(layout) -> int:
    m = 0xF
    for _, lsb, width in layout:
        m |= ((1 << width) - 1) << lsb
    return m


@dataclass(frozen=True)
class LoadWeights:
    rows: int
    cols: int
    w_addr: int = 0
    b_addr: int = 0
    s_addr: int = 0
    opcode = Opcode.LOAD_WEIGHTS


@dataclass(frozen=True)
class Matmul:
    height: int
    width: int
    in_addr: int
    out_addr: int
    mode: OutputMode = OutputMode.RELU_QUANT
    group: int = 1
    acc_in: bool = False
    shift_en: bool = False
    fill: int = 0
    in_ch: int = 0
    out_ch: int = 0
    acc_addr: int = 0
    opcode = Opcode.MATMUL

    @property
    def pixels(self) -> int:
        return self.height * self.width


@dataclass(frozen=True)
class Halt:
    opcode = Opcode.HALT


Instruction = LoadWeights | Matmul | Halt


def _field_values(instr) -> dict:
    v = {f.name: getattr(instr, f.name) for f in fields(instr)}
    if isinstance(instr, Matmul):
        v["mode"] = int(OutputMode(v["mode"]))
        v["group"] = v["group"] - 1  # encoded as G - 1
        v["acc_in"] = int(bool(v["acc_in"]))
        v["shift_en"] = int(bool(v["shift_en"]))
    return v


def encode(instr: Instruction, index=None) -> int:
    """Instruction -> 128-bit word (a Python int). Refuses values that do not fit the fields
    and unused fields that are not zero, so every encoded word decodes back to itself."""
    opcode = instr.opcode
    word = int(opcode)
    values = _field_values(instr)
    for name, lsb, width in _LAYOUT[opcode]:
        v = values[name]
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not 0 <= v < (1 << width):
            shown = v + 1 if name == "group" else v
            raise IsaError(
                ErrorCode.BAD_TILE if name in ("rows", "cols") else ErrorCode.RESERVED_BITS,
                index,
                None,
                f"{opcode.name} field {name}={shown!r} does not fit {width} bits",
            )
        word |= int(v) << lsb
    _check_unused(opcode, values, index, word)
    return word


def _check_unused(opcode, values, index, word):
    """Fields an instruction does not use must be zero (catches garbage words)."""
    if opcode != Opcode.MATMUL:
        return
    unused = []
    if not values["shift_en"] and values["fill"]:
        unused.append("fill (shift_en=0)")
    if not values["acc_in"] and values["acc_addr"]:
        unused.append("acc_addr (acc_in=0)")
    if values["mode"] in (OutputMode.RAW, OutputMode.PIXEL_SUM) and values["out_ch"]:
        unused.append("out_ch (mode writes partial sums)")
    if unused:
        raise IsaError(ErrorCode.RESERVED_BITS, index, word, f"unused field(s) not zero: {', '.join(unused)}")


def decode(word: int, index=None) -> Instruction:
    """128-bit word -> Instruction; illegal opcodes and nonzero reserved bits raise IsaError."""
    if (
        not isinstance(word, (int, np.integer))
        or isinstance(word, (bool, np.bool_))
        or not 0 <= int(word) < (1 << WORD_BITS)
    ):
        raise IsaError(ErrorCode.RESERVED_BITS, index, None, f"not a 128-bit word: {word!r}")
    word = int(word)
    try:
        opcode = Opcode(word & 0xF)
    except ValueError:
        raise IsaError(
            ErrorCode.ILLEGAL_OPCODE,
            index,
            word,
            f"opcode {word & 0xF} is not LOAD_WEIGHTS(1), MATMUL(2) or HALT(15)",
        ) from None
    layout = _LAYOUT[opcode]
    reserved = word & ~_used_mask(layout) & ((1 << WORD_BITS) - 1)
    if reserved:
        raise IsaError(
            ErrorCode.RESERVED_BITS,
            index,
            word,
            f"{opcode.name} has reserved bits set (mask 0x{reserved:032x})",
        )
    values = {name: (word >> lsb) & ((1 << width) - 1) for name, lsb, width in layout}
    _check_unused(opcode, values, index, word)
    if opcode == Opcode.LOAD_WEIGHTS:
        return LoadWeights(**values)
    if opcode == Opcode.MATMUL:
        values["mode"] = OutputMode(values["mode"])
        values["group"] += 1
        values["acc_in"] = bool(values["acc_in"])
        values["shift_en"] = bool(values["shift_en"])
        return Matmul(**values)
    return Halt()


# ----------------------------------------------------------------------------------------------
# Checks that need the array size and the decoder's state (what the RTL decoder checks)
# ----------------------------------------------------------------------------------------------
@dataclass
class DecoderState:
    """What the decoder remembers between instructions: the shape of the loaded tile."""

    tile_rows: int = 0
    tile_cols: int = 0


def _ranges_clash(a0, an, b0, bn) -> bool:
    return a0 < b0 + bn and b0 < a0 + an


def check(instr: Instruction, cfg: ArrayConfig, state: DecoderState, index=None, word=None) -> None:
    """Raise IsaError if `instr` is out of range for `cfg` given the decoder state; on success
    update the state. The RTL decoder performs exactly these checks, in this order."""

    def fail(code, msg):
        raise IsaError(code, index, word, msg)

    if isinstance(instr, LoadWeights):
        if not 1 <= instr.rows <= cfg.rows or not 1 <= instr.cols <= cfg.cols:
            fail(
                ErrorCode.BAD_TILE, f"tile {instr.rows}x{instr.cols} outside the {cfg.rows}x{cfg.cols} array"
            )
        if instr.w_addr + instr.rows > cfg.wdepth:
            fail(
                ErrorCode.WEIGHT_RANGE,
                f"weights {instr.w_addr}..{instr.w_addr + instr.rows - 1} "
                f"past weight memory ({cfg.wdepth} words)",
            )
        if instr.b_addr + instr.rows > cfg.bdepth:
            fail(
                ErrorCode.WEIGHT_RANGE,
                f"biases {instr.b_addr}..{instr.b_addr + instr.rows - 1} "
                f"past bias memory ({cfg.bdepth} words)",
            )
        if instr.s_addr >= cfg.sdepth:
            fail(
                ErrorCode.WEIGHT_RANGE, f"shift-table word {instr.s_addr} past the table ({cfg.sdepth} words)"
            )
        state.tile_rows, state.tile_cols = instr.rows, instr.cols
        return
    if isinstance(instr, Halt):
        return
    m = instr
    if state.tile_rows == 0:
        fail(ErrorCode.NO_WEIGHTS, "MATMUL before any LOAD_WEIGHTS")
    p = m.height * m.width
    if m.height < 1 or m.width < 1 or p > cfg.ddepth:
        fail(
            ErrorCode.BAD_SHAPE,
            f"input {m.height}x{m.width} is empty or larger than the data buffer ({cfg.ddepth} entries)",
        )
    slots = state.tile_cols * m.group
    if m.in_addr + p > cfg.ddepth or m.in_ch + slots > cfg.cmax:
        fail(
            ErrorCode.DBUF_RANGE,
            f"input entries {m.in_addr}..{m.in_addr + p - 1}, banks "
            f"{m.in_ch}..{m.in_ch + slots - 1} past the data buffer "
            f"({cfg.ddepth} x {cfg.cmax})",
        )
    if m.acc_in and m.acc_addr + p > cfg.pdepth:
        fail(
            ErrorCode.PBUF_RANGE,
            f"partial sums {m.acc_addr}..{m.acc_addr + p - 1} past the partial-sum buffer ({cfg.pdepth})",
        )
    if m.mode in (OutputMode.RELU_QUANT, OutputMode.BINARY):
        if m.out_addr + p > cfg.ddepth or m.out_ch + state.tile_rows > cfg.cmax:
            fail(
                ErrorCode.DBUF_RANGE,
                f"output entries {m.out_addr}..{m.out_addr + p - 1}, banks "
                f"{m.out_ch}..{m.out_ch + state.tile_rows - 1} past the data "
                f"buffer ({cfg.ddepth} x {cfg.cmax})",
            )
        if _ranges_clash(m.in_ch, slots, m.out_ch, state.tile_rows) and _ranges_clash(
            m.in_addr, p, m.out_addr, p
        ):
            fail(ErrorCode.OVERLAP, "output region overlaps the input region")
    else:
        n_out = p if m.mode == OutputMode.RAW else 1
        if m.out_addr + n_out > cfg.pdepth:
            fail(
                ErrorCode.PBUF_RANGE,
                f"outputs {m.out_addr}..{m.out_addr + n_out - 1} past the partial-sum buffer ({cfg.pdepth})",
            )
        if m.acc_in and m.out_addr != m.acc_addr and _ranges_clash(m.acc_addr, p, m.out_addr, n_out):
            fail(ErrorCode.OVERLAP, "partial-sum output overlaps its input (only in place is allowed)")


def check_program(words, cfg: ArrayConfig) -> list:
    """Decode and check a whole program as the RTL would run it; returns the instructions up to
    and including HALT. Raises IsaError naming the first bad word."""
    words = [int(w) for w in words]
    if len(words) > cfg.imem_depth:
        raise IsaError(
            ErrorCode.PC_OVERFLOW,
            len(words),
            None,
            f"{len(words)} words do not fit the {cfg.imem_depth}-word instruction memory",
        )
    state = DecoderState()
    out = []
    for i, w in enumerate(words):
        instr = decode(w, i)
        check(instr, cfg, state, i, w)
        out.append(instr)
        if isinstance(instr, Halt):
            return out
    raise IsaError(ErrorCode.PC_OVERFLOW, len(words), None, "program ends without HALT")


# ----------------------------------------------------------------------------------------------
# Text form
# ----------------------------------------------------------------------------------------------
_NAMES = {"LOAD_WEIGHTS": LoadWeights, "MATMUL": Matmul, "HALT": Halt}
_MODE_NAMES = {m.name.lower(): m for m in OutputMode}


def to_text(instr: Instruction) -> str:
    """One line of assembly, e.g. ``MATMUL height=8 width=8 ... mode=relu_quant``."""
    parts = [instr.opcode.name]
    for f in fields(instr):
        v = getattr(instr, f.name)
        if isinstance(v, OutputMode):
            v = v.name.lower()
        elif isinstance(v, bool):
            v = int(v)
        parts.append(f"{f.name}={v}")
    return " ".join(parts)


class AsmError(ValueError):
    """A line of assembly text that does not parse: names the line and the column."""


_FLAGS = ("acc_in", "shift_en")


def from_text(line: str, lineno=None) -> Instruction:
    """Parse one line of assembly (see :func:`to_text`). Every operand is NAME=VALUE, once;
    values are non-negative integers (decimal or 0x/0b/0o), flags 0 or 1, the mode a name.
    Errors (AsmError) name the line and column; range checks are encode()'s."""
    if not isinstance(line, str):
        raise AsmError(f"an assembly line must be text, got {type(line).__name__}")

    def fail(col: int, msg: str):
        where = f"line {lineno}, column {col}" if lineno is not None else f"column {col}"
        raise AsmError(f"{where}: {msg}")

    tokens = [(m.start() + 1, m.group()) for m in re.finditer(r"\S+", line)]
    if not tokens or tokens[0][1].upper() not in _NAMES:
        fail(tokens[0][0] if tokens else 1, f"expected LOAD_WEIGHTS, MATMUL or HALT, got {line.strip()!r}")
    op = tokens[0][1].upper()
    cls = _NAMES[op]
    names = {f.name for f in fields(cls)}
    kw = {}
    for col, tok in tokens[1:]:
        m = re.fullmatch(r"(\w+)=(\S+)", tok)
        if not m or m.group(1) not in names:
            fail(col, f"unknown operand {tok!r} for {op} (expected {', '.join(sorted(names)) or 'none'})")
        key, val = m.groups()
        if key in kw:
            fail(col, f"{key} is given twice")
        if key == "mode":
            if val.lower() not in _MODE_NAMES:
                fail(col, f"mode must be one of {', '.join(_MODE_NAMES)}, got {val!r}")
            kw[key] = _MODE_NAMES[val.lower()]
            continue
        try:
            v = int(val, 0)
        except ValueError:
            fail(col, f"{key} must be an integer, got {val!r}")
        if v < 0:
            fail(col, f"{key} must not be negative, got {val!r}")
        if key in _FLAGS:
            if v not in (0, 1):
                fail(col, f"{key} must be 0 or 1, got {val!r}")
            v = bool(v)
        kw[key] = v
    missing = [
        f.name
        for f in fields(cls)
        if f.name not in kw and f.default is MISSING and f.default_factory is MISSING
    ]
    if missing:
        fail(len(line.rstrip()) + 1, f"{op} needs {', '.join(missing)}")
    return cls(**kw)


def assemble(source) -> list[int]:
    """Assembly text (or a list of Instructions) -> list of 128-bit words.
    Blank lines and ``#`` comments are ignored; an error names the line (AsmError or, for a
    value that does not fit its field, IsaError)."""
    if isinstance(source, str):
        words = []
        for n, raw in enumerate(source.splitlines(), 1):
            line = raw.split("#", 1)[0].rstrip()
            if line.strip():
                ins = from_text(line, n)
                try:
                    words.append(encode(ins, len(words)))
                except IsaError as exc:
                    raise IsaError(exc.code, len(words), None, f"line {n}: {exc.detail}") from None
        return words
    return [encode(ins, idx) for idx, ins in enumerate(source)]


def disassemble(words) -> str:
    """List of 128-bit words -> assembly text, one instruction per line."""
    return "\n".join(to_text(decode(int(w), i)) for i, w in enumerate(words))


def words_to_u32(words) -> np.ndarray:
    """128-bit words -> uint32 [n, 4], least significant 32 bits first (host-port order)."""
    return np.array(
        [[(int(w) >> (32 * j)) & 0xFFFFFFFF for j in range(4)] for w in words], dtype=np.uint32
    ).reshape(-1, 4)


def slot_banks(in_ch: int, group: int, tile_cols: int, cols: int, slots: int = 8) -> np.ndarray:
    """Data-buffer bank feeding each channel slot of the array during a MATMUL, -1 for none:
    column c, slot j < G reads bank in_ch + c*G + j (c < tile_cols), every other slot reads 0.
    Equivalently, tile channel i = c*G + j comes from bank in_ch + i."""
    c = np.arange(cols)[:, None]
    j = np.arange(slots)[None, :]
    return np.where((j < group) & (c < tile_cols), in_ch + c * group + j, -1)
