"""`make lint` (RTL part): verilator --lint-only -Wall on every module of rtl/, twice: with its
default parameters, and with every parameter given explicitly (-GNAME=value, as the benches and
the compare script build it). An overridden parameter is a 32-bit value, which exposes width
mismatches that the defaults hide. Modules with structural variants (VARIANTS) are linted in
each of them too. Prints one line per module; exit status 1 if any warning
remains."""

import argparse
import re
import subprocess
from pathlib import Path

from tb.sim import verilator_on_path

RTL = Path(__file__).resolve().parents[2] / "rtl"
# parameters that choose a different structure, not a size: linted as well as the default
VARIANTS = {"mac_cell": {"one shared multiplier": ["-GMULTIPLIERS=1"]}}


def parameters(text: str) -> dict:
    return dict(re.findall(r"\bparameter\s+(\w+)\s*=\s*(\d+)", text))


def lint(module: str, extra: list, rtl: Path = RTL) -> str:
    """Verilator's warnings for `module` of the directory `rtl` ("" when clean)."""
    out = subprocess.run(
        [
            "verilator",
            "--lint-only",
            "-Wall",
            f"-I{rtl}",
            "--top-module",
            module,
            str(rtl / f"{module}.v"),
            *extra,
        ],
        capture_output=True,
        text=True,
    )
    return "" if out.returncode == 0 else out.stdout + out.stderr


def lint_module(module: str, rtl: Path = RTL) -> list[str]:
    """Lints `module` with its defaults, its parameters overridden and its VARIANTS; prints
    the warnings and one line; returns the labels of the runs that warned."""
    params = parameters((rtl / f"{module}.v").read_text())
    bad = []
    runs = {
        "defaults": [],
        "-G overrides": [f"-G{k}={v}" for k, v in params.items()],
        **VARIANTS.get(module, {}),
    }
    for label, extra in runs.items():
        report = lint(module, extra, rtl)
        if report:
            bad.append(label)
            print(f"[lint] {module} ({label}): warnings\n{report}")
    print(f"[lint] {module}: {'WARNINGS with ' + ' and '.join(bad) if bad else 'clean'}", flush=True)
    return bad


def main(argv=None) -> int:
    argparse.ArgumentParser(prog="lint_rtl.py", description=__doc__.split("\n\n")[0]).parse_args(argv)
    verilator_on_path()
    failed = []
    modules = sorted(p.stem for p in RTL.glob("*.v"))
    for module in modules:
        failed += [module] * bool(lint_module(module))
    if failed:
        print(f"[lint] {len(failed)} of {len(modules)} modules with warnings: {', '.join(failed)}")
        return 1
    print(f"[lint] {len(modules)} modules clean, with default and overridden parameters")
    return 0
