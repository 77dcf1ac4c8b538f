/* How fast CPUs copy a page-cached file out when they share each 4 MiB window (as the pieces of
 * a split read do, `split_into_one_buffer`) against each reading whole windows alone; no GPU.
 *   cc -O2 -pthread bench/split-pread.c -o /tmp/split-pread
 *   /tmp/split-pread FILE THREADS GROUPS PIECE_KIB whole|interleaved|shares [WINDOW_KIB]
 * THREADS threads in GROUPS groups (the reads in flight), each group with its own window-sized
 * destination on transparent huge pages (a bounce buffer). Window w (WINDOW_KIB, 4096 by
 * default) belongs to group w % GROUPS. whole: each thread reads whole windows of its group in
 * turn, alone (KvikIO's threads, or gdio's workers with unsplit tasks); interleaved: the
 * group's threads take the window's PIECE_KIB pieces one at a time from a shared counter, then
 * wait for each other before the next window (gdio's split reads: whoever is free takes the
 * next piece); shares: each thread reads its contiguous share of the window in PIECE_KIB
 * pieces, then they wait for each other. The file is read once per pass, three passes; each
 * line gives the pass's GB/s and a thread's rate inside pread (bytes / time in pread).
 * SPINNERS=N adds N threads that spin (the pause instruction) for the whole pass, as idle
 * workers and callers polling for work do; NAP_US=N has every reader sleep N µs after each
 * window, as a worker idle between requests does. With the GPU (libcuda.so.1, loaded at run
 * time): PIN=1 registers the destinations with the GPU (cuMemHostRegister, as gdio's bounce
 * buffers are); DMA=other copies a separate 256 MiB pinned buffer to the GPU over and over
 * during the passes, DMA=same copies the readers' own destinations (as gdio's copies do). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum mode { WHOLE, INTERLEAVED, SHARES };

struct group {
    char *buf;
    _Atomic long next;    /* next piece of the current window (interleaved) */
    _Atomic long arrived; /* threads at the barrier, by generation */
    _Atomic long gen;
};

static int fd, threads, groups;
static off_t size;
static size_t piece, window;
static enum mode mode;
static struct group *gs;
static _Atomic long pread_ns, pread_bytes;
static _Atomic int stop;
static long nap_us;

static void *spin(void *arg) {
    (void)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) __builtin_ia32_pause();
    return NULL;
}

/* The few driver calls PIN and DMA need, from libcuda.so.1. */
typedef int (*cu_init_t)(unsigned);
typedef int (*cu_device_get_t)(int *, int);
typedef int (*cu_ctx_create_t)(void **, unsigned, int);
typedef int (*cu_ctx_set_t)(void *);
typedef int (*cu_mem_alloc_t)(unsigned long long *, size_t);
typedef int (*cu_host_register_t)(void *, size_t, unsigned);
typedef int (*cu_copy_t)(unsigned long long, const void *, size_t, void *);
typedef int (*cu_stream_create_t)(void **, unsigned);
typedef int (*cu_stream_sync_t)(void *);
static struct {
    void *ctx, *stream;
    unsigned long long dev;
    cu_ctx_set_t set;
    cu_host_register_t reg;
    cu_copy_t copy;
    cu_stream_sync_t sync;
} cu;
static int dma_same;
static _Atomic long dma_bytes;
static char *dma_src;
static size_t dma_len;

static void *sym(void *lib, const char *name) {
    void *f = dlsym(lib, name);
    if (!f) { fprintf(stderr, "libcuda.so.1 has no %s\n", name); exit(1); }
    return f;
}

#define CHECK(call) do { int rc_ = (call); if (rc_) { fprintf(stderr, "%s: CUDA error %d\n", #call, rc_); exit(1); } } while (0)

