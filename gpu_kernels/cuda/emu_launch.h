// Launching an emulated kernel: the launch dimensions and a cuLaunchKernel-style array of
// pointers to the argument values come from Python (gpu_kernels/devices.py, EmulatedGpu).
#pragma once
#include <cstddef>
#include <type_traits>
#include <utility>

namespace emu {

template <typename... A, std::size_t... I>
inline void call_with(void (*kernel)(A...), void** params, std::index_sequence<I...>) {
    kernel(*static_cast<typename std::remove_reference<A>::type*>(params[I])...);
}

// dims = {grid.x, grid.y, grid.z, block.x, block.y, block.z}
template <typename... A>
inline void launch(void (*kernel)(A...), const unsigned* dims, void** params) {
    grid_dim = dim3{dims[0], dims[1], dims[2]};
    block_dim = dim3{dims[3], dims[4], dims[5]};
    for (unsigned bz = 0; bz < dims[2]; ++bz)
        for (unsigned by = 0; by < dims[1]; ++by)
            for (unsigned bx = 0; bx < dims[0]; ++bx) {
                block_idx = uint3{bx, by, bz};
                for (unsigned tz = 0; tz < dims[5]; ++tz)
                    for (unsigned ty = 0; ty < dims[4]; ++ty)
                        for (unsigned tx = 0; tx < dims[3]; ++tx) {
                            thread_idx = uint3{tx, ty, tz};
                            call_with(kernel, params, std::index_sequence_for<A...>{});
                        }
            }
}

}  // namespace emu

// One exported C symbol per kernel instantiation (the list is generated from kernel_table.py).
#define EMU_EXPORT(symbol, ...) \
    extern "C" void symbol(const unsigned* dims, void** params) { ::emu::launch(&__VA_ARGS__, dims, params); }
