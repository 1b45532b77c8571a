"""Golden models, network description, instruction set and compiler (see docs/architecture.md)."""
