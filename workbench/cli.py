"""`sacbench`: the workbench's console command (installed by `make setup` into .venv/bin).

    sacbench demo                      the main job on the embedded digits data
    sacbench compare --model M.onnx    one model through the golden, GPU and FPGA paths
    sacbench train --family bnn|sac    quantization-aware training, ONNX + model card
    sacbench map --network fashion     BNN layers to CPU / GPU configurations
    sacbench search --budgets 20000    co-design search (BSN) over cycles, energy, ...
    sacbench sim MODULE                one RTL module's cocotb bench

`sacbench <command> --help` shows each command's options and the exit statuses it returns
(workbench/commands/args.py: EXIT_CODES, COMMAND_EXITS; README "Exit status"). A command's usage
line reads `sacbench <command>` also when a script of scripts/ or make started it.
"""

from __future__ import annotations

import importlib
import sys

from workbench.commands.args import EXIT_STATUS, run_guarded

COMMANDS = {
    "demo": "the main job on the embedded default data (make demo)",
    "compare": "one model through every path, layer by layer, with costs",
    "train": "train a BNN or SAC CNN (QAT) and export ONNX + card",
    "map": "map a BNN's layers to the CPU or a GPU configuration",
    "search": "co-design search: budgeted super networks, one Pareto front",
    "sim": "run one RTL module's cocotb bench",
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: sacbench <command> [options]", "", "commands:"]
    lines += [f"  {name:<{width}}  {what}" for name, what in COMMANDS.items()]
    lines += ["", "sacbench <command> --help shows the command's options.", "", EXIT_STATUS]
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"sacbench: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    prog = f"sacbench {name}"
    return run_guarded(prog, lambda a: importlib.import_module(f"workbench.commands.{name}").main(a), rest)


if __name__ == "__main__":
    sys.exit(main())
