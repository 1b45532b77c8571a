// CPU emulation of the CUDA built-ins the kernels use, so that g++ compiles the very same
// kernel source (kernels.cu) into a shared library that Python loads through ctypes.
//
// A "launch" (emu_launch.h) runs every block and, inside it, every thread one after the other
// (in order, reversed or shuffled). That is exact for our kernels because they use neither
// shared memory nor barriers nor warp intrinsics and every output element is written by
// exactly one thread.
#pragma once
#include <cstddef>

struct uint3 { unsigned x, y, z; };
struct dim3 { unsigned x, y, z; };

namespace emu {
inline thread_local uint3 block_idx{0, 0, 0};
inline thread_local uint3 thread_idx{0, 0, 0};
inline thread_local dim3 block_dim{1, 1, 1};
inline thread_local dim3 grid_dim{1, 1, 1};
}  // namespace emu

#define blockIdx (::emu::block_idx)
#define threadIdx (::emu::thread_idx)
#define blockDim (::emu::block_dim)
#define gridDim (::emu::grid_dim)

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __restrict__ __restrict
#define __launch_bounds__(...)          // the launcher checks KERNEL_MAX_THREADS instead

inline int __popc(unsigned int v) { return __builtin_popcount(v); }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }

// Refused: a kernel that uses one of these does not compile for the emulation (the error names
// the reason) instead of being emulated wrongly. Threads that run one after the other cannot
// meet at a barrier, share a block's memory the way the GPU orders it, or vote and shuffle as
// a warp; emulating them needs threads run to each barrier in phases and warps in lockstep.
#define __shared__ EMU_REFUSES_shared_memory_threads_run_one_after_the_other
#define __syncthreads(...) EMU_REFUSES_syncthreads_threads_run_one_after_the_other
#define __syncthreads_count(...) EMU_REFUSES_syncthreads_threads_run_one_after_the_other
#define __syncthreads_and(...) EMU_REFUSES_syncthreads_threads_run_one_after_the_other
#define __syncthreads_or(...) EMU_REFUSES_syncthreads_threads_run_one_after_the_other
#define __syncwarp(...) EMU_REFUSES_warp_intrinsics_warps_do_not_run_in_lockstep
#define __activemask(...) EMU_REFUSES_warp_intrinsics_warps_do_not_run_in_lockstep
#define __ballot_sync(...) EMU_REFUSES_warp_intrinsics_warps_do_not_run_in_lockstep
#define __any_sync(...) EMU_REFUSES_warp_intrinsics_warps_do_not_run_in_lockstep
#define __all_sync(...) EMU_REFUSES_warp_intrinsics_warps_do_not_run_in_lockstep
#define __shfl_sync(...) EMU_REFUSES_warp_intrinsics_warps_do_not_run_in_lockstep
#define __shfl_up_sync(...) EMU_REFUSES_warp_intrinsics_warps_do_not_run_in_lockstep
#define __shfl_down_sync(...) EMU_REFUSES_warp_intrinsics_warps_do_not_run_in_lockstep
#define __shfl_xor_sync(...) EMU_REFUSES_warp_intrinsics_warps_do_not_run_in_lockstep
#define __match_any_sync(...) EMU_REFUSES_warp_intrinsics_warps_do_not_run_in_lockstep
#define __reduce_add_sync(...) EMU_REFUSES_warp_intrinsics_warps_do_not_run_in_lockstep
#define __reduce_or_sync(...) EMU_REFUSES_warp_intrinsics_warps_do_not_run_in_lockstep
