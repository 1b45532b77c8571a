"""Quantization-aware training in PyTorch for both families (BNN and SAC CNN).

`common` holds seeding, data tensors and the training loop, `bnn` and `sac` the two model
families. Each family's model has a float twin (same architecture, float weights and
activations) for the baseline, and a quantized eval mode whose arithmetic is exactly the golden
network that `to_network()` returns.
"""
