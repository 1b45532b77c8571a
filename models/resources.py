"""What this machine can hold: the memory a run may use, read before any long work so that a run
whose inputs imply more than that is refused up front (exit 2, with the estimate) instead of
being killed by the allocator half-way."""

from __future__ import annotations

import os
from pathlib import Path


def available_memory_bytes() -> int:
    """Memory a new allocation can get now: MemAvailable of /proc/meminfo (Linux), capped by the
    process's address-space limit (ulimit -v) and a cgroup limit when one is set; elsewhere the
    physical memory."""
    limits = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    limits.append(int(line.split()[1]) * 1024)
                    break
    except OSError:
        pass
    if not limits:
        try:
            limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        except (ValueError, OSError):
            limits.append(1 << 40)
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft not in (resource.RLIM_INFINITY, -1):
            limits.append(soft)
    except (ImportError, ValueError, OSError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < (1 << 60):
            limits.append(int(text))
    return min(limits)


def gib(n: float) -> str:
    """Bytes as GiB for messages (`12.3 GiB`; small amounts in MiB)."""
    return f"{n / 2**30:,.1f} GiB" if n >= 2**30 else f"{n / 2**20:,.0f} MiB"
