// Integer-input first layer: 3x3 convolution of integer pixels with +-1 weights, stride 1,
// padding 0 or 1 (a padded tap is skipped, i.e. a zero pixel).
//
//   x    [N, H, W, C]  NHWC pixels (T = u8 for a uint8 network input, int for int32)
//   w    [9, C, F]     +-1 as int8; tap t = ky * 3 + kx; F innermost so that the threads of a
//                      warp (consecutive f) read consecutive weights
//   bias [F]
//   out  [N, Ho, Wo, F] int32
// Work axes: n = image, p = oy * Wo + ox, f = output channel.
// The launcher guarantees (static range check) that no partial sum leaves int32.
#pragma once
#include "common.cuh"

template <typename T>
BNN_KERNEL int_conv3x3(SPLIT_PARAMS, const T* __restrict__ x, const i8* __restrict__ w,
                            const int* __restrict__ bias, int* __restrict__ out,
                            int H, int Wd, int C, int pad, int Wo) {
    const int F = f_total, Ho = p_total / Wo;
    FOR_EACH_OUTPUT([&](int n, int p, int f) {
        const int oy = p / Wo, ox = p - oy * Wo;
        int acc = bias[f];
        for_each_tap(oy, ox, pad, H, Wd, [&](int tap, int iy, int ix) {
            const T* a = x + (((i64)n * H + iy) * Wd + ix) * C;
            const i8* wt = w + (i64)tap * C * F + f;
            for (int c = 0; c < C; ++c) acc += (int)a[c] * (int)wt[(i64)c * F];
        });
        out[(((i64)n * Ho + oy) * Wo + ox) * F + f] = acc;
    });
}

// The integer first layer fused with the Step after it: 3x3 convolution, threshold and bit
// packing in one kernel, writing packed words instead of int32 per channel (B = 32 or 64
// times fewer output bytes, and no second kernel reading the int32 tensor back).
//
//   x      [N, H, W, C]   NHWC pixels (T = u8 or int), as int_conv3x3
//   wbits  [9 * C, nc]    the +-1 weights as bits, nc = ceil(F / 32): bit f % 32 of word
//                         (tap * C + c) * nc + f / 32 is 1 where weight (f, c, tap) is +1
//   lo, hi [F]            int32 bounds on the sum WITHOUT the bias: channel f is +1 where
//                         lo[f] <= sum <= hi[f] (the host folds the bias into the Step's
//                         bounds: layer_ops.FusedOp)
//   out    [N, Ho, Wo, nw] packed words, channel f at bit f % B of word f / B; padding bits 0
// Work axes: n = image, p = oy * Wo + ox, f = output word. One output word per warp, as
// step_pack_warp: lane b computes channel c0 + s + b's sum and __ballot_sync packs the warp's
// k comparisons into bits s .. s + k - 1 (k = the warp's lanes: 32, or fewer in a block's
// last warp). The block first copies the weight bits into shared memory (every thread a
// share), then __syncthreads, then reads them from there for every output; the host refuses
// a layer whose bits exceed FUSED_WEIGHT_WORDS (a kernel given one writes nothing).
//
// int_conv_step_pool_pack: the same followed by the 2x2 max pooling (stride 2, floor mode) of
// the Step's +-1 output: out is [N, Ho/2, Wo/2, nw], p a pooled pixel and Wo the pooled width.
// Bit 1 = +1 (docs/conventions.md), so the max of four +-1 values is the OR of their bits: each
// lane ORs its channel's four comparisons before the one ballot (bin_conv.cu says more).
#define FUSED_WEIGHT_WORDS 4096  // 16 KiB: 9 * C * ceil(F / 32) words at most

