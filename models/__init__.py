"""The network description (`ir`) and the golden models (`golden`, `numerics`), the single
source of truth; with them the data sets (`datasets`), seeded random networks, ONNX in and out
(`onnx`), quantization-aware training (`train`) and the trained models (`zoo`).
Depends on nothing else in the project (docs/architecture.md)."""
