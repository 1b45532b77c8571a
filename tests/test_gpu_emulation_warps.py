"""The CPU emulation's warps, blocks and shared-memory checks, on the kernels of
tests/fixtures/emu_kernels.cu: warp collectives against numpy models of their results, block
barriers, reductions through shuffles and shared memory, the visiting orders, and every misuse
the emulation reports (a malformed collective, a divergent barrier, a shared-memory race, a
read of shared memory no thread wrote) as one line naming the kernel, the threads and the
address. Seeds are fixed and printed."""

import ctypes
import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest

from gpu_kernels.build import NVCC_ARCH, asan_runtime, kernel_emulation_library
from gpu_kernels.devices import EmuLibrary, emu_params
from gpu_kernels.errors import BuildError, KernelFaultError, LaunchError
from tests.helpers import ROOT, needs_gxx

pytestmark = needs_gxx

FIXTURE = ROOT / "tests" / "fixtures" / "emu_kernels.cu"
NAMES = [
    "visit_sequence",
    "warp_votes",
    "shuffle_operands",
    "half_warps",
    "block_sum_shuffle",
    "block_sum_shared",
    "reads_unwritten_shared",
    "copies_into_shared",
    "large_frame",
    "barrier_votes",
    "misuse",
]


@pytest.fixture(scope="module", params=["switch", "ucontext"])
def emu(request):
    """The fixture kernels for the emulation, with the x86-64 stack switch and with ucontext."""
    defines = ("EMU_FORCE_UCONTEXT",) if request.param == "ucontext" else ()
    return EmuLibrary(kernel_emulation_library(FIXTURE, NAMES, defines=defines))


def run(emu, name, grid, block, *args, order="in-order", seed=0):
    values = [
        ctypes.c_void_p(a.ctypes.data) if isinstance(a, np.ndarray) else ctypes.c_int32(a) for a in args
    ]
    params, _holders = emu_params(values)
    emu.call(emu.entry(f"emu_{name}"), name, grid, block, params, order, seed)


def fault(emu, name, grid, block, *args, order="in-order") -> str:
    with pytest.raises(KernelFaultError) as info:
        run(emu, name, grid, block, *args, order=order)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{name}"), msg
    return msg


ORDERS = [("in-order", 0), ("reversed", 0), ("shuffled", 5), ("shuffled", 6)]


def test_the_build_checks_shared_memory(emu):
    assert emu.checks_shared_memory


