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

// The register-blocked variants (bin_conv_step_pack_px, bin_conv_step_pool_pack_px): a warp
// computes the output words of PX adjacent output pixels of a row, so that every weight word a
// lane loads (shared tile or global memory) serves RX conv pixels of a row from registers (RX =
// PX; 2 PX when pooled, per conv row), where the unblocked kernel loads it again for every conv
// pixel. Why: the H200 ran the binary layers bound by loads and loop trips, not popcounts
// (docs/gpu.md). Per kernel row ky and input word j a lane loads the three weight words of that
// row once and the activation words of the RX + 2 input columns the group's RX conv pixels see
// (one broadcast load each, where the unblocked kernel loads 3 per pixel: neighbouring pixels'
// windows overlap), then adds the 3 x RX popcounts from registers.
//
// Work axes: p = oy * G + g with G = ceil(Wo / PX) pixel groups per output row (Wo: the output
// width; the pooled width when pooled), so the launch geometry and the seven configurations
// are those of any kernel over (n, p, f); the group at ox0 = g * PX holds pixels ox0 ..
// ox0 + PX - 1, of which the npx = min(PX, Wo - ox0) inside the row are stored (fewer than PX
// in the row's tail, where PX does not divide Wo). The pixels past the tail are computed like
// any other (their input columns past the frame read nothing) and never stored.

// Channel ch's +-1 dot products WITHOUT the bias at the RX conv pixels (oy, ox0 + rx) of a row:
// per pixel, over its in-frame taps, C - 2 * popcount(a ^ w) (the last word masked); taps out of
// the frame skipped, as bin_conv_channel_sum. Pixels past the conv's output are computed from
// what the frame holds (nothing outside it is read) and must not be used.
template <typename W, int RX>
__device__ __forceinline__ void bin_conv_row_sums(const BinConvSum<W>& s, int n, int oy, int ox0,
                                                  int ch, int (&sum)[RX]) {
    const int H = s.H, Wd = s.Wd, nw = s.nw, pad = s.pad, F = s.F;
    // bit c: input column ox0 - pad + c (c < RX + 2, the columns the pixels' windows cover) is
    // in the frame; the same for every lane, so the selects below never diverge
    unsigned cols = 0;
#pragma unroll
    for (int c = 0; c < RX + 2; ++c) {
        const int ix = ox0 - pad + c;
        cols |= (unsigned)(ix >= 0 && ix < Wd) << c;
    }
    int pop[RX];
#pragma unroll
    for (int rx = 0; rx < RX; ++rx) pop[rx] = 0;
    int rows = 0;  // the in-frame kernel rows, the same for the RX pixels
    // ky and j rolled, as bin_conv_channel_sum's word loop: the registers go to the RX + 2
    // activation words, three weight words and RX counters of a trip
#pragma unroll 1
    for (int ky = 0; ky < 3; ++ky) {
        const int iy = oy + ky - pad;
        if (iy < 0 || iy >= H) continue;  // the same for every lane
        ++rows;
#pragma unroll 1
        for (int j = 0; j < nw; ++j) {
            const W* row = s.x + ((i64)n * H + iy) * Wd * nw + j;
            const W* wt = s.w + ((i64)ky * 3 * nw + j) * F + ch;  // taps ky * 3 + kx, word j
            // (a ^ w) & m == (a & m) ^ (w & m): the last word's padding bits cleared in both
            const W m = j == nw - 1 ? s.last : ~(W)0;
            const W w0 = wt[0] & m, w1 = wt[(i64)nw * F] & m, w2 = wt[(i64)2 * nw * F] & m;
            W a[RX + 2];  // one broadcast load per input column, shared by up to three pixels
#pragma unroll
            for (int c = 0; c < RX + 2; ++c)
                a[c] = (cols >> c & 1u) ? row[(i64)(ox0 - pad + c) * nw] & m : (W)0;
            // an out-of-frame column's tap adds nothing (its `a` is no activation)
#pragma unroll
            for (int rx = 0; rx < RX; ++rx)
                pop[rx] += ((cols >> rx & 1u) ? popcount((W)(a[rx] ^ w0)) : 0) +
                           ((cols >> (rx + 1) & 1u) ? popcount((W)(a[rx + 1] ^ w1)) : 0) +
                           ((cols >> (rx + 2) & 1u) ? popcount((W)(a[rx + 2] ^ w2)) : 0);
        }
    }
#pragma unroll
    for (int rx = 0; rx < RX; ++rx)
        sum[rx] = rows * popcount((u32)(cols >> rx & 7u)) * s.C - 2 * pop[rx];
}

