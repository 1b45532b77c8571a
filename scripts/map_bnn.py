#!/usr/bin/env python3
"""Map a BNN's layers to the CPU or a GPU configuration (HEP-BNN's Algorithm 1 and a
transfer-aware DP).

The same as `sacbench map`; the code is in workbench/commands/map.py."""

import sys

import _venv  # noqa: F401  (first: re-runs this with .venv's Python, scripts/_venv.py)

from workbench.commands.args import run_guarded
from workbench.commands.map import main

if __name__ == "__main__":  # exit status and one-line errors: workbench/commands/args.py
    sys.exit(run_guarded("sacbench map", main))
