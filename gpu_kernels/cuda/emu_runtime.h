// The CPU emulation's execution model: every CUDA thread of a block is a fiber (its own stack,
// switched to and from on the one OS thread that launched the kernel), so that a thread can
// stop at a warp collective or a block barrier and let the others catch up.
//
//   * Warps: threads 32*w .. 32*w+31 of a block (linear id, x fastest, as CUDA numbers them).
//     A warp runs each of its lanes until it stops (at a collective, a barrier, or its end);
//     then every collective whose lanes have all arrived is resolved (__ballot_sync,
//     __shfl*_sync, __any_sync, __all_sync, __syncwarp) and those lanes run on. A collective
//     is checked: the caller must be in its mask; every lane the mask names must exist, must
//     not have exited, and must call the same intrinsic with the same mask (and width).
//   * Blocks: the warps of a block run, one after the other, until every thread waits at a
//     __syncthreads* or has exited: a phase. Then the barrier releases them all (the next
//     phase), unless only some threads reached it or they wait at different barriers (an
//     error: a divergent barrier).
//   * Shared memory: __shared__ variables are the library's statics (blocks run one at a time,
//     so one copy serves each block in turn). The library is compiled with GCC's
//     ThreadSanitizer instrumentation but without its runtime: every load and store of the
//     kernels calls a __tsan_* hook defined below (memcpy, memset and memmove a wrapper, see
//     __wrap_memcpy), which checks accesses to the library's static data, per byte, against
//     a shadow: a read of a byte no thread of the block wrote,
//     and two accesses of one byte by different threads in one phase, at least one a write,
//     not ordered by a warp-wide collective of their warp (a race), are errors.
//   * Orders: blocks, the warps of a block (in every phase) and the lanes of a warp (between
//     collectives) run in order, reversed or shuffled (emu_launch.h).
//
// The first error stops the launch; its one-line description is returned to Python
// (emu_last_error). Everything here is compiled without instrumentation (EMU_RUNTIME) and
// never inlined into a kernel, so the hooks see the kernels' own accesses only.
#pragma once
#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#else
#define EMU_ASAN 0
#endif
#if defined(__SANITIZE_THREAD__)
#define EMU_CHECKS_SHARED 1  // the __tsan_* hooks are called: shared-memory checks are on
#else
#define EMU_CHECKS_SHARED 0
#endif

#define EMU_RUNTIME __attribute__((noinline, no_sanitize_thread))
#define EMU_INLINE inline __attribute__((always_inline, no_sanitize_thread))
// The hooks are hidden (called directly, not through the PLT); only the entry points that
// Python calls are exported (EMU_API).
#define EMU_HOOK extern "C" __attribute__((no_sanitize_thread, visibility("hidden")))
#define EMU_API extern "C" __attribute__((visibility("default")))

struct uint3 { unsigned x, y, z; };
struct dim3 { unsigned x, y, z; };

