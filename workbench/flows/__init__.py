"""The hardware flows: synthesis and place and route (`synth`, `timing`), RTL lint (`rtl_lint`),
code coverage of the benches (`coverage`) and mutation testing (`mutants`).

Each module is a library with a `main(argv)`; `scripts/` and `benchmarks/` hold thin entry
points and the Makefile calls those.
"""
