"""The scripts of this folder run with the project's interpreter, whatever `python3` started them.

Imported by every script before anything of the project: when the running interpreter is not
.venv's, the script re-executes itself with .venv/bin/python (same arguments, same directory).
Without a .venv, an interpreter that already imports the project (its own environment) goes on;
any other gets one line saying to run `make setup`, and exit status 2 (README "Exit status").
Standard library only: it runs before the project's packages can be imported.
"""

import importlib.util
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv"
EXIT_NO_ENVIRONMENT = 2


def ensure_project_python() -> None:
    if Path(sys.prefix).resolve() == VENV.resolve():
        return
    python = VENV / "bin" / "python"
    if python.exists():
        os.execv(str(python), [str(python), *sys.argv])
    if importlib.util.find_spec("workbench") is not None:
        return
    name = Path(sys.argv[0]).name
    sys.stderr.write(f"{name}: error: the project's environment {VENV} is missing; run `make setup` first\n")
    sys.exit(EXIT_NO_ENVIRONMENT)


ensure_project_python()