static void cuda_up(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) { fprintf(stderr, "PIN/DMA need libcuda.so.1: %s\n", dlerror()); exit(1); }
    int dev;
    CHECK(((cu_init_t)sym(lib, "cuInit"))(0));
    CHECK(((cu_device_get_t)sym(lib, "cuDeviceGet"))(&dev, 0));
    CHECK(((cu_ctx_create_t)sym(lib, "cuCtxCreate_v2"))(&cu.ctx, 0, dev));
    cu.set = (cu_ctx_set_t)sym(lib, "cuCtxSetCurrent");
    cu.reg = (cu_host_register_t)sym(lib, "cuMemHostRegister_v2");
    cu.copy = (cu_copy_t)sym(lib, "cuMemcpyHtoDAsync_v2");
    cu.sync = (cu_stream_sync_t)sym(lib, "cuStreamSynchronize");
    CHECK(((cu_mem_alloc_t)sym(lib, "cuMemAlloc_v2"))(&cu.dev, 256u << 20));
    CHECK(((cu_stream_create_t)sym(lib, "cuStreamCreate"))(&cu.stream, 1));
}

/* Copies to the GPU until the pass ends: 4 MiB at a time out of `dma_src` (DMA=other) or the
 * groups' destinations in turn (DMA=same). */
static void *dma(void *arg) {
    (void)arg;
    CHECK(cu.set(cu.ctx));
    size_t at = 0, chunk = 4u << 20;
    int g = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        const char *src = dma_same ? gs[g].buf : dma_src + at;
        CHECK(cu.copy(cu.dev + at, src, chunk, cu.stream));
        CHECK(cu.sync(cu.stream));
        atomic_fetch_add(&dma_bytes, (long)chunk);
        at = (at + chunk) % dma_len;
        g = (g + 1) % groups;
    }
    return NULL;
}

static void nap(void) {
    if (nap_us > 0) usleep((useconds_t)nap_us);
}

static long ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void timed_pread(char *dst, size_t len, off_t off) {
    long t = ns();
    ssize_t r = pread(fd, dst, len, off);
    if (r < 0) { perror("pread"); exit(1); }
    atomic_fetch_add(&pread_ns, ns() - t);
    atomic_fetch_add(&pread_bytes, r);
}

/* All `per` threads of a group wait here for each other (a spinning, then yielding barrier). */
static void barrier(struct group *g, int per) {
    long gen = atomic_load(&g->gen);
    if (atomic_fetch_add(&g->arrived, 1) + 1 == per) {
        atomic_store(&g->arrived, 0);
        atomic_store(&g->next, 0);
        atomic_fetch_add(&g->gen, 1);
        return;
    }
    for (int spins = 0; atomic_load(&g->gen) == gen; spins++)
        if (spins > 64) sched_yield();
}

