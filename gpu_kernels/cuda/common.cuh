// Shared definitions of the BNN kernels.
//
// The same text is compiled three ways: by NVRTC (CuPy RawModule), by nvcc with NVRTC's
// options (the compile check: registers, spills) and by g++ with emu_shim.h (CPU emulation). So:
// no system headers, and only the CUDA built-ins emu_shim.h provides (static __shared__
// memory, __syncthreads*, the *_sync warp collectives, __popc; emu_runtime.h says how the
// emulation runs and checks them).
#pragma once

typedef unsigned char u8;
typedef signed char i8;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

__device__ __forceinline__ int popcount(u32 v) { return __popc(v); }
__device__ __forceinline__ int popcount(u64 v) { return __popcll(v); }

__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }

// Bits of the last of `nw` words that hold channels when a row has `bits` channels: the other
// bits are padding and must never count (docs/conventions.md).
template <typename W>
__device__ __forceinline__ W last_word_mask(int nw, int bits) {
    const int rem = bits - (nw - 1) * (int)(8 * sizeof(W));
    return rem == (int)(8 * sizeof(W)) ? ~(W)0 : (((W)1 << rem) - (W)1);
}

#define TAP_FN __device__ __forceinline__
#include "taps.h"

// Threads per block every kernel is compiled for. __launch_bounds__ makes the compiler keep the
// registers per thread low enough for a block this large to launch: without it NVRTC gave
// bin_conv3x3 72 registers, which allow 896 threads per block on sm_90, not CUDA's 1024, so a
// 1024-thread launch would fail on the GPU alone (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES). 768
// leaves a budget of 80 registers per thread (registers go to warps in units of 256), under
// which no kernel spills (ptxas -v, tests/test_gpu_nvcc.py); 1024 (64 registers) made
// bin_conv3x3 spill. gpu_kernels/launch.py
// reads the number from this line and refuses larger blocks; the CPU emulation refuses them
// too, as the driver would.
#define KERNEL_MAX_THREADS 768
#define BNN_KERNEL __global__ void __launch_bounds__(KERNEL_MAX_THREADS)

// ---------------------------------------------------------------------------------------------
// Work split: how the seven HEP-BNN configurations reach a kernel.
//
// Every kernel computes a 3-D set of outputs indexed by (n, p, f):
//   n = image of the batch, p = output pixel y * Wo + x (a "window" position), f = neuron
//   (output channel, output word or flat output index).
// The launcher (gpu_kernels/launch.py) fixes the axes:
//   blockIdx.x <-> n, blockIdx.y <-> p, blockIdx.z <-> f,
//   threadIdx.z <-> n, threadIdx.y <-> p, threadIdx.x <-> f,
// and passes, per axis, the extent (n_total, ...) and the chunk of that axis one block owns.
// A configuration that spreads an axis across blocks (X: images, Y: windows, Z: neurons) gives
// it a small chunk (one image, one window of pixels, one neuron) and a grid dimension of
// ceil(extent / chunk); an axis it does not spread has chunk = extent and grid dimension 1.
// Inside its chunk, each thread strides by the block dimension, so any grid/block shape covers
// every output exactly once; the configuration only changes who computes what.
// ---------------------------------------------------------------------------------------------
#define SPLIT_PARAMS int n_total, int p_total, int f_total, int n_chunk, int p_chunk, int f_chunk

template <class Body>
__device__ __forceinline__ void for_each_output(int n_total, int p_total, int f_total,
                                                int n_chunk, int p_chunk, int f_chunk,
                                                Body body) {
    const int n0 = (int)blockIdx.x * n_chunk, n1 = imin(n_total, n0 + n_chunk);
    const int p0 = (int)blockIdx.y * p_chunk, p1 = imin(p_total, p0 + p_chunk);
    const int f0 = (int)blockIdx.z * f_chunk, f1 = imin(f_total, f0 + f_chunk);
    for (int n = n0 + (int)threadIdx.z; n < n1; n += (int)blockDim.z)
        for (int p = p0 + (int)threadIdx.y; p < p1; p += (int)blockDim.y)
            for (int f = f0 + (int)threadIdx.x; f < f1; f += (int)blockDim.x)
                body(n, p, f);
}

// Variadic because the lambda body contains commas.
#define FOR_EACH_OUTPUT(...) \
    for_each_output(n_total, p_total, f_total, n_chunk, p_chunk, f_chunk, __VA_ARGS__)

