// What runs on a GPU: every BNN kernel plus the GPU-only timing helper. CuPy compiles this file
// (its includes inlined by gpu_kernels.kernel_table.translation_unit) with NVRTC, and the nvcc
// compile check compiles the same text with the same options (gpu_kernels/build.py).
#pragma once
#include "kernels.cu"
#include "timing.cu"
