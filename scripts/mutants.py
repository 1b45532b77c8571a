#!/usr/bin/env python3
"""`make mutants`: mutation testing of the Python models (mutmut) and of rtl/ (one-line mutants
against each module's bench); `--help` for the options.

The code is in workbench/flows/mutants.py (docs/verification.md). Run it with .venv/bin/python
(or in the activated environment) so that the project's packages import."""

import sys

from workbench.commands.args import run_guarded
from workbench.flows.mutants import main

if __name__ == "__main__":  # exit status and one-line errors: workbench/commands/args.py
    sys.exit(run_guarded("mutants", main))
