// Network input reorder on the device: NCHW (how images arrive) -> NHWC (what the kernels
// read). Done here rather than on the host because the host transpose of a batch of colour
// images costs more than the copy itself.
//
//   x   [N, C, H*W]  T = u8 (uint8 input) or int
//   out [N, H*W, C]
// Work axes: n = image, p = pixel, f = channel.
#pragma once
#include "common.cuh"

template <typename T>
BNN_KERNEL nchw_to_nhwc(SPLIT_PARAMS, const T* __restrict__ x, T* __restrict__ out) {
    const int HW = p_total, C = f_total;
    FOR_EACH_OUTPUT([&](int n, int p, int c) {
        out[((i64)n * HW + p) * C + c] = x[((i64)n * C + c) * HW + p];
    });
}
