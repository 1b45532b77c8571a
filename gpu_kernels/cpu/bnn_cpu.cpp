// The CPU implementation of every BNN layer: the "cpu" choice of the mapper (HEP-BNN's
// sequential C++ model, here vectorised and multi-threaded over images with OpenMP).
//
// Data formats are exactly those of the GPU kernels (gpu_kernels/cuda/*.cu), so a layer moves
// between the CPU and the GPU with a plain copy: int32 NHWC / [N, K] tensors, packed words NHWC
// (channel c at bit c % B of word c / B, padding bits 0), and the same weight layouts ([9, C, F],
// [9, nw, F], [nw, F]: F innermost, which is also what lets the compiler vectorise the
// per-neuron loops below). Weights arrive with zero padding bits; activation words are masked.
#include <omp.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <cstdint>
#include <cstring>
#include <vector>

#include "../cuda/taps.h"

namespace {

typedef int64_t i64;

// Below this many element operations a layer runs on one thread: on a busy machine, waking
// and joining a second thread costs more than such a layer (milliseconds when it is descheduled).
constexpr i64 PAR_MIN = (i64)1 << 22;

inline int popcnt(uint32_t v) { return __builtin_popcount(v); }
inline int popcnt(uint64_t v) { return __builtin_popcountll(v); }

template <typename W>
inline W last_mask(int nw, int bits) {
    const int B = 8 * sizeof(W), rem = bits - (nw - 1) * B;
    return rem == B ? ~(W)0 : (((W)1 << rem) - 1);
}

// Integer first layer as a small matrix product. For a row of up to 8 output pixels, gather
// their 3x3xC windows from a zero-bordered copy of the image (no bounds checks), then compute NB
// blocks of output channels for PX pixels at a time with the PX x NB accumulators in vector
// registers (NB, PX template parameters, at most 16 registers); each weight vector loaded
// serves PX pixels. With +-1 weights the product needs no multiplication:
// sum_k w_k v_k = 2 * sum_{w_k = +1} v_k - sum_k v_k, the masked sum an AND with an
// all-ones/zero mask per weight. Lanes are int16 (32 per register) when the window sums fit
// (uint8 pixels, 9 * C * 255 <= 32767, i.e. C <= 14: first layers of image networks), else int32.
constexpr int GROUP = 8;                       // output pixels gathered together

template <typename E>
struct Lanes {
    typedef E vec __attribute__((vector_size(64)));
    static constexpr int n = 64 / sizeof(E);
};

template <typename E, int NB, int PX>
inline void masked_sums_px(const E* __restrict col, int K, const E* __restrict mask, int Fp,
                           const int32_t* __restrict b32, const int32_t* total,
                           int32_t* const* o, int nf, int npx) {
    typedef typename Lanes<E>::vec V;
    constexpr int LN = Lanes<E>::n;
    V acc[PX][NB];
    for (int q = 0; q < PX; ++q)
        for (int b = 0; b < NB; ++b) acc[q][b] = V{0};
    for (int k = 0; k < K; ++k) {
        V m[NB];
        for (int b = 0; b < NB; ++b) std::memcpy(&m[b], mask + (size_t)k * Fp + b * LN, sizeof(V));
        for (int q = 0; q < PX; ++q) {
            const E v = col[q * K + k];
            for (int b = 0; b < NB; ++b) acc[q][b] += v & m[b];
        }
    }
    for (int q = 0; q < npx; ++q)
        for (int b = 0; b < NB; ++b) {
            E a[LN];
            std::memcpy(a, &acc[q][b], sizeof a);
            const int left = nf - b * LN < LN ? nf - b * LN : LN;
            int32_t* dst = o[q] + b * LN;
            const int32_t* bias = b32 + b * LN;
            for (int l = 0; l < left; ++l) dst[l] = 2 * (int32_t)a[l] - total[q] + bias[l];
        }
}

template <typename E, int NB>
inline void masked_sums(const E* col, int K, const E* mask, int Fp, const int32_t* b32,
                        const int32_t* total, int32_t* const* o, int nf, int npx) {
    constexpr int PX = NB <= 2 ? 8 : NB <= 4 ? 4 : 2;     // PX * NB <= 16 registers
    for (int q0 = 0; q0 < npx; q0 += PX)
        masked_sums_px<E, NB, PX>(col + q0 * K, K, mask, Fp, b32, total + q0, o + q0, nf,
                                  npx - q0 < PX ? npx - q0 : PX);
}

template <typename E, typename T>
void int_conv3x3_lanes(const T* x, const int8_t* w, const int32_t* bias, int32_t* out, int N,
                       int H, int Wd, int C, int F, int pad) {
    constexpr int LN = Lanes<E>::n;
    const int Ho = H + 2 * pad - 2, Wo = Wd + 2 * pad - 2, K = 9 * C;
    const int Fp = (F + LN - 1) / LN * LN;
    std::vector<E> mask((size_t)K * Fp, 0);               // [k = tap * C + c][Fp]: -1 where w = +1
    for (int k = 0; k < K; ++k)
        for (int f = 0; f < F; ++f) mask[(size_t)k * Fp + f] = w[(i64)k * F + f] > 0 ? -1 : 0;
    std::vector<int32_t> b32(Fp, 0);
    for (int f = 0; f < F; ++f) b32[f] = bias[f];
    const int Hp = H + 2 * pad, Wp = Wd + 2 * pad;
#pragma omp parallel if((i64)N * Ho * Wo * F * K > PAR_MIN)
    {
        std::vector<E> colbuf((size_t)GROUP * K), frame((size_t)Hp * Wp * C, 0);
        E* __restrict col = colbuf.data();
#pragma omp for schedule(static)
        for (int n = 0; n < N; ++n) {
            for (int y = 0; y < H; ++y) {
                const T* src = x + ((i64)n * H + y) * Wd * C;
                E* dst = frame.data() + ((size_t)(y + pad) * Wp + pad) * C;
                for (int j = 0; j < Wd * C; ++j) dst[j] = (E)src[j];
            }
            for (int oy = 0; oy < Ho; ++oy)
                for (int ox0 = 0; ox0 < Wo; ox0 += GROUP) {
                    const int npx = Wo - ox0 < GROUP ? Wo - ox0 : GROUP;
                    int32_t total[GROUP];
                    int32_t* o[GROUP];
                    for (int q = 0; q < npx; ++q) {
                        const int ox = ox0 + q;
                        o[q] = out + (((i64)n * Ho + oy) * Wo + ox) * F;
                        E* dst = col + q * K;
                        int32_t sum = 0;
                        for (int ky = 0; ky < 3; ++ky) {
                            const E* src = frame.data() + ((size_t)(oy + ky) * Wp + ox) * C;
                            for (int j = 0; j < 3 * C; ++j) sum += dst[ky * 3 * C + j] = src[j];
                        }
                        total[q] = sum;
                    }
                    for (int fb = 0; fb < F; fb += 8 * LN) {
                        const int nb = (F - fb + LN - 1) / LN;
                        int32_t* of[GROUP];
                        for (int q = 0; q < npx; ++q) of[q] = o[q] + fb;
                        const E* mk = mask.data() + fb;
                        const int32_t* bk = b32.data() + fb;
#define MS(K_) masked_sums<E, K_>(col, K, mk, Fp, bk, total, of, F - fb, npx)
                        switch (nb < 8 ? nb : 8) {
                            case 1: MS(1); break;
                            case 2: MS(2); break;
                            case 3: MS(3); break;
                            case 4: MS(4); break;
                            case 5: MS(5); break;
                            case 6: MS(6); break;
                            case 7: MS(7); break;
                            default: MS(8); break;
                        }
#undef MS
                    }
                }
        }
    }
}

template <typename T>
void int_conv3x3(const T* x, const int8_t* w, const int32_t* bias, int32_t* out, int N, int H,
                 int Wd, int C, int F, int pad) {
    if (sizeof(T) == 1 && 9 * C * 255 <= 32767)
        int_conv3x3_lanes<int16_t>(x, w, bias, out, N, H, Wd, C, F, pad);
    else
        int_conv3x3_lanes<int32_t>(x, w, bias, out, N, H, Wd, C, F, pad);
}

// Binary conv: per output pixel, the popcounts of NB blocks of output channels (one vector
// register of W lanes each) accumulate over the in-frame taps and words; a template parameter so
// they stay in registers. With AVX-512 VPOPCNTDQ the lane loop is one vpopcnt per block.
template <typename W, int NB>
inline void xor_popcounts(const W* x, const W* w, int n, int oy, int ox, int H, int Wd, int nw,
                          int F, int fb, W last, int pad, W* __restrict pop, int& taps) {
    constexpr int LW = 64 / sizeof(W);
    W acc[NB * LW] = {0};
    taps = 0;
    for_each_tap(oy, ox, pad, H, Wd, [&](int tap, int iy, int ix) {
        ++taps;
        const W* a = x + (((i64)n * H + iy) * Wd + ix) * nw;
        const W* wt = w + (i64)tap * nw * F + fb;
        for (int j = 0; j < nw; ++j) {
            const W aj = j == nw - 1 ? (W)(a[j] & last) : a[j];
            const W* __restrict wr = wt + (i64)j * F;
            for (int l = 0; l < NB * LW; ++l) acc[l] += (W)popcnt((W)(aj ^ wr[l]));
        }
    });
    for (int l = 0; l < NB * LW; ++l) pop[l] = acc[l];
}

template <typename W>
void bin_conv3x3(const W* x, const W* w, const int32_t* bias, int32_t* out, int N, int H, int Wd,
                 int C, int F, int pad) {
    constexpr int LW = 64 / sizeof(W);
    const int B = 8 * sizeof(W), nw = (C + B - 1) / B;
    const int Ho = H + 2 * pad - 2, Wo = Wd + 2 * pad - 2;
    const int Fp = (F + LW - 1) / LW * LW;
    const W last = last_mask<W>(nw, C);
    // weights with F padded to whole vector blocks (the padding columns are never stored)
    std::vector<W> wp((size_t)9 * nw * Fp, 0);
    for (int t = 0; t < 9 * nw; ++t)
        for (int f = 0; f < F; ++f) wp[(size_t)t * Fp + f] = w[(i64)t * F + f];
#pragma omp parallel if((i64)N * Ho * Wo * F * 9 * nw > PAR_MIN)
    {
        std::vector<W> pop(8 * LW);
#pragma omp for schedule(static)
        for (int n = 0; n < N; ++n)
            for (int oy = 0; oy < Ho; ++oy)
                for (int ox = 0; ox < Wo; ++ox) {
                    int32_t* o = out + (((i64)n * Ho + oy) * Wo + ox) * F;
                    for (int fb = 0; fb < F; fb += 8 * LW) {
                        const int nb = (F - fb + LW - 1) / LW;
                        int taps = 0;
#define XP(K) xor_popcounts<W, K>(x, wp.data(), n, oy, ox, H, Wd, nw, Fp, fb, last, pad, pop.data(), taps)
                        switch (nb < 8 ? nb : 8) {
                            case 1: XP(1); break;
                            case 2: XP(2); break;
                            case 3: XP(3); break;
                            case 4: XP(4); break;
                            case 5: XP(5); break;
                            case 6: XP(6); break;
                            case 7: XP(7); break;
                            default: XP(8); break;
                        }
#undef XP
                        const int32_t base = taps * C;
                        const int fe = F - fb < 8 * LW ? F - fb : 8 * LW;
                        for (int f = 0; f < fe; ++f) o[fb + f] = bias[fb + f] + base - 2 * (int32_t)pop[f];
                    }
                }
    }
}

// Up to 16 step outputs as the low bits of a uint32. With AVX-512 a compare yields the bit
// mask directly; elsewhere a compare and shift-or loop the compiler vectorises.
inline uint32_t step_bits16(const int32_t* v, const int32_t* lo, const int32_t* hi, int nb) {
#if defined(__AVX512F__)
    const __mmask16 valid = (__mmask16)(nb >= 16 ? 0xFFFF : (1u << nb) - 1);
    const __m512i a = _mm512_maskz_loadu_epi32(valid, v);
    const __m512i l = _mm512_maskz_loadu_epi32(valid, lo);
    const __m512i h = _mm512_maskz_loadu_epi32(valid, hi);
    return (uint32_t)(_mm512_mask_cmple_epi32_mask(valid, l, a) & _mm512_cmple_epi32_mask(a, h));
#else
    uint32_t bits = 0;
    for (int b = 0; b < nb; ++b) bits |= (uint32_t)((lo[b] <= v[b]) & (v[b] <= hi[b])) << b;
    return bits;
#endif
}

template <typename W>
void step_pack(const int32_t* x, const int32_t* lo, const int32_t* hi, W* out, i64 rows, int C) {
    const int B = 8 * sizeof(W), nw = (C + B - 1) / B;
#pragma omp parallel for schedule(static) if(rows * C > PAR_MIN)
    for (i64 r = 0; r < rows; ++r) {
        const int32_t* v = x + r * C;
        for (int j = 0; j < nw; ++j) {
            W word = 0;
            for (int h = 0; h < B / 16; ++h) {
                const int c0 = j * B + 16 * h;
                if (c0 >= C) break;
                const int nb = C - c0 < 16 ? C - c0 : 16;
                word |= (W)step_bits16(v + c0, lo + c0, hi + c0, nb) << (16 * h);
            }
            out[r * nw + j] = word;
        }
    }
}

template <typename T, bool PACKED>
void maxpool2x2(const T* x, T* out, int N, int H, int Wd, int K) {
    const int Ho = H / 2, Wo = Wd / 2;
#pragma omp parallel for schedule(static) if((i64)N * Ho * Wo * K > PAR_MIN)
    for (int n = 0; n < N; ++n)
        for (int oy = 0; oy < Ho; ++oy)
            for (int ox = 0; ox < Wo; ++ox) {
                const T* a = x + (((i64)n * H + 2 * oy) * Wd + 2 * ox) * K;
                const T* b = a + (i64)Wd * K;
                T* o = out + (((i64)n * Ho + oy) * Wo + ox) * K;
                for (int k = 0; k < K; ++k) {
                    if (PACKED) {
                        o[k] = a[k] | a[k + K] | b[k] | b[k + K];
                    } else {
                        const T t = a[k] > a[k + K] ? a[k] : a[k + K];
                        const T u = b[k] > b[k + K] ? b[k] : b[k + K];
                        o[k] = t > u ? t : u;
                    }
                }
            }
}

void flatten_int(const int32_t* x, int32_t* out, int N, int C, int HW) {
#pragma omp parallel for schedule(static) if((i64)N * C * HW > PAR_MIN)
    for (int n = 0; n < N; ++n)
        for (int s = 0; s < HW; ++s)
            for (int c = 0; c < C; ++c)
                out[(i64)n * C * HW + (i64)c * HW + s] = x[((i64)n * HW + s) * C + c];
}

// Flat bit k = c * HW + s comes from pixel s, channel c: walking c then s writes the output
// bits in order, so they are collected in a register and stored a word at a time.
template <typename W>
void flatten_packed(const W* x, W* out, int N, int C, int HW) {
    const int B = 8 * sizeof(W), nw_in = (C + B - 1) / B;
    const i64 K = (i64)C * HW;
    const int nw_out = (int)((K + B - 1) / B);
#pragma omp parallel for schedule(static) if((i64)N * K > PAR_MIN)
    for (int n = 0; n < N; ++n) {
        const W* img = x + (i64)n * HW * nw_in;
        W* o = out + (i64)n * nw_out;
        W word = 0;
        int bit = 0, j = 0;
        for (int c = 0; c < C; ++c) {
            const W* src = img + c / B;
            const int sh = c % B;
            for (int s = 0; s < HW; ++s) {
                word |= ((src[(i64)s * nw_in] >> sh) & (W)1) << bit;
                if (++bit == B) {
                    o[j++] = word;
                    word = 0;
                    bit = 0;
                }
            }
        }
        if (bit) o[j] = word;
    }
}

template <typename W>
void bin_dense(const W* x, const W* w, const int32_t* bias, int32_t* out, int N, int K, int F) {
    const int B = 8 * sizeof(W), nw = (K + B - 1) / B;
    const W last = last_mask<W>(nw, K);
#pragma omp parallel if((i64)N * nw * F > PAR_MIN)
    {
        std::vector<W> pop(F);
#pragma omp for schedule(static)
        for (int n = 0; n < N; ++n) {
            W* pc = pop.data();
            for (int f = 0; f < F; ++f) pc[f] = 0;
            const W* a = x + (i64)n * nw;
            for (int j = 0; j < nw; ++j) {
                const W aj = j == nw - 1 ? (W)(a[j] & last) : a[j];
                const W* wr = w + (i64)j * F;
                for (int f = 0; f < F; ++f) pc[f] += (W)popcnt((W)(aj ^ wr[f]));
            }
            int32_t* o = out + (i64)n * F;
            for (int f = 0; f < F; ++f) o[f] = bias[f] + K - 2 * (int32_t)pc[f];
        }
    }
}

void argmax_scores(const int32_t* s, int32_t* out, int N, int classes) {
    for (int n = 0; n < N; ++n) {
        const int32_t* row = s + (i64)n * classes;
        int best = 0;
        for (int i = 1; i < classes; ++i)
            if (row[i] > row[best]) best = i;
        out[n] = best;
    }
}


// ---------------------------------------------------------------------------------------------
// The fused network (gpu_kernels/cpu_impl.py, FusedCpuNetwork): every Step computed inside the
// layer before it and every 2x2 max pooling after a Step inside it too, so a convolution writes
// packed 64-bit words (bit f = filter f is +1) and never its int32 sums. The planner in Python
// folds biases and thresholds into bounds on what the kernels count:
//  * integer first layer: bit f is set where dlo[f] <= sum_k w[k][f] x[k] <= dhi[f];
//  * binary layers: bit f is set where plo[f] <= popcount(x ^ w) <= phi[f], the popcount over
//    a zero-bordered frame, so the bounds also absorb what the border's zero words add (per
//    class of pixels with the same in-frame taps, `cls`).
// 2x2 pooling of +-1 values is the OR of the four words. Images are independent: OpenMP
// splits them over threads.

constexpr int FB = 16;                 // int32 lanes of one vector register (filters)
constexpr int FQ = 8;                  // uint64 lanes of one vector register (filters)

// Step bits of NB blocks of 16 filters at PX output pixels of the integer convolution: the
// sum over the 3 window rows, each row's 3 * C bytes read straight from the zero-bordered
// frame in groups of 4 (the weights past 3 * C in a row are 0, so the bytes after the window,
// the next pixels, count nothing): w is [3][r4 / 4][Fp][4] int8; rows[p][ky] points at pixel
// p's row ky. Bit f of bits[p][b] (filter fb + 16 b + f) is set where dlo <= sum <= dhi.
// VNNI: one vpdpbusd per 4 bytes, block and pixel; PX pixels side by side give PX x NB
// independent accumulations (one alone would wait on the instruction's latency).
template <int NB, int PX>
inline void int_window_bits(const uint8_t* const (*rows)[3], int r4g, const int8_t* __restrict w,
                            int fp, int fb, const int32_t* __restrict dlo,
                            const int32_t* __restrict dhi, int nf, uint16_t (*bits)[8]) {
#if defined(__AVX512VNNI__) && defined(__AVX512F__)
    __m512i acc[PX][NB];
    for (int p = 0; p < PX; ++p)
        for (int b = 0; b < NB; ++b) acc[p][b] = _mm512_setzero_si512();
    for (int ky = 0; ky < 3; ++ky)
        for (int g = 0; g < r4g; ++g) {
            const int8_t* wr = w + (((size_t)ky * r4g + g) * fp + fb) * 4;
            __m512i wv[NB];
            for (int b = 0; b < NB; ++b) wv[b] = _mm512_loadu_si512(wr + 64 * b);
            for (int p = 0; p < PX; ++p) {
                int32_t four;
                std::memcpy(&four, rows[p][ky] + 4 * g, 4);
                const __m512i xv = _mm512_set1_epi32(four);
                for (int b = 0; b < NB; ++b) acc[p][b] = _mm512_dpbusd_epi32(acc[p][b], xv, wv[b]);
            }
        }
    for (int b = 0; b < NB; ++b) {
        const int left = nf - FB * b;
        const __mmask16 valid = (__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1);
        const __m512i lo = _mm512_maskz_loadu_epi32(valid, dlo + fb + FB * b);
        const __m512i hi = _mm512_maskz_loadu_epi32(valid, dhi + fb + FB * b);
        for (int p = 0; p < PX; ++p)
            bits[p][b] = (uint16_t)(_mm512_mask_cmple_epi32_mask(valid, lo, acc[p][b]) &
                                    _mm512_cmple_epi32_mask(acc[p][b], hi));
    }
#else
    for (int p = 0; p < PX; ++p) {
        int32_t acc[NB * FB] = {0};
        for (int ky = 0; ky < 3; ++ky)
            for (int g = 0; g < r4g; ++g) {
                const int8_t* wr = w + (((size_t)ky * r4g + g) * fp + fb) * 4;
                for (int j = 0; j < 4; ++j) {
                    const int32_t v = rows[p][ky][4 * g + j];
                    for (int l = 0; l < NB * FB; ++l) acc[l] += v * wr[4 * l + j];
                }
            }
        for (int b = 0; b < NB; ++b) {
            const int left = nf - FB * b < FB ? nf - FB * b : FB;
            bits[p][b] = (uint16_t)step_bits16(acc + FB * b, dlo + fb + FB * b, dhi + fb + FB * b,
                                               left);
        }
    }
#endif
}

// Integer 3x3 convolution of uint8 NHWC images with its Step (and 2x2 pooling): packed words.
// Filters go in passes of 64 (one output word), the pixels of a pooling window (or pairs of
// neighbours without pooling) together.
void fused_int_conv(const uint8_t* x, const int8_t* w, const int32_t* dlo, const int32_t* dhi,
                    uint64_t* out, int N, int H, int Wd, int C, int F, int pad, int pool) {
    const int Ho = H + 2 * pad - 2, Wo = Wd + 2 * pad - 2;
    const int Hq = pool ? Ho / 2 : Ho, Wq = pool ? Wo / 2 : Wo;
    const int r4g = (3 * C + 3) / 4, Fp = (F + FB - 1) / FB * FB, nwo = (F + 63) / 64;
    const int Hp = H + 2 * pad, Wp = Wd + 2 * pad;
#pragma omp parallel if((i64)N * Ho * Wo * F * 9 * C > PAR_MIN)
    {
        // 4 spare bytes: a row's last group may read past the frame (weights 0 there)
        std::vector<uint8_t> frame((size_t)Hp * Wp * C + 4, 0);
        uint16_t bits[4][8];
        const uint8_t* rows[4][3];
#pragma omp for schedule(static)
        for (int n = 0; n < N; ++n) {
            for (int y = 0; y < H; ++y)
                std::memcpy(frame.data() + ((size_t)(y + pad) * Wp + pad) * C,
                            x + ((i64)n * H + y) * Wd * C, (size_t)Wd * C);
            auto at = [&](int p, int oy, int ox) {
                for (int ky = 0; ky < 3; ++ky)
                    rows[p][ky] = frame.data() + ((size_t)(oy + ky) * Wp + ox) * C;
            };
            for (int qy = 0; qy < Hq; ++qy)
                for (int qx = 0; qx < Wq; qx += pool ? 1 : 2) {
                    // the pixels computed together: a pooling window, or qx and qx + 1
                    int px;
                    if (pool) {
                        at(0, 2 * qy, 2 * qx); at(1, 2 * qy, 2 * qx + 1);
                        at(2, 2 * qy + 1, 2 * qx); at(3, 2 * qy + 1, 2 * qx + 1);
                        px = 4;
                    } else {
                        at(0, qy, qx);
                        px = qx + 1 < Wq ? 2 : 1;
                        if (px == 2) at(1, qy, qx + 1);
                    }
                    for (int f0 = 0; f0 < F; f0 += 64) {
                        const int nb = (F - f0 + FB - 1) / FB < 4 ? (F - f0 + FB - 1) / FB : 4;
#define IW(K_, P_) int_window_bits<K_, P_>(rows, r4g, w, Fp, f0, dlo, dhi, F - f0, bits)
#define IWP(P_) switch (nb) { case 1: IW(1, P_); break; case 2: IW(2, P_); break; \
                              case 3: IW(3, P_); break; default: IW(4, P_); break; }
                        if (px == 4) { IWP(4) } else if (px == 2) { IWP(2) } else { IWP(1) }
#undef IWP
#undef IW
                        uint64_t word[4] = {0, 0, 0, 0};
                        for (int p = 0; p < px; ++p)
                            for (int b = 0; b < nb; ++b) word[p] |= (uint64_t)bits[p][b] << (FB * b);
                        if (pool) {
                            out[(((i64)n * Hq + qy) * Wq + qx) * nwo + f0 / 64] =
                                word[0] | word[1] | word[2] | word[3];
                        } else {
                            for (int p = 0; p < px; ++p)
                                out[(((i64)n * Hq + qy) * Wq + qx + p) * nwo + f0 / 64] = word[p];
                        }
                    }
                }
        }
    }
}