namespace emu {

inline thread_local uint3 block_idx{0, 0, 0};
inline thread_local uint3 thread_idx{0, 0, 0};
inline thread_local dim3 block_dim{1, 1, 1};
inline thread_local dim3 grid_dim{1, 1, 1};

constexpr int WARP = 32;

// Launch status returned to Python.
enum Status { OK = 0, TOO_MANY_THREADS = 1, BAD_ORDER = 2, KERNEL_FAULT = 3, NO_MEMORY = 4 };

enum State : unsigned char { RUNNABLE, AT_COLLECTIVE, AT_BARRIER, EXITED, FAULTED };
enum Op : unsigned char { SYNCWARP, BALLOT, ANY, ALL, SHFL_IDX, SHFL_UP, SHFL_DOWN, SHFL_XOR };
enum Bar : unsigned char { BAR_SYNC, BAR_COUNT, BAR_AND, BAR_OR };

EMU_RUNTIME inline const char* op_name(int op) {
    static const char* const names[] = {"__syncwarp", "__ballot_sync", "__any_sync", "__all_sync",
                                        "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync",
                                        "__shfl_xor_sync"};
    return names[op];
}
EMU_RUNTIME inline const char* bar_name(int op) {
    static const char* const names[] = {"__syncthreads", "__syncthreads_count", "__syncthreads_and",
                                        "__syncthreads_or"};
    return names[op];
}

// ---- context switching --------------------------------------------------------------------------
// x86-64: a hand-written switch (callee-saved registers and the FPU/SSE control words, on the
// stacks); elsewhere ucontext, whose swapcontext also saves the signal mask (a system call
// per switch, about ten times slower).
#if defined(__x86_64__) && !defined(EMU_FORCE_UCONTEXT)  // (the tests build the other too)
struct Context { void* sp; };
extern "C" void emu_switch_stack(void** save_sp, void* next_sp);
// Saves rbp, rbx, r12-r15 and the x87/SSE control words on the current stack, stores its
// pointer in *save_sp, switches to next_sp and restores the same from there.
asm(R"(
    .text
    .p2align 4
    .type emu_switch_stack, @function
emu_switch_stack:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $16, %rsp
    fnstcw (%rsp)
    stmxcsr 8(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    fldcw (%rsp)
    ldmxcsr 8(%rsp)
    addq $16, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size emu_switch_stack, .-emu_switch_stack
)");
// A fresh stack that emu_switch_stack "returns" into entry() from, as if entry had been called
// (the stack pointer 8 bytes below a 16-byte boundary at its first instruction).
EMU_RUNTIME inline void make_context(Context* c, char* stack, size_t size, void (*entry)()) {
    uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + size) & ~(uintptr_t)15;
    void** slot = reinterpret_cast<void**>(top);
    *--slot = nullptr;                             // entry's return address: it never returns
    *--slot = reinterpret_cast<void*>(entry);      // where the switch's ret goes
    for (int i = 0; i < 6; ++i) *--slot = nullptr;  // rbp, rbx, r12-r15
    slot -= 2;                                     // control words: the launching thread's
    unsigned short fpu;
    unsigned int sse;
    asm volatile("fnstcw %0" : "=m"(fpu));
    asm volatile("stmxcsr %0" : "=m"(sse));
    std::memcpy(slot, &fpu, sizeof fpu);
    std::memcpy(reinterpret_cast<char*>(slot) + 8, &sse, sizeof sse);
    c->sp = slot;
}
EMU_INLINE void switch_context(Context* from, Context* to) { emu_switch_stack(&from->sp, to->sp); }
#else
struct Context { ucontext_t uc; };
EMU_RUNTIME inline void make_context(Context* c, char* stack, size_t size, void (*entry)()) {
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = stack;
    c->uc.uc_stack.ss_size = size;
    c->uc.uc_link = nullptr;
    makecontext(&c->uc, entry, 0);
}
EMU_INLINE void switch_context(Context* from, Context* to) { swapcontext(&from->uc, &to->uc); }
#endif

struct Thread {
    Context ctx;
    char* stack;
    int id;  // linear id in the block
    State state;
    // a pending warp collective
    unsigned char op;
    unsigned mask;
    int arg, width;
    unsigned long long value, result;
    // a pending barrier
    unsigned char bar;
    int bar_pred, bar_line, bar_result;
    const char* bar_file;
#if EMU_ASAN
    void* fake_stack;
#endif
};

// One byte of shared memory: who touched it in the current phase.
struct Shadow {
    unsigned long long written_block;  // block serial of the last write (0: never)
    unsigned long long phase;          // phase serial the fields below belong to
    int writer;                        // last writer in the phase (-1: none)
    unsigned writer_epoch;             // its warp's epoch at the write
    unsigned reader_warps;             // bit w: a lane of warp w read it since the last write
    int first_reader, other_warp_reader;  // for reports: a reader, one of another warp
    unsigned read_epoch;               // latest warp epoch of a read
    int last_reader_a, last_reader_b;  // two distinct readers at read_epoch (-1: none)
};

struct Runtime {
    // fibers: one stack per thread of the largest block so far
    std::vector<Thread> threads;
    char* stacks = nullptr;
    size_t stack_size = 0, stack_slots = 0;
    Context scheduler;
#if EMU_ASAN
    void* scheduler_fake_stack = nullptr;
    const void* scheduler_stack_bottom = nullptr;
    size_t scheduler_stack_size = 0;
#endif
    // the launch
    const char* kernel = "";
    void (*body)(void*) = nullptr;
    void* body_arg = nullptr;
    int nthreads = 0;
    unsigned bx = 1, by = 1;
    bool faulted = false;
    char error[1024] = {0};
    unsigned long long block_serial = 0, phase = 0;
    unsigned warp_epoch[WARP] = {0};  // KERNEL_MAX_THREADS <= 1024: at most 32 warps
    // shared memory: this library's writable static data
    uintptr_t load_bias = 0;
    Shadow* shadow = nullptr;
    bool seg_searched = false;
};

inline Runtime* rt = nullptr;
inline Thread* current = nullptr;  // the running fiber (null: the scheduler runs)
// The library's writable static data (see find_static_segment), where the hooks look; kept
// outside Runtime so that a hook's first test is one compare.
inline uintptr_t seg_lo = 0, seg_len = 0;

EMU_RUNTIME inline Runtime& runtime() {
    if (rt == nullptr) rt = new Runtime();
    return *rt;
}

// ---- names for messages ----------------------------------------------------------------------
EMU_RUNTIME inline void describe_thread(char* out, size_t n, int id) {
    const Runtime& r = *rt;
    const unsigned x = id % r.bx, y = id / r.bx % r.by, z = id / (r.bx * r.by);
    std::snprintf(out, n, "thread (%u,%u,%u) of block (%u,%u,%u)", x, y, z, block_idx.x, block_idx.y,
                  block_idx.z);
}

// "name+offset" of a static of this library, from its symbol table (the file's .symtab names
// local statics too; the dynamic symbols would not).
EMU_RUNTIME inline bool static_name(uintptr_t addr, char* out, size_t n) {
    Dl_info info;
    if (!dladdr(reinterpret_cast<void*>(&runtime), &info) || !info.dli_fname) return false;
    const int fd = open(info.dli_fname, O_RDONLY);
    if (fd < 0) return false;
    struct stat st;
    bool found = false;
    if (fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof(ElfW(Ehdr))) {
        void* map = mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map != MAP_FAILED) {
            const char* base = static_cast<const char*>(map);
            const auto* eh = reinterpret_cast<const ElfW(Ehdr)*>(base);
            const auto* sh = reinterpret_cast<const ElfW(Shdr)*>(base + eh->e_shoff);
            const uintptr_t target = addr - rt->load_bias;
            for (int i = 0; i < eh->e_shnum && !found; ++i) {
                if (sh[i].sh_type != SHT_SYMTAB) continue;
                const auto* sym = reinterpret_cast<const ElfW(Sym)*>(base + sh[i].sh_offset);
                const char* strtab = base + sh[sh[i].sh_link].sh_offset;
                for (size_t k = 0; k < sh[i].sh_size / sizeof(ElfW(Sym)); ++k) {
                    if (ELF64_ST_TYPE(sym[k].st_info) != STT_OBJECT || sym[k].st_size == 0) continue;
                    if (target < sym[k].st_value || target >= sym[k].st_value + sym[k].st_size) continue;
                    const char* mangled = strtab + sym[k].st_name;
                    int status = 0;
                    char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
                    std::snprintf(out, n, "%s+%lu", status == 0 && demangled ? demangled : mangled,
                                  (unsigned long)(target - sym[k].st_value));
                    std::free(demangled);
                    found = true;
                    break;
                }
            }
            munmap(map, st.st_size);
        }
    }
    close(fd);
    return found;
}

