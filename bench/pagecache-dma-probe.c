/* Can the GPU copy straight out of the page cache faster than gdio's bounce buffers carry it?
 * Each mode reads a whole cached file into one device allocation with T threads, each taking
 * chunks of C MiB in turn, and prints GB/s and the mean time of each step per chunk:
 *   bounce   pread into the thread's two pinned buffers (cuMemHostAlloc), cuMemcpyHtoDAsync,
 *            double-buffered: what gdio's workers do (the reference).
 *   mapeach  mmap(MAP_POPULATE) the chunk, cuMemHostRegister(READ_ONLY), copy, synchronize,
 *            unregister, munmap: gdio's `page_cache_dma` as it is.
 *   mapwhole the file mapped once up front (no populate); per chunk: register the sub-range,
 *            copy, synchronize, unregister. No munmap per chunk (no TLB shootdown).
 *   mappipe  as mapwhole with two chunks in flight per thread: the next chunk registers while
 *            the last one's copy runs.
 *   regonce  the whole mapping registered once (timed apart), then only copies.
 *   pinned   copies out of one pinned buffer, no file: the link.
 *   bouncehp bounce with huge-page buffers registered with cuMemHostRegister (gdio's buffers).
 *   mapcopy  the file mapped once (no populate); per chunk memcpy from the mapping into the
 *            thread's two huge-page pinned buffers, then copy to the GPU, double-buffered: the
 *            bounce path with a user-space copy instead of pread.
 *   preadonly pread into the thread's huge-page buffer, no GPU copy: the CPU side alone.
 *   mapmemcpy memcpy from the mapping into the thread's huge-page buffer, no GPU copy.
 *   ramcopy  memcpy from a private huge-page buffer of the file's size (filled in set-up) into
 *            the thread's huge-page buffer, no file, no GPU: what the host's memory gives T
 *            threads copying.
 *   hybrid   T threads as bouncehp and HYBRID_REG (environment, default 1) more as mappipe with
 *            chunks of HYBRID_MIB (default 64) MiB, all taking the next bytes of the file: can
 *            a few page-cache DMA threads (one memory touch per byte) add to bounce threads
 *            (three touches) that the host's memory bandwidth holds back?
 *   pinnedq  as bouncehp without the file: each thread copies its NBUF pinned buffers in turn,
 *            waiting for a buffer's marker before reusing it (the link with gdio's markers);
 *            MARKER=none: no marker and no wait at all (the buffers are never written).
 *   bouncesplit as bouncehp, but each chunk's pread is shared by the thread and a helper thread
 *            of its own (a half each, at once), then one copy of the whole chunk: a read split
 *            over two workers with one copy, against two copies of half the size.
 * The bounce modes and pinnedq make and pin their buffers before the clock starts (the set-up
 * time printed); the other modes count everything from the first thread's start.
 * PINALLOC=host (environment): bouncehp, bouncesplit, mapcopy and pinnedq take their buffers
 * from cuMemHostAlloc instead of huge pages registered with cuMemHostRegister. PINFLAGS=N
 * (environment, default 0) is the flags word of that cuMemHostAlloc or cuMemHostRegister
 * (1 = PORTABLE, 2 = DEVICEMAP, 3 = both: gdio's engine passes 3). PINALLOC=arena: every
 * thread's buffers are slices of one huge-page allocation registered once; PINALLOC=arenahost:
 * of one cuMemHostAlloc. Huge-page buffers start on a 2 MiB boundary, as gdio's.
 * The bounce modes keep NBUF (environment, default 2) buffers per thread in flight. MARKER
 * (environment) says what each copy of the bounce modes and pinnedq is followed by and how a
 * buffer's reuse waits: `event` (default: an event, synchronized), `eventwv` (an event and a
 * cuStreamWriteValue32 of the copy's number into a mapped host word, gdio's way for watched
 * requests; the event synchronized), `wv` (only the word written, polled before reuse),
 * `none` (nothing and no wait: right only for pinnedq, whose buffers are never written).
 * `eventpoll` (an event, polled with cuEventQuery every POLL_US, default 4, microseconds for
 * up to 1 ms, then synchronized: gdio's workers' wait). WATCHER=1: one more thread asks every
 * thread's events every POLL_US while the run lasts (gdio's completion watcher's load).
 * A thread whose set-up fails leaves the others waiting at the clock's start: the phase
 * script's timeout ends such a run. With
 * NSTREAMS=N (environment) the threads share N streams (thread i copies on stream i mod N)
 * instead of one stream each: one stream runs its copies one after another, in order, where
 * many streams share the link at once.
 * Build: cc -O2 -pthread bench/pagecache-dma-probe.c -o /tmp/pcprobe -ldl
 * Run:   /tmp/pcprobe FILE CHUNK THREADS MODE...   (CHUNK in MiB, or KiB with a k: 512k) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef unsigned long long dptr;
static int (*cuInit)(unsigned);
static int (*cuDevicePrimaryCtxRetain)(void **, int);
static int (*cuCtxSetCurrent)(void *);
static int (*cuMemAlloc)(dptr *, size_t);
static int (*cuMemHostAlloc)(void **, size_t, unsigned);
static int (*cuMemHostRegister)(void *, size_t, unsigned);
static int (*cuMemHostUnregister)(void *);
static int (*cuStreamCreate)(void **, unsigned);
static int (*cuStreamSynchronize)(void *);
static int (*cuMemcpyHtoDAsync)(dptr, const void *, size_t, void *);
static int (*cuEventCreate)(void **, unsigned);
static int (*cuEventRecord)(void *, void *);
static int (*cuEventSynchronize)(void *);
static int (*cuMemHostGetDevicePointer)(dptr *, void *, unsigned);
static int (*cuStreamWriteValue32)(void *, dptr, unsigned, unsigned);

#define RO 0x08 /* CU_MEMHOSTREGISTER_READ_ONLY */
enum { BOUNCE, MAPEACH, MAPWHOLE, MAPPIPE, REGONCE, PINNED, BOUNCEHP, MAPCOPY, PREADONLY, MAPMEMCPY, RAMCOPY, HYBRID, PINNEDQ, BOUNCESPLIT, NMODES };
static const char *mode_names[] = {"bounce", "mapeach", "mapwhole", "mappipe", "regonce", "pinned",
                                   "bouncehp", "mapcopy", "preadonly", "mapmemcpy", "ramcopy", "hybrid", "pinnedq", "bouncesplit"};