// Popcounts of x ^ w over the 9 taps of a zero-bordered frame for NB blocks of 8 filters,
// then bit f where plo[f] <= pop <= phi[f]; bits land in `bits` (one byte per block).
template <int NB>
inline void bin_window_bits(const uint64_t* __restrict frame, int Wp, int nw, int oy, int ox,
                            const uint64_t* __restrict w, int Fq, int fb,
                            const int64_t* __restrict plo, const int64_t* __restrict phi,
                            uint8_t* __restrict bits) {
#if defined(__AVX512VPOPCNTDQ__) && defined(__AVX512F__)
    __m512i acc[NB];
    for (int b = 0; b < NB; ++b) acc[b] = _mm512_setzero_si512();
    for (int ky = 0; ky < 3; ++ky)
        for (int kx = 0; kx < 3; ++kx) {
            const uint64_t* a = frame + ((size_t)(oy + ky) * Wp + ox + kx) * nw;
            const uint64_t* wt = w + (size_t)(ky * 3 + kx) * nw * Fq + fb;
            for (int j = 0; j < nw; ++j) {
                const __m512i av = _mm512_set1_epi64((long long)a[j]);
                const uint64_t* wr = wt + (size_t)j * Fq;
                for (int b = 0; b < NB; ++b)
                    acc[b] = _mm512_add_epi64(acc[b], _mm512_popcnt_epi64(
                        _mm512_xor_si512(av, _mm512_loadu_si512(wr + FQ * b))));
            }
        }
    for (int b = 0; b < NB; ++b) {
        const __m512i lo = _mm512_loadu_si512(plo + fb + FQ * b);
        const __m512i hi = _mm512_loadu_si512(phi + fb + FQ * b);
        bits[b] = (uint8_t)(_mm512_cmple_epi64_mask(lo, acc[b]) &
                            _mm512_cmple_epi64_mask(acc[b], hi));
    }
#else
    int64_t acc[NB * FQ] = {0};
    for (int ky = 0; ky < 3; ++ky)
        for (int kx = 0; kx < 3; ++kx) {
            const uint64_t* a = frame + ((size_t)(oy + ky) * Wp + ox + kx) * nw;
            const uint64_t* wt = w + (size_t)(ky * 3 + kx) * nw * Fq + fb;
            for (int j = 0; j < nw; ++j) {
                const uint64_t aj = a[j];
                const uint64_t* wr = wt + (size_t)j * Fq;
                for (int l = 0; l < NB * FQ; ++l) acc[l] += popcnt((uint64_t)(aj ^ wr[l]));
            }
        }
    for (int b = 0; b < NB; ++b) {
        uint8_t m = 0;
        for (int l = 0; l < FQ; ++l) {
            const int f = fb + FQ * b + l;
            m |= (uint8_t)((plo[f] <= acc[FQ * b + l]) & (acc[FQ * b + l] <= phi[f])) << l;
        }
        bits[b] = m;
    }
#endif
}

