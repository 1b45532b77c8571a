#!/usr/bin/env python3
"""`make demo`: the main job on the embedded default data.

The same as `sacbench demo`; the code is in workbench/commands/demo.py. Run it with
.venv/bin/python (or in the activated environment) so that the project's packages import."""
import sys

from workbench.commands.demo import main

if __name__ == "__main__":
    sys.exit(main())