// One warp per group of PX output words (of one row), as conv_step_pack_words per word: lane b
// computes channel c0 + s + b at the group's conv pixels, a lane past the word's channels
// computes the last channel again and votes 0 (converged up to every ballot), PX ballots per
// round of 32 channels, lane 0 stores the npx words inside the row. POOL: output pixel q is the
// OR of conv pixels (2 oy + dy, 2 (ox0 + q) + dx): the two conv rows dy one after the other,
// each ballotted and the ballots ORed (both rows at once, 4 PX counters live, spilled at
// sm_90), so a weight word serves the 2 PX conv pixels of a row.
template <typename W, bool POOL, int PX>
__device__ __forceinline__ void bin_conv_step_pack_block(SPLIT_PARAMS, const BinConvSum<W>& sum,
                                                         const int* __restrict__ lo,
                                                         const int* __restrict__ hi,
                                                         W* __restrict__ out, int Wo, int F) {
    constexpr int RX = POOL ? 2 * PX : PX;  // conv pixels of a row per group
    const int B = (int)(8 * sizeof(W));
    const WarpShare share = warp_share(n_total, p_total, f_total, n_chunk, p_chunk, f_chunk);
    const int lane = share.lane, k = share.k;
    const unsigned mask = share.mask;
    const int groups = (Wo + PX - 1) / PX, Ho = p_total / groups;
    for (i64 o = share.warp; o < share.outputs; o += share.warps) {
        int n, p, f;
        share.output(o, n, p, f);
        const int oy = p / groups, ox0 = (p - oy * groups) * PX;  // the pooled pixels when POOL
        const int npx = imin(PX, Wo - ox0);
        const int c0 = f * B, nb = imin(B, F - c0);
        W word[PX];
#pragma unroll
        for (int q = 0; q < PX; ++q) word[q] = 0;
        for (int s = 0; s < nb; s += k) {
            const bool valid = s + lane < nb;
            const int ch = c0 + (valid ? s + lane : nb - 1);
            const int l = lo[ch], h = hi[ch];
            // unrolled: rolled, ptxas spilled 8 bytes of the pooled u32 kernel (sm_90)
#pragma unroll
            for (int dy = 0; dy < (POOL ? 2 : 1); ++dy) {
                int acc[RX];
                const int y = POOL ? 2 * oy + dy : oy, x0 = POOL ? 2 * ox0 : ox0;  // conv pixels
                bin_conv_row_sums<W, RX>(sum, n, y, x0, ch, acc);
#pragma unroll
                for (int q = 0; q < PX; ++q) {  // &, |: no branch before the ballot
                    const bool on = POOL ? ((l <= acc[2 * q]) & (acc[2 * q] <= h)) |
                                               ((l <= acc[2 * q + 1]) & (acc[2 * q + 1] <= h))
                                         : (l <= acc[q]) & (acc[q] <= h);
                    // POOL: the OR of the two conv rows' ballots is the ballot of the lanes' ORs
                    word[q] |= (W)__ballot_sync(mask, valid && on) << s;
                }
            }
        }
        if (lane == 0) {
            W* dst = out + (((i64)n * Ho + oy) * Wo + ox0) * f_total + f;
#pragma unroll
            for (int q = 0; q < PX; ++q)
                if (q < npx) dst[(i64)q * f_total] = word[q];  // the row's tail: npx < PX
        }
    }
}

