// The in-frame taps of a 3x3 window at output pixel (oy, ox), stride 1, padding `pad`:
// body(tap = ky * 3 + kx, iy, ix). Out-of-frame taps are skipped: padding contributes 0
// (docs/conventions.md). One definition for the CUDA kernels (common.cuh sets TAP_FN to
// __device__ __forceinline__ first) and the CPU implementation (cpu/bnn_cpu.cpp: plain inline).
#pragma once
#ifndef TAP_FN
#define TAP_FN inline
#endif

template <class Body>
TAP_FN void for_each_tap(int oy, int ox, int pad, int H, int Wd, Body body) {
    for (int ky = 0; ky < 3; ++ky) {
        const int iy = oy + ky - pad;
        if (iy < 0 || iy >= H) continue;
        for (int kx = 0; kx < 3; ++kx) {
            const int ix = ox + kx - pad;
            if (ix < 0 || ix >= Wd) continue;
            body(ky * 3 + kx, iy, ix);
        }
    }
}
