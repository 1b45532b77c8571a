// The CPU implementation of every BNN layer: the "cpu" choice of the mapper (HEP-BNN's
// sequential C++ model, here vectorised and multi-threaded over images with OpenMP).
//
// Data formats are exactly those of the GPU kernels (gpu_kernels/cuda/*.cu), so a layer moves
// between the CPU and the GPU with a plain copy: int32 NHWC / [N, K] tensors, packed words NHWC
// (channel c at bit c % B of word c / B, padding bits 0), and the same weight layouts ([9, C, F],
// [9, nw, F], [nw, F]: F innermost, which is also what lets the compiler vectorise the
// per-neuron loops below). Weights arrive with zero padding bits; activation words are masked.
#include <omp.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

typedef int64_t i64;

// Below this many element operations a layer runs on one thread: on a busy machine, waking
// and joining a second thread costs more than such a layer (milliseconds when it is descheduled).
constexpr i64 PAR_MIN = (i64)1 << 20;
// 16 int32 lanes (GCC/Clang vector extension: one AVX-512 register, two AVX2 ones, ...)
typedef int32_t v16i __attribute__((vector_size(64)));

inline int popcnt(uint32_t v) { return __builtin_popcount(v); }
inline int popcnt(uint64_t v) { return __builtin_popcountll(v); }

template <typename W>
inline W last_mask(int nw, int bits) {
    const int B = 8 * sizeof(W), rem = bits - (nw - 1) * B;
    return rem == B ? ~(W)0 : (((W)1 << rem) - 1);
}

// Integer first layer as a small matrix product per output pixel: gather the 3x3xC window
// (zeros for out-of-frame taps, so the product loop has no branches), then up to 8 x 16 output
// channels at a time, their accumulators held in vector registers (NB blocks of 16 lanes, a
// template parameter so the compiler can keep them there). With +-1 weights the product needs
// no multiplication: sum_k w_k v_k = 2 * sum_{w_k = +1} v_k - sum_k v_k, and the masked sum is
// an AND with an all-ones/zero mask per weight.
constexpr int L = 16;

template <int NB>
inline void masked_sums(const int32_t* __restrict col, int K, const int32_t* __restrict mask,
                        int Fp, const int32_t* __restrict b32, int32_t total, int32_t* o, int nf) {
    v16i acc[NB];
    for (int b = 0; b < NB; ++b) acc[b] = v16i{0};
    for (int k = 0; k < K; ++k) {
        const int32_t v = col[k];
        const int32_t* mk = mask + (size_t)k * Fp;
        for (int b = 0; b < NB; ++b) {
            v16i m;
            std::memcpy(&m, mk + b * L, sizeof m);
            acc[b] += v & m;
        }
    }
    for (int b = 0; b < NB; ++b) {
        v16i bias;
        std::memcpy(&bias, b32 + b * L, sizeof bias);
        const v16i r = acc[b] + acc[b] - total + bias;
        const int left = nf - b * L;
        if (left >= L) {
            std::memcpy(o + b * L, &r, sizeof r);
        } else {
            for (int l = 0; l < left; ++l) o[b * L + l] = r[l];
        }
    }
}

