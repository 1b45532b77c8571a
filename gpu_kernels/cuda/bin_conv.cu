// Binary 3x3 convolution: xnor + popcount on packed words, stride 1, padding 0 or 1.
//
//   x    [N, H, W, nw]  packed NHWC activations, nw = ceil(C / B) words of B = 32 or 64 bits
//   w    [9, nw, F]     packed +-1 weights; F innermost (coalesced across the f threads)
//   bias [F]
//   out  [N, Ho, Wo, F] int32
// Per in-frame tap the +-1 dot product over C channels is C - 2 * popcount(a ^ w), with the
// padding bits of the last word masked out. A padded (out-of-frame) tap is skipped: it
// contributes 0, what zero padding of a +-1 tensor gives (docs/conventions.md).
// Work axes: n = image, p = oy * Wo + ox, f = output channel.
#pragma once
#include "common.cuh"

template <typename W>
BNN_KERNEL bin_conv3x3(SPLIT_PARAMS, const W* __restrict__ x, const W* __restrict__ w,
                            const int* __restrict__ bias, int* __restrict__ out,
                            int H, int Wd, int C, int pad, int Wo) {
    const int F = f_total, Ho = p_total / Wo;
    const int nw = (C + (int)(8 * sizeof(W)) - 1) / (int)(8 * sizeof(W));
    const W last = last_word_mask<W>(nw, C);
    FOR_EACH_OUTPUT([&](int n, int p, int f) {
        const int oy = p / Wo, ox = p - oy * Wo;
        int taps = 0, pop = 0;
        for_each_tap(oy, ox, pad, H, Wd, [&](int tap, int iy, int ix) {
            const W* a = x + (((i64)n * H + iy) * Wd + ix) * nw;
            const W* wt = w + (i64)tap * nw * F + f;
            for (int j = 0; j < nw - 1; ++j) pop += popcount((W)(a[j] ^ wt[(i64)j * F]));
            pop += popcount((W)((a[nw - 1] ^ wt[(i64)(nw - 1) * F]) & last));
            ++taps;
        });
        out[(((i64)n * Ho + oy) * Wo + ox) * F + f] = bias[f] + taps * C - 2 * pop;
    });
}
