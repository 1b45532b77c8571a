"""A Ray connection that keeps the exit-status contract (README "Exit status"): the search's
trials and the compare job's RTL shards both run inside :class:`RaySession`.

What Ray does to a command, and what the session does about it:
* `ray.init` replaces the SIGTERM handler by `sys.exit(15)` (exit 15, not 143, and no
  clean-ups of ours), Ray Tune swallows SIGINT (`fit()` returns as if the sweep were done) and
  Ray's C++ failure handler prints a stack dump on SIGTERM. The session keeps the command's own
  handlers of SIGINT, SIGTERM and SIGHUP (Ray's are switched off by environment), records
  which signal came, and runs the clean-ups once, whatever else arrives meanwhile.
* A closed terminal sends SIGHUP to the whole process group, Ray's local processes (GCS,
  raylet, workers) included, and they die of it: they are started with SIGHUP blocked, as Ray
  itself starts them with SIGINT blocked, so that the command alone decides.
* Ray writes to the console from its threads (a lost node's raylet log, Tune's tracebacks of
  failed trials, its loggers, its warnings) and from C++ (the core worker's errors, straight
  to file descriptor 2): all of it goes to the session's log file, fd 2 included; the
  command's own lines (printed by the main thread) still reach the console.
* A lost head node (GCS) makes Ray's calls wait `RAY_gcs_rpc_server_reconnect_timeout_s`
  (60 s) and then end the process with a C++ fatal error; a `ray.init` at an address where
  something answers but no Ray does can wait as long. Before joining, the address must answer
  as a gRPC server does (Ray's GCS and Ray Client both are): :class:`NotRay` at once when it
  does not. A watchdog thread raises :class:`ClusterLost` in the main thread: after the join's
  time limit (JOIN_S, CONNECT_S for a local instance), or once the GCS has not accepted a
  connection for HEAD_LOST_S.
* The main thread can be stuck in one of Ray's calls that wait for the GCS (Tune's clean-up
  removes placement groups without a timeout), where neither a signal's handler nor the
  watchdog's exception reaches it. The watchdog hears signals through the wake-up file
  descriptor, which does not need the main thread: when the main thread has not begun the
  clean-ups STUCK_S after a signal or the loss, the watchdog prints the command's one line and
  ends the process with its exit status (the output lock is the kernel's and goes with it; a
  local Ray's processes end with their parent).
* `ray.shutdown` is bounded (SHUTDOWN_S): an unreachable cluster does not hold up the exit.
"""

from __future__ import annotations

import _thread
import atexit
import logging
import os
import select
import signal
import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from workbench.cluster import check_speaks_grpc, host_port

# Ray's settings for this process, set before Ray is imported (a value the user set wins)
RAY_ENV = {
    # no C++ stack dump on the console when SIGTERM (or another fatal signal) arrives
    "RAY_DISABLE_FAILURE_SIGNAL_HANDLER": "1",
    # Tune's SIGINT handler ends fit() quietly, as if the sweep were done
    "TUNE_DISABLE_SIGINT_HANDLER": "1",
    # how long Ray's core worker retries a lost GCS before it ends the process itself: Ray's
    # default, named here because the watchdog (HEAD_LOST_S + STUCK_S) must come first
    "RAY_gcs_rpc_server_reconnect_timeout_s": "60",
    "RAY_DEDUP_LOGS": "0",
    "RAY_AIR_NEW_OUTPUT": "0",
}
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

CONNECT_S = 60.0  # ray.init starting a local instance: seconds, more on a loaded machine
JOIN_S = 30.0  # ray.init joining a cluster (with the search's working directory, a few
#                        MB to upload): longer only when something is wrong (a stuck head)
HEAD_POLL_S = 2.0  # the watchdog connects to the GCS port this often (and this long)
HEAD_LOST_S = 20.0  # no connection for this long: the head is lost (a GCS restart with
#                        fault tolerance takes seconds)
STUCK_S = 10.0  # after a signal or the loss, the main thread has this long to begin the
#                        clean-ups before the watchdog ends the process (20 + 10 < Ray's 60 s)
SHUTDOWN_S = 15.0  # ray.shutdown: a local instance ends in a few seconds, a lost cluster
#                        in about 5


