"""Progress display for long loops: tqdm where installed (the project venv), plain lines
otherwise (the GPU machine's Python may lack it)."""
from __future__ import annotations

import sys
import time


def progress(items, desc: str = "", unit: str = "it"):
    try:
        from tqdm import tqdm
    except ImportError:
        return _plain(list(items), desc, unit)
    return tqdm(items, desc=desc, unit=unit)


def _plain(items, desc, unit):
    n, t0, last = len(items), time.perf_counter(), 0.0
    for i, item in enumerate(items):
        now = time.perf_counter()
        if now - last > 5 or i == 0:
            print(f"{desc}: {i}/{n} {unit} ({now - t0:.0f} s)", file=sys.stderr, flush=True)
            last = now
        yield item
    print(f"{desc}: {n}/{n} {unit} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