// ---- fibers ----------------------------------------------------------------------------------
#if EMU_ASAN
constexpr size_t STACK_SIZE = 512 * 1024;  // ASan's redzones make frames larger
#else
constexpr size_t STACK_SIZE = 128 * 1024;
#endif

// Stacks for n threads (kept for later launches); each above a guard page (at its low end,
// where it grows to), so that a kernel overflowing its stack faults instead of writing into
// its neighbour's. A frame larger than the page could jump the guard: the library is compiled
// with -fstack-clash-protection (build.EMU_FLAGS), which touches every page of a large frame.
EMU_RUNTIME inline bool reserve_stacks(int n) {
    Runtime& r = runtime();
    if ((size_t)n <= r.stack_slots) return true;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), slot = STACK_SIZE + page;
    void* mem = mmap(nullptr, slot * n, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) return false;
    for (int i = 0; i < n; ++i) mprotect(static_cast<char*>(mem) + i * slot, page, PROT_NONE);
    if (r.stacks) munmap(r.stacks, (STACK_SIZE + page) * r.stack_slots);
    r.stacks = static_cast<char*>(mem);
    r.stack_slots = n;
    r.stack_size = STACK_SIZE;
    r.threads.assign(n, Thread{});
    for (int i = 0; i < n; ++i) r.threads[i].stack = r.stacks + i * slot + page;
    return true;
}

