"""Time left, from measured times only: the compare job's RTL images (shards running at once,
workbench/rtl_shards.py) and a search's epochs (workbench/search/ray_backend.py).

No estimate comes from a constant speed, and none exists before the first unit (an image, an
epoch) has finished: until then the callers say nothing about the time left. The clock is the
caller's (`now` arguments), so that the estimates are tested with made-up times. A time for a
person is written by tb.sim's `duration` (also the build lines'), imported here.
"""

from __future__ import annotations

import math

from tb.sim import duration


def about(seconds: float) -> str:
    """An estimate for a person: "~45 s", "~12 min", "under 1 s"."""
    return duration(seconds) if seconds < 1 else f"~{duration(seconds)}"


class Lanes:
    """Units (images) that run in lanes at once (the RTL shards, each a simulator process
    that runs its images one after the other), all started at `start`.

    A lane's time per unit is measured on the lane itself: the time of its first finished
    unit(s) from `start` (start-up included), then, once more have finished, the mean time
    of the units after those. A lane that has finished none yet is taken to be as slow as the
    slowest lane measured. The time left is the longest lane's: time per unit x its units left,
    less the time since its last unit finished (or since `start`). None until a unit has
    finished in some lane."""

    def __init__(self, sizes: list[int], start: float):
        self.sizes = [int(s) for s in sizes]
        self.start = start
        self.done = [0] * len(self.sizes)  # finished units per lane
        self.first = [None] * len(self.sizes)  # (time, count) when a lane first had finished units
        self.last = [start] * len(self.sizes)  # time of a lane's last finished unit

    def update(self, now: float, done: list[float]) -> None:
        """`done[i]`: the units lane i has done (a fraction for the one it is in)."""
        for i, d in enumerate(done):
            finished = min(self.sizes[i], int(math.floor(float(d) + 1e-9)))
            if finished > self.done[i]:
                if self.first[i] is None:
                    self.first[i] = (now, finished)
                self.done[i], self.last[i] = finished, now

    def per_unit(self, i: int) -> float | None:
        """Lane i's measured seconds per unit; None before its first finished unit."""
        if self.first[i] is None:
            return None
        t1, k1 = self.first[i]
        if self.done[i] == k1:
            return (t1 - self.start) / k1
        return (self.last[i] - t1) / (self.done[i] - k1)

    def finished(self) -> int:
        return sum(self.done)

    def left_s(self, now: float) -> float | None:
        """Seconds until the last lane is done; None before any unit has finished."""
        measured = [p for p in (self.per_unit(i) for i in range(len(self.sizes))) if p is not None]
        if not measured:
            return None
        slowest = max(measured)
        left = 0.0
        for i, size in enumerate(self.sizes):
            units = size - self.done[i]
            if units <= 0:
                continue
            per = self.per_unit(i)
            per = slowest if per is None else per
            left = max(left, per * units - (now - self.last[i]))
        return max(0.0, left)


def work_left_s(unit_s: list[float], units_left: float, parallel: int) -> float | None:
    """Seconds for `units_left` units of work (epochs) that took `unit_s` each so far on
    average, `parallel` at a time; None before any unit has been measured."""
    if not unit_s:
        return None
    return sum(unit_s) / len(unit_s) * max(0.0, units_left) / max(1, parallel)


class SearchPhases:
    """The time left of a search's two phases, from its epochs' measured times, `parallel`
    Ray Tune trials at a time:

    - "super networks": `super_epochs` epochs in all (the unfinished trials' super networks),
      each trial `trial_epochs` of them;
    - "final trainings": `trainings` trainings in all (the trials' seeds and the baselines'),
      each as many epochs as the longest one that has finished here (every final training of
      a search follows the same recipe); no estimate before one has finished. A running
      training's epochs left take its own measured time per epoch (architectures differ in
      size), the waiting ones' the mean of all.

    Each phase's time is the work left in it at its measured time per epoch, as if it had the
    trials to itself; the two share them, so the whole search takes about their sum."""

    SUPER, FINAL = "super networks", "final trainings"

    def __init__(self, super_epochs: int, trial_epochs: int, trainings: int, parallel: int):
        self.super_epochs, self.trial_epochs = int(super_epochs), max(1, int(trial_epochs))
        self.trainings, self.parallel = int(trainings), max(1, int(parallel))
        self.super_s: list[float] = []  # measured seconds of the super-network epochs
        self.final_s: list[float] = []  # ... of the final trainings' epochs
        self.running: dict = {}  # final training (any key) -> [epochs seen, their measured seconds]
        self.finished_epochs: list[int] = []  # epochs of each final training finished here
        self.trainings_done = 0

    def super_epoch(self, seconds: float) -> None:
        self.super_s.append(float(seconds))

    def final_epoch(self, training, seconds: float | None) -> None:
        """An epoch of final training `training` (a key) finished; `seconds`: its measured time
        (None: not measured, e.g. the first epoch of a resumed training)."""
        seen = self.running.setdefault(training, [0, []])
        seen[0] += 1
        if seconds is not None:
            self.final_s.append(float(seconds))
            seen[1].append(float(seconds))

    def training_done(self, training) -> None:
        """Final training `training` has finished (or was read back: no epochs)."""
        epochs = self.running.pop(training, [0, []])[0]
        self.trainings_done += 1
        if epochs:
            self.finished_epochs.append(epochs)

    def left_s(self) -> dict:
        """{phase: seconds left} of the phases with an estimate (and work left)."""
        out = {}
        left = self.super_epochs - len(self.super_s)
        trials = math.ceil(left / self.trial_epochs) if left > 0 else 0
        est = work_left_s(self.super_s, left, min(self.parallel, max(1, trials)))
        if est is not None and left > 0:
            out[self.SUPER] = est
        if self.finished_epochs and self.final_s:
            per = max(self.finished_epochs)
            mean = sum(self.final_s) / len(self.final_s)
            waiting = max(0, self.trainings - self.trainings_done - len(self.running))
            work = per * waiting * mean  # epoch-seconds
            for n, own in self.running.values():
                work += max(0, per - n) * (sum(own) / len(own) if own else mean)
            units = waiting + len(self.running)
            if work > 0:
                out[self.FINAL] = work / min(self.parallel, max(1, units))
        return out

    def line(self) -> str:
        """The phases with an estimate, as "left: super networks ~3 min, final trainings
        ~12 min"; "" while none has one."""
        parts = [f"{phase} {about(s)}" for phase, s in self.left_s().items()]
        return f"left: {', '.join(parts)}" if parts else ""
