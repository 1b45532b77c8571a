"""The top layer: jobs that use every path. The compare job (`compare`, `report`), model cards
(`cards`) and the command-line entry points (`commands`, `cli`: the `sacbench` command). The
only package that imports both `fpga` and `gpu_kernels` (docs/architecture.md)."""