EMU_RUNTIME inline void asan_enter_fiber(Thread* t) {
#if EMU_ASAN
    __sanitizer_finish_switch_fiber(t->fake_stack, &rt->scheduler_stack_bottom, &rt->scheduler_stack_size);
#else
    (void)t;
#endif
}

// From a fiber back to the scheduler; returns when the scheduler resumes this thread.
EMU_RUNTIME inline void yield(Thread* t, bool exiting = false) {
#if EMU_ASAN
    __sanitizer_start_switch_fiber(exiting ? nullptr : &t->fake_stack, rt->scheduler_stack_bottom,
                                   rt->scheduler_stack_size);
#else
    (void)exiting;
#endif
    switch_context(&t->ctx, &rt->scheduler);
    asan_enter_fiber(t);
}

EMU_RUNTIME inline void fiber_main() {
    Thread* t = current;
    asan_enter_fiber(t);
    rt->body(rt->body_arg);
    t->state = EXITED;
    yield(t, true);  // never resumed
    std::abort();
}

// From the scheduler into thread t until it stops.
EMU_RUNTIME inline void resume(Thread* t) {
    Runtime& r = *rt;
    thread_idx = uint3{(unsigned)(t->id % r.bx), (unsigned)(t->id / r.bx % r.by),
                       (unsigned)(t->id / (r.bx * r.by))};
    current = t;
#if EMU_ASAN
    __sanitizer_start_switch_fiber(&r.scheduler_fake_stack, t->stack, r.stack_size);
#endif
    switch_context(&r.scheduler, &t->ctx);
#if EMU_ASAN
    __sanitizer_finish_switch_fiber(r.scheduler_fake_stack, nullptr, nullptr);
#endif
    current = nullptr;
}

EMU_RUNTIME inline void start_thread(Thread* t, int id) {
    make_context(&t->ctx, t->stack, rt->stack_size, fiber_main);
    t->id = id;
    t->state = RUNNABLE;
#if EMU_ASAN
    t->fake_stack = nullptr;
#endif
}

// An error in the running thread: record it and stop the launch (the thread is never resumed).
EMU_RUNTIME inline void fault(const char* fmt, ...) {
    Runtime& r = *rt;
    if (!r.faulted) {
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(r.error, sizeof r.error, fmt, ap);
        va_end(ap);
        r.faulted = true;
    }
    if (current != nullptr) {
        Thread* t = current;
        t->state = FAULTED;
        yield(t);
        std::abort();  // not reached: a faulted thread is never resumed
    }
}

