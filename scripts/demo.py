#!/usr/bin/env python3
"""`make demo`: the main job on the embedded default data.

The same as `sacbench demo`; the code is in workbench/commands/demo.py. Run it with
.venv/bin/python (or in the activated environment) so that the project's packages import."""

import sys

from workbench.commands.args import run_guarded
from workbench.commands.demo import main

if __name__ == "__main__":  # exit status and one-line errors: workbench/commands/args.py
    sys.exit(run_guarded("demo", main))
