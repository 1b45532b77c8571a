#!/usr/bin/env python3
"""Train a BNN or a SAC CNN with quantization-aware training and export it as ONNX + JSON card.

The same as `sacbench train`; the code is in workbench/commands/train.py."""

import sys

import _venv  # noqa: F401  (first: re-runs this with .venv's Python, scripts/_venv.py)

from workbench.commands.args import run_guarded
from workbench.commands.train import main

if __name__ == "__main__":  # exit status and one-line errors: workbench/commands/args.py
    sys.exit(run_guarded("sacbench train", main))