// ---- warp collectives ------------------------------------------------------------------------
EMU_INLINE bool valid_width(int w) { return w >= 1 && w <= WARP && (w & (w - 1)) == 0; }

// The lane a shuffle reads for `lane` (PTX shfl.sync semantics, with CUDA's clamp values):
// the source lane or offset is its operand's low 5 bits (PTX: bval = b[4:0]; a delta or lane
// mask of 32 or more, or a negative one, wraps as on the GPU); lanes are split into segments
// of `width`; a source outside the caller's segment (up, down, xor) reads the caller's own
// value.
EMU_INLINE int shuffle_source(int op, int lane, int arg, int width) {
    const int seg = lane & ~(width - 1), b = arg & (WARP - 1);
    switch (op) {
        case SHFL_IDX: return seg + (b & (width - 1));
        case SHFL_UP: { const int j = lane - b; return j >= seg ? j : lane; }
        case SHFL_DOWN: { const int j = lane + b; return j < seg + width ? j : lane; }
        default: { const int j = lane ^ b; return j < seg + width ? j : lane; }  // SHFL_XOR
    }
}

// Called by a thread of the kernel: wait until the lanes of `mask` have all arrived, then
// return the collective's result.
EMU_RUNTIME inline unsigned long long warp_collective(int op, unsigned mask, unsigned long long value,
                                                      int arg, int width) {
    Thread* t = current;
    char who[96];
    if (!(mask >> (t->id % WARP) & 1u)) {
        describe_thread(who, sizeof who, t->id);
        fault("%s: %s (warp %d, lane %d) calls %s with mask 0x%08x, which does not name its own lane",
              rt->kernel, who, t->id / WARP, t->id % WARP, op_name(op), mask);
    }
    if (op >= SHFL_IDX && !valid_width(width)) {
        describe_thread(who, sizeof who, t->id);
        fault("%s: %s calls %s with width %d (a power of 2 from 1 to 32)", rt->kernel, who, op_name(op),
              width);
    }
    t->op = (unsigned char)op;
    t->mask = mask;
    t->value = value;
    t->arg = arg;
    t->width = op >= SHFL_IDX ? width : WARP;
    t->state = AT_COLLECTIVE;
    yield(t);
    return t->result;
}

// ---- block barriers --------------------------------------------------------------------------
EMU_RUNTIME inline int block_barrier(int bar, int pred, const char* file, int line) {
    Thread* t = current;
    t->bar = (unsigned char)bar;
    t->bar_pred = pred != 0;
    t->bar_file = file;
    t->bar_line = line;
    t->state = AT_BARRIER;
    yield(t);
    return t->bar_result;
}

// ---- shared memory checks (the __tsan_* hooks) -------------------------------------------------
// The library's writable PT_LOAD segment: where its statics, __shared__ variables among them,
// live. Kernels reach nothing else there (the runtime's own state is on the heap and its code
// is not instrumented).
EMU_RUNTIME inline void find_static_segment() {
    Runtime& r = runtime();
    r.seg_searched = true;
    struct Probe { uintptr_t anchor, lo, len, bias; } probe{reinterpret_cast<uintptr_t>(&rt), 0, 0, 0};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) -> int {
            Probe* p = static_cast<Probe*>(data);
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr)& ph = info->dlpi_phdr[i];
                const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
                if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) && p->anchor >= lo &&
                    p->anchor < lo + ph.p_memsz) {
                    p->lo = lo;
                    p->len = ph.p_memsz;
                    p->bias = info->dlpi_addr;
                }
            }
            if (p->len == 0) return 0;
            // the segment's read-only-after-relocation start (constant tables of pointers,
            // the GOT) is not shared memory: what kernels may read there nobody writes
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr)& ph = info->dlpi_phdr[i];
                const uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
                if (ph.p_type == PT_GNU_RELRO && lo <= p->lo && hi > p->lo && hi < p->lo + p->len) {
                    p->len -= hi - p->lo;
                    p->lo = hi;
                }
            }
            return 1;
        },
        &probe);
    if (probe.len == 0) return;
    void* mem = mmap(nullptr, probe.len * sizeof(Shadow), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) return;
    r.shadow = static_cast<Shadow*>(mem);  // zero: never written
    r.load_bias = probe.bias;
    seg_lo = probe.lo;
    seg_len = probe.len;
}