// Channel ch's sum at conv pixel (oy, ox) WITHOUT the bias, its weight bits from wsh.
template <typename T>
__device__ __forceinline__ int int_conv_channel_sum(const T* __restrict__ x, const u32* wsh, int n,
                                                    int oy, int ox, int ch, int H, int Wd, int C,
                                                    int pad, int nc) {
    const u32* wcol = wsh + (ch >> 5);
    const int bit = ch & 31;
    int acc = 0;
    for (int ky = 0; ky < 3; ++ky) {  // the in-frame taps (taps.h's for_each_tap)
        const int iy = oy + ky - pad;
        if (iy < 0 || iy >= H) continue;
        for (int kx = 0; kx < 3; ++kx) {
            const int ix = ox + kx - pad;
            if (ix < 0 || ix >= Wd) continue;
            const T* a = x + (((i64)n * H + iy) * Wd + ix) * C;
            const u32* wt = wcol + (ky * 3 + kx) * C * nc;
            for (int c = 0; c < C; ++c) {
                // m = 0 for a +1 weight, -1 for a -1 weight: (v ^ m) - m = +-v
                const int v = (int)a[c], m = (int)((wt[c * nc] >> bit) & 1u) - 1;
                acc += (v ^ m) - m;
            }
        }
    }
    return acc;
}

// int_conv_channel_sum as the functor conv_step_pack_words calls
template <typename T>
struct IntConvSum {
    const T* x;
    const u32* wsh;
    int H, Wd, C, pad, nc;
    __device__ __forceinline__ int operator()(int n, int oy, int ox, int ch) const {
        return int_conv_channel_sum<T>(x, wsh, n, oy, ox, ch, H, Wd, C, pad, nc);
    }
};

// Both fused integer kernels: the weight tile, then one output word per warp. POOL: each
// output word is the OR of the 2x2 conv pixels' words (int_conv_step_pool_pack).
template <typename T, typename W, bool POOL>
__device__ __forceinline__ void int_conv_step_body(SPLIT_PARAMS, const T* __restrict__ x,
                                                   const u32* __restrict__ wbits,
                                                   const int* __restrict__ lo,
                                                   const int* __restrict__ hi, W* __restrict__ out,
                                                   int H, int Wd, int C, int pad, int Wo, int F,
                                                   u32* wsh) {
    const int nc = (F + 31) / 32, nwords = 9 * C * nc;
    if (nwords > FUSED_WEIGHT_WORDS) return;  // every thread alike: no barrier is split
    const int threads = block_threads(), t = block_thread();
    for (int i = t; i < nwords; i += threads) wsh[i] = wbits[i];
    __syncthreads();
    const IntConvSum<T> sum{x, wsh, H, Wd, C, pad, nc};
    conv_step_pack_words<W, POOL>(n_total, p_total, f_total, n_chunk, p_chunk, f_chunk, sum, lo, hi,
                                  out, Wo, F);
}

template <typename T, typename W>
BNN_KERNEL int_conv_step_pack(SPLIT_PARAMS, const T* __restrict__ x, const u32* __restrict__ wbits,
                              const int* __restrict__ lo, const int* __restrict__ hi,
                              W* __restrict__ out, int H, int Wd, int C, int pad, int Wo, int F) {
    __shared__ u32 wsh[FUSED_WEIGHT_WORDS];
    int_conv_step_body<T, W, false>(n_total, p_total, f_total, n_chunk, p_chunk, f_chunk, x, wbits, lo,
                                    hi, out, H, Wd, C, pad, Wo, F, wsh);
}

// Wo: the POOLED width; the conv's odd last row and column (dropped by the pooling's floor
// mode) are never computed. Its launch bound names one resident block per SM: with the bound
// alone ptxas aimed at two blocks of 768 threads (40 registers) and spilled 36-116 bytes
// (sm_90); told one, it takes 70 and spills nothing (the blocks of 768 it must allow still
// launch, tests/test_gpu_nvcc.py).
template <typename T, typename W>
__global__ void __launch_bounds__(KERNEL_MAX_THREADS, 1)
    int_conv_step_pool_pack(SPLIT_PARAMS, const T* __restrict__ x, const u32* __restrict__ wbits,
                            const int* __restrict__ lo, const int* __restrict__ hi,
                            W* __restrict__ out, int H, int Wd, int C, int pad, int Wo, int F) {
    __shared__ u32 wsh[FUSED_WEIGHT_WORDS];
    int_conv_step_body<T, W, true>(n_total, p_total, f_total, n_chunk, p_chunk, f_chunk, x, wbits, lo,
                                   hi, out, H, Wd, C, pad, Wo, F, wsh);
}
