#!/usr/bin/env python3
"""`make lint` (RTL part) and the pre-commit hook: verilator --lint-only -Wall on every module
of rtl/, with default and overridden parameters.

The code is in workbench/flows/rtl_lint.py."""

import sys

import _venv  # noqa: F401  (first: re-runs this with .venv's Python, scripts/_venv.py)

from workbench.flows.rtl_lint import main

if __name__ == "__main__":  # exit status: 1 if any module has warnings
    sys.exit(main())
