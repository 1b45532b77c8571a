// Launching an emulated kernel: the launch dimensions and a cuLaunchKernel-style array of
// pointers to the argument values come from Python (gpu_kernels/devices.py, EmulatedGpu).
//
// A GPU runs blocks, the warps of a block, and (between collectives, since Volta) the threads
// of a warp in no fixed order. The emulation visits them in order, reversed, or shuffled
// (seeded; a fresh permutation of the warps of a block in every phase, and of the lanes of a
// warp in every sweep): a kernel whose result depends on the order (a race, two writers of one
// output, a thread reading another's output without a barrier) gives different results under
// different orders, which the tests compare. Blocks larger than KERNEL_MAX_THREADS
// (common.cuh, the kernels' __launch_bounds__) are refused, as the driver refuses them on a
// GPU.
#pragma once
#include <cstddef>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#ifndef KERNEL_MAX_THREADS
#define KERNEL_MAX_THREADS 1024  // source without common.cuh: CUDA's own limit
#endif

namespace emu {

enum Order { IN_ORDER = 0, REVERSED = 1, SHUFFLED = 2 };
inline int launch_order = IN_ORDER;
inline unsigned long long launch_seed = 0;

EMU_INLINE unsigned long long splitmix64(unsigned long long& s) {
    unsigned long long z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// The i-th item visited among n: identity or reversed without storage; shuffled through a
// permutation drawn from `state` (Fisher-Yates) into `perm`.
struct Visit {
    std::vector<unsigned long long> perm;
    EMU_RUNTIME void draw(unsigned long long n, unsigned long long& state) {
        if (launch_order != SHUFFLED) return;
        perm.resize(n);
        for (unsigned long long i = 0; i < n; ++i) perm[i] = i;
        for (unsigned long long i = n; i > 1; --i) std::swap(perm[i - 1], perm[splitmix64(state) % i]);
    }
    EMU_INLINE unsigned long long at(unsigned long long i, unsigned long long n) const {
        return launch_order == REVERSED ? n - 1 - i : launch_order == SHUFFLED ? perm[i] : i;
    }
};

// True when every lane `t`'s mask names waits at the same collective (intrinsic, mask, width).
EMU_RUNTIME inline bool complete(const Thread* lanes, int n, const Thread& t) {
    for (int j = 0; j < WARP; ++j) {
        if (!(t.mask >> j & 1u)) continue;
        if (j >= n) return false;
        const Thread& u = lanes[j];
        if (u.state != AT_COLLECTIVE || u.op != t.op || u.mask != t.mask || u.width != t.width) return false;
    }
    return true;
}

// Why the collective lane `t` waits at can never complete (every lane of the warp has stopped
// and none of its collectives can): a fault naming the first lane in the way.
EMU_RUNTIME inline void stuck(const Thread* lanes, int n, int w, const Thread& t) {
    const Runtime& r = *rt;
    char a[96], b[96];
    describe_thread(a, sizeof a, t.id);
    for (int j = 0; j < WARP; ++j) {
        if (!(t.mask >> j & 1u)) continue;
        if (j >= n) {
            fault("%s: %s calls %s with mask 0x%08x, which names lane %d of warp %d: no such thread "
                  "(a block of %d threads)", r.kernel, a, op_name(t.op), t.mask, j, w, r.nthreads);
            return;
        }
        const Thread& u = lanes[j];
        describe_thread(b, sizeof b, u.id);
        if (u.state == EXITED) {
            fault("%s: %s calls %s with mask 0x%08x, which names lane %d, %s, which has exited", r.kernel,
                  a, op_name(t.op), t.mask, j, b);
            return;
        }
        if (u.state == AT_BARRIER) {
            fault("%s: %s waits in %s with mask 0x%08x for lane %d, %s, which waits at %s (%s:%d)",
                  r.kernel, a, op_name(t.op), t.mask, j, b, bar_name(u.bar), u.bar_file, u.bar_line);
            return;
        }
        if (u.op != t.op || u.mask != t.mask || u.width != t.width) {
            fault("%s: %s calls %s with mask 0x%08x but lane %d, %s, calls %s with mask 0x%08x%s", r.kernel,
                  a, op_name(t.op), t.mask, j, b, op_name(u.op), u.mask,
                  u.width != t.width ? " and another width" : "");
            return;
        }
    }
    fault("%s: %s waits in %s with mask 0x%08x, which cannot complete", r.kernel, a, op_name(t.op), t.mask);
}

// Resolve every collective of warp w whose lanes have all arrived (every lane of the warp has
// stopped). Returns how many were resolved (0: none waits); faults when lanes wait at
// collectives none of which can complete, or on a shuffle reading a lane outside its mask.
EMU_RUNTIME inline int resolve_collectives(int w) {
    Runtime& r = *rt;
    Thread* lanes = &r.threads[w * WARP];
    const int n = r.nthreads - w * WARP < WARP ? r.nthreads - w * WARP : WARP;
    unsigned live = 0;
    for (int l = 0; l < n; ++l)
        if (lanes[l].state != EXITED) live |= 1u << l;
    int resolved = 0;
    const Thread* waiting = nullptr;
    for (int l = 0; l < n; ++l) {
        Thread& t = lanes[l];
        if (t.state != AT_COLLECTIVE) continue;
        if (!complete(lanes, n, t)) {
            if (!waiting) waiting = &t;
            continue;
        }
        unsigned votes = 0;
        for (int j = 0; j < n; ++j)
            if ((t.mask >> j & 1u) && lanes[j].value) votes |= 1u << j;
        for (int j = 0; j < n; ++j) {
            if (!(t.mask >> j & 1u)) continue;
            Thread& u = lanes[j];
            switch (t.op) {
                case BALLOT: u.result = votes; break;
                case ANY: u.result = votes != 0; break;
                case ALL: u.result = votes == t.mask; break;
                case SYNCWARP: u.result = 0; break;
                default: {
                    const int src = shuffle_source(t.op, j, u.arg, t.width);
                    if (!(t.mask >> src & 1u)) {
                        char a[96];
                        describe_thread(a, sizeof a, u.id);
                        fault("%s: %s calls %s with mask 0x%08x and reads lane %d, which is not in the mask",
                              r.kernel, a, op_name(t.op), t.mask, src);
                        return -1;
                    }
                    u.result = lanes[src].value;
                }
            }
        }
        for (int j = 0; j < n; ++j)
            if (t.mask >> j & 1u) lanes[j].state = RUNNABLE;
        if (t.mask == live) ++r.warp_epoch[w];  // the whole warp synchronised: orders its accesses
        ++resolved;
    }
    if (resolved == 0 && waiting) {
        stuck(lanes, n, w, *waiting);
        return -1;
    }
    return resolved;
}

// Run warp w until each of its lanes waits at a barrier or has exited.
EMU_RUNTIME inline bool run_warp(int w, Visit& lane_order, unsigned long long& state) {
    Runtime& r = *rt;
    const int n = r.nthreads - w * WARP < WARP ? r.nthreads - w * WARP : WARP;
    for (;;) {
        lane_order.draw(n, state);
        for (int i = 0; i < n; ++i) {
            Thread* t = &r.threads[w * WARP + lane_order.at(i, n)];
            if (t->state == RUNNABLE) resume(t);
            if (r.faulted) return false;
        }
        const int resolved = resolve_collectives(w);
        if (resolved < 0) return false;
        if (resolved == 0) return true;
    }
}

// Run one block: phases separated by barriers.
EMU_RUNTIME inline bool run_block(Visit& warp_order, Visit& lane_order, unsigned long long& state) {
    Runtime& r = *rt;
    const int warps = (r.nthreads + WARP - 1) / WARP;
    for (int i = 0; i < r.nthreads; ++i) start_thread(&r.threads[i], i);
    for (int w = 0; w < warps; ++w) r.warp_epoch[w] = 0;
    ++r.block_serial;
    char a[96], b[96];
    for (;;) {
        ++r.phase;
        warp_order.draw(warps, state);
        for (int i = 0; i < warps; ++i)
            if (!run_warp((int)warp_order.at(i, warps), lane_order, state)) return false;
        // every thread waits at a barrier or has exited
        const Thread *waiting = nullptr, *exited = nullptr, *other = nullptr;
        int count = 0;
        for (int i = 0; i < r.nthreads; ++i) {
            const Thread& t = r.threads[i];
            if (t.state == EXITED) {
                if (!exited) exited = &t;
                continue;
            }
            if (!waiting) waiting = &t;
            else if (!other && (t.bar != waiting->bar || t.bar_line != waiting->bar_line ||
                                std::strcmp(t.bar_file, waiting->bar_file) != 0))
                other = &t;
            count += t.bar_pred;
        }
        if (!waiting) return true;  // every thread has exited
        describe_thread(a, sizeof a, waiting->id);
        if (exited) {
            describe_thread(b, sizeof b, exited->id);
            fault("%s: divergent barrier: %s waits at %s (%s:%d) but %s has exited without reaching it",
                  r.kernel, a, bar_name(waiting->bar), waiting->bar_file, waiting->bar_line, b);
            return false;
        }
        if (other) {
            describe_thread(b, sizeof b, other->id);
            fault("%s: divergent barrier: %s waits at %s (%s:%d) but %s at %s (%s:%d)", r.kernel, a,
                  bar_name(waiting->bar), waiting->bar_file, waiting->bar_line, b, bar_name(other->bar),
                  other->bar_file, other->bar_line);
            return false;
        }
        const int result = waiting->bar == BAR_COUNT ? count
                           : waiting->bar == BAR_AND ? count == r.nthreads
                           : waiting->bar == BAR_OR  ? count > 0
                                                     : 0;
        for (int i = 0; i < r.nthreads; ++i) {
            r.threads[i].bar_result = result;
            r.threads[i].state = RUNNABLE;
        }
    }
}

template <typename... A, std::size_t... I>
inline void call_with(void (*kernel)(A...), void** params, std::index_sequence<I...>) {
    kernel(*static_cast<typename std::remove_reference<A>::type*>(params[I])...);
}

template <typename... A>
struct Body {
    void (*kernel)(A...);
    void** params;
    static void run(void* self) {
        Body* b = static_cast<Body*>(self);
        call_with(b->kernel, b->params, std::index_sequence_for<A...>{});
    }
};

inline std::mutex launch_lock;  // one launch at a time: the fibers share the runtime

// dims = {grid.x, grid.y, grid.z, block.x, block.y, block.z}
EMU_RUNTIME inline int run_grid(const char* name, void (*body)(void*), void* arg, const unsigned* dims) {
    if (launch_order < IN_ORDER || launch_order > SHUFFLED) return BAD_ORDER;
    const unsigned long long gx = dims[0], gy = dims[1], gz = dims[2];
    const unsigned long long bx = dims[3], by = dims[4], bz = dims[5];
    const unsigned long long blocks = gx * gy * gz, threads = bx * by * bz;
    if (threads > KERNEL_MAX_THREADS) return TOO_MANY_THREADS;
    std::lock_guard<std::mutex> hold(launch_lock);
    Runtime& r = runtime();
    r.error[0] = 0;
    r.faulted = false;
    if (!r.seg_searched) find_static_segment();
    if (!reserve_stacks((int)threads)) return NO_MEMORY;
    r.kernel = name;
    r.body = body;
    r.body_arg = arg;
    r.nthreads = (int)threads;
    r.bx = dims[3];
    r.by = dims[4];
    grid_dim = dim3{dims[0], dims[1], dims[2]};
    block_dim = dim3{dims[3], dims[4], dims[5]};
    unsigned long long state = launch_seed;
    Visit block_order, warp_order, lane_order;
    block_order.draw(blocks, state);
    for (unsigned long long i = 0; i < blocks; ++i) {
        const unsigned long long b = block_order.at(i, blocks);  // x fastest, like CUDA's ids
        block_idx = uint3{(unsigned)(b % gx), (unsigned)(b / gx % gy), (unsigned)(b / (gx * gy))};
        if (!run_block(warp_order, lane_order, state)) {
#if EMU_ASAN
            // the abandoned fibers' frames may still be poisoned: clean the stacks for reuse
            for (int t = 0; t < r.nthreads; ++t) __asan_unpoison_memory_region(r.threads[t].stack, r.stack_size);
#endif
            return KERNEL_FAULT;
        }
    }
    return OK;
}

template <typename... A>
inline int launch(const char* name, void (*kernel)(A...), const unsigned* dims, void** params) {
    Body<A...> body{kernel, params};
    return run_grid(name, &Body<A...>::run, &body, dims);
}

}  // namespace emu

// The largest block a launch takes (the kernels' launch bound).
EMU_API int emu_max_threads() { return KERNEL_MAX_THREADS; }

// The visiting order of every later launch (Python sets it before each launch).
EMU_API void emu_set_order(int order, unsigned long long seed) {
    ::emu::launch_order = order;
    ::emu::launch_seed = seed;
}

// One exported C symbol per kernel instantiation (the list is generated from kernel_table.py).
#define EMU_EXPORT(symbol, ...)                                                   \
    EMU_API int symbol(const unsigned* dims, void** params) {                     \
        return ::emu::launch(#__VA_ARGS__, &__VA_ARGS__, dims, params);           \
    }
