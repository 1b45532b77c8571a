// 2x2 max pooling, stride 2, floor mode (an odd last row/column is dropped).
//
//   x   [N, H, W, K]     int32 channels (PACKED = false) or packed words (PACKED = true)
//   out [N, H/2, W/2, K]
// On +-1 values packed as bits, the max is the OR of the bits (docs/conventions.md), so one
// source serves both: the element type and the combining operation are template parameters.
// Work axes: n = image, p = oy * Wo + ox, f = channel (int) or word (packed).
#pragma once
#include "common.cuh"

template <typename T, bool PACKED>
__device__ __forceinline__ T pool_combine(T a, T b) {
    return PACKED ? (T)(a | b) : (a > b ? a : b);
}

template <typename T, bool PACKED>
BNN_KERNEL maxpool2x2(SPLIT_PARAMS, const T* __restrict__ x, T* __restrict__ out,
                           int H, int Wd, int Wo) {
    const int K = f_total, Ho = p_total / Wo;
    FOR_EACH_OUTPUT([&](int n, int p, int f) {
        const int oy = p / Wo, ox = p - oy * Wo;
        const T* a = x + (((i64)n * H + 2 * oy) * Wd + 2 * ox) * K + f;
        const i64 down = (i64)Wd * K;
        const T top = pool_combine<T, PACKED>(a[0], a[K]);
        const T bottom = pool_combine<T, PACKED>(a[down], a[down + K]);
        out[(((i64)n * Ho + oy) * Wo + ox) * K + f] = pool_combine<T, PACKED>(top, bottom);
    });
}
