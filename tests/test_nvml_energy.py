"""GPU energy readings (gpu_kernels/nvml_energy.py) against a fake pynvml whose counter moves in
steps, as the H200's did in the first GPU check: a single short bracket reads 0 or a whole step,
energy_per_call fills a window and divides."""

import sys
import time
import types

import pytest

from gpu_kernels import nvml_energy
from gpu_kernels.nvml_energy import EnergyMeter, energy_per_call, gpu_energy_j

STEP_S = 0.05  # the fake counter advances every 50 ms ...
WATTS = 400.0  # ... by what a 400 W board used in that step


def fake_pynvml(t0: float) -> types.ModuleType:
    m = types.ModuleType("pynvml")
    m.nvmlInit = m.nvmlShutdown = lambda: None
    m.nvmlDeviceGetHandleByIndex = lambda i: i

    def total_mj(handle):
        steps = int((time.perf_counter() - t0) / STEP_S)
        return int(steps * STEP_S * WATTS * 1000)

    m.nvmlDeviceGetTotalEnergyConsumption = total_mj
    return m


@pytest.fixture
def stepped_counter(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(time.perf_counter()))


def test_without_pynvml_nothing_is_read_and_the_work_is_not_run(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml fails
    calls = []
    reading = energy_per_call(lambda: calls.append(1))
    assert gpu_energy_j() is None and reading.joules_per_call is None
    assert calls == [] and reading.as_dict() == {"energy_j": None, "energy_calls": 0, "energy_window_s": 0.0}
    with EnergyMeter() as m:
        pass
    assert m.joules is None


def test_a_short_bracket_reads_a_whole_step_or_nothing(stepped_counter):
    """The fault energy_per_call exists for: 1 ms of work reads 0 J or 20 J, never ~0.4 J."""
    with EnergyMeter() as m:
        time.sleep(0.001)
    assert m.joules in (0.0, pytest.approx(STEP_S * WATTS))


def test_energy_per_call_fills_the_window_and_averages(stepped_counter):
    work_s, window_s = 0.002, 0.6
    reading = energy_per_call(lambda: time.sleep(work_s), window_s=window_s)
    assert reading.seconds >= window_s and reading.calls >= 2
    per_call_true = WATTS * reading.seconds / reading.calls
    # at most one step of error over the window
    assert reading.joules_per_call == pytest.approx(per_call_true, abs=STEP_S * WATTS / reading.calls + 1e-9)
    assert reading.as_dict()["energy_calls"] == reading.calls


def test_work_longer_than_the_window_runs_once(stepped_counter):
    reading = energy_per_call(lambda: time.sleep(0.03), window_s=0.01)
    assert reading.calls == 1


def test_the_window_is_long_enough_for_a_counter_in_tens_of_ms():
    assert nvml_energy.ENERGY_WINDOW_S >= 1.0
