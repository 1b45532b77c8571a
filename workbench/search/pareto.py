"""The accuracy/cost Pareto front (BSN's model selection): a model is on the front when no
other model is at least as accurate and at most as costly, and strictly better in one."""

from __future__ import annotations


def dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """(accuracy, cost) a dominates b: a is no worse in both and better in one."""
    return a[0] >= b[0] and a[1] <= b[1] and (a[0] > b[0] or a[1] < b[1])


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the non-dominated (accuracy, cost) points, by increasing cost. Exact
    duplicates are all kept (neither dominates the other)."""
    keep = [
        i for i, p in enumerate(points) if not any(dominates(q, p) for j, q in enumerate(points) if j != i)
    ]
    return sorted(keep, key=lambda i: (points[i][1], -points[i][0]))
