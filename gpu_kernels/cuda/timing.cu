// GPU-only helper of the profiler (not a BNN kernel; the CPU emulation does not compile it).
//
// busy_wait_ns keeps one thread busy for `ns` nanoseconds of the GPU's global timer. The
// profiler queues it before the launches it times, so that the host has enqueued them all by
// the time the GPU reaches them: the CUDA events then bracket kernels running back to back,
// not the host's pace of issuing them (gpu_kernels/devices.py, CupyGpu.time_launches). The loop
// is bounded by an iteration count too (an iteration takes well over a nanosecond), so a timer
// that does not tick cannot hang the GPU.
#pragma once

__global__ void busy_wait_ns(long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (long long spins = 0; spins < ns; ++spins) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if ((long long)(t - t0) >= ns) break;
    }
}
