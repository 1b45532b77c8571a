"""The host side of the SAC accelerator, the mirror of `gpu_kernels`: array sizes (`arch`), the
instruction set (`isa`), lowering of networks onto the array (`lowering`), the compiler
(`compiler`) and its memory plan (`memory`), the cycle model (`cycle_model`), the instruction-level
interpreter (`interpreter`), the executor shared by the interpreter and the RTL (`execute`) and
the energy model (`energy`). Depends on `models` only (docs/architecture.md)."""
