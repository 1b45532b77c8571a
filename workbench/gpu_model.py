"""A modelled GPU profile for the compare job on machines without a GPU.

Without a CUDA device the compare job still runs the CUDA kernels (in the CPU emulation) to
check them bit for bit, but the emulation's wall times say nothing about a GPU, and choosing a
mapping from them made the report's GPU column change between identical runs. So there the
mapping and the GPU times come from this model instead: deterministic, and labelled "modelled"
wherever they are shown. On a machine with a GPU the compare job measures as before.

The model is a simple occupancy model of one kernel launch per layer on an H200 (sm_90), from
the launch geometry the runner really uses (gpu_kernels.launch.plan):
* a block's threads share its outputs: each thread computes ceil(outputs per block / threads)
  outputs, each costing the kernel's inner-loop trips (a 3x3 conv: 9 x input words or
  channels; a dense layer: input words; a step: the channels packed into a word; a 2x2 max
  pool: 4 reads; a flatten: one read per bit it gathers);
* blocks run in waves of SMS x resident blocks (resident: thread and block limits of an SM);
  a wave takes the longer of its latency-bound time (trips x LATENCY_PER_TRIP cycles) and its
  issue-bound time (the SM issues ISSUE_PER_CYCLE thread-instructions per cycle,
  INSTR_PER_TRIP per trip);
* plus LAUNCH_S per kernel; the host needs HOST_ISSUE_S to issue it; a copy costs
  COPY_LATENCY_S + bytes / COPY_BYTES_PER_S.
It ranks configurations by their parallelism and balance; its absolute times are estimates, not
measurements (docs: README "What the compare job reports").
"""
from __future__ import annotations

import math

from gpu_kernels.configs import CONFIGS
from gpu_kernels.errors import LaunchError
from gpu_kernels.launch import plan
from gpu_kernels.layer_ops import ConvOp, DenseOp, FlattenOp, MaxPoolOp, StepOp, prepare
from gpu_kernels.profiling import Profile
from models import ir

DEVICE = "H200 (sm_90)"
SMS = 132                      # streaming multiprocessors
CLOCK_HZ = 1.98e9              # boost clock
MAX_THREADS_PER_SM = 2048
MAX_BLOCKS_PER_SM = 32
ISSUE_PER_CYCLE = 128          # 4 schedulers x 32 lanes
INSTR_PER_TRIP = 6             # loads, xor/popc or multiply-add, loop
LATENCY_PER_TRIP = 24          # cycles of a dependent trip (an L1 hit and the arithmetic)
LAUNCH_S = 4e-6
HOST_ISSUE_S = 6e-6
COPY_LATENCY_S = 10e-6
COPY_BYTES_PER_S = 20e9        # pageable host memory over PCIe Gen5


def trips_per_output(op) -> int:
    """Inner-loop trips of one output of the op's kernel."""
    if isinstance(op, ConvOp):
        return 9 * (op.fin.words if op.fin.kind == "binary" else op.fin.channels)
    if isinstance(op, DenseOp):
        return op.fin.words
    if isinstance(op, StepOp):
        return min(op.fout.word_bits, op.fin.channels)
    if isinstance(op, MaxPoolOp):
        return 4
    if isinstance(op, FlattenOp):
        return op.fout.word_bits if op.fout.kind == "binary" else 1
    raise LaunchError(f"no model for {type(op).__name__}")


def kernel_s(op, batch: int, config: str) -> float | None:
    """Modelled seconds of one launch of `op` over `batch` images; None if it cannot launch."""
    if op.kernel is None:                 # a no-op layer (flatten of a flat tensor)
        return 0.0
    try:
        launch = plan(op.work(batch), config, what=op.label)
    except LaunchError:
        return None
    threads = launch.threads
    per_block = math.prod(launch.chunks)
    per_thread = math.ceil(per_block / threads) * trips_per_output(op)
    warps_threads = math.ceil(threads / 32) * 32
    resident = max(1, min(MAX_BLOCKS_PER_SM, MAX_THREADS_PER_SM // warps_threads))
    waves = math.ceil(launch.blocks / (SMS * resident))
    busy = min(resident, math.ceil(launch.blocks / SMS))     # blocks an SM runs at once
    wave_cycles = max(per_thread * LATENCY_PER_TRIP,
                      busy * warps_threads * per_thread * INSTR_PER_TRIP / ISSUE_PER_CYCLE)
    return LAUNCH_S + waves * wave_cycles / CLOCK_HZ


def copy_s(nbytes: int) -> float:
    return COPY_LATENCY_S + nbytes / COPY_BYTES_PER_S


class ModelledProfile:
    """A profile source (gpu_kernels.mapper) from the model above, for the seven GPU
    configurations."""

    source = (f"modelled: {DEVICE}, {SMS} SMs at {CLOCK_HZ / 1e9:.2f} GHz (occupancy model, "
              f"workbench/gpu_model.py; not measured)")

    def __init__(self, word_bits: int = 32):
        self.word_bits = word_bits

    def profile(self, net: ir.Network, batch_sizes) -> Profile:
        ops = prepare(net, self.word_bits)
        fmts = [op.fin for op in ops] + [ops[-1].fout]
        layer_s, host_s, copies = {}, {}, {}
        for b in batch_sizes:
            layer_s[b] = [[kernel_s(op, b, c) for c in CONFIGS] for op in ops]
            host_s[b] = [[None if t is None else (HOST_ISSUE_S if op.kernel else 0.0)
                          for t in row] for op, row in zip(ops, layer_s[b])]
            copies[b] = [copy_s(f.nbytes(b)) for f in fmts]
        return Profile(net.name, [layer.describe() for layer in net.layers], list(batch_sizes),
                       layer_s, copies, {b: list(v) for b, v in copies.items()}, list(CONFIGS),
                       self.source,
                       {"word_bits": self.word_bits, "time_of": "one batch of b images",
                        "model": {"device": DEVICE, "sms": SMS, "clock_hz": CLOCK_HZ,
                                  "launch_s": LAUNCH_S, "host_issue_s": HOST_ISSUE_S,
                                  "copy_latency_s": COPY_LATENCY_S,
                                  "copy_bytes_per_s": COPY_BYTES_PER_S}},
                       host_s)