// Binary 3x3 convolution of packed NHWC words with its Step (and 2x2 pooling): packed words.
// w: [9][nw][Fq] (Fq = F rounded up to 8, zero words past F); plo, phi: [classes][Fq];
// cls: [Ho * Wo] class of every output pixel.
void fused_bin_conv(const uint64_t* x, const uint64_t* w, const int64_t* plo,
                    const int64_t* phi, const int32_t* cls, uint64_t* out, int N, int H, int Wd,
                    int C, int F, int pad, int pool) {
    const int nw = (C + 63) / 64, Fq = (F + FQ - 1) / FQ * FQ, nwo = (F + 63) / 64;
    const int Ho = H + 2 * pad - 2, Wo = Wd + 2 * pad - 2;
    const int Hq = pool ? Ho / 2 : Ho, Wq = pool ? Wo / 2 : Wo, s = pool ? 2 : 1;
    const int Hp = H + 2 * pad, Wp = Wd + 2 * pad;
    const uint64_t last = (C % 64) ? (((uint64_t)1 << (C % 64)) - 1) : ~(uint64_t)0;
#pragma omp parallel if((i64)N * Ho * Wo * F * 9 * nw > PAR_MIN)
    {
        std::vector<uint64_t> frame((size_t)Hp * Wp * nw, 0);
        std::vector<uint8_t> bits(Fq / FQ + 8);
#pragma omp for schedule(static)
        for (int n = 0; n < N; ++n) {
            for (int y = 0; y < H; ++y)
                for (int xx = 0; xx < Wd; ++xx) {
                    const uint64_t* src = x + (((i64)n * H + y) * Wd + xx) * nw;
                    uint64_t* dst = frame.data() + ((size_t)(y + pad) * Wp + xx + pad) * nw;
                    for (int j = 0; j < nw; ++j) dst[j] = j == nw - 1 ? src[j] & last : src[j];
                }
            for (int qy = 0; qy < Hq; ++qy)
                for (int qx = 0; qx < Wq; ++qx) {
                    uint64_t* o = out + (((i64)n * Hq + qy) * Wq + qx) * nwo;
                    for (int j = 0; j < nwo; ++j) o[j] = 0;
                    for (int dy = 0; dy < s; ++dy)
                        for (int dx = 0; dx < s; ++dx) {
                            const int oy = qy * s + dy, ox = qx * s + dx;
                            const int k = cls[oy * Wo + ox];
                            const int64_t* lo = plo + (size_t)k * Fq;
                            const int64_t* hi = phi + (size_t)k * Fq;
                            for (int fb = 0; fb < F; fb += 8 * FQ) {
                                const int nb = (F - fb + FQ - 1) / FQ;
#define BW(K_) bin_window_bits<K_>(frame.data(), Wp, nw, oy, ox, w, Fq, fb, lo, hi, bits.data() + fb / FQ)
                                switch (nb < 8 ? nb : 8) {
                                    case 1: BW(1); break;
                                    case 2: BW(2); break;
                                    case 3: BW(3); break;
                                    case 4: BW(4); break;
                                    case 5: BW(5); break;
                                    case 6: BW(6); break;
                                    case 7: BW(7); break;
                                    default: BW(8); break;
                                }
#undef BW
                            }
                            for (int f0 = 0; f0 < F; f0 += 64) {
                                uint64_t word = 0;
                                for (int b = 0; b < 8 && f0 + FQ * b < F; ++b)
                                    word |= (uint64_t)bits[f0 / FQ + b] << (FQ * b);
                                if (F - f0 < 64) word &= ((uint64_t)1 << (F - f0)) - 1;
                                o[f0 / 64] |= word;
                            }
                        }
                }
        }
    }
}

