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


def _span(works: list[float], parallel: int) -> float:
    """Seconds for the lanes' `works` (seconds of work each), `parallel` lanes at a time: the
    longest lane's work (its units run one after the other), or all the work shared among the
    lanes that have some (at most `parallel` of them at once), whichever is longer."""
    works = [w for w in works if w > 0]
    if not works:
        return 0.0
    return max(max(works), sum(works) / min(max(1, parallel), len(works)))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


class _Lane:
    """One Ray Tune trial of a search: its super network's epochs left, then its final
    trainings (indices 0..trainings-1), one after the other."""

    def __init__(self, super_epochs: int, trainings: int):
        self.super_left, self.trainings = max(0, int(super_epochs)), max(0, int(trainings))
        self.current = None  # index of the final training running now
        self.next = 0  # index of the first final training not started
        self.epochs, self.seconds = 0, []  # the running training's epochs seen, their measured times


class SearchPhases:
    """The time left of a search, from its epochs' measured times. Its work runs in lanes,
    `parallel` at a time: a lane is one Ray Tune trial, either a search trial (its super
    network's epochs, then its final trainings one after the other: the seeds of
    workbench/search/trial.py, or the fabric's one training) or a baseline's job (one final
    training).

    - "super networks": each lane's super-network epochs left at the mean measured time of a
      super-network epoch; no estimate before one has finished;
    - "final trainings": each lane's trainings to come, each as many epochs as the longest one
      that has finished here (every final training of a search follows the same recipe) at the
      mean measured time of a final-training epoch, and its running training's epochs left at
      that training's own measured time (architectures differ in size); no estimate before a
      training has finished.

    A phase's time left (`left_s`), and the whole search's (`total_s`: each lane's work in both
    phases), is the longest lane's work or the work of all lanes shared among min(parallel,
    lanes with work left), whichever is longer."""

    SUPER, FINAL = "super networks", "final trainings"

    def __init__(self, lanes: dict, parallel: int):
        """`lanes`: {name: (super-network epochs left, final trainings)} of every unfinished
        trial (a baseline's job: (0, 1))."""
        self.parallel = max(1, int(parallel))
        self.lanes = {name: _Lane(*work) for name, work in lanes.items()}
        self.super_s: list[float] = []  # measured seconds of the super-network epochs
        self.final_s: list[float] = []  # ... of the final trainings' epochs
        self.finished_epochs: list[int] = []  # epochs of each final training finished here

    def _lane(self, name) -> _Lane:
        return self.lanes.setdefault(name, _Lane(0, 1))

    def super_epoch(self, lane, seconds: float) -> None:
        """An epoch of lane `lane`'s super network finished, in `seconds`."""
        ln = self._lane(lane)
        self.super_s.append(float(seconds))
        ln.super_left = max(0, ln.super_left - 1)

    def final_epoch(self, lane, training: int, seconds: float | None) -> None:
        """An epoch of lane `lane`'s final training `training` (its index in the lane)
        finished; `seconds`: its measured time (None: not measured, e.g. the first epoch of a
        resumed training). The lane's super network is over, and so is any training before
        this one."""
        ln = self._lane(lane)
        ln.super_left = 0
        if ln.current != training:
            self._close(ln)
            ln.current, ln.next = training, max(ln.next, training + 1)
        ln.epochs += 1
        if seconds is not None:
            self.final_s.append(float(seconds))
            ln.seconds.append(float(seconds))

    def lane_done(self, lane) -> None:
        """Lane `lane` has finished (or failed): none of its work is left; the trainings it
        read back (trained before, no epochs) count as done."""
        ln = self._lane(lane)
        self._close(ln)
        ln.super_left, ln.next = 0, ln.trainings

    def _close(self, ln: _Lane) -> None:
        if ln.current is not None and ln.epochs:
            self.finished_epochs.append(ln.epochs)
        ln.current, ln.epochs, ln.seconds = None, 0, []

    def _super_work(self, ln: _Lane) -> float | None:
        if not ln.super_left:
            return 0.0
        return ln.super_left * _mean(self.super_s) if self.super_s else None

    def _final_work(self, ln: _Lane) -> float | None:
        waiting = max(0, ln.trainings - ln.next)
        if not waiting and ln.current is None:
            return 0.0
        if not (self.finished_epochs and self.final_s):
            return None
        per, mean = max(self.finished_epochs), _mean(self.final_s)
        work = waiting * per * mean
        if ln.current is not None:
            work += max(0, per - ln.epochs) * (_mean(ln.seconds) if ln.seconds else mean)
        return work

    def left_s(self) -> dict:
        """{phase: seconds left} of the phases with an estimate and work left."""
        out = {}
        for phase, work in ((self.SUPER, self._super_work), (self.FINAL, self._final_work)):
            works = [work(ln) for ln in self.lanes.values()]
            if None not in works and (span := _span(works, self.parallel)) > 0:
                out[phase] = span
        return out

    def total_s(self) -> float | None:
        """Seconds until the whole search is done (every lane's work in both phases); None
        while a phase with work left has no estimate."""
        works = []
        for ln in self.lanes.values():
            s, f = self._super_work(ln), self._final_work(ln)
            if s is None or f is None:
                return None
            works.append(s + f)
        return _span(works, self.parallel)

    def line(self) -> str:
        """The phases with an estimate, as "left: super networks ~3 min, final trainings
        ~12 min"; "" while none has one."""
        parts = [f"{phase} {about(s)}" for phase, s in self.left_s().items()]
        return f"left: {', '.join(parts)}" if parts else ""