enum { M_EVENT, M_EVENTWV, M_WV, M_NONE, M_EVENTPOLL };
static int marker = M_EVENT;
static const char *marker_names[] = {"event", "eventwv", "wv", "none", "eventpoll"};
static int (*cuEventQuery)(void *);
/* MARKER=eventpoll: a buffer's reuse polls its event (cuEventQuery) every POLL_US (4) us for up
 * to 1 ms, then synchronizes it: gdio's workers' way. WATCHER=1: one more thread asks every
 * thread's events every POLL_US until the run ends: gdio's completion watcher's load. */
static long poll_ns = 4000;
static void *all_ev[256][64];
static volatile int watch_stop;

static int uses_whole(int m) { return m == MAPWHOLE || m == MAPPIPE || m == REGONCE || m == MAPCOPY || m == MAPMEMCPY || m == HYBRID; }
/* Anonymous memory on transparent huge pages, touched (gdio's bounce buffers before pinning). */
static void *huge_alloc(size_t len) {
    size_t h = 2u << 20, l = (len + h - 1) & ~(h - 1);
    /* At a 2 MiB boundary, as gdio's buffers (gpu/huge_pages.rs): the head and tail trimmed. */
    char *raw = mmap(NULL, l + h, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    char *p = (char *)(((uintptr_t)raw + h - 1) & ~(uintptr_t)(h - 1));
    if (p > raw) munmap(raw, p - raw);
    if (raw + l + h > p + l) munmap(p + l, raw + l + h - (p + l));
    madvise(p, l, MADV_HUGEPAGE);
    memset(p, 1, l);
    return p;
}

static void *ctx;
static pthread_barrier_t ready; /* the bounce modes: every thread's buffers made */
static volatile long long t_ready; /* when the last thread had its buffers (bounce modes) */
static int timed_apart(int m) { return m == BOUNCE || m == BOUNCEHP || m == MAPCOPY || m == PINNEDQ || m == BOUNCESPLIT; }
static int host_alloc; /* PINALLOC=host: the bounce modes' buffers from cuMemHostAlloc */
/* PINALLOC=arena / arenahost: every thread's buffers are slices of one allocation made and
 * pinned once (huge pages registered, or one cuMemHostAlloc), thread i's buffer b at
 * (i * NBUF + b) * CHUNK: do fewer, larger pinned ranges change what the DMA reaches? */
static char *arena;
static unsigned pin_flags; /* PINFLAGS: flags of the bounce buffers' alloc or register */
static int fd, mode_global, nbuf = 2, nstreams, bounce_threads, hybrid_reg = 1;
static size_t hybrid_chunk = 64u << 20;
static volatile size_t reg_bytes; /* bytes the hybrid mode's mappipe threads moved */
static void *shared_streams[64];
static size_t file_size, chunk;
static dptr dev;
static char *whole; /* the whole-file mapping (mapwhole, mappipe, regonce) */
static void *pinned_src;
static volatile size_t next_byte;
static int failures;
/* per step sums in ns: 0 mmap, 1 register, 2 copy+sync, 3 unregister, 4 munmap, 5 pread */
static volatile long long steps[6];
static volatile long long nsteps[6];

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}
static void *watcher_main(void *arg) {
    int threads = (int)(size_t)arg;
    cuCtxSetCurrent(ctx);
    while (!watch_stop) {
        for (int t = 0; t < threads && t < 256; t++)
            for (int b = 0; b < nbuf; b++)
                if (all_ev[t][b]) cuEventQuery(all_ev[t][b]);
        long long t0 = now_ns();
        while (now_ns() - t0 < poll_ns) __builtin_ia32_pause();
    }
    return NULL;
}
static void add(int step, long long t0) {
    __sync_fetch_and_add(&steps[step], now_ns() - t0);
    __sync_fetch_and_add(&nsteps[step], 1);
}
/* The next `want` bytes of the file (fewer at its end). */
static int take_n(size_t want, size_t *off, size_t *len) {
    size_t o = __sync_fetch_and_add(&next_byte, want);
    if (o >= file_size) return 0;
    *off = o;
    *len = file_size - o < want ? file_size - o : want;
    return 1;
}
static int take(size_t *off, size_t *len) { return take_n(chunk, off, len); }
/* The hybrid run's threads: the first bounce_threads bounce, the rest register. */
#define HYBRID_ROLE(i) (mode_global != HYBRID ? mode_global : (i) < (size_t)bounce_threads ? BOUNCEHP : MAPPIPE)
#define CHECK(x) do { int r_ = (x); if (r_) { fprintf(stderr, "%s: %d\n", #x, r_); __sync_fetch_and_add(&failures, 1); return NULL; } } while (0)

