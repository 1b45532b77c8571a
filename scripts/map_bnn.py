#!/usr/bin/env python3
"""Map a BNN's layers to the CPU or a GPU configuration (HEP-BNN's Algorithm 1 and a
transfer-aware DP).

The same as `sacbench map`; the code is in workbench/commands/map.py. Run it with
.venv/bin/python (or in the activated environment) so that the project's packages import."""
import sys

from workbench.commands.map import main

if __name__ == "__main__":
    sys.exit(main())
