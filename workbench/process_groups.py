"""Child processes supervised as process groups: each started in a session of its own, so that
what it starts in turn (a simulator, a compiler, mutmut's workers) belongs to its group and ends
with it, whatever ends the supervisor's wait (a failure, a timeout, Ctrl-C, SIGTERM). Read from
/proc: the scheduler states of a group's processes (a stopped one, state T, would hang a job).
Used by the RTL shards (workbench/rtl_shards.py), mutation testing (workbench/flows/mutants.py)
and the formal flow (workbench/flows/formal.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

GROUP_GONE_S = 10.0  # how long kill_group waits for a killed group's last process to end


def process_stats():
    """(pid, fields) of every process now, from /proc/PID/stat: fields after the command name,
    i.e. state, ppid, pgrp, session, ... (a process that ends while being read is left out)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        yield int(name), stat[stat.rindex(")") + 2 :].split()


def group_states(pgid: int) -> list[str]:
    """Scheduler states (R, S, T, Z, ...) of the processes in process group `pgid`."""
    return [fields[0] for _, fields in process_stats() if len(fields) > 2 and fields[2] == str(pgid)]


def wait_group_gone(pgid: int, limit_s: float = GROUP_GONE_S) -> None:
    """Waits until no process of group `pgid` runs any more (zombies aside). SIGKILL is
    delivered asynchronously: the leader is reaped at once, but a child reparented when it died
    (slower still when it was stopped) can live on a moment on a loaded machine; a caller told
    "ended" must not find it running."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if all(state in ("Z", "X") for state in group_states(pgid)):
            return
        time.sleep(0.01)


def kill_group(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    """Ends the process group `proc` leads (stopped processes too) and reaps `proc`; with
    SIGKILL, waits until the group's last process is gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
    proc.wait()
    if sig == signal.SIGKILL:
        wait_group_gone(proc.pid)


def start_group(cmd: list[str], log: Path, **popen) -> subprocess.Popen:
    """`cmd` as the leader of a new process group, its output to `log` (stdin closed)."""
    with open(log, "wb") as f:  # log: the group's output
        return subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT, start_new_session=True, **popen
        )


def wait_group(proc: subprocess.Popen, limit_s: float | None = None) -> int | None:
    """`proc`'s exit status, or None when it ran past `limit_s` (its group then killed);
    whatever else ends the wait (Ctrl-C, SIGTERM) kills the group first."""
    try:
        return proc.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        return None
    except BaseException:
        kill_group(proc)
        raise


class StopWatch:
    """Whether a process group has had a stopped process (state T, e.g. SIGSTOP) for longer
    than `grace` seconds, asked at each poll; any poll without one restarts the count."""

    def __init__(self, pgid: int, grace: float):
        self.pgid, self.grace, self.since = pgid, grace, None

    def too_long(self) -> bool:
        if "T" not in group_states(self.pgid):
            self.since = None
            return False
        now = time.perf_counter()
        self.since = self.since or now
        return now - self.since > self.grace


def end_group_when_orphaned() -> None:
    """In a child that leads its own process group: ends the group (itself included) once
    the process that started it has gone."""
    parent = os.getppid()

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os.killpg(0, signal.SIGKILL)

    threading.Thread(target=watch, daemon=True).start()