static void *run(void *arg) {
    long id = (long)arg;
    int per = threads / groups, gi = (int)(id % groups), k = (int)(id / groups);
    struct group *g = &gs[gi];
    long windows = (size + (off_t)window - 1) / (off_t)window;
    if (mode == WHOLE) {
        /* This thread's own destination slice would be a window of its own: use the group's
         * buffer offset by k windows (allocated per thread below). */
        char *dst = g->buf + (size_t)k * window;
        for (long w = gi + (long)k * groups; w < windows; w += (long)groups * per)
        {
            for (size_t p = 0; p < window; p += piece)
                timed_pread(dst + p, piece, (off_t)w * (off_t)window + (off_t)p);
            nap();
        }
        return NULL;
    }
    size_t n = (window + piece - 1) / piece;
    for (long w = gi; w < windows; w += groups) {
        off_t base = (off_t)w * (off_t)window;
        if (mode == INTERLEAVED) {
            for (long i; (i = atomic_fetch_add(&g->next, 1)) < (long)n;)
                timed_pread(g->buf + i * piece, piece, base + (off_t)i * (off_t)piece);
        } else {
            size_t share = (n + per - 1) / per;
            for (size_t i = k * share; i < (k + 1) * share && i < n; i++)
                timed_pread(g->buf + i * piece, piece, base + (off_t)i * (off_t)piece);
        }
        barrier(g, per);
        nap();
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s FILE THREADS GROUPS PIECE_KIB whole|interleaved|shares [WINDOW_KIB]\n", argv[0]);
        return 2;
    }
    fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 1; }
    size = lseek(fd, 0, SEEK_END);
    threads = atoi(argv[2]);
    groups = atoi(argv[3]);
    piece = (size_t)atol(argv[4]) << 10;
    mode = !strcmp(argv[5], "whole") ? WHOLE : !strcmp(argv[5], "interleaved") ? INTERLEAVED : SHARES;
    window = (size_t)(argc > 6 ? atol(argv[6]) : 4096) << 10;
    if (threads < 1 || groups < 1 || threads % groups || !piece || !window || window % piece) {
        fprintf(stderr, "THREADS a multiple of GROUPS, PIECE_KIB dividing WINDOW_KIB\n");
        return 2;
    }
    int per = threads / groups;
    gs = calloc((size_t)groups, sizeof *gs);
    for (int i = 0; i < groups; i++) {
        size_t len = window * (size_t)per;
        gs[i].buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (gs[i].buf == MAP_FAILED) { perror("mmap"); return 1; }
        madvise(gs[i].buf, len, MADV_HUGEPAGE);
        memset(gs[i].buf, 1, len);
    }
    const char *dma_env = getenv("DMA"), *pin_env = getenv("PIN");
    int pin = pin_env && atoi(pin_env), use_dma = dma_env && *dma_env;
    if (pin || use_dma) {
        cuda_up();
        CHECK(cu.set(cu.ctx));
    }
    if (pin)
        for (int i = 0; i < groups; i++) CHECK(cu.reg(gs[i].buf, window * (size_t)per, 0));
    if (use_dma) {
        dma_same = !strcmp(dma_env, "same");
        dma_len = 256u << 20;
        dma_src = mmap(NULL, dma_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (dma_src == MAP_FAILED) { perror("mmap"); return 1; }
        madvise(dma_src, dma_len, MADV_HUGEPAGE);
        memset(dma_src, 2, dma_len);
        CHECK(cu.reg(dma_src, dma_len, 0));
    }
    pthread_t dma_thread;
    int spinners = getenv("SPINNERS") ? atoi(getenv("SPINNERS")) : 0;
    nap_us = getenv("NAP_US") ? atol(getenv("NAP_US")) : 0;
    pthread_t *th = calloc((size_t)threads, sizeof *th), *sp = calloc((size_t)spinners + 1, sizeof *sp);
    for (int pass = 0; pass < 3; pass++) {
        atomic_store(&pread_ns, 0);
        atomic_store(&pread_bytes, 0);
        atomic_store(&stop, 0);
        atomic_store(&dma_bytes, 0);
        for (int i = 0; i < spinners; i++) pthread_create(&sp[i], NULL, spin, NULL);
        if (use_dma) pthread_create(&dma_thread, NULL, dma, NULL);
        long t0 = ns();
        for (long i = 0; i < threads; i++) pthread_create(&th[i], NULL, run, (void *)i);
        for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
        atomic_store(&stop, 1);
        for (int i = 0; i < spinners; i++) pthread_join(sp[i], NULL);
        if (use_dma) pthread_join(dma_thread, NULL);
        double s = (double)(ns() - t0) / 1e9;
        printf("threads %d groups %d piece %zu KiB %s pass %d: %.2f GB/s, a thread in pread %.2f GB/s",
               threads, groups, piece >> 10, argv[5], pass, (double)size / s / 1e9,
               (double)atomic_load(&pread_bytes) / (double)atomic_load(&pread_ns));
        if (use_dma) printf(", DMA beside it %.2f GB/s", (double)atomic_load(&dma_bytes) / s / 1e9);
        printf("\n");
    }
    return 0;
}
