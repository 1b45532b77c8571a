"""Runs a compiled program on the RTL accelerator for scripts/compare_gpu_fpga.py (not a pytest
bench: no test_ prefix). One simulator process runs one shard of the RTL images
(workbench/compare.py starts several at once, locally or on a Ray cluster).

$RTL_JOB is a pickle {"program": fpga.compiler.Program, "images": uint8 [n, ...]}; the
program is loaded once, then every image goes through the program's plan with fpga.execute on
the RTL (host layers in Python, array segments on the RTL). On the bench wrapper
(rtl/accelerator_tb_wrapper.v, what the compare job builds) programs and tensors move in bulk
(tb.host_port.BulkPort): writes through the real host port at one word per clock, reads of the
compared tensors and of the trace straight from the memories. On the bare accelerator top
everything goes word by word through the host port.

$RTL_OUT receives a pickle {"results": per image every layer's output (golden format), per
segment the per-instruction cycles and activity read from the trace memory, wall and
simulation seconds; "load_s", "load_words": the program load; "job_s", "sim_s": wall time of
the whole job and of the runs from `start` to `done` alone}. If $RTL_PROGRESS is set, the
number of finished images is written to that file after every image; if $RTL_PROFILE is set,
a cProfile of the image loop is written there.
"""

import os
import pickle
import time

import cocotb

from fpga.arch import ArrayConfig
from fpga.cycle_model import total_cycles
from fpga.execute import execute
from safeio import write_bytes_atomic, write_text_atomic
from tb.bitserial import start_clock
from tb.host_port import BulkPort, HostPort, RtlDevice


def _progress(done: float) -> None:
    """Images done so far (a fraction inside an image) for the compare job's progress bar."""
    path = os.environ.get("RTL_PROGRESS")
    if path:
        write_text_atomic(path, f"{done:.4f}")


@cocotb.test()
async def run_job(dut):
    t_job = time.perf_counter()
    with open(os.environ["RTL_JOB"], "rb") as f:
        job = pickle.load(f)
    prog, images = job["program"], job["images"]
    assert ArrayConfig.from_env() == prog.config, "the simulator was built for another array"
    await start_clock(dut)
    host = HostPort(dut, prog.config)
    bulk = BulkPort(dut, prog.config) if hasattr(dut, "load_go") else None
    await host.reset()
    t0 = time.perf_counter()
    await (bulk or host).load_program(prog)
    load_s = time.perf_counter() - t0
    load_words = bulk.words_loaded if bulk else None
    per_image = prog.cycles_per_image()
    before, offset = {}, 0  # segment start pc -> model cycles of the ones before
    for seg in prog.segments:
        before[seg.start_pc] = offset
        offset += total_cycles(prog.instructions[seg.start_pc : seg.start_pc + seg.n_instr], prog.config)
    state = {"image": 0}

    def on_cycles(start_pc, cycles):
        _progress(state["image"] + min(0.99, (before[start_pc] + cycles) / per_image))

    device = RtlDevice(host, prog, bulk, on_cycles)
    results = []
    profile = None
    if os.environ.get("RTL_PROFILE"):  # where the Python side of a run spends its time
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
    for i in range(len(images)):
        t0, sim0 = time.perf_counter(), host.run_wall_s
        state["image"] = i
        res = await execute(prog, device, images[i : i + 1])
        results.append(
            {
                "outputs": res.outputs,
                "segments": [(st.cycles, st.activity) for st in res.segments],
                "wall_s": time.perf_counter() - t0,
                "sim_s": host.run_wall_s - sim0,
            }
        )
        _progress(i + 1)
    if profile is not None:
        profile.disable()
        profile.dump_stats(os.environ["RTL_PROFILE"])
    write_bytes_atomic(
        os.environ["RTL_OUT"],
        pickle.dumps(
            {
                "results": results,
                "load_s": load_s,
                "load_words": load_words,
                "sim_s": host.run_wall_s,
                "job_s": time.perf_counter() - t_job,
                "bulk": bulk is not None,
                "bulk_load_s": bulk.load_wall_s if bulk else None,
                "bulk_read_s": bulk.read_wall_s if bulk else None,
            }
        ),
    )
