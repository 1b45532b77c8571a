"""An in-order scoreboard: expected transactions come from a model of the input transactions
(a golden model, never a second implementation), actual ones from a monitor; each actual one
is compared with the oldest expected one by a comparison that returns the differences."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable


class ScoreboardError(AssertionError):
    """A monitor saw a transaction that differs from what the model expects (named)."""


class Scoreboard:
    def __init__(self, name: str, compare: Callable[[object, object], list[str]], log=None):
        self.name = name
        self.compare = compare  # (expected, actual) -> list of differences
        self.expected: deque = deque()
        self.matched = 0
        self.errors: list[str] = []
        self.log = log

    def expect(self, transaction) -> None:
        self.expected.append(transaction)

    def observe(self, actual) -> None:
        """Called by a monitor. Mismatches are collected (the first raises at `check`), so one
        run reports every bad transaction, not just the first."""
        if not self.expected:
            self.errors.append(f"{self.name}: unexpected transaction {actual}")
            return
        want = self.expected.popleft()
        diffs = self.compare(want, actual)
        if diffs:
            self.errors.append(
                f"{self.name}: transaction {self.matched + len(self.errors)}: " + "; ".join(diffs)
            )
        else:
            self.matched += 1

    def check(self) -> int:
        """Raise if anything differed or an expected transaction never came; return the number
        of matched transactions."""
        if self.expected:
            self.errors.append(
                f"{self.name}: {len(self.expected)} expected transactions never "
                f"seen, first {self.expected[0]}"
            )
        if self.errors:
            raise ScoreboardError(f"{len(self.errors)} scoreboard errors, first: {self.errors[0]}")
        if self.log is not None:
            self.log.info(f"{self.name}: {self.matched} transactions matched")
        return self.matched
