"""The quick subset of `make formal` (workbench/flows/formal.py, the properties in formal/): the
job list and the mutants it runs are well formed; the quick jobs (the stream FIFO's proof by
k-induction, the popcount pipeline's at N = 4, the AXI top's with a 2-entry FIFO, the
instruction decoder's 14-cycle check against the ISA, their covers) pass through
scripts/formal.py with exit status 0; and a check that must fail does: a mutant of the FIFO (a
push while full is taken) and the popcount property with a latency one cycle short (exit status
1), each a counterexample from reset. The ISA check spec the decoder's jobs use
(formal/isa_check_spec.v) gives 800 words around every limit fpga/isa.py's error code and, when
legal, fpga/cycle_model.py's cycles. A few seconds each with the tools installed (`make test`
installs the `formal` extra); skipped where they are not."""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT
from workbench.commands.args import BadInput
from workbench.flows import formal
from workbench.flows.mutants import apply_mutant

JOBS = {j.name: j for j in formal.load_jobs()}


def _env():
    try:
        paths = formal.tools()
    except formal.ToolFailure as exc:
        pytest.skip(str(exc))
    return dict(formal.tool_env(paths), SBY=paths["sby"])


def test_the_job_list_covers_the_modules_and_their_mutants_apply():
    modules = {"stream_fifo", "popcount_pipe", "sac_cell", "accelerator_axi", "instruction_decoder"}
    assert {j.module for j in JOBS.values()} >= modules
    assert any(j.quick for j in JOBS.values())
    for job in JOBS.values():
        assert job.mode == "prove" or job.bounded, job.name  # a bounded check says why
        text = formal.sby_text(job, ROOT / "rtl")
        assert f"prep -top {job.top}" in text and f"{job.mode}: depth {job.depth}" in text
    mutants = formal.relevant_mutants(list(JOBS.values()))
    assert {m["module"] for m in mutants} == {j.module for j in JOBS.values()}
    for m in mutants:  # each original line is in its module exactly once
        apply_mutant((ROOT / "rtl" / f"{m['module']}.v").read_text(), m)


def test_a_malformed_job_is_refused(tmp_path):
    bad = tmp_path / "jobs.toml"
    bad.write_text('[[job]]\nname = "x"\nmodule = "stream_fifo"\n')
    with pytest.raises(BadInput, match="lacks props"):
        formal.load_jobs(bad)
    bad.write_text(
        '[[job]]\nname = "x"\nmodule = "stream_fifo"\nprops = "stream_fifo_props.sv"\nproperty = "p"\n'
        'mode = "bmc"\ndepth = 3\ncover_depth = 3\n'
    )
    with pytest.raises(BadInput, match="why it is bounded"):
        formal.load_jobs(bad)
    bad.write_text(
        '[[job]]\nname = "x"\nmodule = "stream_fifo"\nprops = "stream_fifo_props.sv"\nproperty = "p"\n'
        'mode = "prove"\ndepth = 3\ncover_depth = 3\nuses = ["no_such_module"]\n'
    )
    with pytest.raises(BadInput, match="uses: there is no other module rtl/no_such_module.v"):
        formal.load_jobs(bad)


def test_a_job_reads_the_modules_it_uses_from_rtl(tmp_path):
    """The AXI top's jobs read rtl/stream_fifo.v as it is, also against a mutant's copy."""
    job = JOBS["axi_f2"]
    text = formal.sby_text(job, tmp_path / "rtl")
    assert "read_verilog stream_fifo.v" in text and str(ROOT / "rtl" / "stream_fifo.v") in text
    assert str(tmp_path / "rtl" / "accelerator_axi.v") in text


