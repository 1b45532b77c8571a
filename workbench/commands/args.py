"""The commands' argument parser: argparse, but a usage error is one line (the command, the
flag and what is wrong, then where to look) and exit status 2, like every other bad input."""
from __future__ import annotations

import argparse
import sys


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def finite_float(flag: str):
    """An argparse type: a finite number (refuses nan and inf, which float() accepts)."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be a number, got {text!r}") from None
        if v != v or v in (float("inf"), float("-inf")):
            raise argparse.ArgumentTypeError(f"{flag} must be a finite number, got {text!r}")
        return v
    return parse


def print_error(prog: str, message: str) -> None:
    print(f"{prog}: error: {message}", file=sys.stderr)
