"""Where tensors live in the accelerator's buffers, and moving them in and out of buffer images.

A tensor of C channels and P pixels in the data buffer is stored in chunks of S channels
(S = all of them when they fit the CMAX banks): channel c lives in bank ch + c % S, entry
addr + (c // S) * P + p. Raw and pixel-sum outputs live in the partial-sum buffer, filter f in
row bank f % rows. The compiler (fpga/compiler.py) decides the placements; the interpreter, the
RTL bench and the compare job read and write tensors only through :func:`gather` and
:func:`scatter`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Placement:
    """Where one image's tensor lives in the accelerator's buffers (see the module docstring).

    space "dbuf": channel c, pixel p at bank ch + c % chunk, entry addr + (c // chunk) * P + p.
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
    chunk: int = 0  # channels per chunk in the data buffer; 0 = one chunk holds them all

    @property
    def pixels(self) -> int:
        return self.height * self.width

    @property
    def chunk_size(self) -> int:
        return self.chunk or self.channels

    @property
    def entries(self) -> int:
        """Data-buffer entries the tensor occupies."""
        return -(-self.channels // self.chunk_size) * self.pixels

    def locate(self, c: int) -> tuple[int, int]:
        """(bank, entry of pixel 0) of channel c in the data buffer."""
        s = self.chunk_size
        return self.ch + c % s, self.addr + (c // s) * self.pixels

    def banks_entries(self):
        """Arrays bank[c], entry[c, p] of every element (data buffer)."""
        c = np.arange(self.channels)
        s = self.chunk_size
        bank = self.ch + c % s
        entry = self.addr + (c // s)[:, None] * self.pixels + np.arange(self.pixels)[None, :]
        return bank, entry


def gather(pl: Placement, dbuf: np.ndarray, pbuf: np.ndarray, rows: int) -> np.ndarray:
    """Read a tensor from buffer snapshots dbuf [..., cmax, ddepth], pbuf [..., rows, pdepth]
    (optional leading batch axes). Returns [..., C, H, W] (uint8 from the data buffer, int32
    from the partial-sum buffer) or [..., C] for pixel-sum outputs. The interpreter, the RTL
    bench and the compare script all read results through this one function."""
    if pl.space == "dbuf":
        bank, entry = pl.banks_entries()
        vals = dbuf[..., bank[:, None], entry]
        return vals.reshape(vals.shape[:-2] + (pl.channels, pl.height, pl.width)).astype(np.uint8)
    f = np.arange(pl.channels)
    per_tile = 1 if pl.pixel_sum else pl.pixels
    entries = pl.addr + (f // rows)[:, None] * per_tile + np.arange(per_tile)[None, :]
    vals = pbuf[..., (f % rows)[:, None], entries].astype(np.int32)
    if pl.pixel_sum:
        return vals[..., 0]
    return vals.reshape(vals.shape[:-2] + (pl.channels, pl.height, pl.width))


def scatter(pl: Placement, dbuf: np.ndarray, x: np.ndarray) -> None:
    """Write a tensor [..., C, H, W] into a data-buffer snapshot (inverse of gather)."""
    bank, entry = pl.banks_entries()
    x = np.asarray(x, dtype=np.uint8)
    dbuf[..., bank[:, None], entry] = x.reshape(x.shape[:-3] + (pl.channels, pl.pixels))