EMU_RUNTIME inline void describe_shared(char* out, size_t n, uintptr_t addr) {
    if (!static_name(addr, out, n))
        std::snprintf(out, n, "shared memory at offset %lu of the library's static data",
                      (unsigned long)(addr - seg_lo));
}

EMU_RUNTIME inline void race(uintptr_t addr, int first, const char* first_did, int second,
                             const char* second_did) {
    char where[256], a[96], b[96];
    describe_shared(where, sizeof where, addr);
    describe_thread(a, sizeof a, first);
    describe_thread(b, sizeof b, second);
    fault("%s: shared-memory race on %s: %s %s it and %s %s it between the same two barriers",
          rt->kernel, where, a, first_did, b, second_did);
}

// True when thread `other`'s access at its warp's `epoch` happens before the running thread's
// (the same thread, or a lane of the same warp with a warp-wide collective in between).
EMU_INLINE bool ordered(int other, unsigned epoch, int self, unsigned self_epoch) {
    return other == self || (other / WARP == self / WARP && epoch < self_epoch);
}

EMU_RUNTIME inline void shared_access(uintptr_t addr, size_t size, bool write) {
    Runtime& r = *rt;
    const int self = current->id, warp = self / WARP;
    const unsigned epoch = r.warp_epoch[warp];
    for (size_t i = 0; i < size; ++i) {
        const uintptr_t a = addr + i;
        if (a - seg_lo >= seg_len) continue;
        Shadow& s = r.shadow[a - seg_lo];
        if (s.phase != r.phase) {
            s.phase = r.phase;
            s.writer = s.first_reader = s.other_warp_reader = s.last_reader_a = s.last_reader_b = -1;
            s.reader_warps = 0;
            s.read_epoch = s.writer_epoch = 0;
        }
        if (s.writer >= 0 && !ordered(s.writer, s.writer_epoch, self, epoch))
            race(a, s.writer, "wrote", self, write ? "wrote" : "read");
        if (!write) {
            if (s.written_block != r.block_serial) {
                char where[256], who[96];
                describe_shared(where, sizeof where, a);
                describe_thread(who, sizeof who, self);
                fault("%s: %s reads %s, which no thread of its block has written", r.kernel, who, where);
            }
            if (s.first_reader < 0) s.first_reader = self;
            else if (s.other_warp_reader < 0 && s.first_reader / WARP != warp) s.other_warp_reader = self;
            s.reader_warps |= 1u << warp;
            if (s.last_reader_a < 0 || epoch > s.read_epoch) {
                s.read_epoch = epoch;
                s.last_reader_a = self;
                s.last_reader_b = -1;
            } else if (epoch == s.read_epoch && self != s.last_reader_a && s.last_reader_b < 0) {
                s.last_reader_b = self;
            }
            continue;
        }
        if (s.reader_warps & ~(1u << warp)) {  // read by a lane of another warp in this phase
            race(a, s.first_reader / WARP != warp ? s.first_reader : s.other_warp_reader, "read", self,
                 "wrote");
        }
        if ((s.reader_warps >> warp & 1u) && s.read_epoch == epoch) {
            const int other = s.last_reader_a != self ? s.last_reader_a : s.last_reader_b;
            if (other >= 0) race(a, other, "read", self, "wrote");
        }
        s.writer = self;
        s.writer_epoch = epoch;
        s.written_block = r.block_serial;
        s.reader_warps = 0;
        s.first_reader = s.other_warp_reader = s.last_reader_a = s.last_reader_b = -1;
    }
}

