#!/usr/bin/env python3
"""`make timing SHAPE=8x8`: Fmax, utilisation and the critical path by block of one accelerator
top on the ECP5 (the code is in workbench/flows/timing.py)."""

import sys

from workbench.flows.timing import main

if __name__ == "__main__":
    sys.exit(main())
