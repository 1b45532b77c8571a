// Final scores -> predicted class: index of the largest score per image, the first on ties
// (docs/conventions.md, bnn.argmax).
//
//   s   [N, classes] int32
//   out [N] int32
// Work axes: n = image; p and f have extent 1 (one result per image).
#pragma once
#include "common.cuh"

BNN_KERNEL argmax_scores(SPLIT_PARAMS, const int* __restrict__ s, int* __restrict__ out,
                              int classes) {
    FOR_EACH_OUTPUT([&](int n, int p, int f) {
        const int* row = s + (i64)n * classes;
        int best = 0;
        for (int i = 1; i < classes; ++i)
            if (row[i] > row[best]) best = i;
        out[n] = best;
    });
}
