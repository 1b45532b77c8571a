#!/usr/bin/env python3
"""`make demo`: the main job on the embedded default data.

The same as `sacbench demo`; the code is in workbench/commands/demo.py."""

import sys

import _venv  # noqa: F401  (first: re-runs this with .venv's Python, scripts/_venv.py)

from workbench.commands.args import run_guarded
from workbench.commands.demo import main

if __name__ == "__main__":  # exit status and one-line errors: workbench/commands/args.py
    sys.exit(run_guarded("sacbench demo", main))
