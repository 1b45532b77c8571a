"""Compiler: network description -> program + buffer images for the SAC accelerator.

Tiling (docs/isa.md, "Compiling a layer"): a PointwiseConv with F filters and K input channels
combined in groups of G has ceil(K/G) packed columns. Filters are tiled over the array rows
(N-tiles of `rows` filters) and packed columns over the array columns (K-tiles of `cols`
columns). For every N-tile the K-tiles run in order: the first starts the rows from the bias,
later ones from the partial sums the previous K-tile left in the partial-sum buffer, and only
the last applies the layer's output mode. One LOAD_WEIGHTS + MATMUL pair per tile.

Fusion: a ChannelShift directly before a PointwiseConv becomes the MATMUL's shift_en with the
directions in the shift table; a PixelSum after a raw PointwiseConv becomes pixel-sum mode.
SpaceToDepth layers at the start run on the host while the input is written.

Memory plan: the input and every layer output get their own data-buffer region (entries
`addr .. addr+P-1` of banks `0 .. C-1`), so every layer's output can be read back after a run.
Raw and pixel-sum outputs go to the partial-sum buffer, filter f in row bank f % rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from models import ir
from models.arch import ArrayConfig
from models.golden import check_input, run_layer
from models.isa import Halt, LoadWeights, Matmul, check_program, encode
from models.numerics.sac import SHIFT_IDENTITY, OutputMode


class CompileError(ValueError):
    """The network cannot run on this array (names the layer and the limit)."""


@dataclass
class Placement:
    """Where a tensor lives in the accelerator's buffers after a run.

    space "dbuf": channel c, pixel p at data-buffer bank ch + c, entry addr + p (uint8).
    space "pbuf": filter f at partial-sum bank f % rows, entry addr + (f // rows) * P + p (raw),
    or addr + f // rows (pixel-sum, P = 1).
    """
    space: str
    addr: int
    channels: int
    height: int
    width: int
    ch: int = 0
    pixel_sum: bool = False

    @property
    def pixels(self) -> int:
        return self.height * self.width


@dataclass
class LayerProgram:
    """The instructions and output location of one array-run layer of the network."""
    layer_index: int          # index in network.layers of the layer whose output this is
    first_instr: int
    n_instr: int
    output: Placement
    n_tiles: int
    k_tiles: int


@dataclass
class Program:
    config: ArrayConfig
    network: ir.Network
    instructions: list
    words: list
    wmem: np.ndarray              # uint8 [n, cols] packed cell bytes, one word per tile row
    bmem: np.ndarray              # int32 [n]
    smem: np.ndarray              # uint8 [n, cols * 8] shift direction of every channel slot
    host_layers: int              # leading layers (SpaceToDepth) run on the host
    input: Placement
    layers: list = field(default_factory=list)   # LayerProgram per array-run layer
    dbuf_used: int = 0
    pbuf_used: int = 0

    def host_preprocess(self, x) -> np.ndarray:
        """Run the host-side leading layers (input reshaping) on a batch [N, C, H, W]."""
        cur = check_input(self.network, x)
        for layer in self.network.layers[:self.host_layers]:
            cur = run_layer(layer, cur)
        return cur

    def layer_for_instruction(self, i: int) -> int | None:
        for lp in self.layers:
            if lp.first_instr <= i < lp.first_instr + lp.n_instr:
                return lp.layer_index
        return None


def gather(placement: Placement, dbuf: np.ndarray, pbuf: np.ndarray, rows: int) -> np.ndarray:
    """Read one image's tensor from buffer snapshots (dbuf [cmax, ddepth], pbuf [rows, pdepth]).

    Returns [C, H, W] (uint8 from dbuf, int32 raw from pbuf) or [C] for pixel-sum outputs.
    The interpreter and the RTL bench both read results through this one function.
    """
    pl = placement
    if pl.space == "dbuf":
        a = dbuf[pl.ch:pl.ch + pl.channels, pl.addr:pl.addr + pl.pixels]
        return a.reshape(pl.channels, pl.height, pl.width).astype(np.uint8)
    f = np.arange(pl.channels)
    per_tile = 1 if pl.pixel_sum else pl.pixels
    entries = pl.addr + (f // rows)[:, None] * per_tile + np.arange(per_tile)[None, :]
    vals = pbuf[(f % rows)[:, None], entries].astype(np.int32)
    return vals[:, 0] if pl.pixel_sum else vals.reshape(pl.channels, pl.height, pl.width)


def _segments(net: ir.Network):
    """Split the layer list into host prefix + array segments (shift?, conv, pixelsum?)."""
    layers = net.layers
    i = 0
    while i < len(layers) and isinstance(layers[i], ir.SpaceToDepth):
        i += 1
    host = i
    segs = []
    while i < len(layers):
        shift = None
        if isinstance(layers[i], ir.ChannelShift):
            shift = layers[i]
            i += 1
        if i >= len(layers) or not isinstance(layers[i], ir.PointwiseConv):
            bad = layers[i] if i < len(layers) else layers[i - 1]
            idx = i if i < len(layers) else i - 1
            what = "must be followed by a PointwiseConv" if shift is not None else \
                "cannot run on the SAC array (it runs ChannelShift -> PointwiseConv -> PixelSum)"
            raise CompileError(f"{bad.label(idx)} {what}")
        conv_i = i
        i += 1
        psum = False
        if i < len(layers) and isinstance(layers[i], ir.PixelSum):
            if layers[conv_i].mode != OutputMode.RAW:
                raise CompileError(f"{layers[i].label(i)} needs a raw PointwiseConv before it")
            psum = True
            i += 1
        segs.append((shift, conv_i, psum, i - 1))
    return host, segs


def compile_network(net: ir.Network, cfg: ArrayConfig | None = None) -> Program:
    """Compile a SAC network (uint8 input) into a program for an array of size `cfg`."""
    cfg = cfg or ArrayConfig()
    if net.input_kind != "uint8":
        raise CompileError(f"the SAC array takes uint8 input, {net.name} takes {net.input_kind}")
    host, segs = _segments(net)
    if not segs:
        raise CompileError(f"{net.name} has no layer the array can run")
    rows, cols = cfg.rows, cfg.cols

    instrs, wrows, biases, shifts, lprogs = [], [], [], [], []
    c0, h0, w0 = net.shapes[host][0]
    if c0 > cfg.cmax:
        raise CompileError(f"the input has {c0} channels; the data buffer has {cfg.cmax} banks")
    inp = Placement("dbuf", 0, c0, h0, w0)
    dnext = inp.pixels
    pnext = phigh = 0
    cur = inp
    identity_word = None

    for shift, ci, psum, last_i in segs:
        conv: ir.PointwiseConv = net.layers[ci]
        lab = conv.label(ci)
        cw = conv.weights
        g, k, f = cw.group, cw.in_channels, cw.out_channels
        kc = cw.packed.shape[1]
        p = cur.pixels
        if kc * g > cfg.cmax:
            raise CompileError(f"{lab}: {k} channels in groups of {g} need {kc * g} data-buffer "
                               f"banks; the array has {cfg.cmax}")
        n_tiles, k_tiles = -(-f // rows), -(-kc // cols)
        mode = conv.mode
        if psum:
            out = Placement("pbuf", pnext, f, 1, 1, pixel_sum=True)
            scratch = pnext + n_tiles
        elif mode == OutputMode.RAW:
            out = Placement("pbuf", pnext, f, cur.height, cur.width)
            scratch = pnext + n_tiles * p
        else:
            if f > cfg.cmax:
                raise CompileError(f"{lab}: {f} output channels; the data buffer has {cfg.cmax} banks")
            out = Placement("dbuf", dnext, f, cur.height, cur.width)
            dnext += p
            scratch = pnext
        pend = scratch + (p if k_tiles > 1 else 0)
        if pend > cfg.pdepth:
            raise CompileError(f"{lab}: needs {pend} partial-sum entries; the array has {cfg.pdepth}")
        if dnext > cfg.ddepth:
            raise CompileError(f"{lab}: the data buffer needs {dnext} entries for all layer "
                               f"outputs; the array has {cfg.ddepth}")
        final_mode = OutputMode.PIXEL_SUM if psum else mode

        # shift-table words, one per K-tile: entry i holds the direction of the tile's i-th
        # channel (in_ch + i); padding channels of a partial last group keep the identity
        s_words = []
        for kt in range(k_tiles):
            word = np.full(cols * 8, SHIFT_IDENTITY, dtype=np.uint8)
            if shift is not None:
                first = kt * cols * g
                chunk = shift.directions[first:min(k, first + cols * g)]
                word[:len(chunk)] = chunk
                s_words.append(len(shifts))
                shifts.append(word)
            else:
                if identity_word is None:
                    identity_word = len(shifts)
                    shifts.append(word)
                s_words.append(identity_word)

        first = len(instrs)
        for nt in range(n_tiles):
            tr = min(rows, f - nt * rows)
            b_addr = len(biases)
            biases.extend(int(v) for v in conv.bias[nt * rows:nt * rows + tr])
            for kt in range(k_tiles):
                tc = min(cols, kc - kt * cols)
                w_addr = len(wrows)
                for r in range(tr):
                    row = np.zeros(cols, dtype=np.uint8)
                    row[:tc] = cw.packed[nt * rows + r, kt * cols:kt * cols + tc]
                    wrows.append(row)
                instrs.append(LoadWeights(rows=tr, cols=tc, w_addr=w_addr, b_addr=b_addr,
                                          s_addr=s_words[kt]))
                last_k = kt == k_tiles - 1
                m = final_mode if last_k else OutputMode.RAW
                if not last_k:
                    o_addr, o_ch = scratch, 0
                elif out.space == "dbuf":
                    o_addr, o_ch = out.addr, nt * rows
                else:
                    o_addr, o_ch = out.addr + nt * (1 if psum else p), 0
                instrs.append(Matmul(
                    height=cur.height, width=cur.width, in_addr=cur.addr, out_addr=o_addr,
                    mode=m, group=g, acc_in=kt > 0, shift_en=shift is not None,
                    fill=int(shift.fill) if shift is not None else 0,
                    in_ch=cur.ch + kt * cols * g, out_ch=o_ch,
                    acc_addr=scratch if kt > 0 else 0))
        phigh = max(phigh, pend)
        if out.space == "pbuf":          # keep raw outputs; scratch is free for later layers
            pnext = scratch
        lprogs.append(LayerProgram(last_i, first, len(instrs) - first, out, n_tiles, k_tiles))
        cur = out     # a raw (int) output can only be last: Network validation ensures it
    instrs.append(Halt())
    if len(instrs) > cfg.imem_depth:
        raise CompileError(f"{net.name}: {len(instrs)} instructions; the instruction memory holds "
                           f"{cfg.imem_depth}")
    if len(wrows) > cfg.wdepth or len(biases) > cfg.bdepth or len(shifts) > cfg.sdepth:
        raise CompileError(f"{net.name}: needs {len(wrows)} weight words, {len(biases)} biases, "
                           f"{len(shifts)} shift words; the array has {cfg.wdepth}, {cfg.bdepth}, "
                           f"{cfg.sdepth}")
    words = [encode(ins, i) for i, ins in enumerate(instrs)]
    check_program(words, cfg)
    return Program(
        config=cfg, network=net, instructions=instrs, words=words,
        wmem=np.array(wrows, dtype=np.uint8).reshape(-1, cols),
        bmem=np.array(biases, dtype=np.int32),
        smem=np.array(shifts, dtype=np.uint8).reshape(-1, cols * 8),
        host_layers=host, input=inp, layers=lprogs, dbuf_used=dnext, pbuf_used=phigh)
