"""nvcc compile check: every kernel instantiation of kernel_table.py compiles for sm_90."""
import re
import shutil
import subprocess

import pytest

from gpu_kernels import build
from gpu_kernels.kernel_table import KERNELS

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


def test_every_instantiation_compiles_for_sm90():
    cubin, log = build.nvcc_check()
    assert cubin.stat().st_size > 0
    entries = re.findall(r"Compiling entry function '(\w+)' for 'sm_90'", log)
    names = subprocess.run(["c++filt"], input="\n".join(entries), capture_output=True,
                           text=True, check=True).stdout.split("\n")
    compiled = {n.split("(")[0].removeprefix("void ") for n in names if n}
    assert compiled == {s.expr for s in KERNELS.values()}
    # ptxas reports no register spills for any kernel
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    assert len(spills) == len(KERNELS) and all(s == ("0", "0") for s in spills)
