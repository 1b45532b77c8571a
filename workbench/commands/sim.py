"""Run one RTL module's cocotb bench (tb/test_<module>.py) through pytest.

    sacbench sim accelerator --sim verilator --waves

The benches are pytest functions parametrized over HDL parameters and simulators, so this is
`pytest tb/test_<module>.py` with a selection; `pytest tb/` in the activated environment does
the same for every module.
"""
import argparse
import os
import sys
from pathlib import Path

from tb.sim import SIMULATORS

TB = Path(__file__).resolve().parents[2] / "tb"


def modules() -> list[str]:
    return sorted(p.stem[len("test_"):] for p in TB.glob("test_*.py"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="sacbench sim", description=__doc__.splitlines()[0])
    ap.add_argument("module", help=f"RTL module with a bench: {', '.join(modules())}")
    ap.add_argument("--sim", choices=SIMULATORS, help="one simulator (default: both)")
    ap.add_argument("--waves", action="store_true", help="write a waveform (path printed)")
    ap.add_argument("-k", dest="select", help="further pytest -k selection (e.g. a shape: 8x8)")
    args = ap.parse_args(argv)
    if args.module not in modules():
        print(f"sacbench sim: no bench tb/test_{args.module}.py (modules: "
              f"{', '.join(modules())})", file=sys.stderr)
        return 2
    import pytest
    if args.waves:
        os.environ["WAVES"] = "1"
    select = [s for s in (args.sim, args.select) if s]
    pytest_args = ["-s", "-q", "-p", "no:cacheprovider", str(TB / f"test_{args.module}.py")]
    if select:
        pytest_args += ["-k", " and ".join(select)]
    return int(pytest.main(pytest_args))


if __name__ == "__main__":
    sys.exit(main())