// Binary dense layer on packed rows x [N][kw] (zero padding bits) and weights [kw][Fq]:
// with `step`, bit f of out (uint64 [N][nwo]) where plo[f] <= popcount <= phi[f]; without,
// int32 scores out[N][F] = base[f] - 2 * popcount.
void fused_dense(const uint64_t* x, const uint64_t* w, const int64_t* plo, const int64_t* phi,
                 const int32_t* base, void* out, int N, int kw, int F, int step) {
    const int Fq = (F + FQ - 1) / FQ * FQ, nwo = (F + 63) / 64;
#pragma omp parallel if((i64)N * kw * F > PAR_MIN)
    {
        std::vector<int64_t> pop(Fq);
#pragma omp for schedule(static)
        for (int n = 0; n < N; ++n) {
            int64_t* pc = pop.data();
            for (int f = 0; f < Fq; ++f) pc[f] = 0;
            const uint64_t* a = x + (i64)n * kw;
            for (int j = 0; j < kw; ++j) {
                const uint64_t aj = a[j];
                const uint64_t* wr = w + (i64)j * Fq;
                for (int f = 0; f < Fq; ++f) pc[f] += popcnt((uint64_t)(aj ^ wr[f]));
            }
            if (step) {
                uint64_t* o = static_cast<uint64_t*>(out) + (i64)n * nwo;
                for (int j = 0; j < nwo; ++j) o[j] = 0;
                for (int f = 0; f < F; ++f)
                    o[f / 64] |= (uint64_t)((plo[f] <= pc[f]) & (pc[f] <= phi[f])) << (f % 64);
            } else {
                int32_t* o = static_cast<int32_t*>(out) + (i64)n * F;
                for (int f = 0; f < F; ++f) o[f] = base[f] - 2 * (int32_t)pc[f];
            }
        }
    }
}

}  // namespace

