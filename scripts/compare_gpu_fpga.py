#!/usr/bin/env python3
"""One model through every path: golden executor, GPU kernels, FPGA (RTL + cycle model).

The same as `sacbench compare`; the code is in workbench/commands/compare.py."""

import sys

import _venv  # noqa: F401  (first: re-runs this with .venv's Python, scripts/_venv.py)

from workbench.commands.args import run_guarded
from workbench.commands.compare import main

if __name__ == "__main__":  # exit status and one-line errors: workbench/commands/args.py
    sys.exit(run_guarded("sacbench compare", main))