def test_bad_usage_is_one_line_and_exit_2():
    out = subprocess.run(
        [sys.executable, "scripts/formal.py", "--only", "no_such_job"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "no_such_job" in lines[0], lines


def test_the_quick_jobs_are_proven_and_covered(tmp_path):
    _env()
    out = subprocess.run(
        [sys.executable, "scripts/formal.py", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("| ") and "---" not in line][1:]
    quick = [j for j in JOBS.values() if j.quick]
    assert len(rows) == 2 * len(quick), out.stdout
    for job in quick:
        assert f"| {job.name} | {job.property} | {job.module} |" in out.stdout
    proven = sum("| proven |" in r for r in rows)
    bounded = sum(f"| bounded: depth {j.depth} (" in r for j in quick for r in rows if f"| {j.name} |" in r)
    assert proven == sum(j.mode == "prove" for j in quick), out.stdout
    assert bounded == sum(j.mode == "bmc" for j in quick), out.stdout
    assert sum("| covered: " in r for r in rows) == len(quick), out.stdout


def test_a_fifo_mutant_is_caught(tmp_path):
    env = _env()
    job = JOBS["stream_fifo_d4"]
    mutant = next(m for m in formal.relevant_mutants([job]) if m["id"] == "fifo_push_when_full")
    rtl = formal.mutant_copy(mutant, tmp_path)
    row = formal.run_task(job, "prove", env, tmp_path / job.name, rtl)
    assert row.status == "failed" and row.details["kind"] == "basecase", row.result
    trace = Path(row.trace)
    assert trace.suffix == ".vcd" and (trace if trace.is_absolute() else ROOT / trace).is_file(), row.trace


def test_a_failing_property_exits_1_with_its_trace(tmp_path):
    """The popcount property with LATENCY one short of the module's (a job list of its own):
    a counterexample from reset, exit status 1, the row names the assertion and the trace."""
    _env()
    shutil.copy(ROOT / "formal" / "popcount_pipe_props.sv", tmp_path)
    (tmp_path / "jobs.toml").write_text(
        '[[job]]\nname = "short"\nmodule = "popcount_pipe"\nprops = "popcount_pipe_props.sv"\n'
        'parameters = { N = 4, W = 3, LATENCY = 1 }\nproperty = "a latency one cycle short"\n'
        'mode = "prove"\ndepth = 4\ncover_depth = 6\n'
    )
    out = subprocess.run(
        [sys.executable, "scripts/formal.py", "--job-list", str(tmp_path / "jobs.toml"), "--no-cover"]
        + ["--out", str(tmp_path / "out")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    row = next(line for line in out.stdout.splitlines() if line.startswith("| short |"))
    assert "FAILED: assert " in row and "popcount_pipe_props.sv:" in row and "fails at step" in row, row
    trace = Path(row.split("; trace ")[1].split(" |")[0])
    assert trace.suffix == ".vcd" and trace.is_file(), row
    assert out.stderr.strip().splitlines()[-1] == "formal: 1 of 1 results FAILED: short", out.stderr


# The sizes of the decoder's jobs (formal/instruction_decoder_props.sv's defaults)
SPEC_SIZES = dict(rows=2, cols=2, cmax=4, ddepth=4, pdepth=4, wdepth=4, bdepth=4, sdepth=2)


def _spec_words(rng):
    """(word, tile_rows, tile_cols): words around every limit of SPEC_SIZES, most with their unused
    fields 0 (so that the later checks are reached), some with a stray bit."""
    for _ in range(800):
        op = rng.choice([1, 1, 2, 2, 2, 2, 2, 15, 15, rng.randrange(16)])
        word, tile = op, rng.choice([(0, 0), (1, 1), (2, 2), (2, 2), (1, 2), (2, 1)])
        if op == 1:
            values = [(8, rng.choice([0, 1, 2, 2, 3, 255])), (16, rng.choice([0, 1, 2, 2, 3]))]
            values += [(lsb, rng.choice([0, 0, 1, 2, 3, 4, (1 << 24) - 1])) for lsb in (24, 48)]
            values.append((72, rng.choice([0, 0, 1, 2, 3])))
        elif op == 2:
            small = [0, 0, 0, 1, 2, 3, 4]
            mode, acc_in, shift_en = rng.randrange(4), rng.randrange(2), rng.randrange(2)
            values = [(4, mode), (6, acc_in), (7, shift_en), (8, rng.choice([0, 0, 1, 3, 7]))]
            values += [(12, 7 if shift_en and rng.random() < 0.3 else 0)]
            values += [
                (20, rng.choice([0, 1, 1, 1, 2, 2, 4, 5, 4095])),
                (32, rng.choice([0, 1, 1, 1, 2, 3000])),
            ]
            values += [(44, rng.choice(small + [(1 << 20) - 1])), (64, rng.choice(small + [(1 << 20) - 1]))]
            values += [(84, rng.choice(small + [4095])), (96, rng.choice(small) if mode < 2 else 0)]
            values += [(108, rng.choice(small) if acc_in else 0)]
        else:
            values = []
        for lsb, v in values:
            word |= v << lsb
        if rng.random() < 0.1:
            word |= 1 << rng.randrange(4, 128)
        yield word, *tile


def test_the_isa_check_spec_agrees_with_fpga_isa(tmp_path):
    """formal/isa_check_spec.v, which the decoder's jobs hold the decoder to, gives every word
    the error code of fpga/isa.py (decode, then check with the tile) and a legal word the cycles
    of fpga/cycle_model.py: 500 words around every limit, evaluated by yosys' `eval`."""
    from fpga import isa
    from fpga.arch import ArrayConfig
    from fpga.cycle_model import lw_cycles, mm_cycles

    env = _env()
    cfg = ArrayConfig(**SPEC_SIZES)
    cases = list(_spec_words(random.Random(7)))
    want = []
    for word, rows, cols in cases:
        try:
            ins = isa.decode(word)
            isa.check(ins, cfg, isa.DecoderState(rows, cols))
        except isa.IsaError as exc:
            want.append((int(exc.code), None))
            continue
        if isinstance(ins, isa.LoadWeights):
            want.append((0, lw_cycles(ins.rows)))
        elif isinstance(ins, isa.Matmul):
            want.append((0, mm_cycles(cfg, ins.pixels, rows, ins.mode)))
        else:
            want.append((0, 2))
    assert {c for c, _ in want} == set(range(10)), sorted({c for c, _ in want})  # every code
    shutil.copy(ROOT / "formal" / "isa_check_spec.v", tmp_path)
    params = " ".join(f"-set {k.upper()} {v}" for k, v in SPEC_SIZES.items())
    script = ["read_verilog isa_check_spec.v", f"chparam {params} isa_check_spec", "prep -top isa_check_spec"]
    script += [
        f"eval -set word 128'd{w} -set tile_rows 8'd{r} -set tile_cols 8'd{c} -show code -show cycles"
        for w, r, c in cases
    ]
    (tmp_path / "eval.ys").write_text("\n".join(script) + "\n")
    out = subprocess.run(
        [env["YOSYS"], "-s", "eval.ys"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr

    def value(text):
        text = text.strip().rstrip(".")
        return int(text.split("'")[1], 2) if "'" in text else int(text)

    codes = [value(v) for v in re.findall(r"Eval result: \\code = (\S+)", out.stdout)]
    cycles = [value(v) for v in re.findall(r"Eval result: \\cycles = (\S+)", out.stdout)]
    assert len(codes) == len(cycles) == len(cases), out.stdout[-2000:]
    for (word, rows, cols), (code, n), got, got_n in zip(cases, want, codes, cycles, strict=True):
        assert got == code, f"word 0x{word:032x}, tile {rows}x{cols}: spec {got}, fpga/isa.py {code}"
        if code == 0:
            assert got_n == n, f"word 0x{word:032x}, tile {rows}x{cols}: spec {got_n} cycles, model {n}"