extern "C" {

void cpu_set_threads(int n) { omp_set_num_threads(n); }
int cpu_max_threads() { return omp_get_max_threads(); }

#define CONV_ARGS int32_t *out, int N, int H, int Wd, int C, int F, int pad
void cpu_int_conv3x3_u8(const uint8_t* x, const int8_t* w, const int32_t* b, CONV_ARGS) {
    int_conv3x3(x, w, b, out, N, H, Wd, C, F, pad);
}
void cpu_int_conv3x3_i32(const int32_t* x, const int8_t* w, const int32_t* b, CONV_ARGS) {
    int_conv3x3(x, w, b, out, N, H, Wd, C, F, pad);
}
void cpu_bin_conv3x3_w32(const uint32_t* x, const uint32_t* w, const int32_t* b, CONV_ARGS) {
    bin_conv3x3(x, w, b, out, N, H, Wd, C, F, pad);
}
void cpu_bin_conv3x3_w64(const uint64_t* x, const uint64_t* w, const int32_t* b, CONV_ARGS) {
    bin_conv3x3(x, w, b, out, N, H, Wd, C, F, pad);
}
void cpu_step_pack_w32(const int32_t* x, const int32_t* lo, const int32_t* hi, uint32_t* out,
                       i64 rows, int C) {
    step_pack(x, lo, hi, out, rows, C);
}
void cpu_step_pack_w64(const int32_t* x, const int32_t* lo, const int32_t* hi, uint64_t* out,
                       i64 rows, int C) {
    step_pack(x, lo, hi, out, rows, C);
}
void cpu_maxpool2x2_int(const int32_t* x, int32_t* out, int N, int H, int Wd, int K) {
    maxpool2x2<int32_t, false>(x, out, N, H, Wd, K);
}
void cpu_maxpool2x2_w32(const uint32_t* x, uint32_t* out, int N, int H, int Wd, int K) {
    maxpool2x2<uint32_t, true>(x, out, N, H, Wd, K);
}
void cpu_maxpool2x2_w64(const uint64_t* x, uint64_t* out, int N, int H, int Wd, int K) {
    maxpool2x2<uint64_t, true>(x, out, N, H, Wd, K);
}
void cpu_flatten_int(const int32_t* x, int32_t* out, int N, int C, int HW) {
    flatten_int(x, out, N, C, HW);
}
void cpu_flatten_packed_w32(const uint32_t* x, uint32_t* out, int N, int C, int HW) {
    flatten_packed(x, out, N, C, HW);
}
void cpu_flatten_packed_w64(const uint64_t* x, uint64_t* out, int N, int C, int HW) {
    flatten_packed(x, out, N, C, HW);
}
void cpu_bin_dense_w32(const uint32_t* x, const uint32_t* w, const int32_t* b, int32_t* out,
                       int N, int K, int F) {
    bin_dense(x, w, b, out, N, K, F);
}
void cpu_bin_dense_w64(const uint64_t* x, const uint64_t* w, const int32_t* b, int32_t* out,
                       int N, int K, int F) {
    bin_dense(x, w, b, out, N, K, F);
}
void cpu_argmax_scores(const int32_t* s, int32_t* out, int N, int classes) {
    argmax_scores(s, out, N, classes);
}
void cpu_fused_int_conv(const uint8_t* x, const int8_t* w, const int32_t* dlo,
                        const int32_t* dhi, uint64_t* out, int N, int H, int Wd, int C, int F,
                        int pad, int pool) {
    fused_int_conv(x, w, dlo, dhi, out, N, H, Wd, C, F, pad, pool);
}
void cpu_fused_bin_conv(const uint64_t* x, const uint64_t* w, const int64_t* plo,
                        const int64_t* phi, const int32_t* cls, uint64_t* out, int N, int H,
                        int Wd, int C, int F, int pad, int pool) {
    fused_bin_conv(x, w, plo, phi, cls, out, N, H, Wd, C, F, pad, pool);
}
void cpu_fused_dense(const uint64_t* x, const uint64_t* w, const int64_t* plo,
                     const int64_t* phi, const int32_t* base, void* out, int N, int kw, int F,
                     int step) {
    fused_dense(x, w, plo, phi, base, out, N, kw, F, step);
}

}  // extern "C"