/* bouncesplit's helper: reads the half it is handed (state 1 -> 2), until state 3. */
struct helper { volatile int state; char *dst; size_t off, len; volatile int failed; };
static void *helper_main(void *arg) {
    struct helper *h = arg;
    for (;;) {
        int st;
        while ((st = h->state) != 1 && st != 3) __builtin_ia32_pause();
        if (st == 3) return NULL;
        for (size_t got = 0; got < h->len;) {
            ssize_t n = pread(fd, h->dst + got, h->len - got, h->off + got);
            if (n <= 0) { h->failed = 1; break; }
            got += n;
        }
        __sync_synchronize();
        h->state = 2;
    }
}

static void *worker(void *arg) {
    cuCtxSetCurrent(ctx);
    int mode = HYBRID_ROLE((size_t)arg);
    void *s;
    if (nstreams > 0)
        s = shared_streams[(size_t)arg % (size_t)nstreams];
    else
        CHECK(cuStreamCreate(&s, 1));
    size_t off, len;
    long long t;
    if (mode == PREADONLY || mode == MAPMEMCPY || mode == RAMCOPY) {
        char *buf = huge_alloc(chunk);
        if (!buf) { __sync_fetch_and_add(&failures, 1); return NULL; }
        while (take(&off, &len)) {
            t = now_ns();
            if (mode == PREADONLY) {
                for (size_t got = 0; got < len;) {
                    ssize_t n = pread(fd, buf + got, len - got, off + got);
                    if (n <= 0) { __sync_fetch_and_add(&failures, 1); return NULL; }
                    got += n;
                }
            } else {
                memcpy(buf, whole + off, len);
            }
            add(5, t);
        }
        munmap(buf, (chunk + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1));
    } else if (mode == BOUNCE || mode == BOUNCEHP || mode == MAPCOPY || mode == PINNEDQ || mode == BOUNCESPLIT) {
        struct helper h = {0};
        pthread_t ht;
        if (mode == BOUNCESPLIT && pthread_create(&ht, NULL, helper_main, &h)) { __sync_fetch_and_add(&failures, 1); return NULL; }
        void *buf[64];
        void *ev[64];
        int used[64] = {0};
        unsigned seq_of[64] = {0}, seq = 0;
        volatile unsigned *word = NULL;
        dptr word_dev = 0;
        if (marker != M_EVENT) {
            void *w;
            CHECK(cuMemHostAlloc(&w, 4096, 0x01 | 0x02)); /* PORTABLE | DEVICEMAP */
            CHECK(cuMemHostGetDevicePointer(&word_dev, w, 0));
            word = w;
            *word = 0;
        }
        for (int i = 0; i < nbuf; i++) {
            if (arena && mode != BOUNCE) {
                buf[i] = arena + ((size_t)arg * (size_t)nbuf + (size_t)i) * chunk;
                if (mode == PINNEDQ) memset(buf[i], 1, chunk);
            } else if (mode == BOUNCE || host_alloc) {
                CHECK(cuMemHostAlloc(&buf[i], chunk, pin_flags));
                memset(buf[i], 1, chunk);
            } else {
                buf[i] = huge_alloc(chunk);
                if (!buf[i]) { __sync_fetch_and_add(&failures, 1); return NULL; }
                CHECK(cuMemHostRegister(buf[i], chunk, pin_flags));
            }
            CHECK(cuEventCreate(&ev[i], 2));
            if ((size_t)arg < 256) all_ev[(size_t)arg][i] = ev[i];
        }
        /* Buffers are made and pinned before the clock starts, as gdio's workers keep theirs. */
        /* (Only where the run counts its clock from there: not the hybrid mode's bounce threads.) */
        if (timed_apart(mode_global) && pthread_barrier_wait(&ready) == PTHREAD_BARRIER_SERIAL_THREAD)
            t_ready = now_ns();
        for (int i = 0; take(&off, &len); i = (i + 1) % nbuf) {
            if (used[i] && marker != M_NONE) {
                t = now_ns();
                if (marker == M_WV)
                    while ((int)(*word - seq_of[i]) < 0) __builtin_ia32_pause();
                else if (marker == M_EVENTPOLL) {
                    long long p0 = now_ns();
                    int r;
                    while ((r = cuEventQuery(ev[i])) == 600 /* NOT_READY */ && now_ns() - p0 < 1000000) {
                        long long q = now_ns();
                        while (now_ns() - q < poll_ns) __builtin_ia32_pause();
                    }
                    if (r == 600) CHECK(cuEventSynchronize(ev[i]));
                    else CHECK(r);
                } else
                    CHECK(cuEventSynchronize(ev[i]));
                add(2, t);
            }
            t = now_ns();
            if (mode == PINNEDQ) {
            } else if (mode == BOUNCESPLIT) {
                size_t half = (len / 2) & ~(size_t)4095;
                h.dst = (char *)buf[i] + half; h.off = off + half; h.len = len - half;
                __sync_synchronize();
                h.state = 1;
                for (size_t got = 0; got < half;) {
                    ssize_t n = pread(fd, (char *)buf[i] + got, half - got, off + got);
                    if (n <= 0) { __sync_fetch_and_add(&failures, 1); break; }
                    got += n;
                }
                while (h.state != 2) __builtin_ia32_pause();
                if (h.failed) __sync_fetch_and_add(&failures, 1);
            } else if (mode == MAPCOPY) {
                memcpy(buf[i], whole + off, len);
            } else {
                for (size_t got = 0; got < len;) {
                    ssize_t n = pread(fd, (char *)buf[i] + got, len - got, off + got);
                    if (n <= 0) { __sync_fetch_and_add(&failures, 1); return NULL; }
                    got += n;
                }
            }
            add(5, t);
            CHECK(cuMemcpyHtoDAsync(dev + off, buf[i], len, s));
            if (marker == M_EVENT || marker == M_EVENTWV || marker == M_EVENTPOLL) CHECK(cuEventRecord(ev[i], s));
            if (marker == M_EVENTWV || marker == M_WV) {
                seq_of[i] = ++seq;
                CHECK(cuStreamWriteValue32(s, word_dev, seq, 0));
            }
            used[i] = 1;
        }
        CHECK(cuStreamSynchronize(s));
        if (mode == BOUNCESPLIT) { h.state = 3; pthread_join(ht, NULL); }
        if (mode != BOUNCE && !host_alloc && !arena)
            for (int i = 0; i < nbuf; i++) {
                cuMemHostUnregister(buf[i]);
                munmap(buf[i], (chunk + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1));
            }
    } else if (mode == MAPEACH) {
        while (take(&off, &len)) {
            t = now_ns();
            void *p = mmap(NULL, len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, off);
            if (p == MAP_FAILED) { __sync_fetch_and_add(&failures, 1); return NULL; }
            add(0, t); t = now_ns();
            CHECK(cuMemHostRegister(p, len, RO));
            add(1, t); t = now_ns();
            CHECK(cuMemcpyHtoDAsync(dev + off, p, len, s));
            CHECK(cuStreamSynchronize(s));
            add(2, t); t = now_ns();
            CHECK(cuMemHostUnregister(p));
            add(3, t); t = now_ns();
            munmap(p, len);
            add(4, t);
        }
    } else if (mode == MAPWHOLE) {
        while (take(&off, &len)) {
            t = now_ns();
            CHECK(cuMemHostRegister(whole + off, len, RO));
            add(1, t); t = now_ns();
            CHECK(cuMemcpyHtoDAsync(dev + off, whole + off, len, s));
            CHECK(cuStreamSynchronize(s));
            add(2, t); t = now_ns();
            CHECK(cuMemHostUnregister(whole + off));
            add(3, t);
        }
    } else if (mode == MAPPIPE) {
        void *ev[2];
        char *held[2] = {NULL, NULL};
        size_t want = mode_global == HYBRID ? hybrid_chunk : chunk;
        for (int i = 0; i < 2; i++) CHECK(cuEventCreate(&ev[i], 2));
        for (int i = 0; take_n(want, &off, &len); i ^= 1) {
            if (mode_global == HYBRID) __sync_fetch_and_add(&reg_bytes, len);
            if (held[i]) {
                t = now_ns();
                CHECK(cuEventSynchronize(ev[i]));
                add(2, t); t = now_ns();
                CHECK(cuMemHostUnregister(held[i]));
                add(3, t);
            }
            t = now_ns();
            CHECK(cuMemHostRegister(whole + off, len, RO));
            add(1, t);
            CHECK(cuMemcpyHtoDAsync(dev + off, whole + off, len, s));
            CHECK(cuEventRecord(ev[i], s));
            held[i] = whole + off;
        }
        CHECK(cuStreamSynchronize(s));
        for (int i = 0; i < 2; i++) if (held[i]) CHECK(cuMemHostUnregister(held[i]));
    } else { /* REGONCE, PINNED: copies only */
        while (take(&off, &len)) {
            t = now_ns();
            const void *src = mode == REGONCE ? (const void *)(whole + off) : pinned_src;
            CHECK(cuMemcpyHtoDAsync(dev + off, src, len, s));
            CHECK(cuStreamSynchronize(s));
            add(2, t);
        }
    }
    return NULL;
}