// A thread's index in its block and the block's thread count (x fastest, as CUDA numbers the
// lanes of a warp).
__device__ __forceinline__ int block_thread() {
    return (int)((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x);
}
__device__ __forceinline__ int block_threads() {
    return (int)(blockDim.x * blockDim.y * blockDim.z);
}

// One output per warp (the kernels that pack with __ballot_sync): the warps of a block, not its
// threads, take the block's outputs of the same (n, p, f) chunk in turn, so every lane of a
// warp runs the same iterations and meets at every collective. body(n, p, f, lane, k, mask):
// k = the lanes of this warp (32, or fewer in a block's last warp), mask = their bits.
// WarpShare is that loop's set-up: the kernels that ptxas spilled through the lambda write the
// loop out on it (for (i64 o = s.warp; o < s.outputs; o += s.warps) { s.output(o, n, p, f); }).
struct WarpShare {
    int warp, lane, warps, k;  // this warp, this lane, the block's warps, this warp's lanes
    unsigned mask;             // the bits of this warp's lanes
    int n0, p0, f0, np, nf;    // the block's chunk: its first (n, p, f) and extents
    i64 outputs;               // the chunk's outputs
    __device__ __forceinline__ void output(i64 o, int& n, int& p, int& f) const {
        n = n0 + (int)(o / nf / np), p = p0 + (int)(o / nf % np), f = f0 + (int)(o % nf);
    }
};
__device__ __forceinline__ WarpShare warp_share(int n_total, int p_total, int f_total, int n_chunk,
                                                int p_chunk, int f_chunk) {
    WarpShare s;
    const int threads = block_threads(), t = block_thread();
    s.warp = t / 32, s.lane = t % 32, s.warps = (threads + 31) / 32;
    s.k = imin(32, threads - s.warp * 32);
    s.mask = s.k == 32 ? 0xffffffffu : (1u << s.k) - 1u;
    s.n0 = (int)blockIdx.x * n_chunk;
    s.p0 = (int)blockIdx.y * p_chunk, s.np = imin(p_total, s.p0 + p_chunk) - s.p0;
    s.f0 = (int)blockIdx.z * f_chunk, s.nf = imin(f_total, s.f0 + f_chunk) - s.f0;
    s.outputs = (i64)(imin(n_total, s.n0 + n_chunk) - s.n0) * s.np * s.nf;
    return s;
}

template <class Body>
__device__ __forceinline__ void for_each_warp_output(int n_total, int p_total, int f_total,
                                                     int n_chunk, int p_chunk, int f_chunk,
                                                     Body body) {
    const WarpShare s = warp_share(n_total, p_total, f_total, n_chunk, p_chunk, f_chunk);
    for (i64 o = s.warp; o < s.outputs; o += s.warps) {
        int n, p, f;
        s.output(o, n, p, f);
        body(n, p, f, s.lane, s.k, s.mask);
    }
}

#define FOR_EACH_WARP_OUTPUT(...) \
    for_each_warp_output(n_total, p_total, f_total, n_chunk, p_chunk, f_chunk, __VA_ARGS__)

// The fused conv + Step (+ MaxPool2d) kernels' output words: one packed word of F channels per
// warp at each output pixel (Wo wide), channel ch on when lo[ch] <= sum <= hi[ch]; sum(n, y, x,
// ch) is the conv's channel sum without the bias, a functor held by value (the loop is written
// out on WarpShare: through for_each_warp_output's lambda ptxas spilled these kernels at sm_90).
// POOL: the output pixel is a 2x2 window of conv pixels, +1 where any of the four is +1 (on
// +-1 values the max is the OR of the bits).
template <typename W, bool POOL, class Sum>
__device__ __forceinline__ void conv_step_pack_words(SPLIT_PARAMS, const Sum& sum,
                                                     const int* __restrict__ lo,
                                                     const int* __restrict__ hi,
                                                     W* __restrict__ out, int Wo, int F) {
    const int B = (int)(8 * sizeof(W));
    const WarpShare share = warp_share(n_total, p_total, f_total, n_chunk, p_chunk, f_chunk);
    const int lane = share.lane, k = share.k;
    const unsigned mask = share.mask;
    for (i64 o = share.warp; o < share.outputs; o += share.warps) {
        int n, p, f;
        share.output(o, n, p, f);
        const int oy = p / Wo, ox = p - oy * Wo;  // the pooled pixel when POOL
        const int c0 = f * B, nb = imin(B, F - c0);
        W word = 0;
        for (int s = 0; s < nb; s += k) {
            // a lane past the word's channels computes its last channel again and votes 0, so
            // that the warp stays converged up to the ballot
            const bool valid = s + lane < nb;
            const int ch = c0 + (valid ? s + lane : nb - 1);
            bool on = false;
            if (POOL) {
#pragma unroll 1
                for (int q = 0; q < 4; ++q) {
                    const int acc = sum(n, 2 * oy + (q >> 1), 2 * ox + (q & 1), ch);
                    on |= (lo[ch] <= acc) & (acc <= hi[ch]);  // &, |: no branch before the ballot
                }
            } else {
                const int acc = sum(n, oy, ox, ch);
                on = lo[ch] <= acc && acc <= hi[ch];
            }
            word |= (W)__ballot_sync(mask, valid && on) << s;
        }
        if (lane == 0) out[((i64)n * p_total + p) * f_total + f] = word;
    }
}
