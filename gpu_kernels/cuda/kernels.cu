// Every BNN kernel, one parameterised source per layer type. The configurations (X, Y, Z, XY,
// XZ, YZ, XYZ) are launch parameters (see common.cuh); the word size is a template parameter.
// The instantiations in use are listed once, in gpu_kernels/kernel_table.py.
#pragma once
#include "common.cuh"
#include "int_conv.cu"
#include "bin_conv.cu"
#include "step.cu"
#include "maxpool.cu"
#include "flatten.cu"
#include "dense.cu"
#include "scores.cu"
#include "layout.cu"
