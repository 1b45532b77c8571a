"""GPU energy through NVML (pynvml), when available.

NVML's total-energy counter (millijoules since the driver loaded, Volta and newer) read before
and after a run gives the energy of the whole board over that interval, idle draw included.
Without pynvml or an NVIDIA driver every reading is None; nothing here is required.
"""
from __future__ import annotations

import time


def gpu_energy_j(index: int = 0) -> float | None:
    """Total energy of GPU `index` since the driver loaded, in joules, or None."""
    try:
        import pynvml
        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            return pynvml.nvmlDeviceGetTotalEnergyConsumption(handle) / 1000.0
        finally:
            pynvml.nvmlShutdown()
    except Exception:            # no pynvml, no driver, unsupported GPU: no reading
        return None


class EnergyMeter:
    """with EnergyMeter() as e: ...; e.joules (None when NVML is not available), e.seconds."""

    def __init__(self, index: int = 0):
        self.index = index
        self.joules: float | None = None
        self.seconds = 0.0

    def __enter__(self):
        self._e0 = gpu_energy_j(self.index)
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self._t0
        e1 = gpu_energy_j(self.index)
        self.joules = None if self._e0 is None or e1 is None else e1 - self._e0
        return False
