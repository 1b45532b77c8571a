"""Runs a compiled program on the RTL accelerator for scripts/compare_gpu_fpga.py (not a pytest
bench: no test_ prefix).

$RTL_JOB is a pickle {"program": fpga.compiler.Program, "images": uint8 [n, ...]}; every image
goes through the program's plan with fpga.execute on the RTL (host layers in Python, array
segments on the RTL through the host port). $RTL_OUT receives a pickle with, per image, every
layer's output (golden format) and per segment the per-instruction cycles and activity read
from the accelerator's trace memory.
"""
import os
import pickle
import sys
import time

import cocotb
from tqdm import tqdm

from fpga.arch import ArrayConfig
from fpga.execute import execute
from tb.bitserial import start_clock
from tb.host_port import HostPort, RtlDevice


@cocotb.test()
async def run_job(dut):
    with open(os.environ["RTL_JOB"], "rb") as f:
        job = pickle.load(f)
    prog, images = job["program"], job["images"]
    assert ArrayConfig.from_env() == prog.config, "the simulator was built for another array"
    await start_clock(dut)
    host = HostPort(dut, prog.config)
    await host.reset()
    await host.load_program(prog)
    device = RtlDevice(host, prog)
    results = []
    bar = tqdm(total=len(images), desc=f"RTL ({cocotb.SIM_NAME})", unit="image", file=sys.stderr)
    for i in range(len(images)):
        t0 = time.perf_counter()
        res = await execute(prog, device, images[i:i + 1])
        results.append({"outputs": res.outputs,
                        "segments": [(st.cycles, st.activity) for st in res.segments],
                        "wall_s": time.perf_counter() - t0})
        bar.set_postfix(cycles=sum(sum(c) for c, _ in results[-1]["segments"]))
        bar.update()
    bar.close()
    with open(os.environ["RTL_OUT"], "wb") as f:
        pickle.dump(results, f)
