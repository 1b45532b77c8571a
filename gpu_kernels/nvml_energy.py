"""GPU energy through NVML (pynvml), when available.

NVML's total-energy counter (millijoules since the driver loaded, Volta and newer) read before
and after a run gives the energy of the whole board over that interval, idle draw included.
Without pynvml or an NVIDIA driver every reading is None; nothing here is required.

The counter does not advance continuously: on the H200 of the first GPU check (2026-12-04) it
moved in steps, so an 18 ms run read 0.00 J and a 19 ms one 23 J (1.2 kW, above the board's
limit). A reading is therefore only taken over a window of at least `ENERGY_WINDOW_S`:
`energy_per_call` repeats the work until the window is full and divides by the repeats.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

ENERGY_WINDOW_S = 1.0  # many counter steps, so one step is a few percent at most


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
    except Exception:  # no pynvml, no driver, unsupported GPU: no reading
        return None


class EnergyMeter:
    """with EnergyMeter() as e: ...; e.joules (None when NVML is not available), e.seconds.

    One bracket: trustworthy only when the work inside lasts `ENERGY_WINDOW_S` or more (see the
    module's note); `energy_per_call` makes sure of that."""

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


@dataclass(frozen=True)
class EnergyReading:
    """Board energy of one call of the work, averaged over `calls` calls in `seconds`."""

    joules_per_call: float | None
    calls: int
    seconds: float

    def as_dict(self) -> dict:
        return {
            "energy_j": self.joules_per_call,
            "energy_calls": self.calls,
            "energy_window_s": round(self.seconds, 3),
        }


NO_READING = EnergyReading(None, 0, 0.0)  # no NVML, or not a GPU run: nothing measured


def energy_per_call(
    work: Callable[[], object], index: int = 0, window_s: float = ENERGY_WINDOW_S, max_calls: int = 100_000
) -> EnergyReading:
    """Call `work` (which must wait for the GPU before it returns) until `window_s` has passed,
    inside one NVML bracket; the energy per call. Without NVML `work` is not called at all."""
    if gpu_energy_j(index) is None:
        return NO_READING
    calls = 0
    with EnergyMeter(index) as meter:
        end = time.perf_counter() + window_s
        while True:
            work()
            calls += 1
            if calls >= max_calls or time.perf_counter() >= end:
                break
    per_call = None if meter.joules is None else meter.joules / calls
    return EnergyReading(per_call, calls, meter.seconds)
