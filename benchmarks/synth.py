#!/usr/bin/env python3
"""`make synth`: area and timing of the SAC array and of the whole accelerator, the full table
(the code is in workbench/flows/synth.py; `make timing` is the fast loop of one top)."""

import sys

from workbench.flows.synth import main

if __name__ == "__main__":
    sys.exit(main())
