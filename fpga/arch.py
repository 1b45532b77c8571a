"""Sizes of one accelerator instance. The RTL top's parameters mirror these fields one to one
(rtl/accelerator.v); the compiler, interpreter and cycle model read them from here, and the
benches and the compare job hand them to the simulator through :meth:`ArrayConfig.hdl_parameters`
(cocotb's runner sets them as HDL parameters and as ``PARAM_<NAME>`` environment variables, which
:meth:`ArrayConfig.from_env` reads back inside the simulator)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields

from models.numerics.sac import ACC_BITS, DATA_BITS, MAX_CODE, MAX_GROUP

# the clocks a latency may be computed at (MHz): from 1 kHz, slower than any accelerator runs,
# to 100 GHz, faster than any FPGA; outside them a --clock-mhz is a typo (5e-324, 1e308)
MIN_CLOCK_MHZ, MAX_CLOCK_MHZ = 1e-3, 1e5


@dataclass(frozen=True)
class ArrayConfig:
    rows: int = 8  # array rows = filters per tile
    cols: int = 8  # array columns = combined-channel groups per tile
    cmax: int = 64  # data-buffer banks = most channels one tensor may have
    ddepth: int = 1024  # data-buffer entries (pixels) per bank
    pdepth: int = 1024  # partial-sum buffer entries per row bank (int32)
    wdepth: int = 512  # weight-memory words (one array row of `cols` bytes each)
    bdepth: int = 512  # bias-memory words (int32)
    sdepth: int = 64  # shift-table words (cols * 8 directions of 4 bits each, by window position)
    imem_depth: int = 256  # instruction words (128 bits each)

    group_max = MAX_GROUP
    data_bits = DATA_BITS
    acc_bits = ACC_BITS
    taps = MAX_CODE

    def __post_init__(self):
        for name, value in asdict(self).items():
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"ArrayConfig.{name} must be a positive integer, got {value!r}")
        if self.rows > 255 or self.cols > 255:
            raise ValueError("rows and cols must fit the 8-bit LOAD_WEIGHTS fields (<= 255)")
        if self.cmax > 4096:
            raise ValueError("cmax must fit the 12-bit channel-offset fields (<= 4096)")

    @property
    def lanes(self) -> int:
        """Accumulator words in flight per row: a 32-bit result streams for 32 cycles while a
        new 8-bit input enters every 8, so each row interleaves 4 bit-serial lanes."""
        return self.acc_bits // self.data_bits

    def hdl_parameters(self) -> dict:
        """The RTL top's parameters (rtl/accelerator.v): ROWS, COLS, CMAX, ... IMEM_DEPTH."""
        return {f.name.upper(): getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_hdl_parameters(cls, params: dict) -> ArrayConfig:
        """Inverse of :meth:`hdl_parameters` (other keys, e.g. a bench's own, are ignored)."""
        return cls(**{f.name: int(params[f.name.upper()]) for f in fields(cls)})

    @classmethod
    def from_env(cls, environ=None) -> ArrayConfig:
        """The configuration a bench runs with, from the ``PARAM_<NAME>`` variables the cocotb
        runner sets for every HDL parameter (tb/sim.py)."""
        env = os.environ if environ is None else environ
        missing = [f"PARAM_{f.name.upper()}" for f in fields(cls) if f"PARAM_{f.name.upper()}" not in env]
        if missing:
            raise KeyError(f"the simulator environment lacks {', '.join(missing)}")
        return cls.from_hdl_parameters(
            {k[len("PARAM_") :]: v for k, v in env.items() if k.startswith("PARAM_")}
        )

    @classmethod
    def parse(cls, text: str, **kw) -> ArrayConfig:
        """'ROWSxCOLS' (e.g. '8x8') plus optional overrides."""
        try:
            r, c = (int(v) for v in text.lower().split("x"))
        except ValueError:
            raise ValueError(f"array size must look like ROWSxCOLS (e.g. 8x8), got {text!r}") from None
        return cls(rows=r, cols=c, **kw)
