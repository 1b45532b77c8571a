"""Running a compiled Program: host layers, data movement and array segments, in order.

One executor serves two devices: the instruction-level interpreter (a batch of images at once)
and the RTL accelerator behind its host port (tb/rtl_job.py, one image at a time). A device
offers three coroutines: `write_tensor(placement, data [B, C, H, W] uint8)`,
`read_tensor(placement) -> [B, ...]` and `run(start_pc) -> RunStats`. The executor turns
golden tensors into array data and back (fpga.lowering.encode_input / decode_output) and runs
host layers with the golden functions, so every path is compared in golden terms, layer by
layer.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import numpy as np

from fpga.compiler import Program, Segment
from fpga.interpreter import Machine, RunStats
from fpga.lowering import HostOp, decode_output, encode_input
from models.golden import check_input, run_layer


@dataclass
class PlanResult:
    outputs: dict                                   # layer index -> golden-format batch
    segments: list = field(default_factory=list)    # RunStats per segment, in order
    host_seconds: dict = field(default_factory=dict)   # host layer index -> seconds

    def instruction_stats(self, prog: Program) -> tuple[list, list]:
        """(cycles, activity) of every instruction of the program, by pc."""
        cycles = [0] * len(prog.words)
        activity = [0] * len(prog.words)
        for seg, st in zip(prog.segments, self.segments):
            for k, (c, a) in enumerate(zip(st.cycles, st.activity)):
                cycles[seg.start_pc + k] = c
                activity[seg.start_pc + k] = a
        return cycles, activity


async def execute(prog: Program, device, x) -> PlanResult:
    """Run the batch `x` (network input) through the program's plan on `device`."""
    net = prog.network
    cur = check_input(net, x)
    result = PlanResult(outputs={})
    for step in prog.plan:
        if isinstance(step, HostOp):
            for i in step.layers:
                t0 = time.perf_counter()
                cur = run_layer(net.layers[i], cur)
                result.host_seconds[i] = time.perf_counter() - t0
                result.outputs[i] = cur
            continue
        seg: Segment = step
        first = prog.layers[seg.layers[0]]
        await device.write_tensor(first.input, encode_input(first.op, cur))
        stats = await device.run(seg.start_pc)
        if stats.error is not None:
            raise stats.error
        result.segments.append(stats)
        for li in seg.layers:
            lp = prog.layers[li]
            raw = await device.read_tensor(lp.output)
            cur = decode_output(lp.op, raw, net.shapes[lp.layer_index + 1][0])
            result.outputs[lp.layer_index] = cur
    return result


class InterpretedDevice:
    """The interpreter as an executor device (a whole batch per call)."""

    def __init__(self, prog: Program, batch: int):
        self.machine = Machine(prog.config, batch)
        self.machine.load_program(prog)

    async def write_tensor(self, pl, data):
        self.machine.write_tensor(pl, data)

    async def read_tensor(self, pl):
        return self.machine.read_tensor(pl)

    async def run(self, start_pc: int) -> RunStats:
        return self.machine.run(start_pc)


def interpret(prog: Program, x) -> PlanResult:
    """Run a batch through the program on the instruction-level interpreter."""
    x = np.asarray(x)
    return asyncio.run(execute(prog, InterpretedDevice(prog, len(x)), x))
