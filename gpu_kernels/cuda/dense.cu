// Binary fully connected layer: xnor + popcount over a packed flat input.
//
//   x    [N, nw]  packed inputs, nw = ceil(K / B)
//   w    [nw, F]  packed +-1 weights; F innermost (coalesced across the f threads)
//   bias [F]
//   out  [N, F]   int32 = bias + K - 2 * popcount(x ^ w), padding bits masked out
// Work axes: n = image, p = 1 (no windows in a dense layer), f = neuron. More than 1024 neurons
// are fine: threads stride over f (HEP-BNN gave such layers an illegal block size).
#pragma once
#include "common.cuh"

template <typename W>
BNN_KERNEL bin_dense(SPLIT_PARAMS, const W* __restrict__ x, const W* __restrict__ w,
                          const int* __restrict__ bias, int* __restrict__ out, int K) {
    const int F = f_total;
    const int nw = (K + (int)(8 * sizeof(W)) - 1) / (int)(8 * sizeof(W));
    const W last = last_word_mask<W>(nw, K);
    FOR_EACH_OUTPUT([&](int n, int p, int f) {
        const W* a = x + (i64)n * nw;
        int pop = 0;
        for (int j = 0; j < nw - 1; ++j) pop += popcount((W)(a[j] ^ w[(i64)j * F + f]));
        pop += popcount((W)((a[nw - 1] ^ w[(i64)(nw - 1) * F + f]) & last));
        out[(i64)n * F + f] = bias[f] + K - 2 * pop;
    });
}
