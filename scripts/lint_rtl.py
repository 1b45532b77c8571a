#!/usr/bin/env python3
"""`make lint`: verilator --lint-only -Wall on every module of rtl/, twice: with its default
parameters, and with every parameter given explicitly (-GNAME=value, as the benches and the
compare script build it). An overridden parameter is a 32-bit value, which exposes width
mismatches that the defaults hide. Exit status 1 if any warning remains."""
import re
import subprocess
import sys
from pathlib import Path

RTL = Path(__file__).resolve().parents[1] / "rtl"


def parameters(text: str) -> dict:
    return dict(re.findall(r"\bparameter\s+(\w+)\s*=\s*(\d+)", text))


def lint(module: str, extra: list) -> str:
    out = subprocess.run(["verilator", "--lint-only", "-Wall", f"-I{RTL}", "--top-module", module,
                          str(RTL / f"{module}.v"), *extra], capture_output=True, text=True)
    return "" if out.returncode == 0 else out.stdout + out.stderr


def main() -> int:
    failed = 0
    modules = sorted(p.stem for p in RTL.glob("*.v"))
    for module in modules:
        params = parameters((RTL / f"{module}.v").read_text())
        for label, extra in (("defaults", []),
                             ("-G overrides", [f"-G{k}={v}" for k, v in params.items()])):
            report = lint(module, extra)
            if report:
                failed += 1
                print(f"[lint] {module} ({label}): warnings\n{report}")
        print(f"[lint] {module}: clean" if not failed else f"[lint] {module}", flush=True)
    if failed:
        print(f"[lint] {failed} lint run(s) with warnings")
        return 1
    print(f"[lint] {len(modules)} modules clean, with default and overridden parameters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
