// CPU emulation of the CUDA built-ins the kernels use, so that g++ compiles the very same
// kernel source (kernels.cu) into a shared library that Python loads through ctypes.
//
// A "launch" (emu_launch.h) runs every block, and in it every thread as a fiber: warps of 32
// threads meet at their collectives, the whole block at __syncthreads (emu_runtime.h has the
// model and what it checks).
#pragma once
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "emu_runtime.h"

#define blockIdx (::emu::block_idx)
#define threadIdx (::emu::thread_idx)
#define blockDim (::emu::block_dim)
#define gridDim (::emu::grid_dim)
static constexpr int warpSize = ::emu::WARP;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __restrict__ __restrict
#define __launch_bounds__(...)          // the launcher checks KERNEL_MAX_THREADS instead
// One copy per kernel instantiation serves each block in turn: blocks run one at a time.
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

inline int __popc(unsigned int v) { return __builtin_popcount(v); }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }

// ---- warp collectives (a rendezvous of the lanes named in mask, emu_runtime.h) ----------------
inline void __syncwarp(unsigned mask = 0xffffffffu) {
    ::emu::warp_collective(::emu::SYNCWARP, mask, 0, 0, ::emu::WARP);
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
    return (unsigned)::emu::warp_collective(::emu::BALLOT, mask, pred != 0, 0, ::emu::WARP);
}
inline int __any_sync(unsigned mask, int pred) {
    return (int)::emu::warp_collective(::emu::ANY, mask, pred != 0, 0, ::emu::WARP);
}
inline int __all_sync(unsigned mask, int pred) {
    return (int)::emu::warp_collective(::emu::ALL, mask, pred != 0, 0, ::emu::WARP);
}

namespace emu {
// A shuffle moves the value's bytes (CUDA: int, unsigned, long long, float, double, ...).
template <typename T>
inline T shuffle(int op, unsigned mask, T var, int arg, int width) {
    static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 8, "shuffles move up to 8 bytes");
    unsigned long long bits = 0;  // (__builtin_memcpy: inline, not the checked memcpy)
    __builtin_memcpy(&bits, &var, sizeof(T));
    bits = warp_collective(op, mask, bits, arg, width);
    T out;
    __builtin_memcpy(&out, &bits, sizeof(T));
    return out;
}
}  // namespace emu

template <typename T>
inline T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize) {
    return ::emu::shuffle(::emu::SHFL_IDX, mask, var, src_lane, width);
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
    return ::emu::shuffle(::emu::SHFL_UP, mask, var, (int)delta, width);
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
    return ::emu::shuffle(::emu::SHFL_DOWN, mask, var, (int)delta, width);
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize) {
    return ::emu::shuffle(::emu::SHFL_XOR, mask, var, lane_mask, width);
}

// ---- block barriers (every thread of the block, at the same barrier) --------------------------
#define __syncthreads() ((void)::emu::block_barrier(::emu::BAR_SYNC, 1, __FILE__, __LINE__))
#define __syncthreads_count(pred) ::emu::block_barrier(::emu::BAR_COUNT, (pred), __FILE__, __LINE__)
#define __syncthreads_and(pred) ::emu::block_barrier(::emu::BAR_AND, (pred), __FILE__, __LINE__)
#define __syncthreads_or(pred) ::emu::block_barrier(::emu::BAR_OR, (pred), __FILE__, __LINE__)

// Refused: a kernel that uses one of these does not compile for the emulation (the error names
// the reason) instead of being emulated wrongly. Which lanes are converged at a point is not
// modelled (lanes run one after another between collectives), and the rest is not emulated.
#define __activemask(...) EMU_REFUSES_activemask_convergence_is_not_modelled
#define __match_any_sync(...) EMU_REFUSES_match_sync_not_emulated
#define __match_all_sync(...) EMU_REFUSES_match_sync_not_emulated
#define __reduce_add_sync(...) EMU_REFUSES_reduce_sync_not_emulated
#define __reduce_min_sync(...) EMU_REFUSES_reduce_sync_not_emulated
#define __reduce_max_sync(...) EMU_REFUSES_reduce_sync_not_emulated
#define __reduce_and_sync(...) EMU_REFUSES_reduce_sync_not_emulated
#define __reduce_or_sync(...) EMU_REFUSES_reduce_sync_not_emulated
#define __reduce_xor_sync(...) EMU_REFUSES_reduce_sync_not_emulated
