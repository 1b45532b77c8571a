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

// The binary convolution fused with the Step after it: xnor/popcount sums as bin_conv3x3,
// threshold and bit packing in one kernel, writing packed words instead of int32 per channel
// (B = 32 or 64 times fewer output bytes, and no step_pack reading the int32 tensor back).
//
//   x      [N, H, W, nw]  packed NHWC activations, as bin_conv3x3
//   w      [9, nw, F]     packed +-1 weights, as bin_conv3x3 (F innermost: the lanes of a warp,
//                         consecutive channels, read consecutive words)
//   lo, hi [F]            int32 bounds on the sum WITHOUT the bias: channel f is +1 where
//                         lo[f] <= sum <= hi[f] (the host folds the bias into the Step's
//                         bounds: layer_ops.FusedOp)
//   out    [N, Ho, Wo, nwo] packed words (nwo = ceil(F / B)), channel f at bit f % B of word
//                         f / B; padding bits 0
// Work axes: n = image, p = oy * Wo + ox, f = output word. One output word per warp, as
// int_conv_step_pack: lane b computes channel c0 + s + b's sum (taps * C - 2 * popcount, the
// activation words the same for every lane: one broadcast load) and __ballot_sync packs the
// warp's k comparisons into bits s .. s + k - 1. Weights of at most BIN_FUSED_WEIGHT_BYTES
// (9 * nw * F words of W) are first copied into shared memory by the block (every thread a
// share), then __syncthreads, then read from there; a larger layer reads them from global
// memory (read-only, cached) instead: every thread of a block takes the same branch.
//
// bin_conv_step_pool_pack: the same followed by the 2x2 max pooling (stride 2, floor mode) of
// the Step's output, in the same kernel: out is [N, Ho/2, Wo/2, nwo] and p a pooled pixel
// (Wo is then the pooled width). After the Step every value is +-1, packed as bit 1 = +1 and
// bit 0 = -1 (docs/conventions.md), so the max of four values is +1 exactly where one of them
// is +1: the OR of their bits (maxpool2x2<W, true> ORs the four packed words). Each lane ORs
// its channel's four comparisons before the one ballot, which is the OR of the four words
// the unpooled kernel would have written, and padding bits stay 0 (a lane past the last
// channel votes 0). The int32 sums and the unpooled words never leave the registers.
#define BIN_FUSED_WEIGHT_BYTES 32768  // 32 KiB: 9 * nw * F * sizeof(W) at most for the tile

// Channel ch's +-1 dot product at conv pixel (oy, ox) WITHOUT the bias: per in-frame tap,
// C - 2 * popcount(a ^ w) over the nw words (the last one masked), out-of-frame taps skipped.
template <typename W>
__device__ __forceinline__ int bin_conv_channel_sum(const W* __restrict__ x, const W* wsrc, int n,
                                                    int oy, int ox, int ch, int H, int Wd, int C,
                                                    int nw, W last, int pad, int F) {
    int taps = 0, pop = 0;
    for (int ky = 0; ky < 3; ++ky) {  // the in-frame taps (taps.h's for_each_tap)
        const int iy = oy + ky - pad;
        if (iy < 0 || iy >= H) continue;
        for (int kx = 0; kx < 3; ++kx) {
            const int ix = ox + kx - pad;
            if (ix < 0 || ix >= Wd) continue;
            const W* a = x + (((i64)n * H + iy) * Wd + ix) * nw;
            const W* wt = wsrc + (i64)(ky * 3 + kx) * nw * F + ch;
            // not unrolled: unrolled, ptxas kept the u32 kernel at 40 registers and
            // spilled 160 bytes; rolled it takes 76 and spills nothing (sm_90)
#pragma unroll 1
            for (int j = 0; j < nw - 1; ++j) pop += popcount((W)(a[j] ^ wt[(i64)j * F]));
            pop += popcount((W)((a[nw - 1] ^ wt[(i64)(nw - 1) * F]) & last));
            ++taps;
        }
    }
    return taps * C - 2 * pop;
}

// bin_conv_channel_sum as the functor conv_step_pack_words calls
template <typename W>
struct BinConvSum {
    const W* x;
    const W* w;  // the shared tile or global memory
    int H, Wd, C, nw;
    W last;
    int pad, F;
    __device__ __forceinline__ int operator()(int n, int oy, int ox, int ch) const {
        return bin_conv_channel_sum<W>(x, w, n, oy, ox, ch, H, Wd, C, nw, last, pad, F);
    }
};

// Both fused binary kernels: the weight tile, then one output word per warp. POOL: each
// output word is the OR of the 2x2 conv pixels' words (bin_conv_step_pool_pack).
template <typename W, bool POOL>
__device__ __forceinline__ void bin_conv_step_body(SPLIT_PARAMS, const W* __restrict__ x,
                                                   const W* __restrict__ w,
                                                   const int* __restrict__ lo,
                                                   const int* __restrict__ hi, W* __restrict__ out,
                                                   int H, int Wd, int C, int pad, int Wo, int F,
                                                   W* wsh) {
    const int B = (int)(8 * sizeof(W));
    const int nw = (C + B - 1) / B;
    const W last = last_word_mask<W>(nw, C);
    const int nweights = 9 * nw * F;
    const bool tiled = nweights <= (int)(BIN_FUSED_WEIGHT_BYTES / sizeof(W));
    const int threads = block_threads(), t = block_thread();
    if (tiled)
        for (int i = t; i < nweights; i += threads) wsh[i] = w[i];
    __syncthreads();
    const BinConvSum<W> sum{x, tiled ? wsh : w, H, Wd, C, nw, last, pad, F};
    conv_step_pack_words<W, POOL>(n_total, p_total, f_total, n_chunk, p_chunk, f_chunk, sum, lo, hi,
                                  out, Wo, F);
}

template <typename W>
BNN_KERNEL bin_conv_step_pack(SPLIT_PARAMS, const W* __restrict__ x, const W* __restrict__ w,
                              const int* __restrict__ lo, const int* __restrict__ hi,
                              W* __restrict__ out, int H, int Wd, int C, int pad, int Wo, int F) {
    __shared__ W wsh[BIN_FUSED_WEIGHT_BYTES / sizeof(W)];
    bin_conv_step_body<W, false>(n_total, p_total, f_total, n_chunk, p_chunk, f_chunk, x, w, lo, hi,
                                 out, H, Wd, C, pad, Wo, F, wsh);
}

// Wo: the POOLED width (p = py * Wo + px); the conv's output is (2 Ho + Ho % 2) x (2 Wo + ...),
// its odd last row and column dropped by the pooling (floor mode), so never computed.
template <typename W>
BNN_KERNEL bin_conv_step_pool_pack(SPLIT_PARAMS, const W* __restrict__ x, const W* __restrict__ w,
                                   const int* __restrict__ lo, const int* __restrict__ hi,
                                   W* __restrict__ out, int H, int Wd, int C, int pad, int Wo, int F) {
    __shared__ W wsh[BIN_FUSED_WEIGHT_BYTES / sizeof(W)];
    bin_conv_step_body<W, true>(n_total, p_total, f_total, n_chunk, p_chunk, f_chunk, x, w, lo, hi,
                                out, H, Wd, C, pad, Wo, F, wsh);
}
