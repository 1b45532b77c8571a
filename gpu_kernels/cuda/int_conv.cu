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
