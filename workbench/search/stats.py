"""The statistics a search's claims rest on: intervals over training seeds, paired comparisons of
two models on the same images, rank agreement between two orderings.

Every function takes counts or per-image outcomes, never rounded percentages, and every random
draw (the bootstrap) starts from a given seed, so a report is the same every time it is made.
"""

from __future__ import annotations

import math

import numpy as np

ALPHA = 0.05  # 95% intervals; "significant" means p < ALPHA


def mean_interval(values, confidence: float = 1 - ALPHA) -> tuple[float, float, float]:
    """(mean, low, high): Student's t interval of the mean of `values` (one per training seed);
    a single value has no spread, its interval is the value itself."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        raise ValueError("no values")
    m = float(v.mean())
    if v.size == 1:
        return m, m, m
    from scipy import stats

    half = float(stats.t.ppf(0.5 + confidence / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    return m, m - half, m + half


def paired_bootstrap(a, b, rounds: int = 10_000, seed: int = 0) -> dict:
    """Model A against model B on the same images: `a`, `b` are per-image outcomes in [0, 1]
    (1 correct, 0 wrong; over several training seeds, the fraction of seeds right), the
    same images in the same order. Resamples the images with replacement `rounds` times.

    Returns `diff` (A's accuracy minus B's), its 95% interval (`low`, `high`, percentile
    bootstrap) and `p`, the two-sided p-value of "no difference" (twice the smaller share of
    resampled differences on either side of 0, at most 1)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"paired outcomes must be two equal 1-D arrays, got {a.shape} and {b.shape}")
    d = a - b
    rng = np.random.default_rng(seed)
    means = np.empty(rounds)
    for lo in range(0, rounds, 1000):  # 1,000 resamples at a time: bounded memory
        n = min(1000, rounds - lo)
        idx = rng.integers(0, d.size, size=(n, d.size))
        means[lo : lo + n] = d[idx].mean(axis=1)
    diff = float(d.mean())
    if not d.any():
        return {"diff": 0.0, "low": 0.0, "high": 0.0, "p": 1.0, "rounds": rounds}
    p = 2 * min(float((means <= 0).mean()), float((means >= 0).mean()))
    low, high = np.percentile(means, [100 * ALPHA / 2, 100 * (1 - ALPHA / 2)])
    return {"diff": diff, "low": float(low), "high": float(high), "p": min(1.0, p), "rounds": rounds}


def mcnemar(a, b) -> dict:
    """McNemar's exact test of two models' 0/1 outcomes on the same images: `only_a` images only
    A gets right, `only_b` only B; p is the two-sided binomial p-value of the discordant
    images splitting as they did if both models were equally good."""
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if a.shape != b.shape:
        raise ValueError(f"paired outcomes must have one shape, got {a.shape} and {b.shape}")
    only_a, only_b = int((a & ~b).sum()), int((~a & b).sum())
    n = only_a + only_b
    if n == 0:
        return {"only_a": 0, "only_b": 0, "p": 1.0}
    from scipy import stats

    p = float(stats.binomtest(min(only_a, only_b), n, 0.5).pvalue)
    return {"only_a": only_a, "only_b": only_b, "p": min(1.0, p)}


def verdict(comparison: dict) -> str:
    """A paired comparison in words: "better", "worse" (significant at ALPHA) or "no
    significant difference"."""
    if comparison["p"] >= ALPHA:
        return "no significant difference"
    return "better" if comparison["diff"] > 0 else "worse"


def kendall(x, y) -> dict:
    """Kendall's tau-b between two orderings of the same items, with its two-sided p-value."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.size < 2:
        raise ValueError(f"need two equal-length series of 2 or more values, got {x.shape} and {y.shape}")
    from scipy import stats

    res = stats.kendalltau(x, y)
    tau = float(res.statistic) if np.isfinite(res.statistic) else 0.0
    p = float(res.pvalue) if np.isfinite(res.pvalue) else 1.0
    return {"tau": tau, "p": p, "n": int(x.size)}
