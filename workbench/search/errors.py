"""The search's error types, in one module every other may import (no import cycles)."""

from __future__ import annotations


class CostError(ValueError):
    """A cost that cannot be computed for this family or architecture (names both)."""


class SearchError(Exception):
    """Bad search options or an unusable environment: one clear line (exit 2)."""


class TrialFailed(Exception):
    """A trial raised: the finished ones are written, the search fails (exit 3)."""
