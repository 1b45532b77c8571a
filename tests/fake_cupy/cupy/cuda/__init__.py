"""cupy.cuda, faked: devices, events (wall clock: the fake runs synchronously)."""

import time

from cupy.cuda import compiler, driver, nvrtc, runtime  # noqa: F401


class Device:
    def __init__(self, device=0):
        self.id = device
        self.compute_capability = "90"

    def synchronize(self):
        pass


class Event:
    def __init__(self, *args, **kwargs):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass


def get_elapsed_time(start, end):
    return (end.t - start.t) * 1000.0
