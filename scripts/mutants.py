#!/usr/bin/env python3
"""`make mutants`: mutation testing of the Python models (mutmut) and of rtl/ (one-line mutants
against each module's bench); `--help` for the options.

The code is in workbench/flows/mutants.py (docs/verification.md)."""

import sys

import _venv  # noqa: F401  (first: re-runs this with .venv's Python, scripts/_venv.py)

from workbench.commands.args import run_guarded
from workbench.flows.mutants import main

if __name__ == "__main__":  # exit status and one-line errors: workbench/commands/args.py
    sys.exit(run_guarded("mutants", main))
