"""Command-line entry points. Each module has `main(argv) -> exit status`; `sacbench <command>`
(workbench/cli.py) and the scripts in scripts/ call them."""
