#!/usr/bin/env python3
"""`make lint` (RTL part) and the pre-commit hook: verilator --lint-only -Wall on every module
of rtl/, with default and overridden parameters.

The code is in workbench/flows/rtl_lint.py. Run it with .venv/bin/python (or in the activated
environment) so that the project's packages import."""

import sys

from workbench.flows.rtl_lint import main

if __name__ == "__main__":  # exit status: 1 if any module has warnings
    sys.exit(main())
