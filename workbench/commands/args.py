"""What every command shares: the argument parser, the exit-status contract and the wrapper that
keeps it.

The contract is written once, in EXIT_CODES and COMMAND_EXITS below: what each status means,
and which statuses each `sacbench` command returns. Every --help ends with its command's rows
(:func:`exit_status`); README "Exit status" shows the whole table (:func:`exit_status_markdown`,
and tests/test_readme.py holds the two equal). A usage error is one line (the command, the flag
and what is wrong, then where to look); so is every other error. :func:`guarded` turns anything a
command lets escape into that contract.
"""

from __future__ import annotations

import argparse
import errno
import functools
import math
import signal
import sys
import threading
import traceback

OK, MISMATCH, BAD_INPUT, FAILURE = 0, 1, 2, 3
# the signals that end a command with its clean-ups run; exit status 128 + the signal's number.
# SIGHUP is a closed terminal (or ssh session): it ends the command as SIGTERM does.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
INTERRUPTED = {s: 128 + s for s in (signal.SIGINT, *STOP_SIGNALS)}

# -- the exit-status contract, written once ---------------------------------------------------
# every status (the interruptions as one row) and what it means
EXIT_CODES: tuple[tuple[tuple[int, ...], str], ...] = (
    ((OK,), "ok"),
    ((MISMATCH,), "a path differs from the golden model"),
    (
        (BAD_INPUT,),
        "bad usage or input: a flag, a file, a model, data, an output path; found before any long work "
        "starts",
    ),
    (
        (FAILURE,),
        "an internal or tool failure: the simulator crashed, hung or timed out, a compiler failed, the "
        "disk is full, a bug",
    ),
    (
        tuple(INTERRUPTED.values()),
        "interrupted by SIGINT (Ctrl-C), SIGTERM or SIGHUP (a closed terminal); the clean-ups ran "
        "(simulators ended, temporary files removed)",
    ),
)
# the statuses each `sacbench` command returns; every one of them may also end interrupted
COMMAND_EXITS: dict[str, tuple[int, ...]] = {
    "demo": (OK, MISMATCH, BAD_INPUT, FAILURE),
    "compare": (OK, MISMATCH, BAD_INPUT, FAILURE),
    "train": (OK, BAD_INPUT, FAILURE),
    "map": (OK, BAD_INPUT, FAILURE),
    "search": (OK, MISMATCH, BAD_INPUT, FAILURE),
    "sim": (OK, MISMATCH, BAD_INPUT, FAILURE),
}
# what a status means for one command where the table's words are not exact
EXIT_DETAILS: dict[tuple[str, int], str] = {
    ("search", MISMATCH): "--verify found a model of the front that differs from its golden model",
    ("sim", MISMATCH): "a bench failed: a check against the golden model, or the bench's simulator build",
}
# the names the scripts of scripts/ gave some commands before they were `sacbench <command>`
COMMAND_ALIASES = {"compare_gpu_fpga": "compare", "map_bnn": "map"}
_ERRORS_LINE = "Errors are one line on stderr; --debug shows the traceback of an internal error."


def command_name(prog: str | None) -> str | None:
    """The `sacbench` command a program name stands for ('sacbench map', 'map_bnn', 'map' ->
    'map'), or None for a tool that is not one (mutants, ...)."""
    if not prog:
        return None
    name = prog.removeprefix("sacbench ").strip()
    name = COMMAND_ALIASES.get(name, name)
    return name if name in COMMAND_EXITS else None


def command_exits(command: str) -> set[int]:
    """Every status `command` can end with: its own and the interruptions."""
    return {*COMMAND_EXITS[command], *INTERRUPTED.values()}


def _rows(command: str | None) -> list[tuple[str, str]]:
    """(codes, meaning) of the statuses `command` returns (all of them for None)."""
    return [
        (", ".join(map(str, group)), EXIT_DETAILS.get((command, group[0]), meaning))
        for group, meaning in EXIT_CODES
        if command is None or command_exits(command) & set(group)
    ]


def exit_status(command: str | None = None, width: int = 79) -> str:
    """The exit-status table of `command`'s --help: the rows of the statuses it returns (every
    row for None: `sacbench --help`, the flows)."""
    import textwrap

    rows = _rows(command)
    indent = max(len(codes) for codes, _ in rows) + 4
    lines = ["exit status:"]
    for codes, meaning in rows:
        first, *rest = textwrap.wrap(meaning, width - indent)
        lines += [f"  {codes:<{indent - 2}}{first}", *(" " * indent + line for line in rest)]
    return "\n".join([*lines, _ERRORS_LINE])


