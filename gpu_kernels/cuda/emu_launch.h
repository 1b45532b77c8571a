// Launching an emulated kernel: the launch dimensions and a cuLaunchKernel-style array of
// pointers to the argument values come from Python (gpu_kernels/devices.py, EmulatedGpu).
//
// A GPU runs blocks, and threads within a block, in no fixed order. The emulation visits them
// in order, reversed, or shuffled (seeded; a fresh permutation of the threads in every block):
// a kernel whose result depends on the order (a race, two writers of one output, a thread
// reading another's output) gives different results under different orders, which the tests
// compare. Blocks larger than KERNEL_MAX_THREADS (common.cuh, the kernels' __launch_bounds__)
// are refused, as the driver refuses them on a GPU.
#pragma once
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

namespace emu {

enum Order { IN_ORDER = 0, REVERSED = 1, SHUFFLED = 2 };
inline int launch_order = IN_ORDER;
inline unsigned long long launch_seed = 0;

// Launch status returned to Python.
enum Status { OK = 0, TOO_MANY_THREADS = 1, BAD_ORDER = 2 };

inline unsigned long long splitmix64(unsigned long long& s) {
    unsigned long long z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// The i-th item visited among n: identity or reversed without storage; shuffled through a
// permutation drawn from `state` (Fisher-Yates) into `perm`.
struct Visit {
    std::vector<unsigned long long> perm;
    void draw(unsigned long long n, unsigned long long& state) {
        if (launch_order != SHUFFLED) return;
        perm.resize(n);
        for (unsigned long long i = 0; i < n; ++i) perm[i] = i;
        for (unsigned long long i = n; i > 1; --i) std::swap(perm[i - 1], perm[splitmix64(state) % i]);
    }
    unsigned long long at(unsigned long long i, unsigned long long n) const {
        return launch_order == REVERSED ? n - 1 - i : launch_order == SHUFFLED ? perm[i] : i;
    }
};

template <typename... A, std::size_t... I>
inline void call_with(void (*kernel)(A...), void** params, std::index_sequence<I...>) {
    kernel(*static_cast<typename std::remove_reference<A>::type*>(params[I])...);
}

// dims = {grid.x, grid.y, grid.z, block.x, block.y, block.z}
template <typename... A>
inline int launch(void (*kernel)(A...), const unsigned* dims, void** params) {
    if (launch_order < IN_ORDER || launch_order > SHUFFLED) return BAD_ORDER;
    const unsigned long long gx = dims[0], gy = dims[1], gz = dims[2];
    const unsigned long long bx = dims[3], by = dims[4], bz = dims[5];
    const unsigned long long blocks = gx * gy * gz, threads = bx * by * bz;
    if (threads > KERNEL_MAX_THREADS) return TOO_MANY_THREADS;
    grid_dim = dim3{dims[0], dims[1], dims[2]};
    block_dim = dim3{dims[3], dims[4], dims[5]};
    unsigned long long state = launch_seed;
    Visit block_order, thread_order;
    block_order.draw(blocks, state);
    for (unsigned long long i = 0; i < blocks; ++i) {
        const unsigned long long b = block_order.at(i, blocks);     // x fastest, like CUDA's ids
        block_idx = uint3{(unsigned)(b % gx), (unsigned)(b / gx % gy), (unsigned)(b / (gx * gy))};
        thread_order.draw(threads, state);
        for (unsigned long long j = 0; j < threads; ++j) {
            const unsigned long long t = thread_order.at(j, threads);
            thread_idx = uint3{(unsigned)(t % bx), (unsigned)(t / bx % by), (unsigned)(t / (bx * by))};
            call_with(kernel, params, std::index_sequence_for<A...>{});
        }
    }
    return OK;
}

}  // namespace emu

// The visiting order of every later launch (Python sets it before each launch).
extern "C" void emu_set_order(int order, unsigned long long seed) {
    ::emu::launch_order = order;
    ::emu::launch_seed = seed;
}

// One exported C symbol per kernel instantiation (the list is generated from kernel_table.py).
#define EMU_EXPORT(symbol, ...) \
    extern "C" int symbol(const unsigned* dims, void** params) { return ::emu::launch(&__VA_ARGS__, dims, params); }
