#!/usr/bin/env python3
"""`make coverage`: code coverage of rtl/ (Verilator, every bench) and functional coverage of
the instruction set (cocotb-coverage); `--help` for the options.

The code is in workbench/flows/coverage.py (docs/verification.md)."""

import sys

import _venv  # noqa: F401  (first: re-runs this with .venv's Python, scripts/_venv.py)

from workbench.flows.coverage import main

if __name__ == "__main__":  # exit status: 1 a bench failed, 2 no coverage data written
    sys.exit(main())
