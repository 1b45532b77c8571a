"""Compiler: network description -> program + buffer images for the SAC accelerator.

`fpga.lowering` decides which layers the array runs (ArrayOp) and which the host runs
(HostOp). This module turns every ArrayOp into tiles and the whole into a Program:

Tiling (docs/isa.md, "Compiling a layer"): an op with F filters and K input channels combined in
groups of G has ceil(K/G) packed columns. Filters tile over the array rows (N-tiles of `rows`
filters), packed columns over the array columns (K-tiles of `cols` columns). For every N-tile
the K-tiles run in order: the first starts the rows from the bias, later ones from the partial
sums the previous K-tile left in the partial-sum buffer, and only the last applies the op's
output mode. One LOAD_WEIGHTS + MATMUL pair per tile.

Memory plan: every tensor the array reads or writes gets its own data-buffer region, so every
array-run layer's output can be read back after a run. A tensor of C channels and P pixels is
stored in chunks of S channels (S = all of them when they fit the CMAX banks): channel c lives
in bank ch + c % S, entry addr + (c // S) * P + p. S is a multiple of the consumer's K-tile
window (cols * G) and of the producer's N-tile (rows), so no tile straddles two chunks. Raw and
pixel-sum outputs go to the partial-sum buffer, filter f in row bank f % rows.

Segments: consecutive ops that consume the previous op's output in place form one segment of
instructions ending in HALT, started at its own `start_pc`. Between segments the host runs its
layers and writes the next segment's input. `Program.plan` lists segments and host ops in order;
fpga/execute.py runs a plan on the interpreter or, through the host port, on the RTL.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fpga.arch import ArrayConfig
from fpga.cycle_model import total_cycles
from fpga.isa import Halt, LoadWeights, Matmul, check_program, encode
from fpga.lowering import ArrayOp, HostOp, LoweringError, lower
from fpga.memory import Placement
from models import ir
from models.numerics.sac import SHIFT_IDENTITY, OutputMode


class CompileError(ValueError):
    """The network cannot run on this array (names the layer and the limit)."""


@dataclass
class LayerProgram:
    """The instructions and buffers of one ArrayOp."""

    op: ArrayOp
    layer_index: int  # network layer whose golden output the op produces (op.last)
    input: Placement  # where the op reads (data buffer)
    output: Placement
    first_instr: int
    n_instr: int
    n_tiles: int
    k_tiles: int
    segment: int


@dataclass
class Segment:
    """Instructions start_pc .. start_pc + n_instr - 1 (the last is HALT), one start/done."""

    index: int
    start_pc: int
    n_instr: int = 0  # set when the segment's HALT is emitted
    layers: list = field(default_factory=list)  # indices into Program.layers


@dataclass
class Program:
    config: ArrayConfig
    network: ir.Network
    instructions: list
    words: list
    wmem: np.ndarray  # uint8 [n, cols] packed cell bytes, one word per tile row
    bmem: np.ndarray  # int32 [n]
    smem: np.ndarray  # uint8 [n, cols * 8] shift direction per window position
    layers: list  # LayerProgram per ArrayOp
    segments: list  # Segment
    plan: list  # HostOp | Segment, in execution order
    dbuf_used: int = 0
    pbuf_used: int = 0

    def cycles_per_image(self) -> int:
        """Array cycles of one image: every segment from its start to its HALT, by the cycle
        model (which the RTL meets exactly). Host layers take no array cycles."""
        return sum(
            total_cycles(self.instructions[s.start_pc : s.start_pc + s.n_instr], self.config)
            for s in self.segments
        )

    @property
    def host_layers(self) -> list:
        """Network layers the host runs (labelled "host" in reports)."""
        return [i for step in self.plan if isinstance(step, HostOp) for i in step.layers]


def _chunk(cfg: ArrayConfig, channels: int, window: int, span: int, producer_rows: int, label: str) -> int:
    """Channels per chunk: 0 (all in one) when every tile fits the CMAX banks, else the largest
    multiple of lcm(consumer window, producer rows) that does."""
    if span <= cfg.cmax and channels <= cfg.cmax:
        return 0
    step = math.lcm(window, producer_rows)
    if step > cfg.cmax:
        raise CompileError(
            f"{label}: a tile window of {window} channels and {producer_rows} "
            f"rows cannot share chunks of at most {cfg.cmax} banks"
        )
    return cfg.cmax // step * step


class _Builder:
    """Accumulates instructions and memory images while ops are emitted."""

    def __init__(self, cfg: ArrayConfig):
        self.cfg = cfg
        self.instrs, self.wrows, self.biases, self.shifts = [], [], [], []
        self.n_wrows = 0  # weight-memory words so far (wrows holds blocks of tile rows)
        self.dnext = 0  # next free data-buffer entry
        self.pnext = 0  # next free partial-sum entry (kept outputs)
        self.phigh = 0
        self.identity_word = None

    def dbuf_tensor(self, channels: int, height: int, width: int, chunk: int, label: str) -> Placement:
        """A tensor's own data-buffer region, right after the previous one."""
        pl = Placement("dbuf", self.dnext, channels, height, width, chunk=chunk)
        self.dnext += pl.entries
        if self.dnext > self.cfg.ddepth:
            raise CompileError(
                f"{label}: the data buffer needs {self.dnext} entries for all "
                f"tensors; the array has {self.cfg.ddepth}"
            )
        return pl

    def shift_words(self, op: ArrayOp, k_tiles: int) -> list:
        cfg, g, k = self.cfg, op.weights.group, op.in_channels
        words = []
        for kt in range(k_tiles):
            word = np.full(cfg.cols * 8, SHIFT_IDENTITY)  # made uint8 with the whole image
            if op.shift is None:
                if self.identity_word is None:
                    self.identity_word = len(self.shifts)
                    self.shifts.append(word)
                words.append(self.identity_word)
                continue
            # entry i steers the tile's i-th channel; padding channels keep the identity (the
            # window is cols * g channels; only the last tile's is cut, by the channel count)
            first = kt * cfg.cols * g
            last = min(k, first + cfg.cols * g)
            word[: last - first] = op.shift.directions[first:last]
            words.append(len(self.shifts))
            self.shifts.append(word)
        return words

    def emit(self, op: ArrayOp, inp: Placement, out: Placement, label: str) -> tuple:
        n_tiles, k_tiles = _tiles_of(op, self.cfg)
        scratch = self.reserve_partial_sums(op, out, n_tiles, k_tiles, label)
        self.emit_tiles(op, inp, out, scratch)
        return n_tiles, k_tiles

    def reserve_partial_sums(
        self, op: ArrayOp, out: Placement, n_tiles: int, k_tiles: int, label: str
    ) -> int:
        """The K-tile scratch entry of the op (partial-sum buffer), checked against PDEPTH."""
        cfg, p = self.cfg, op.pixels
        # in the partial-sum buffer, an N-tile's outputs take one entry per pixel, or one sum (a
        # pixel-sum placement is one pixel): the K-tile scratch goes right after all of them
        scratch = out.addr + n_tiles * out.pixels if out.space == "pbuf" else self.pnext
        pend = scratch + (p if k_tiles > 1 else 0)
        if pend > cfg.pdepth:
            raise CompileError(f"{label}: needs {pend} partial-sum entries; the array has {cfg.pdepth}")
        self.phigh = max(self.phigh, pend)
        self.pnext = scratch  # past a kept partial-sum output; unchanged otherwise
        return scratch

    def emit_tiles(self, op: ArrayOp, inp: Placement, out: Placement, scratch: int) -> None:
        """One LOAD_WEIGHTS + MATMUL per tile, the weight rows, biases and shift words."""
        cfg = self.cfg
        rows, cols = cfg.rows, cfg.cols
        cw = op.weights
        g, f = cw.group, cw.out_channels
        kc = cw.packed.shape[1]
        n_tiles, k_tiles = _tiles_of(op, cfg)
        s_words = self.shift_words(op, k_tiles)
        # weight image: tile (nt, kt) is rows nt*rows.. of packed columns kt*cols.., one word
        # per tile row, zero-padded to the array width; tiles in the order they are loaded
        padded = np.zeros((f, k_tiles * cols), dtype=np.uint8)
        padded[:, :kc] = cw.packed
        for nt in range(n_tiles):
            tr = min(rows, f - nt * rows)
            self.wrows.append(
                padded[nt * rows : nt * rows + tr]
                .reshape(tr, k_tiles, cols)
                .transpose(1, 0, 2)
                .reshape(k_tiles * tr, cols)
            )
        w_next = self.n_wrows
        self.n_wrows += f * k_tiles
        for nt in range(n_tiles):
            tr = min(rows, f - nt * rows)
            b_addr = len(self.biases)
            self.biases.extend(op.bias[nt * rows : nt * rows + tr].tolist())
            for kt in range(k_tiles):
                tc = min(cols, kc - kt * cols)
                w_addr, w_next = w_next, w_next + tr
                self.instrs.append(
                    LoadWeights(rows=tr, cols=tc, w_addr=w_addr, b_addr=b_addr, s_addr=s_words[kt])
                )
                in_ch, in_addr = inp.locate(kt * cols * g)
                # invariant of the placements (chunks are multiples of the window): never
                # fails, so a weakened copy cannot be told apart
                assert (in_ch - inp.ch) + tc * g <= inp.chunk_size or not inp.chunk  # pragma: no mutate
                last_k = kt == k_tiles - 1
                m = op.mode if last_k else OutputMode.RAW
                if not last_k:
                    o_addr, o_ch = scratch, 0
                elif out.space == "dbuf":
                    o_ch, o_addr = out.locate(nt * rows)
                else:
                    o_addr, o_ch = out.addr + nt * out.pixels, 0
                self.instrs.append(
                    Matmul(
                        height=op.height,
                        width=op.width,
                        in_addr=in_addr,
                        out_addr=o_addr,
                        mode=m,
                        group=g,
                        acc_in=kt > 0,
                        shift_en=op.shift is not None,
                        fill=int(op.shift.fill) if op.shift is not None else 0,
                        in_ch=in_ch,
                        out_ch=o_ch,
                        acc_addr=scratch if kt > 0 else 0,
                    )
                )