#define LOAD(f, name) do { *(void **)&f = dlsym(cuda, name); if (!f) { printf("no %s\n", name); return 1; } } while (0)
int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: %s FILE CHUNK_MIB THREADS MODE...\n", argv[0]); return 2; }
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cuda) { printf("no libcuda\n"); return 1; }
    LOAD(cuInit, "cuInit"); LOAD(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    LOAD(cuCtxSetCurrent, "cuCtxSetCurrent"); LOAD(cuMemAlloc, "cuMemAlloc_v2");
    LOAD(cuMemHostAlloc, "cuMemHostAlloc"); LOAD(cuMemHostRegister, "cuMemHostRegister_v2");
    LOAD(cuMemHostUnregister, "cuMemHostUnregister"); LOAD(cuStreamCreate, "cuStreamCreate");
    LOAD(cuStreamSynchronize, "cuStreamSynchronize"); LOAD(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    LOAD(cuEventCreate, "cuEventCreate"); LOAD(cuEventRecord, "cuEventRecord");
    LOAD(cuEventSynchronize, "cuEventSynchronize"); LOAD(cuEventQuery, "cuEventQuery");
    if (getenv("POLL_US")) poll_ns = atol(getenv("POLL_US")) * 1000;
    LOAD(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2");
    LOAD(cuStreamWriteValue32, "cuStreamWriteValue32_v2");
    if (getenv("MARKER"))
        for (int m = 0; m < 5; m++) if (!strcmp(getenv("MARKER"), marker_names[m])) marker = m;
    if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx)) { printf("no GPU\n"); return 1; }
    fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) { perror(argv[1]); return 1; }
    file_size = st.st_size;
    chunk = (size_t)atol(argv[2]) << (strchr(argv[2], 'k') ? 10 : 20);
    host_alloc = getenv("PINALLOC") && !strcmp(getenv("PINALLOC"), "host");
    pin_flags = getenv("PINFLAGS") ? (unsigned)atoi(getenv("PINFLAGS")) : 0;
    if (getenv("NBUF")) nbuf = atoi(getenv("NBUF"));
    if (nbuf < 1 || nbuf > 64) { fprintf(stderr, "NBUF is 1 to 64\n"); return 2; }
    if (getenv("HYBRID_REG")) hybrid_reg = atoi(getenv("HYBRID_REG"));
    if (getenv("HYBRID_MIB")) hybrid_chunk = (size_t)atol(getenv("HYBRID_MIB")) << 20;
    if (hybrid_reg < 0 || hybrid_reg > 64 || hybrid_chunk == 0) { fprintf(stderr, "HYBRID_REG is 0 to 64, HYBRID_MIB positive\n"); return 2; }
    if (getenv("NSTREAMS")) nstreams = atoi(getenv("NSTREAMS"));
    if (nstreams < 0 || nstreams > 64) { fprintf(stderr, "NSTREAMS is 0 to 64\n"); return 2; }
    for (int i = 0; i < nstreams; i++)
        if (cuStreamCreate(&shared_streams[i], 1)) { printf("cuStreamCreate failed\n"); return 1; }
    int threads = atoi(argv[3]);
    if (cuMemAlloc(&dev, file_size)) { printf("cuMemAlloc failed\n"); return 1; }
    if (cuMemHostAlloc(&pinned_src, chunk, 0)) { printf("cuMemHostAlloc failed\n"); return 1; }
    memset(pinned_src, 7, chunk);
    for (int a = 4; a < argc; a++) {
        mode_global = -1;
        for (int m = 0; m < NMODES; m++) if (!strcmp(argv[a], mode_names[m])) mode_global = m;
        if (mode_global < 0) { printf("unknown mode %s\n", argv[a]); return 2; }
        memset((void *)steps, 0, sizeof steps);
        memset((void *)nsteps, 0, sizeof nsteps);
        next_byte = 0;
        reg_bytes = 0;
        long long t0 = now_ns(), setup = 0;
        if (uses_whole(mode_global)) {
            whole = mmap(NULL, file_size, PROT_READ, MAP_SHARED, fd, 0);
            if (whole == MAP_FAILED) { perror("mmap"); return 1; }
            setup = now_ns() - t0;
        } else if (mode_global == RAMCOPY) {
            whole = huge_alloc(file_size);
            if (!whole) { perror("mmap"); return 1; }
            setup = now_ns() - t0;
        }
        if (mode_global == REGONCE) {
            if (cuMemHostRegister(whole, file_size, RO)) { printf("register whole failed\n"); return 1; }
            setup = now_ns() - t0;
        }
        const char *pa = getenv("PINALLOC");
        if (pa && !strncmp(pa, "arena", 5) && timed_apart(mode_global)) {
            size_t len = (size_t)threads * (size_t)nbuf * chunk;
            if (!strcmp(pa, "arenahost")) {
                void *a = NULL;
                if (cuMemHostAlloc(&a, len, pin_flags)) { printf("arena cuMemHostAlloc failed\n"); return 1; }
                arena = a;
            } else {
                arena = huge_alloc(len);
                if (!arena || cuMemHostRegister(arena, len, pin_flags)) { printf("arena register failed\n"); return 1; }
            }
        }
        long long t1 = now_ns();
        pthread_t th[256];
        int all_threads = threads + (mode_global == HYBRID ? hybrid_reg : 0);
        if (timed_apart(mode_global)) pthread_barrier_init(&ready, NULL, all_threads < 256 ? all_threads : 256);
        bounce_threads = threads;
        pthread_t wt;
        int watching = getenv("WATCHER") && atoi(getenv("WATCHER")) == 1;
        memset(all_ev, 0, sizeof all_ev);
        watch_stop = 0;
        if (watching && pthread_create(&wt, NULL, watcher_main, (void *)(size_t)all_threads)) watching = 0;
        for (int i = 0; i < all_threads && i < 256; i++) pthread_create(&th[i], NULL, worker, (void *)(size_t)i);
        for (int i = 0; i < all_threads && i < 256; i++) pthread_join(th[i], NULL);
        if (watching) { watch_stop = 1; pthread_join(wt, NULL); }
        long long t2 = now_ns();
        if (timed_apart(mode_global)) {
            pthread_barrier_destroy(&ready);
            setup += t_ready - t1;
            t1 = t_ready;
        }
        long long teardown = 0;
        if (whole) {
            long long t3 = now_ns();
            if (mode_global == REGONCE) cuMemHostUnregister(whole);
            munmap(whole, file_size);
            whole = NULL;
            teardown = now_ns() - t3;
        }
        double all = (t2 - t0 + teardown) / 1e9, copies = (t2 - t1) / 1e9;
        printf("%-9s %-7s nbuf %d streams %d chunk %5zu KiB t%-3d %6.2f GB/s (%6.2f without set-up %.0f ms / tear-down %.0f ms)",
               mode_names[mode_global], marker_names[marker], nbuf, nstreams, chunk >> 10, threads, file_size / all / 1e9, file_size / copies / 1e9,
               setup / 1e6, teardown / 1e6);
        static const char *sn[] = {"mmap", "reg", "copy (bounce: waiting for a buffer)", "unreg", "munmap", "pread/memcpy"};
        for (int k = 0; k < 6; k++)
            if (nsteps[k]) printf(" %s %.2f ms", sn[k], steps[k] / 1e6 / nsteps[k]);
        if (mode_global == HYBRID)
            printf(" hybrid: %d register threads x %zu MiB moved %.1f%%", hybrid_reg, hybrid_chunk >> 20, 100.0 * reg_bytes / file_size);
        printf("%s\n", failures ? " FAILED" : "");
        fflush(stdout);
        failures = 0;
    }
    return 0;
}
