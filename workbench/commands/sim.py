"""Run one RTL module's cocotb bench (tb/test_<module>.py) through pytest.

    sacbench sim accelerator --sim verilator --shape 8x8 --waves
    sacbench sim systolic_array -- -x --tb=short        # pytest options after --
    TB_SEED=1862262761 sacbench sim sdp_ram --shape 64x32bit  # replay the seed a run printed

The benches are pytest functions parametrized over simulators and HDL parameters; a test's id
names both (`test_systolic_array[verilator-8x8]`), and --sim / --shape pick by those names
exactly. This is `pytest tb/test_<module>.py` with that selection; `pytest tb/` in the
activated environment does the same for every module (`-k 8x8` selects there).

The console: pytest's report and the waveform's path on stdout; the simulator's output (the
cocotb log) on stderr; a build's output in a log file under build/sim/logs/ (its path on stderr).
"""

import argparse
import os
import signal
import sys
import threading
from pathlib import Path

import pytest

from tb.seeds import SeedError, seed_from_environment
from tb.sim import SIMULATORS
from workbench.commands.args import (
    BAD_INPUT,
    FAILURE,
    MISMATCH,
    OK,
    STOP_SIGNALS,
    ArgumentParser,
    Terminated,
    print_error,
)

TB = Path(__file__).resolve().parents[2] / "tb"
PROG = "sacbench sim"


def modules() -> list[str]:
    return sorted(p.stem[len("test_") :] for p in TB.glob("test_*.py"))


def id_parts(item) -> list[str]:
    """The parts of a parametrized test's id: ['verilator', '8x8'] for `...[verilator-8x8]`."""
    callspec = getattr(item, "callspec", None)
    return callspec.id.split("-") if callspec else []


# pytest's exit codes in the contract (workbench/commands/args.py): a failed bench is 1, an
# internal error of pytest or a bench module that does not import is 3, pytest's usage errors
# (options after --) are 2; pytest's INTERRUPTED is Ctrl-C only when it saw one (else it stands
# for errors during collection)
PYTEST_STATUS = {
    pytest.ExitCode.OK: OK,
    pytest.ExitCode.TESTS_FAILED: MISMATCH,
    pytest.ExitCode.INTERRUPTED: FAILURE,
    pytest.ExitCode.INTERNAL_ERROR: FAILURE,
    pytest.ExitCode.USAGE_ERROR: BAD_INPUT,
    pytest.ExitCode.NO_TESTS_COLLECTED: BAD_INPUT,
}


class Selection:
    """A pytest plugin keeping the tests whose id has the simulator and the shape asked for,
    as whole parts of the id (`--shape 4` does not pick `64bit`); it remembers the shapes seen
    so that a shape that matches nothing can be answered with the ones there are."""

    def __init__(self, sim: str | None, shape: str | None):
        self.sim, self.shape = sim, shape
        self.shapes: list[str] = []

    @pytest.hookimpl(tryfirst=True)  # before -k, so that every shape is seen
    def pytest_collection_modifyitems(self, config, items):
        keep, drop = [], []
        for item in items:
            parts = id_parts(item)
            shapes = [p for p in parts if p not in SIMULATORS]
            self.shapes += [s for s in shapes if s not in self.shapes]
            wanted = (self.sim is None or self.sim in parts) and (self.shape is None or self.shape in shapes)
            (keep if wanted else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep


class Stops:
    """A pytest plugin and signal handler: Ctrl-C, SIGTERM or SIGHUP while pytest runs end the
    session as pytest ends it on Ctrl-C (the running bench's clean-ups run), and are raised
    again once pytest has returned, so that the command ends with 130, 143 or 129."""

    def __init__(self):
        self.signum: int | None = None

    def _stop(self, signum, frame):
        self.signum = signum
        raise KeyboardInterrupt

    def pytest_keyboard_interrupt(self, excinfo):  # also called for pytest.exit()
        if excinfo.errisinstance(KeyboardInterrupt):
            self.signum = self.signum or signal.SIGINT

    def run(self, args: list, plugins: list) -> int:
        main_thread = threading.current_thread() is threading.main_thread()
        previous = {s: signal.signal(s, self._stop) for s in STOP_SIGNALS} if main_thread else {}
        try:
            code = pytest.main(args, plugins=[*plugins, self])
        finally:
            for s, h in previous.items():
                signal.signal(s, signal.SIG_DFL if h is None else h)
        if self.signum == signal.SIGINT:
            raise KeyboardInterrupt
        if self.signum is not None:
            raise Terminated(self.signum)
        return code


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    ap = ArgumentParser(
        prog=PROG,
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("module", help=f"RTL module with a bench: {', '.join(modules())}")
    ap.add_argument("--sim", choices=SIMULATORS, help="one simulator (default: both)")
    ap.add_argument(
        "--shape",
        help="one parameter set, by its part of the test id (e.g. 8x8; "
        "default: all; the ids: -- --collect-only)",
    )
    ap.add_argument("--waves", action="store_true", help="write a waveform (path printed)")
    ap.add_argument("-k", dest="select", help="further pytest -k selection")
    args = ap.parse_args(argv)
    if args.module not in modules():
        print_error(PROG, f"no bench tb/test_{args.module}.py (modules: {', '.join(modules())})")
        return 2
    try:
        seed_from_environment()
    except SeedError as exc:
        print_error(PROG, str(exc))
        return 2
    if args.waves:
        os.environ["WAVES"] = "1"
    selection = Selection(args.sim, args.shape)
    pytest_args = ["-s", "-q", "-p", "no:cacheprovider", str(TB / f"test_{args.module}.py")]
    if args.select:
        pytest_args += ["-k", args.select]
    code = Stops().run(pytest_args + extra, [selection])
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        asked = " and ".join(
            f"{k} {v}" for k, v in (("--sim", args.sim), ("--shape", args.shape), ("-k", args.select)) if v
        )
        shapes = (
            f"its shapes: {', '.join(selection.shapes)}"
            if selection.shapes
            else "it has one parameter set: leave --shape out"
        )
        print_error(PROG, f"no test of tb/test_{args.module}.py matches {asked} ({shapes})")
        return BAD_INPUT
    return PYTEST_STATUS.get(code, FAILURE)


if __name__ == "__main__":
    sys.exit(main())
