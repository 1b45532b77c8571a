"""Progress display for long loops: tqdm where installed (the project venv), plain lines
otherwise (the GPU machine's Python may lack it) or when GPU_KERNELS_PROGRESS=plain (logs,
scripts/gpu_check.sh)."""

from __future__ import annotations

import os
import sys
import time

PLAIN_EVERY_S = 5.0


def progress(items, desc: str = "", unit: str = "it"):
    if os.environ.get("GPU_KERNELS_PROGRESS") != "plain":
        try:
            from tqdm import tqdm
        except ImportError:
            pass
        else:
            return tqdm(items, desc=desc, unit=unit)
    return _plain(list(items), desc, unit)


def _plain(items, desc, unit):
    n, t0, last = len(items), time.perf_counter(), 0.0
    for i, item in enumerate(items):
        now = time.perf_counter()
        if now - last > PLAIN_EVERY_S or i == 0:
            print(f"{desc}: {i}/{n} {unit} ({now - t0:.0f} s)", file=sys.stderr, flush=True)
            last = now
        yield item
    print(f"{desc}: {n}/{n} {unit} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