def exit_status_markdown() -> str:
    """README "Exit status": the whole table, with the commands that return each status."""
    lines = ["| status | meaning | commands |", "| --- | --- | --- |"]
    for group, meaning in EXIT_CODES:
        users = [c for c in COMMAND_EXITS if command_exits(c) & set(group)]
        details = [f"{c}: {EXIT_DETAILS[c, group[0]]}" for c in users if (c, group[0]) in EXIT_DETAILS]
        who = "all" if len(users) == len(COMMAND_EXITS) else ", ".join(users)
        lines.append(f"| {', '.join(map(str, group))} | {'; '.join([meaning, *details])} | {who} |")
    return "\n".join(lines)


EXIT_STATUS = exit_status()  # every status: `sacbench --help`


class BadInput(Exception):
    """Bad usage or input found by a command (exit status 2): the message is the one line."""


class Terminated(BaseException):
    """SIGTERM or SIGHUP, raised in the main thread so that clean-ups run as for Ctrl-C."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Descriptions and epilogs as written; every option's default shown (unless it is None,
    False or suppressed; 0 is shown)."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False or action.default is argparse.SUPPRESS:
            return action.help
        return super()._get_help_string(action)


_contract_shown = False


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the project's conventions: a `sacbench` command's usage line reads
    `sacbench <command>` however it was started (sacbench, scripts/*.py, make); a usage error is
    one line and exit status 2; `--debug` is accepted (the wrapper reads it); the epilog ends
    with the exit statuses the command returns."""

    def __init__(self, *args, **kwargs):
        self.error_prog = kwargs.get("prog")  # the name the command's own errors carry
        self.command = command_name(self.error_prog)
        if self.command:
            kwargs["prog"] = f"sacbench {self.command}"
        table = exit_status(self.command)
        epilog = kwargs.get("epilog")
        kwargs["epilog"] = f"{epilog.rstrip()}\n\n{table}" if epilog else table
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.error_prog = self.error_prog or self.prog
        self.add_argument(
            "--debug", action="store_true", help="on an internal error, print the Python traceback"
        )

    def error(self, message: str):
        who = getattr(self, "error_prog", self.prog)  # plain argparse parsers have none
        self.exit(BAD_INPUT, f"{who}: error: {message} (see {self.prog} --help)\n")

    def print_help(self, file=None):
        global _contract_shown
        _contract_shown = True
        super().print_help(file)


# -- argparse types: checked at parse time, before any work -------------------------------------
def finite_float(
    flag: str, positive: bool = False, at_most: float | None = None, at_least: float | None = None
):
    """An argparse type: a finite number (refuses nan and inf, which float() accepts);
    optionally > 0, >= `at_least` and <= `at_most`."""

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be a number, got {text!r}") from None
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"{flag} must be a finite number, got {text!r}")
        if positive and v <= 0:
            raise argparse.ArgumentTypeError(f"{flag} must be positive, got {text!r}")
        if at_least is not None and v < at_least:
            raise argparse.ArgumentTypeError(f"{flag} must be at least {at_least:g}, got {text!r}")
        if at_most is not None and v > at_most:
            raise argparse.ArgumentTypeError(f"{flag} must be at most {at_most:g}, got {text!r}")
        return v

    return parse


SEED_MAX = 2**32 - 1  # numpy, torch and Python's random all take a seed this large
# bounds of the training flags: far beyond any sensible value, short of what exhausts memory or
# overflows (a learning rate of 1e308 trains a model of nan)
MAX_EPOCHS = 100_000
MAX_LR = 10.0
MAX_WIDTH = 4096  # channels of a layer (the array's CMAX field holds 4096)
MAX_BATCH = 65536


def int_at_least(flag: str, low: int, at_most: int | None = None):
    """An argparse type: a whole number >= low (and <= at_most). Only ASCII digits with an
    optional sign: int() would also take '1_000' and non-ASCII digits."""

    def parse(text: str) -> int:
        body = text.strip()
        digits = body[1:] if body[:1] in "+-" else body
        if not (digits.isascii() and digits.isdigit()) or len(digits) > 30:
            raise argparse.ArgumentTypeError(f"{flag} must be a whole number, got {text!r}")
        v = int(body)
        if v < low:
            raise argparse.ArgumentTypeError(f"{flag} must be at least {low}, got {v}")
        if at_most is not None and v > at_most:
            raise argparse.ArgumentTypeError(f"{flag} must be at most {at_most:,}, got {v:,}")
        return v

    return parse