// Every fused binary kernel: the weight tile, then one output word per warp (PX = 1) or PX
// words of a row per warp (the register-blocked kernels). POOL: each output word is the OR of
// the 2x2 conv pixels' words (bin_conv_step_pool_pack).
template <typename W, bool POOL, int PX>
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
    if constexpr (PX == 1)
        conv_step_pack_words<W, POOL>(n_total, p_total, f_total, n_chunk, p_chunk, f_chunk, sum, lo,
                                      hi, out, Wo, F);
    else
        bin_conv_step_pack_block<W, POOL, PX>(n_total, p_total, f_total, n_chunk, p_chunk, f_chunk,
                                              sum, lo, hi, out, Wo, F);
}

template <typename W>
BNN_KERNEL bin_conv_step_pack(SPLIT_PARAMS, const W* __restrict__ x, const W* __restrict__ w,
                              const int* __restrict__ lo, const int* __restrict__ hi,
                              W* __restrict__ out, int H, int Wd, int C, int pad, int Wo, int F) {
    __shared__ W wsh[BIN_FUSED_WEIGHT_BYTES / sizeof(W)];
    bin_conv_step_body<W, false, 1>(n_total, p_total, f_total, n_chunk, p_chunk, f_chunk, x, w, lo,
                                    hi, out, H, Wd, C, pad, Wo, F, wsh);
}

// Wo: the POOLED width (p = py * Wo + px); the conv's output is (2 Ho + Ho % 2) x (2 Wo + ...),
// its odd last row and column dropped by the pooling (floor mode), so never computed.
template <typename W>
BNN_KERNEL bin_conv_step_pool_pack(SPLIT_PARAMS, const W* __restrict__ x, const W* __restrict__ w,
                                   const int* __restrict__ lo, const int* __restrict__ hi,
                                   W* __restrict__ out, int H, int Wd, int C, int pad, int Wo, int F) {
    __shared__ W wsh[BIN_FUSED_WEIGHT_BYTES / sizeof(W)];
    bin_conv_step_body<W, true, 1>(n_total, p_total, f_total, n_chunk, p_chunk, f_chunk, x, w, lo,
                                   hi, out, H, Wd, C, pad, Wo, F, wsh);
}

// The register-blocked kernels: PX (2 or 4) output pixels of a row per warp; p = oy * G + g over
// G = ceil(Wo / PX) groups per row (Wo: the output width, the pooled one when pooled).
template <typename W, int PX>
BNN_KERNEL bin_conv_step_pack_px(SPLIT_PARAMS, const W* __restrict__ x, const W* __restrict__ w,
                                 const int* __restrict__ lo, const int* __restrict__ hi,
                                 W* __restrict__ out, int H, int Wd, int C, int pad, int Wo,
                                 int F) {
    __shared__ W wsh[BIN_FUSED_WEIGHT_BYTES / sizeof(W)];
    bin_conv_step_body<W, false, PX>(n_total, p_total, f_total, n_chunk, p_chunk, f_chunk, x, w, lo,
                                     hi, out, H, Wd, C, pad, Wo, F, wsh);
}

template <typename W, int PX>
BNN_KERNEL bin_conv_step_pool_pack_px(SPLIT_PARAMS, const W* __restrict__ x,
                                      const W* __restrict__ w, const int* __restrict__ lo,
                                      const int* __restrict__ hi, W* __restrict__ out, int H,
                                      int Wd, int C, int pad, int Wo, int F) {
    __shared__ W wsh[BIN_FUSED_WEIGHT_BYTES / sizeof(W)];
    bin_conv_step_body<W, true, PX>(n_total, p_total, f_total, n_chunk, p_chunk, f_chunk, x, w, lo,
                                    hi, out, H, Wd, C, pad, Wo, F, wsh);
}
