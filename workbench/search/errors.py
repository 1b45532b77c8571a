"""The search's error types, in one module every other may import (no import cycles)."""
from __future__ import annotations


class CostError(ValueError):
    """A cost that cannot be computed for this family or architecture (names both)."""
