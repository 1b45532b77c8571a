// Flatten [C, H, W] -> [C * H * W] in NCHW order: flat index k = c * H * W + y * W + x
// (PyTorch/ONNX). The kernels hold activations NHWC, so flatten reorders.
//
// flatten_int:    x [N, HW, C] int32             -> out [N, K] int32
// flatten_packed: x [N, HW, ceil(C/B)] packed    -> out [N, ceil(K/B)] packed along k, bit k % B
//                 of word k / B; padding bits of the last word are 0.
// Work axes: n = image, p = 1 (a flat output has no windows), f = flat element / output word.
#pragma once
#include "common.cuh"

BNN_KERNEL flatten_int(SPLIT_PARAMS, const int* __restrict__ x, int* __restrict__ out,
                            int C, int HW) {
    const int K = f_total;
    FOR_EACH_OUTPUT([&](int n, int p, int k) {
        const int c = k / HW, s = k - c * HW;
        out[(i64)n * K + k] = x[((i64)n * HW + s) * C + c];
    });
}

template <typename W>
BNN_KERNEL flatten_packed(SPLIT_PARAMS, const W* __restrict__ x, W* __restrict__ out,
                               int C, int HW) {
    const int B = (int)(8 * sizeof(W));
    const int nw_in = (C + B - 1) / B, K = C * HW;
    FOR_EACH_OUTPUT([&](int n, int p, int j) {
        const W* img = x + (i64)n * HW * nw_in;
        const int k0 = j * B, nb = imin(B, K - k0);
        W word = 0;
        for (int b = 0; b < nb; ++b) {
            const int k = k0 + b, c = k / HW, s = k - c * HW;
            word |= ((img[(i64)s * nw_in + c / B] >> (c % B)) & (W)1) << b;
        }
        out[(i64)n * f_total + j] = word;
    });
}