template <typename T>
void int_conv3x3(const T* x, const int8_t* w, const int32_t* bias, int32_t* out, int N, int H,
                 int Wd, int C, int F, int pad) {
    const int Ho = H + 2 * pad - 2, Wo = Wd + 2 * pad - 2, K = 9 * C, Fp = (F + L - 1) / L * L;
    std::vector<int32_t> mask((size_t)K * Fp, 0);         // [k = tap * C + c][Fp]: -1 where w = +1
    for (int k = 0; k < K; ++k)
        for (int f = 0; f < F; ++f) mask[(size_t)k * Fp + f] = w[(i64)k * F + f] > 0 ? -1 : 0;
    std::vector<int32_t> b32(Fp, 0);
    for (int f = 0; f < F; ++f) b32[f] = bias[f];
#pragma omp parallel if((i64)N * Ho * Wo * F * K > PAR_MIN)
    {
        std::vector<int32_t> colbuf(K);
        int32_t* __restrict col = colbuf.data();
#pragma omp for schedule(static)
        for (int n = 0; n < N; ++n)
            for (int oy = 0; oy < Ho; ++oy)
                for (int ox = 0; ox < Wo; ++ox) {
                    int32_t total = 0;
                    for (int ky = 0; ky < 3; ++ky)
                        for (int kx = 0; kx < 3; ++kx) {
                            const int iy = oy + ky - pad, ix = ox + kx - pad;
                            int32_t* dst = col + (ky * 3 + kx) * C;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= Wd) {
                                for (int c = 0; c < C; ++c) dst[c] = 0;
                            } else {
                                const T* a = x + (((i64)n * H + iy) * Wd + ix) * C;
                                for (int c = 0; c < C; ++c) total += dst[c] = a[c];
                            }
                        }
                    int32_t* o = out + (((i64)n * Ho + oy) * Wo + ox) * F;
                    for (int fb = 0; fb < F; fb += 8 * L) {
                        const int nb = (F - fb + L - 1) / L;
                        const int32_t* mk = mask.data() + fb;
                        const int32_t* bk = b32.data() + fb;
                        switch (nb < 8 ? nb : 8) {
                            case 1: masked_sums<1>(col, K, mk, Fp, bk, total, o + fb, F - fb); break;
                            case 2: masked_sums<2>(col, K, mk, Fp, bk, total, o + fb, F - fb); break;
                            case 3: masked_sums<3>(col, K, mk, Fp, bk, total, o + fb, F - fb); break;
                            case 4: masked_sums<4>(col, K, mk, Fp, bk, total, o + fb, F - fb); break;
                            case 5: masked_sums<5>(col, K, mk, Fp, bk, total, o + fb, F - fb); break;
                            case 6: masked_sums<6>(col, K, mk, Fp, bk, total, o + fb, F - fb); break;
                            case 7: masked_sums<7>(col, K, mk, Fp, bk, total, o + fb, F - fb); break;
                            default: masked_sums<8>(col, K, mk, Fp, bk, total, o + fb, F - fb); break;
                        }
                    }
                }
    }
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
    for (int ky = 0; ky < 3; ++ky) {
        const int iy = oy + ky - pad;
        if (iy < 0 || iy >= H) continue;
        for (int kx = 0; kx < 3; ++kx) {
            const int ix = ox + kx - pad;
            if (ix < 0 || ix >= Wd) continue;
            ++taps;
            const W* a = x + (((i64)n * H + iy) * Wd + ix) * nw;
            const W* wt = w + (i64)(ky * 3 + kx) * nw * F + fb;
            for (int j = 0; j < nw; ++j) {
                const W aj = j == nw - 1 ? (W)(a[j] & last) : a[j];
                const W* __restrict wr = wt + (i64)j * F;
                for (int l = 0; l < NB * LW; ++l) acc[l] += (W)popcnt((W)(aj ^ wr[l]));
            }
        }
    }
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

// Up to 32 step outputs as the bits of one uint32 (a 32-lane compare and shift-or that the
// compiler vectorises); 64-bit words are two of these.
inline uint32_t step_bits32(const int32_t* __restrict v, const int32_t* __restrict lo,
                            const int32_t* __restrict hi, int nb) {
    uint32_t bits = 0;
    for (int b = 0; b < nb; ++b) bits |= (uint32_t)((lo[b] <= v[b]) & (v[b] <= hi[b])) << b;
    return bits;
}

template <typename W>
void step_pack(const int32_t* x, const int32_t* lo, const int32_t* hi, W* out, i64 rows, int C) {
    const int B = 8 * sizeof(W), nw = (C + B - 1) / B;
#pragma omp parallel for schedule(static) if(rows * C > PAR_MIN)
    for (i64 r = 0; r < rows; ++r) {
        const int32_t* v = x + r * C;
        for (int j = 0; j < nw; ++j) {
            W word = 0;
            for (int h = 0; h < B / 32; ++h) {
                const int c0 = j * B + 32 * h;
                if (c0 >= C) break;
                const int nb = C - c0 < 32 ? C - c0 : 32;
                word |= (W)step_bits32(v + c0, lo + c0, hi + c0, nb) << (32 * h);
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

template <typename W>
void flatten_packed(const W* x, W* out, int N, int C, int HW) {
    const int B = 8 * sizeof(W), nw_in = (C + B - 1) / B;
    const i64 K = (i64)C * HW;
    const int nw_out = (int)((K + B - 1) / B);
#pragma omp parallel for schedule(static) if((i64)N * K > PAR_MIN)
    for (int n = 0; n < N; ++n) {
        const W* img = x + (i64)n * HW * nw_in;
        W* o = out + (i64)n * nw_out;
        for (int j = 0; j < nw_out; ++j) o[j] = 0;
        for (int c = 0; c < C; ++c)
            for (int s = 0; s < HW; ++s) {
                const i64 k = (i64)c * HW + s;
                o[k / B] |= ((img[(i64)s * nw_in + c / B] >> (c % B)) & (W)1) << (k % B);
            }
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

}  // extern "C"