def print_error(prog: str, message: str) -> None:
    print(f"{prog}: error: {one_line(message)}", file=sys.stderr)


def one_line(message: str, limit: int = 600) -> str:
    """A message on one line (an exception's text can hold several), at most `limit` chars."""
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- the wrapper --------------------------------------------------------------------------------
_depth = 0  # guarded commands running (demo runs compare: only the outer one maps)


def _split_debug(argv: list) -> tuple[list, bool]:
    """Removes --debug (before a `--`, after which options belong to another tool)."""
    end = argv.index("--") if "--" in argv else len(argv)
    head = [a for a in argv[:end] if a != "--debug"]
    return head + argv[end:], len(head) != end


def _raise_terminated(signum, frame):
    raise Terminated(signum)


def run_guarded(prog: str, main, argv=None) -> int:
    """Runs `main(argv)` under the exit-status contract: its return value (0 when None); an
    argparse exit keeps its status; BadInput -> 2; Ctrl-C -> 130, SIGTERM -> 143 and SIGHUP ->
    129 after the clean-ups of the code it interrupted; OSError ENOSPC -> 3 "disk full";
    anything else -> 3 with one line naming the exception (the traceback with --debug or
    SACBENCH_DEBUG=1)."""
    global _depth, _contract_shown
    argv, debug = _split_debug(list(sys.argv[1:] if argv is None else argv))
    if _depth:  # inside another guarded command
        return int(main(argv) or 0)
    import os

    debug = debug or os.environ.get("SACBENCH_DEBUG", "") not in ("", "0")
    in_main = threading.current_thread() is threading.main_thread()
    # every parser of the command, ours or plain argparse: a usage error is one line
    plain_error = argparse.ArgumentParser.error
    argparse.ArgumentParser.error = ArgumentParser.error
    previous = {s: signal.signal(s, _raise_terminated) for s in STOP_SIGNALS} if in_main else {}
    previous = {
        s: signal.SIG_DFL if h is None else h  # None: installed outside Python
        for s, h in previous.items()
    }
    _depth, _contract_shown = 1, False
    try:
        try:
            return int(main(argv) or 0)
        except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
            if exc.code in (0, None) and not _contract_shown and ("-h" in argv or "--help" in argv):
                print(f"\n{exit_status(command_name(prog))}")
            if exc.code is None or isinstance(exc.code, int):
                return int(exc.code or 0)
            print(f"{prog}: error: {one_line(exc.code)}", file=sys.stderr)
            return BAD_INPUT
    except BadInput as exc:
        print_error(prog, str(exc))
        return BAD_INPUT
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted (SIGINT)", file=sys.stderr)
        return INTERRUPTED[signal.SIGINT]
    except Terminated as exc:
        print(f"{prog}: terminated ({signal.Signals(exc.signum).name})", file=sys.stderr)
        return INTERRUPTED[exc.signum]
    except OSError as exc:
        if debug:
            traceback.print_exc()
        if exc.errno == errno.ENOSPC:
            print_error(
                prog,
                f"disk full{f' writing {exc.filename}' if exc.filename else ''}; "
                f"nothing half-written was kept",
            )
        else:
            print_error(prog, f"{exc}" + ("" if debug else " (--debug shows the traceback)"))
        return FAILURE
    except Exception as exc:  # noqa: BLE001 - the contract: one line, exit 3
        if debug:
            traceback.print_exc()
        print_error(
            prog,
            f"internal error: {type(exc).__name__}: {exc}"
            + ("" if debug else " (--debug shows the traceback)"),
        )
        return FAILURE
    finally:
        _depth = 0
        argparse.ArgumentParser.error = plain_error
        for s, h in previous.items():
            signal.signal(s, h)


def guarded(prog: str):
    """Decorator: `main(argv=None) -> int` under :func:`run_guarded`."""

    def wrap(main):
        @functools.wraps(main)
        def entry(argv=None) -> int:
            return run_guarded(prog, main, argv)

        entry.unguarded = main
        return entry

    return wrap
