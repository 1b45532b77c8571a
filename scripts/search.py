#!/usr/bin/env python3
"""Co-design search: budgeted super networks (BSN) over the workbench's own cost models.

The same as `sacbench search`; the code is in workbench/commands/search.py."""

import sys

import _venv  # noqa: F401  (first: re-runs this with .venv's Python, scripts/_venv.py)

from workbench.commands.args import run_guarded
from workbench.commands.search import main

if __name__ == "__main__":  # exit status and one-line errors: workbench/commands/args.py
    sys.exit(run_guarded("sacbench search", main))
