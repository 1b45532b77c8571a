#!/usr/bin/env python3
"""`make coverage`: code coverage of rtl/ (Verilator, every bench) and functional coverage of
the instruction set (cocotb-coverage); `--help` for the options.

The code is in workbench/flows/coverage.py (docs/verification.md). Run it with .venv/bin/python
(or in the activated environment) so that the project's packages import."""

import sys

from workbench.flows.coverage import main

if __name__ == "__main__":  # exit status: 1 a bench failed, 2 no coverage data written
    sys.exit(main())
