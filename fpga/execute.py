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

import time
from dataclasses import dataclass, field

import numpy as np

from fpga.compiler import Program, Segment
from fpga.interpreter import Machine, RunStats
from fpga.lowering import HostOp, decode_output, encode_input
from models.golden import check_input, run_layer


@dataclass
class PlanResult:
    outputs: dict  # layer index -> golden-format batch
    segments: list = field(default_factory=list)  # RunStats per segment, in order
    host_seconds: dict = field(default_factory=dict)  # host layer index -> seconds

    def instruction_stats(self, prog: Program) -> tuple[list, list]:
        """(cycles, activity) of every instruction of the program, by pc."""
        cycles = [0] * len(prog.words)
        activity = [0] * len(prog.words)
        for seg, st in zip(prog.segments, self.segments, strict=True):
            for k, (c, a) in enumerate(zip(st.cycles, st.activity, strict=True)):
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
    """The interpreter as an executor device (a whole batch per call). Give it the machine of
    the previous batch of the same size to keep what that one decoded."""

    def __init__(self, prog: Program, batch: int, machine: Machine | None = None):
        if machine is not None and machine.batch == batch:
            machine.clear_buffers()
            self.machine = machine
        else:
            self.machine = Machine(prog.config, batch)
            self.machine.load_program(prog)

    async def write_tensor(self, pl, data):
        self.machine.write_tensor(pl, data)

    async def read_tensor(self, pl):
        return self.machine.read_tensor(pl)

    async def run(self, start_pc: int) -> RunStats:
        return self.machine.run(start_pc)


def _run_to_end(coro):
    """Drive a coroutine whose awaits all complete at once (the interpreter device's), without
    an event loop."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("the interpreter device suspended: it must never wait")


# Images interpreted together: the buffers of one batch take about this many bytes.
BATCH_BYTES = 1 << 28


def batch_size(prog: Program) -> int:
    """Images per interpreter batch: the buffers (data and partial-sum buffers per image) of a
    batch fit BATCH_BYTES, at most 4096 images."""
    cfg = prog.config
    per_image = cfg.cmax * cfg.ddepth + 4 * cfg.rows * cfg.pdepth
    return max(1, min(4096, BATCH_BYTES // per_image))


def _merge(parts: list[PlanResult], sizes: list[int]) -> PlanResult:
    """One PlanResult from those of consecutive batches of `sizes` images: outputs and
    per-image activity concatenated in image order (cycles do not depend on the data)."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    outputs = {i: np.concatenate([p.outputs[i] for p in parts]) for i in first.outputs}
    segments = []
    for k, st in enumerate(first.segments):
        acts = [
            np.concatenate(
                [
                    np.broadcast_to(np.asarray(p.segments[k].activity[j]), (n,))
                    for p, n in zip(parts, sizes, strict=True)
                ]
            )
            for j in range(len(st.activity))
        ]
        segments.append(RunStats(cycles=list(st.cycles), activity=acts, error=st.error))
    host = {i: sum(p.host_seconds.get(i, 0.0) for p in parts) for i in first.host_seconds}
    return PlanResult(outputs, segments, host)


def interpret(prog: Program, x, batch: int | None = None) -> PlanResult:
    """Run images through the program on the instruction-level interpreter, `batch` at a time
    (default :func:`batch_size`); the result is that of one batch holding them all."""
    x = np.asarray(x)
    batch = batch or batch_size(prog)
    parts, sizes, machine = [], [], None
    for s in range(0, max(len(x), 1), batch):
        chunk = x[s : s + batch]
        device = InterpretedDevice(prog, len(chunk), machine)
        parts.append(_run_to_end(execute(prog, device, chunk)))
        sizes.append(len(chunk))
        machine = device.machine
    return _merge(parts, sizes)
