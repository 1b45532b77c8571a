// Step (folded batch norm + sign) that packs its +-1 output into words.
//
//   x      [N, P, C] int32: NHWC pre-activations (P = H * W pixels) or a flat [N, K] tensor (P = 1)
//   lo, hi [C]       int32 bounds: channel c is +1 where lo[c] <= x <= hi[c], else -1. The host
//                    derives them from the golden (threshold t, direction d): d = +1 gives
//                    [t, INT_MAX], d = -1 gives [INT_MIN, t], an empty range is lo = 1, hi = 0
//                    (gpu_kernels/layer_ops.py, step_bounds).
//   out    [N, P, nw] packed words, channel c at bit c % B of word c / B; padding bits 0.
// Work axes: n = image, p = pixel, f = output word.
#pragma once
#include "common.cuh"

template <typename W>
BNN_KERNEL step_pack(SPLIT_PARAMS, const int* __restrict__ x, const int* __restrict__ lo,
                          const int* __restrict__ hi, W* __restrict__ out, int C) {
    const int B = (int)(8 * sizeof(W));
    FOR_EACH_OUTPUT([&](int n, int p, int f) {
        const i64 row = (i64)n * p_total + p;
        const int* v = x + row * C;
        const int c0 = f * B, nb = imin(B, C - c0);
        W word = 0;
        for (int b = 0; b < nb; ++b) {
            const int c = c0 + b, a = v[c];
            word |= (W)(lo[c] <= a && a <= hi[c]) << b;
        }
        out[row * f_total + f] = word;
    });
}

// The same step, one output word per warp: lane b compares channel c0 + s + b and
// __ballot_sync packs the warp's k comparisons into bits s .. s + k - 1 of the word (k = the
// lanes of the warp: 32, or fewer in a block's last warp), so that a warp's loads of x, lo and
// hi are k consecutive ints (step_pack's thread reads B consecutive channels of its own word:
// a warp's load touches 32 lines). Same arguments, work axes and result as step_pack; the
// warps of a block, not its threads, take the block's outputs in turn, so every lane of a
// warp runs the same iterations and meets at every ballot.
template <typename W>
BNN_KERNEL step_pack_warp(SPLIT_PARAMS, const int* __restrict__ x, const int* __restrict__ lo,
                          const int* __restrict__ hi, W* __restrict__ out, int C) {
    const int B = (int)(8 * sizeof(W));
    FOR_EACH_WARP_OUTPUT([&](int n, int p, int f, int lane, int k, unsigned mask) {
        const i64 row = (i64)n * p_total + p;
        const int* v = x + row * C;
        const int c0 = f * B, nb = imin(B, C - c0);
        W word = 0;
        for (int s = 0; s < nb; s += k) {
            const int c = c0 + s + lane;
            const bool on = s + lane < nb && lo[c] <= v[c] && v[c] <= hi[c];
            word |= (W)__ballot_sync(mask, on) << s;
        }
        if (lane == 0) out[row * f_total + f] = word;
    });
}
