#!/usr/bin/env python3
"""`make formal`: formal proofs of rtl/ modules with SymbiYosys (the properties in formal/);
`--help` for the options.

The code is in workbench/flows/formal.py (docs/verification.md, "Formal proofs")."""

import sys

import _venv  # noqa: F401  (first: re-runs this with .venv's Python, scripts/_venv.py)

from workbench.commands.args import run_guarded
from workbench.flows.formal import main

if __name__ == "__main__":  # exit status and one-line errors: workbench/commands/args.py
    sys.exit(run_guarded("formal", main))
