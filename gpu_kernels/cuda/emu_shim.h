// CPU emulation of the CUDA built-ins the kernels use, so that g++ compiles the very same
// kernel source (kernels.cu) into a shared library that Python loads through ctypes.
//
// A "launch" (emu_launch.h) runs every block and, inside it, every thread one after the other.
// That is exact for our kernels because they use neither shared memory nor __syncthreads and
// every output element is written by exactly one thread.
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

inline int __popc(unsigned int v) { return __builtin_popcount(v); }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