class ClusterLost(BaseException):
    """Raised in the main thread by the watchdog: the Ray cluster could not be joined in time
    (`joining`), or its head stopped answering. A BaseException, so that Ray Tune's handlers of
    ordinary exceptions do not catch it."""

    def __init__(self, message: str, joining: bool = False):
        super().__init__(message)
        self.joining = joining


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class _MainThreadOnly:
    """sys.stdout or sys.stderr for the session: the main thread's writes (the command's own
    progress lines and bars) reach the console, every other thread's (Ray's listeners) go to
    the log."""

    def __init__(self, stream, log):
        self._stream, self._log = stream, log

    def write(self, text):
        if threading.current_thread() is threading.main_thread():
            return self._stream.write(text)
        return self._log.write(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        self._stream.flush()
        self._log.flush()

    def __getattr__(self, name):  # isatty, fileno, encoding: the console's
        return getattr(self._stream, name)


def _default_words(signum: int | None, lost: str | None, joining: bool) -> tuple[str, int]:
    prog = Path(sys.argv[0]).stem or "python"
    if signum:
        word = "interrupted" if signum == signal.SIGINT else "terminated"
        return f"{prog}: {word} ({signal_name(signum)})", 128 + signum
    return f"{prog}: error: {lost}", 3


class RaySession:
    """`with RaySession(log_file, what, final_words) as session: ray = session.init(...)` --
    see the module docstring. `received` is the signal that ended the session (None when none
    did); `lost` says why the watchdog fired. `final_words(signal, lost, joining)` is the
    command's one line and exit status for either, which the watchdog uses itself when the
    main thread is stuck in Ray."""

    def __init__(
        self,
        log_file: Path,
        what: str = "the Ray cluster",
        final_words: Callable[[int | None, str | None, bool], tuple[str, int]] = _default_words,
    ):
        self.log_file, self.what, self.final_words = Path(log_file), what, final_words
        self.received: int | None = None
        self.lost: str | None = None
        self._saved: dict = {}
        self._cleaning = False
        self._stop = threading.Event()
        self._watch: threading.Thread | None = None
        self._wake = None  # the wake-up fd's socket pair, and the old fd
        self._deadline: float | None = None  # ray.init must be done by then
        self._limit = CONNECT_S
        self._joining = self._lost_joining = False
        self._gcs: tuple[str, int] | None = None
        self._pending: tuple[int | None, float] | None = None  # (signal or None, since)
        self._ray = None
        self._env_set: list = []

    # -- entering and leaving -------------------------------------------------------------
    def __enter__(self):
        # for this process's Ray (read when Ray is imported and joins) and the local Ray it
        # starts; taken back at the end, with the rest
        self._env_set = [key for key in RAY_ENV if key not in os.environ]
        for key in self._env_set:
            os.environ[key] = RAY_ENV[key]
        self._install_signals()
        try:
            # first: importing Ray sets up its loggers' handlers, which the log replaces
            import ray

            self._ray = ray
            self._open_log()
            self._start_watchdog()
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(self, *exc):
        self._close()
        return False

    def _close(self) -> None:
        """The clean-ups, once: Ray shut down (bounded), the watchdog stopped, the console
        and the signal handlers given back. Signals that arrive meanwhile are recorded, not
        raised: they would cut the clean-ups short."""
        self._cleaning = True
        if self._ray is not None and self._ray.is_initialized():
            self._shutdown()
        self._stop.set()
        if self._watch is not None:
            self._watch.join(2.0)  # it wakes every 0.25 s
        self._close_log()
        for signum, handler in self._saved.items():
            signal.signal(signum, handler)
        self._saved = {}
        if self._wake is not None:
            r, w, old = self._wake
            signal.set_wakeup_fd(old)
            r.close()
            w.close()
            self._wake = None
        for key in self._env_set:
            os.environ.pop(key, None)
        self._env_set = []

    # -- connecting -----------------------------------------------------------------------
    def init(self, **kwargs):
        """ray.init(**kwargs) with Ray's logging kept off the console, an address that is no
        Ray refused at once (NotRay), bounded by JOIN_S or CONNECT_S (ClusterLost), SIGTERM
        honoured meanwhile and the processes it starts deaf to SIGHUP; then the watchdog
        watches the GCS. Returns the ray module."""
        ray = self._ray
        kwargs = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False, **kwargs}
        target = host_port(kwargs.get("address"))
        if target is not None:
            check_speaks_grpc(target)
        self._limit = JOIN_S if target is not None else CONNECT_S
        self._deadline = time.monotonic() + self._limit
        self._joining = True
        # blocked here, in the main thread that starts Ray's processes: they inherit the mask;
        # this process still hears SIGHUP through its other threads (the watchdog's)
        main = threading.current_thread() is threading.main_thread()
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP}) if main else None
        try:
            ray.init(**kwargs)
        except SystemExit as exc:
            # Ray's own handler, installed at the start of ray.init: a SIGTERM came
            if exc.code == signal.SIGTERM and signal.SIGTERM in self._saved:
                self._on_signal(signal.SIGTERM, None)
            raise
        finally:
            if mask is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            self._deadline = None
            self._joining = False
            if signal.SIGTERM in self._saved:  # ray.init replaced it
                signal.signal(signal.SIGTERM, self._on_signal)
            self._own_ray_logger()  # and removed this
        self._gcs = host_port(_gcs_address(ray, kwargs.get("address")))
        return ray

    # -- signals ----------------------------------------------------------------------------
    def _install_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may set handlers
        for signum in STOP_SIGNALS:
            self._saved[signum] = signal.getsignal(signum)
            signal.signal(signum, self._on_signal)
        r, w = socket.socketpair()
        r.setblocking(False)
        w.setblocking(False)
        self._wake = (r, w, signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=False))

    def _stops(self, signum: int) -> bool:
        """Whether `signum` ends the command (its handler was not SIG_IGN)."""
        return self._saved.get(signum, signal.SIG_IGN) not in (signal.SIG_IGN, None)

    def _on_signal(self, signum, frame):
        """Records the signal and does what the command's handler did (KeyboardInterrupt,
        the guard's Terminated); the default action becomes SystemExit(128 + signal) so that
        the clean-ups run. The watchdog's interrupt_main arrives here as SIGINT."""
        if self.lost is not None and signum == signal.SIGINT and self.received is None:
            if not self._cleaning:
                raise ClusterLost(self.lost, joining=self._lost_joining)
            return
        if self._cleaning or not self._stops(signum):
            return
        self.received = signum
        previous = self._saved[signum]
        if callable(previous):
            previous(signum, frame)
            # it returned: the command goes on, and the watchdog must not end it
            self.received, self._pending = None, None
            return
        raise SystemExit(128 + signum)

    # -- the watchdog ---------------------------------------------------------------------
    def _start_watchdog(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self._watch = threading.Thread(target=self._watchdog, name="ray-session-watchdog", daemon=True)
            self._watch.start()

    def _watchdog(self) -> None:
        unreachable_since, last_poll = None, 0.0
        while not self._stop.is_set():
            self._read_signals(0.25)
            now = time.monotonic()
            if self._pending is not None:
                if not self._cleaning and now - self._pending[1] >= STUCK_S:
                    self._end_process()
                continue
            if self._deadline is not None and now > self._deadline:
                self._fire(f"could not join {self.what} within {self._limit:.0f} s")
            if self._gcs is None or now - last_poll < HEAD_POLL_S:
                continue
            last_poll = now
            if _answers(self._gcs, HEAD_POLL_S):
                unreachable_since = None
                continue
            unreachable_since = unreachable_since or now
            if now - unreachable_since >= HEAD_LOST_S:
                host, port = self._gcs
                self._fire(
                    f"{self.what} stopped answering: its head (GCS at {host}:{port}) "
                    f"accepted no connection for {HEAD_LOST_S:.0f} s"
                )

    def _read_signals(self, timeout_s: float) -> None:
        """Waits up to timeout_s for the wake-up fd: the signals that arrived, even while the
        main thread is stuck in C code."""
        if self._wake is None:
            self._stop.wait(timeout_s)
            return
        r = self._wake[0]
        try:
            ready, _, _ = select.select([r], [], [], timeout_s)
            data = r.recv(64) if ready else b""
        except (OSError, ValueError):  # closed by _close meanwhile
            return
        for signum in data:
            if signum in STOP_SIGNALS and self._stops(signum) and self._pending is None:
                self._pending = (signum, time.monotonic())  # the main thread has STUCK_S

    def _fire(self, why: str) -> None:
        if self._stop.is_set() or self._pending is not None:
            return
        self._lost_joining = self._joining
        self.lost = why
        self._pending = (None, time.monotonic())
        if signal.SIGINT in self._saved:
            _thread.interrupt_main(signal.SIGINT)  # lands in _on_signal: ClusterLost

    def _end_process(self) -> None:
        """The main thread is stuck in Ray: the command's one line, its exit status, now."""
        signum = self._pending[0]
        joining = signum is None and self._lost_joining
        try:
            line, status = self.final_words(signum, self.lost, joining)
        except Exception:  # noqa: BLE001 - the line must come out whatever
            line, status = _default_words(signum, self.lost, joining)
        try:
            self._log.write(f"main thread stuck in Ray for {STUCK_S:.0f} s: ending the process\n")
            (self._streams[0] if hasattr(self, "_streams") else sys.stdout).flush()
        except Exception:  # noqa: BLE001 - best effort: the exit matters more
            pass
        os.write(getattr(self, "_console_fd", 2), (line + "\n").encode(errors="replace"))
        os._exit(status)

    # -- the end ----------------------------------------------------------------------------
    def _shutdown(self) -> None:
        """ray.shutdown in a thread, waited for SHUTDOWN_S: on a lost cluster it can hang
        (then Ray's exit-time shutdown, which would wait for it, is taken off too)."""
        ray = self._ray
        done = threading.Thread(target=_quiet_shutdown, args=(ray,), daemon=True)
        done.start()
        done.join(SHUTDOWN_S)
        if done.is_alive():
            atexit.unregister(ray.shutdown)
            logging.getLogger("ray").error("ray.shutdown did not finish within %.0f s", SHUTDOWN_S)

    def _open_log(self) -> None:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        # open for the session's lifetime, closed in close()
        self._log = open(self.log_file, "a", buffering=1)  # noqa: SIM115 # log: Ray's output
        logger = logging.getLogger("ray")
        self._logger_state = (logger.handlers[:], logger.level, logger.propagate)
        self._handler = logging.StreamHandler(self._log)
        self._handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        self._own_ray_logger()
        # ray.init(configure_logging=False) removes the ray logger's handlers, and a record
        # without one goes to logging's last resort, stderr: the log's during the session
        self._last_resort, logging.lastResort = logging.lastResort, self._handler
        self._streams = (sys.stdout, sys.stderr, warnings.showwarning)
        console = self._redirect_fd2()
        sys.stdout = _MainThreadOnly(sys.stdout, self._log)
        sys.stderr = _MainThreadOnly(console, self._log)
        # Ray's deprecation and future warnings, whichever thread: the log's too
        warnings.showwarning = self._warning

    def _redirect_fd2(self):
        """File descriptor 2 into the log: Ray's C++ core worker writes its errors there
        (task_manager.cc: ...), past Python. Returns the stream for the command's own
        stderr: the console, through a copy of the old fd 2, when sys.stderr wrote to it."""
        self._fd2 = os.dup(2)
        self._console_fd = self._fd2
        sys.stderr.flush()
        os.dup2(self._log.fileno(), 2)
        try:
            writes_fd2 = sys.stderr.fileno() == 2
        except (AttributeError, OSError, ValueError):  # a StringIO, pytest's capture
            writes_fd2 = False
        if not writes_fd2:
            self._console = None
            return sys.stderr
        old = sys.stderr
        # open while the session lasts, closed in close()
        self._console = open(  # noqa: SIM115 # log: the console itself
            os.dup(self._fd2),
            "w",
            buffering=1,
            encoding=old.encoding,
            errors=old.errors,
        )
        return self._console

    def _restore_fd2(self) -> None:
        if getattr(self, "_fd2", None) is None:
            return
        if self._console is not None:
            self._console.flush()
            self._console.close()
        os.dup2(self._fd2, 2)
        os.close(self._fd2)
        self._fd2 = None

    def _warning(self, message, category, filename, lineno, file=None, line=None):
        self._log.write(warnings.formatwarning(message, category, filename, lineno, line))

    def _own_ray_logger(self) -> None:
        logger = logging.getLogger("ray")
        logger.handlers, logger.propagate = [self._handler], False
        logger.setLevel(logging.INFO)

    def _close_log(self) -> None:
        if not hasattr(self, "_log"):
            return
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr, warnings.showwarning = self._streams
        self._restore_fd2()
        logging.lastResort = self._last_resort
        logger = logging.getLogger("ray")
        logger.handlers, logger.level, logger.propagate = self._logger_state
        self._log.close()
        del self._log

    def log_tail(self, lines: int = 40) -> str:
        """The end of the session's log (for a failure's log file)."""
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _quiet_shutdown(ray) -> None:
    try:
        ray.shutdown()
    except Exception as exc:  # noqa: BLE001 - a failed shutdown is logged, the command ends
        logging.getLogger("ray").error("ray.shutdown failed: %s", exc)


def _gcs_address(ray, address: str | None) -> str | None:
    """The GCS's HOST:PORT the driver is connected to (the address given, where Ray cannot
    say: a Ray Client connection)."""
    try:
        return ray.get_runtime_context().gcs_address
    except Exception:  # noqa: BLE001 - Ray Client and older Rays
        return address


def _answers(target: tuple[str, int], timeout_s: float) -> bool:
    try:
        with socket.create_connection(target, timeout=timeout_s):
            return True
    except OSError:
        return False