def _tiles_of(op: ArrayOp, cfg: ArrayConfig) -> tuple[int, int]:
    """(N-tiles, K-tiles) of an op on the array."""
    return -(-op.weights.out_channels // cfg.rows), -(-op.weights.packed.shape[1] // cfg.cols)


class _Tally:
    """Stands for a list of instructions or memory words that is only counted: len() and the
    cycles (by the cycle model) of what was added."""

    def __init__(self, cfg: ArrayConfig):
        self.cfg = cfg
        self.n = 0
        self.cycles = 0

    def __len__(self) -> int:
        return self.n

    def append(self, ins) -> None:  # the HALT that ends a segment
        self.n += 1
        self.cycles += total_cycles([ins], self.cfg)

    def add(self, n: int, cycles: int = 0) -> None:
        self.n += n
        self.cycles += cycles


class _CountingBuilder(_Builder):
    """A _Builder that places every tensor and checks every limit like the compiler, but emits
    each op's tiles only once per op shape (`memo`): the instruction count, cycles and memory
    words of an op's tiles depend on its shape only (filters, packed columns, group, pixels,
    output mode, shift or not), never on where its tensors are placed."""

    def __init__(self, cfg: ArrayConfig, memo: dict):
        super().__init__(cfg)
        self.memo = memo
        self.instrs, self.biases, self.shifts = _Tally(cfg), _Tally(cfg), _Tally(cfg)
        self.identity_used = False

    def emit_tiles(self, op: ArrayOp, inp: Placement, out: Placement, scratch: int) -> None:
        cw = op.weights
        key = (
            self.cfg.rows,
            self.cfg.cols,
            cw.out_channels,
            cw.packed.shape[1],
            cw.group,
            op.pixels,
            int(op.mode),
            op.shift is not None,
        )
        if key not in self.memo:
            real = _Builder(self.cfg)
            real.emit_tiles(op, inp, out, scratch)
            own_shifts = len(real.shifts) - (real.identity_word is not None)
            self.memo[key] = (
                len(real.instrs),
                total_cycles(real.instrs, self.cfg),
                real.n_wrows,
                len(real.biases),
                own_shifts,
                real.identity_word is not None,
            )
        n, cycles, wrows, biases, shifts, identity = self.memo[key]
        self.instrs.add(n, cycles)
        self.n_wrows += wrows
        self.biases.add(biases)
        self.shifts.add(shifts + (identity and not self.identity_used))
        self.identity_used |= identity


def _consumer_window(op: ArrayOp, cfg: ArrayConfig) -> tuple[int, int]:
    """(K-tile window in channels, channels the last window reaches) of the op's input."""
    g, kc = op.weights.group, op.weights.packed.shape[1]
    return cfg.cols * g, kc * g


def compile_network(net: ir.Network, cfg: ArrayConfig | None = None, *, encode_words: bool = True) -> Program:
    """Compile a network (SAC, or BNN lowered onto the SAC array) for an array of size `cfg`.

    With ``encode_words=False`` the instructions, memory plan and images are the same but the
    128-bit words are not encoded nor checked (``Program.words`` is empty): what the cost
    models need (cycles and energy depend on the instructions only), at a fraction of the time.
    """
    cfg = cfg or ArrayConfig()
    b = _Builder(cfg)
    lprogs, segments, plan = _compile_ops(net, cfg, b)
    words = []
    if encode_words:
        # the index only names a word in an error message; the compiler's words always encode
        words = [encode(ins, i) for i, ins in enumerate(b.instrs)]  # pragma: no mutate
        for seg in segments:
            check_program(words[seg.start_pc : seg.start_pc + seg.n_instr], cfg)
    # lower() refuses a network without an array op, so there is at least one weight block
    # and one shift word
    return Program(
        config=cfg,
        network=net,
        instructions=b.instrs,
        words=words,
        wmem=np.concatenate(b.wrows),
        bmem=np.array(b.biases, dtype=np.int32),
        smem=np.array(b.shifts, dtype=np.uint8),
        layers=lprogs,
        segments=segments,
        plan=plan,
        dbuf_used=b.dnext,
        pbuf_used=b.phigh,
    )


def network_cycles(net: ir.Network, cfg: ArrayConfig, memo: dict) -> int:
    """``compile_network(net, cfg).cycles_per_image()`` at a fraction of the time: the same
    compilation (lowering, placements, segments, every limit and its error), except that the
    tiles of an op are emitted and timed by the cycle model once per op shape and remembered
    in `memo` (a dict the caller keeps across networks). What the co-design search costs
    every sampled architecture with; tests/test_search.py holds it equal to the full compile."""
    return network_footprint(net, cfg, memo).cycles


@dataclass(frozen=True)
class Footprint:
    """What a compiled network takes of an array: cycles per image and the words each memory
    holds (the counts `fitted_config` sizes the memories from)."""

    cycles: int
    dbuf: int  # data-buffer entries per bank
    pbuf: int  # partial-sum entries per row bank
    wmem: int  # weight-memory words
    bmem: int  # bias words
    smem: int  # shift-table words
    instructions: int

    def fitted(self, rows: int, cols: int, cmax: int) -> ArrayConfig:
        """The smallest power-of-two memories (at least the minimums below) that hold it."""
        p2 = lambda n, lo: max(lo, 1 << max(0, int(n) - 1).bit_length())  # noqa: E731
        return ArrayConfig(
            rows=rows,
            cols=cols,
            cmax=cmax,
            ddepth=p2(self.dbuf, 64),
            pdepth=p2(self.pbuf, 64),
            wdepth=p2(self.wmem, 64),
            bdepth=p2(self.bmem, 64),
            sdepth=p2(self.smem, 8),
            imem_depth=p2(self.instructions, 16),
        )


def network_footprint(net: ir.Network, cfg: ArrayConfig, memo: dict) -> Footprint:
    """`network_cycles` and the memories' words of the compiled network, without emitting each
    op shape's tiles more than once (`memo`); equal to `compile_network`'s counts
    (tests/test_compiler.py)."""
    b = _CountingBuilder(cfg, memo)
    _compile_ops(net, cfg, b)
    return Footprint(
        cycles=b.instrs.cycles,
        dbuf=b.dnext,
        pbuf=b.phigh,
        wmem=b.n_wrows,
        bmem=len(b.biases),
        smem=len(b.shifts),
        instructions=len(b.instrs),
    )


def _compile_ops(net: ir.Network, cfg: ArrayConfig, b: _Builder) -> tuple:
    """Places and emits every op of the network into b, checks the memories' limits;
    (layer programs, segments, plan)."""
    try:
        ops = lower(net)
    except LoweringError as exc:
        raise CompileError(str(exc)) from None
    lprogs, segments, plan = [], [], []
    for j, op in enumerate(ops):
        if isinstance(op, HostOp):
            plan.append(op)
            continue
        lab = net.layers[op.first].label(op.first)
        window, span = _consumer_window(op, cfg)
        if op.in_place:
            # the lowering sets in_place only right after an ArrayOp whose output is in the
            # data buffer (uint8 or binary): the op just compiled
            inp = lprogs[-1].output
            if inp.chunk and (inp.chunk % window):
                # unreachable: that output's chunks were sized for this op's window
                raise CompileError(  # pragma: no mutate
                    f"{lab}: input chunks of {inp.chunk} channels do not align with the "
                    f"{window}-channel tile window"
                )
        else:
            chunk = _chunk(cfg, op.in_channels, window, span, 1, lab)
            inp = b.dbuf_tensor(op.in_channels, op.height, op.width, chunk, lab)
            segments.append(Segment(len(segments), len(b.instrs)))
            plan.append(segments[-1])
        # output placement
        if op.mode == OutputMode.PIXEL_SUM:
            out = Placement("pbuf", b.pnext, op.out_channels, 1, 1, pixel_sum=True)
        elif op.mode == OutputMode.RAW:
            out = Placement("pbuf", b.pnext, op.out_channels, op.height, op.width)
        else:
            nxt = ops[j + 1] if j + 1 < len(ops) else None
            if isinstance(nxt, ArrayOp) and nxt.in_place:
                nwin, nspan = _consumer_window(nxt, cfg)
            else:
                nwin, nspan = 1, op.out_channels
            chunk = _chunk(cfg, op.out_channels, nwin, max(nspan, op.out_channels), cfg.rows, lab)
            out = b.dbuf_tensor(op.out_channels, op.height, op.width, chunk, lab)
        first = len(b.instrs)
        n_tiles, k_tiles = b.emit(op, inp, out, lab)
        seg = segments[-1]
        lprogs.append(
            LayerProgram(op, op.last, inp, out, first, len(b.instrs) - first, n_tiles, k_tiles, seg.index)
        )
        seg.layers.append(len(lprogs) - 1)
        # the segment ends here unless the next op reads this output in place
        nxt = ops[j + 1] if j + 1 < len(ops) else None
        if not (isinstance(nxt, ArrayOp) and nxt.in_place):
            b.instrs.append(Halt())
            seg.n_instr = len(b.instrs) - seg.start_pc
    if len(b.instrs) > cfg.imem_depth:
        raise CompileError(
            f"{net.name}: {len(b.instrs)} instructions; the instruction memory holds {cfg.imem_depth}"
        )
    if b.n_wrows > cfg.wdepth or len(b.biases) > cfg.bdepth or len(b.shifts) > cfg.sdepth:
        raise CompileError(
            f"{net.name}: needs {b.n_wrows} weight words, {len(b.biases)} "
            f"biases, {len(b.shifts)} shift words; the array has {cfg.wdepth}, "
            f"{cfg.bdepth}, {cfg.sdepth}"
        )
    return lprogs, segments, plan


def roomy_config(rows: int, cols: int, cmax: int = 64) -> ArrayConfig:
    """A rows x cols array with memories as large as the instruction fields allow: compiles any
    network the array's tiling can take. Cycles do not depend on memory sizes, so cost models
    compile for this one."""
    return ArrayConfig(
        rows=rows,
        cols=cols,
        cmax=cmax,
        ddepth=1 << 20,
        pdepth=1 << 20,
        wdepth=1 << 22,
        bdepth=1 << 22,
        sdepth=1 << 16,
        imem_depth=1 << 20,
    )


def fitted_config(net: ir.Network, rows: int, cols: int, cmax: int = 64) -> ArrayConfig:
    """The smallest power-of-two memory sizes (at least the defaults' minimums) that hold the
    compiled network on a rows x cols array with `cmax` data-buffer banks."""
    prog = compile_network(net, roomy_config(rows, cols, cmax), encode_words=False)
    return Footprint(
        cycles=0,  # not part of the sizes
        dbuf=prog.dbuf_used,
        pbuf=prog.pbuf_used,
        wmem=len(prog.wmem),
        bmem=len(prog.bmem),
        smem=len(prog.smem),
        instructions=len(prog.instructions),
    ).fitted(rows, cols, cmax)
