"""Run one RTL module's cocotb bench (tb/test_<module>.py) through pytest.

    sacbench sim accelerator --sim verilator --shape 8x8 --waves
    sacbench sim systolic_array -- -x --tb=short        # pytest options after --

The benches are pytest functions parametrized over HDL parameters and simulators, so this is
`pytest tb/test_<module>.py` with a selection; `pytest tb/` in the activated environment does
the same for every module.
"""
import os
import sys
from pathlib import Path

from tb.sim import SIMULATORS
from workbench.commands.args import ArgumentParser

TB = Path(__file__).resolve().parents[2] / "tb"


def modules() -> list[str]:
    return sorted(p.stem[len("test_"):] for p in TB.glob("test_*.py"))


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = ArgumentParser(prog="sacbench sim", description=__doc__.splitlines()[0])
    ap.add_argument("module", help=f"RTL module with a bench: {', '.join(modules())}")
    ap.add_argument("--sim", choices=SIMULATORS, help="one simulator (default: both)")
    ap.add_argument("--shape", help="one parameter set, by its test id (e.g. 8x8)")
    ap.add_argument("--waves", action="store_true", help="write a waveform (path printed)")
    ap.add_argument("-k", dest="select", help="further pytest -k selection")
    args = ap.parse_args(argv)
    if args.module not in modules():
        print(f"sacbench sim: no bench tb/test_{args.module}.py (modules: "
              f"{', '.join(modules())})", file=sys.stderr)
        return 2
    import pytest
    if args.waves:
        os.environ["WAVES"] = "1"
    select = [s for s in (args.sim, args.shape, args.select) if s]
    pytest_args = ["-s", "-q", "-p", "no:cacheprovider", str(TB / f"test_{args.module}.py")]
    if select:
        pytest_args += ["-k", " and ".join(select)]
    code = int(pytest.main(pytest_args + extra))
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        print(f"sacbench sim: no test of tb/test_{args.module}.py matches "
              f"{' and '.join(select)} (see the test ids with -- --collect-only -q)",
              file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