def test_blocks_above_cudas_limit_are_refused(emu):
    """Source without common.cuh's KERNEL_MAX_THREADS takes CUDA's own limit."""
    assert emu.max_threads == 1024
    with pytest.raises(
        LaunchError, match="a block of 1056 threads exceeds the kernels' launch bound of 1024"
    ):
        run(emu, "misuse", (1, 1, 1), (1056, 1, 1), np.zeros(1056, np.int32), 0)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_the_fixture_kernels_are_plain_cuda(tmp_path):
    """What the emulation runs here compiles as it is for the GPU."""
    proc = subprocess.run(
        ["nvcc", "-std=c++17", f"-arch={NVCC_ARCH}", "-cubin", str(FIXTURE), "-o", str(tmp_path / "k.cubin")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.parametrize("order, seed", ORDERS)
def test_visiting_order_of_blocks_warps_and_lanes(emu, order, seed):
    """Blocks, the warps of a block and the lanes of a warp in the chosen order; a warp's
    lanes between two collectives run one after the other (no collective here: all of it)."""
    print(f"order {order}, seed {seed}")
    grid, block = (3, 2, 1), (8, 4, 2)  # 6 blocks of 64 threads: 2 warps each
    n = 6 * 64
    out = np.zeros(n + 1, np.int32)
    run(emu, "visit_sequence", grid, block, out, n, order=order, seed=seed)
    v = out[:n]
    assert out[n] == n and sorted(v) == list(range(n))  # every thread ran once
    warps = v.reshape(-1, 32)  # rows: warps in id order
    assert all(r.max() - r.min() == 31 for r in warps)  # a warp runs before the next starts
    if order == "in-order":
        assert np.array_equal(v, np.arange(n))
    elif order == "reversed":
        assert np.array_equal(v, np.arange(n)[::-1])
    else:
        assert not np.array_equal(np.argsort(warps.min(1)), np.arange(len(warps)))
        assert any(not np.array_equal(np.argsort(r), np.arange(32)) for r in warps)


def shfl(v, lane, src):
    return v[src] if 0 <= src < 32 else v[lane]


def warp_model(v: np.ndarray) -> np.ndarray:
    """warp_votes' ten results for the 32 values of one warp."""
    out = np.zeros((32, 10), np.int64)
    ballot = sum(int(v[j] & 1) << j for j in range(32))
    for lane in range(32):
        seg8, seg16 = lane & ~7, lane & ~15
        out[lane] = [
            np.int32(np.uint32(ballot).view(np.int32)),
            int((v == 7).any()),
            int((v >= 0).all()),
            v[31 - lane],
            v[seg8 + 3],
            shfl(v, lane, lane - 3),
            shfl(v, lane, lane + 5),
            v[lane + 2] if lane + 2 < seg16 + 16 else v[lane],
            v[lane ^ 9],
            v[lane ^ 1],
        ]
    return out


@pytest.mark.parametrize("order, seed", ORDERS)
def test_warp_collectives_equal_their_model(emu, order, seed):
    print(f"values seed 101, order {order}, seed {seed}")
    rng = np.random.default_rng(101)
    v = rng.integers(-2, 10, size=128).astype(np.int32)
    v[32:64] = rng.integers(0, 7, size=32)  # a warp with all(v >= 0) and no 7
    out = np.full(128 * 10, -99, np.int32)
    run(emu, "warp_votes", (2, 1, 1), (16, 2, 2), v, out, order=order, seed=seed)  # 2-D blocks
    expect = np.concatenate([warp_model(v[w * 32 : (w + 1) * 32]) for w in range(4)])
    assert np.array_equal(out.reshape(128, 10), expect)


def ptx_shuffle(op: int, v, arg, width: int) -> list:
    """The 32 results of one shuffle as the PTX ISA's shfl.sync pseudo-code computes them, with
    the clamp operand CUDA passes (c = (32 - width) << 8 | clamp, clamp 0 for up, 31 for the
    others): the operand's low 5 bits, a source outside the segment reads the own value."""
    segmask, clamp = (32 - width) & 31, 0 if op == 1 else 31
    out = []
    for lane in range(32):
        b = int(arg[lane]) & 31
        max_lane, min_lane = (lane & segmask) | (clamp & ~segmask & 31), lane & segmask
        j, ok = {
            0: (min_lane | (b & ~segmask & 31), True),
            1: (lane - b, lane - b >= max_lane),
            2: (lane + b, lane + b <= max_lane),
            3: (lane ^ b, (lane ^ b) <= max_lane),
        }[op]
        out.append(int(v[j if ok else lane]))
    return out


@pytest.mark.parametrize("order, seed", ORDERS[::2])
def test_shuffles_equal_the_ptx_definition(emu, order, seed):
    """Every shuffle and width against PTX's shfl.sync, with per-lane sources (earlier segments
    for xor, negative and >= 32 operands, which wrap to their low 5 bits)."""
    print(f"values seed 104, order {order}, seed {seed}")
    rng = np.random.default_rng(104)
    cases = [
        (op, w, lo, hi) for op in range(4) for w in (1, 2, 4, 8, 16, 32) for lo, hi in ((0, 32), (-40, 70))
    ]
    operands = np.stack([rng.integers(lo, hi, 32) for _, _, lo, hi in cases]).astype(np.int32)
    for i, (op, *_rest) in enumerate(cases):
        if op in (1, 2):
            operands[i] = operands[i, 0]  # a delta the same in every lane, as usual
    v = rng.integers(-1000, 1000, size=(len(cases), 32)).astype(np.int32)
    ops = np.array([c[0] for c in cases], np.int32)
    widths = np.array([c[1] for c in cases], np.int32)
    out = np.zeros((len(cases), 32), np.int32)
    args = (v, ops, widths, operands, out, len(cases))
    run(emu, "shuffle_operands", (1, 1, 1), (32, 1, 1), *args, order=order, seed=seed)
    for i, (op, w, lo, hi) in enumerate(cases):
        want = ptx_shuffle(op, v[i], operands[i], w)
        assert out[i].tolist() == want, (op, w, lo, hi, operands[i].tolist())


def test_collectives_of_half_warps_and_partial_syncwarp(emu):
    rng = np.random.default_rng(102)
    print("values seed 102")
    v = rng.integers(0, 9, size=32).astype(np.int32)
    out = np.zeros(64, np.int32)
    run(emu, "half_warps", (1, 1, 1), (32, 1, 1), v, out, order="shuffled", seed=3)
    for lane in range(32):
        half = range(0, 16) if lane < 16 else range(16, 32)
        ballot = sum(int(v[j] & 1) << j for j in half)
        assert out[2 * lane] == np.uint32(ballot).view(np.int32)
        assert out[2 * lane + 1] == int(any(v[j] == 7 for j in half))


@pytest.mark.parametrize("order, seed", ORDERS)
def test_block_reductions_through_shuffles_barriers_and_shared_memory(emu, order, seed):
    print(f"values seed 103, order {order}, seed {seed}")
    rng = np.random.default_rng(103)
    x = rng.integers(-1000, 1000, size=3 * 256).astype(np.int32)
    want = x.reshape(3, 256).sum(1)
    out = np.zeros(3, np.int32)
    run(emu, "block_sum_shuffle", (3, 1, 1), (256, 1, 1), x, out, order=order, seed=seed)
    assert np.array_equal(out, want)
    out[:] = 0
    run(emu, "block_sum_shared", (3, 1, 1), (256, 1, 1), x, out, 0, order=order, seed=seed)
    assert np.array_equal(out, want)


def test_counting_barriers(emu):
    x = np.ones(2 * 96, np.int32)
    x[[5, 40, 77]] = -3  # block 0: 93 positive; block 1: all
    out = np.zeros(6, np.int32)
    run(emu, "barrier_votes", (2, 1, 1), (96, 1, 1), x, out, order="shuffled", seed=4)
    assert out.tolist() == [93, 0, 1, 96, 1, 1]


TILE = "block_sum_shared(int const*, int*, int)::tile"


def test_race_between_lanes_of_a_warp_without_a_barrier(emu):
    """racy = 1: the tree's barrier is missing, lane 16 updates tile[16] after lane 0 read it
    in the same phase."""
    x = np.arange(64, dtype=np.int32)
    msg = fault(emu, "block_sum_shared", (1, 1, 1), (64, 1, 1), x, np.zeros(1, np.int32), 1)
    assert msg == (
        f"block_sum_shared: shared-memory race on {TILE}+64: thread (0,0,0) of block (0,0,0) read it "
        f"and thread (16,0,0) of block (0,0,0) wrote it between the same two barriers"
    )


def test_race_inside_a_warp_without_syncwarp(emu):
    """racy = 2: the warp's last steps without __syncwarp (a race since Volta's independent
    thread scheduling, though lockstep warps once hid it): lane 0 ran its steps first, reading
    tile[1] among others, then lane 1 updates tile[1]."""
    x = np.arange(64, dtype=np.int32)
    msg = fault(emu, "block_sum_shared", (1, 1, 1), (64, 1, 1), x, np.zeros(1, np.int32), 2)
    assert msg == (
        f"block_sum_shared: shared-memory race on {TILE}+4: thread (0,0,0) of block (0,0,0) read it "
        f"and thread (1,0,0) of block (0,0,0) wrote it between the same two barriers"
    )


def test_race_between_warps_depends_on_the_order_it_is_seen_in(emu):
    """racy = 3: no barrier after filling the tile. In order, warp 0 reads tile[32..] before
    warp 1 wrote it (a read of unwritten shared memory); reversed, warp 1 (lanes 63 down to 32)
    wrote it first and lane 31's read of tile[63] is a race between warps. Either way the
    launch fails."""
    x = np.arange(64, dtype=np.int32)
    out = np.zeros(1, np.int32)
    msg = fault(emu, "block_sum_shared", (1, 1, 1), (64, 1, 1), x, out, 3)
    assert msg == (
        f"block_sum_shared: thread (0,0,0) of block (0,0,0) reads {TILE}+128, which no thread of its "
        f"block has written"
    )
    msg = fault(emu, "block_sum_shared", (1, 1, 1), (64, 1, 1), x, out, 3, order="reversed")
    assert msg == (
        f"block_sum_shared: shared-memory race on {TILE}+252: thread (63,0,0) of block (0,0,0) wrote "
        f"it and thread (31,0,0) of block (0,0,0) read it between the same two barriers"
    )


def test_read_of_shared_memory_no_thread_wrote(emu):
    """Shared memory starts undefined in every block: block 0 writes tile[64] and reads it,
    block 1 reads it without writing it (block 0's value does not count)."""
    out = np.zeros(128, np.int32)
    msg = fault(emu, "reads_unwritten_shared", (2, 1, 1), (64, 1, 1), out)
    assert msg == (
        "reads_unwritten_shared: thread (63,0,0) of block (1,0,0) reads "
        "reads_unwritten_shared(int*)::tile+256, which no thread of its block has written"
    )
    assert (out[:64] == np.r_[np.arange(1, 64), -1]).all()  # block 0 ran


def test_memcpy_and_memset_into_shared_memory_are_checked(emu):
    """What memcpy and memset write counts as written (they are calls the instrumentation does
    not see; the library routes them through checking wrappers), and copies of many threads
    into the same bytes are a race."""
    x = np.arange(128, dtype=np.int32)
    out = np.zeros(64, np.int32)
    run(emu, "copies_into_shared", (1, 1, 1), (64, 1, 1), x, out, 0, order="shuffled", seed=8)
    assert out.tolist() == list(range(32)) + [0] * 32
    msg = fault(emu, "copies_into_shared", (1, 1, 1), (64, 1, 1), x, out, 1)
    assert msg == (
        "copies_into_shared: shared-memory race on copies_into_shared(int const*, int*, int)::tile+0: "
        "thread (0,0,0) of block (0,0,0) wrote it and thread (1,0,0) of block (0,0,0) wrote it between "
        "the same two barriers"
    )


MISUSE = [
    (
        1,
        64,
        "thread (0,0,0) of block (0,0,0) (warp 0, lane 0) calls __ballot_sync with mask 0x00000002, "
        "which does not name its own lane",
    ),
    (
        2,
        64,
        "thread (0,0,0) of block (0,0,0) calls __ballot_sync with mask 0xffffffff, which names "
        "lane 16, thread (16,0,0) of block (0,0,0), which has exited",
    ),
    (
        3,
        64,
        "thread (0,0,0) of block (0,0,0) calls __ballot_sync with mask 0xffffffff but lane 1, "
        "thread (1,0,0) of block (0,0,0), calls __any_sync with mask 0xffffffff",
    ),
    (
        4,
        16,
        "thread (0,0,0) of block (0,0,0) calls __ballot_sync with mask 0x001fffff, which names "
        "lane 16 of warp 0: no such thread (a block of 16 threads)",
    ),
    (
        5,
        64,
        "divergent barrier: thread (32,0,0) of block (0,0,0) waits at __syncthreads "
        "({file}:{l5}) but thread (0,0,0) of block (0,0,0) has exited without reaching it",
    ),
    (
        6,
        64,
        "divergent barrier: thread (0,0,0) of block (0,0,0) waits at __syncthreads ({file}:{l6a}) "
        "but thread (32,0,0) of block (0,0,0) at __syncthreads ({file}:{l6b})",
    ),
    (
        7,
        64,
        "thread (0,0,0) of block (0,0,0) waits in __syncwarp with mask 0x00000003 for lane 1, "
        "thread (1,0,0) of block (0,0,0), which waits at __syncthreads ({file}:{l7})",
    ),
    (
        8,
        64,
        "thread (0,0,0) of block (0,0,0) calls __shfl_sync with mask 0x0000ffff and reads lane 20, "
        "which is not in the mask",
    ),
    (
        9,
        64,
        "thread (8,0,0) of block (0,0,0) calls __ballot_sync with mask 0xffffffff, which names "
        "lane 0, thread (0,0,0) of block (0,0,0), which has exited",
    ),
]


@pytest.mark.parametrize("bug, threads, text", MISUSE, ids=[f"bug{m[0]}" for m in MISUSE])
def test_misused_collectives_and_barriers_are_reported(emu, bug, threads, text):
    lines = FIXTURE.read_text().splitlines()
    bug5 = next(i for i, line in enumerate(lines) if "if (bug == 5)" in line)
    bug6 = next(i for i, line in enumerate(lines) if "if (bug == 6)" in line)
    bug7 = next(i for i, line in enumerate(lines) if "if (bug == 7" in line)
    want = text.format(file=FIXTURE, l5=bug5 + 3, l6a=bug6 + 3, l6b=bug6 + 5, l7=bug7 + 3)
    msg = fault(emu, "misuse", (1, 1, 1), (threads, 1, 1), np.zeros(threads, np.int32), bug)
    assert msg == f"misuse: {want}"
    # the library runs the next launch normally (the faulted fibers are abandoned)
    out = np.full(threads, -1, np.int32)
    run(emu, "misuse", (1, 1, 1), (threads, 1, 1), out, 0)
    assert (out == 0).all()


LARGE_FRAME_SCRIPT = """
import ctypes, numpy as np
from gpu_kernels.build import kernel_emulation_library
from gpu_kernels.devices import EmuLibrary, emu_params
emu = EmuLibrary(kernel_emulation_library({fixture!r}, {names!r}))
out = np.zeros(2, np.int32)
params, holders = emu_params([ctypes.c_void_p(out.ctypes.data), ctypes.c_int32(256)])
emu.call(emu.entry("emu_large_frame"), "large_frame", (1, 1, 1), (2, 1, 1), params)
print("returned", out.tolist())
"""


def test_a_frame_larger_than_the_stack_dies_at_the_guard_page():
    """A thread's 136 KiB frame touched at its low end only: the process dies of SIGSEGV at the
    guard page (-fstack-clash-protection) instead of writing into the stack below."""
    kernel_emulation_library(FIXTURE, NAMES)  # built here, not in the child
    proc = subprocess.run(
        [sys.executable, "-c", LARGE_FRAME_SCRIPT.format(fixture=str(FIXTURE), names=NAMES)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == -signal.SIGSEGV, (proc.returncode, proc.stdout, proc.stderr[-2000:])


ASAN_SCRIPT = """
import ctypes, numpy as np
from gpu_kernels.build import kernel_emulation_library
from gpu_kernels.devices import EmuLibrary, emu_params
from gpu_kernels.errors import KernelFaultError
emu = EmuLibrary(kernel_emulation_library({fixture!r}, {names!r}, sanitize=True))
def run(name, grid, block, *args):
    vals = [ctypes.c_void_p(a.ctypes.data) if isinstance(a, np.ndarray) else ctypes.c_int32(a) for a in args]
    params, holders = emu_params(vals)
    emu.call(emu.entry("emu_" + name), name, grid, block, params, "shuffled", 9)
x = np.arange(3 * 256, dtype=np.int32); out = np.zeros(3, np.int32)
run("block_sum_shuffle", (3, 1, 1), (256, 1, 1), x, out)
assert (out == x.reshape(3, 256).sum(1)).all(), out
try:
    run("misuse", (1, 1, 1), (64, 1, 1), np.zeros(64, np.int32), 5)
except KernelFaultError as exc:
    print("fault:", exc)
out[:] = 0
run("block_sum_shared", (3, 1, 1), (256, 1, 1), x, out, 0)
assert (out == x.reshape(3, 256).sum(1)).all(), out
print("checks shared memory:", emu.checks_shared_memory)
"""


def test_warps_and_barriers_under_address_sanitizer():
    """The fibers under the AddressSanitizer build (its fiber-switch annotations): reductions
    exact, a divergent barrier reported and the next launch clean. That build has no
    shared-memory checks (ASan and the ThreadSanitizer instrumentation exclude each other)."""
    try:
        runtime = asan_runtime()
    except BuildError as exc:
        pytest.skip(str(exc))
    kernel_emulation_library(FIXTURE, NAMES, sanitize=True)  # built here, not in the child
    env = dict(os.environ, LD_PRELOAD=str(runtime), ASAN_OPTIONS="detect_leaks=0")
    proc = subprocess.run(
        [sys.executable, "-c", ASAN_SCRIPT.format(fixture=str(FIXTURE), names=NAMES)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "fault: misuse: divergent barrier" in proc.stdout
    assert "checks shared memory: False" in proc.stdout
    assert "AddressSanitizer" not in proc.stderr