EMU_INLINE void hook(void* p, size_t size, bool write) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    if (a - seg_lo >= seg_len && a + size - 1 - seg_lo >= seg_len) return;  // not static data
    if (current == nullptr) return;                                       // not in a kernel
    shared_access(a, size, write);
}

}  // namespace emu

// GCC's -fsanitize=thread instrumentation calls these for every load and store (and __tsan_init
// from a constructor); without the TSan runtime linked, this library defines them.
#define EMU_TSAN_HOOKS(n)                                                                         \
    EMU_HOOK void __tsan_read##n(void* p) { ::emu::hook(p, n, false); }                           \
    EMU_HOOK void __tsan_write##n(void* p) { ::emu::hook(p, n, true); }                           \
    EMU_HOOK void __tsan_unaligned_read##n(void* p) { ::emu::hook(p, n, false); }                 \
    EMU_HOOK void __tsan_unaligned_write##n(void* p) { ::emu::hook(p, n, true); }
EMU_TSAN_HOOKS(1)
EMU_TSAN_HOOKS(2)
EMU_TSAN_HOOKS(4)
EMU_TSAN_HOOKS(8)
EMU_TSAN_HOOKS(16)
#undef EMU_TSAN_HOOKS
EMU_HOOK void __tsan_init() {}
EMU_HOOK void __tsan_read_range(void* p, unsigned long n) { ::emu::hook(p, n, false); }
EMU_HOOK void __tsan_write_range(void* p, unsigned long n) { ::emu::hook(p, n, true); }
EMU_HOOK void __tsan_func_entry(void*) {}
EMU_HOOK void __tsan_func_exit() {}
EMU_HOOK void __tsan_vptr_update(void**, void*) {}
EMU_HOOK void __tsan_vptr_read(void**) {}

#if EMU_CHECKS_SHARED
// memcpy, memset, memmove: the instrumentation sees neither a call to them nor what the
// compiler expands inline for them (TSan's runtime intercepts them instead), so the library
// is compiled to call them (-fno-builtin-*, -U_FORTIFY_SOURCE: build.EMU_FLAGS) and linked
// with --wrap for each (build.EMU_LINK_FLAGS): what a kernel copies into or out of shared
// memory is checked like its other accesses. (An explicit __builtin_memcpy/__builtin_memset of
// a constant size can still be expanded inline, unchecked.)
extern "C" void* __real_memcpy(void*, const void*, size_t);
extern "C" void* __real_memmove(void*, const void*, size_t);
extern "C" void* __real_memset(void*, int, size_t);
EMU_HOOK void* __wrap_memcpy(void* dst, const void* src, size_t n) {
    if (n) {
        ::emu::hook(const_cast<void*>(src), n, false);
        ::emu::hook(dst, n, true);
    }
    return __real_memcpy(dst, src, n);
}
EMU_HOOK void* __wrap_memmove(void* dst, const void* src, size_t n) {
    if (n) {
        ::emu::hook(const_cast<void*>(src), n, false);
        ::emu::hook(dst, n, true);
    }
    return __real_memmove(dst, src, n);
}
EMU_HOOK void* __wrap_memset(void* dst, int c, size_t n) {
    if (n) ::emu::hook(dst, n, true);
    return __real_memset(dst, c, n);
}
#endif

// The last launch's error, one line (empty after a launch that succeeded).
EMU_API const char* emu_last_error() { return ::emu::rt ? ::emu::rt->error : ""; }
// 1 when this build checks shared memory (races, reads of unwritten bytes).
EMU_API int emu_checks_shared_memory() { return EMU_CHECKS_SHARED; }
