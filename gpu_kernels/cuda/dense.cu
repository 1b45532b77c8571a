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

// The binary dense layer fused with the Step after it: popcount sums as bin_dense, threshold
// and bit packing in one kernel, writing the Step's packed flat words instead of int32 per
// neuron (and no step_pack reading them back).
//
//   x      [N, nw]    packed inputs, nw = ceil(K / B), as bin_dense
//   w      [nw, F]    packed +-1 weights, as bin_dense (F innermost: the lanes of a warp,
//                     consecutive neurons, read consecutive words; x's word is the same for
//                     every lane, a broadcast load)
//   lo, hi [F]        int32 bounds on K - 2 * popcount WITHOUT the bias: neuron f is +1 where
//                     lo[f] <= sum <= hi[f] (the host folds the bias in: layer_ops.FusedOp)
//   out    [N, nwo]   packed words (nwo = ceil(F / B)), neuron f at bit f % B of word f / B
//                     (bnn.pack_bits' flat format); padding bits 0
// Work axes: n = image, p = 1, f = output word. One output word per warp, as step_pack_warp: lane
// b computes neuron c0 + s + b and __ballot_sync packs the warp's k comparisons into bits
// s .. s + k - 1. No shared memory: every weight is read once per image (the caches serve the
// images of a block).
template <typename W>
BNN_KERNEL bin_dense_step_pack(SPLIT_PARAMS, const W* __restrict__ x, const W* __restrict__ w,
                               const int* __restrict__ lo, const int* __restrict__ hi,
                               W* __restrict__ out, int K, int F) {
    const int B = (int)(8 * sizeof(W));
    const int nw = (K + B - 1) / B;
    const W last = last_word_mask<W>(nw, K);
    FOR_EACH_WARP_OUTPUT([&](int n, int p, int f, int lane, int k, unsigned mask) {
        const W* a = x + (i64)n * nw;
        const int c0 = f * B, nb = imin(B, F - c0);
        W word = 0;
        for (int s = 0; s < nb; s += k) {
            // a lane past the word's neurons computes its last neuron again and votes 0, so that
            // the warp stays converged up to the ballot
            const bool valid = s + lane < nb;
            const int ch = c0 + (valid ? s + lane : nb - 1);
            int pop = 0;
            for (int j = 0; j < nw - 1; ++j) pop += popcount((W)(a[j] ^ w[(i64)j * F + ch]));
            pop += popcount((W)((a[nw - 1] ^ w[(i64)(nw - 1) * F + ch]) & last));
            const int acc = K - 2 * pop;
            const bool on = valid && lo[ch] <= acc && acc <= hi[ch];
            word |= (W)__ballot_sync(mask, on) << s;
        }
        if (lane == 0) out[((i64)n * p_total + p) * f_total + f] = word;
    });
}
