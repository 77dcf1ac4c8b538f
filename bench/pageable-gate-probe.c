/* Which CUDA driver calls block in another thread while a thread waits in a pageable
 * cuMemcpyDtoHAsync queued on a stream held back by cuStreamWaitValue32 (the way gdio's
 * stream-ordered I/O holds a caller's stream until its file I/O is done)?
 * For each call: main queues a wait on a host flag, then a pageable D2H copy, on stream s;
 * a helper thread makes the call under test, then opens the flag. A call that has not
 * returned after 3 s is reported BLOCKS (and the flag is opened anyway, so the run goes on).
 * Build: cc -O1 -pthread bench/pageable-gate-probe.c -o /tmp/probe -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
static int (*cuMemHostGetDevicePointer)(dptr *, void *, unsigned);
static int (*cuStreamCreate)(void **, unsigned);
static int (*cuStreamSynchronize)(void *);
static int (*cuStreamWaitValue32)(void *, dptr, unsigned, unsigned);
static int (*cuMemcpyDtoHAsync)(void *, dptr, size_t, void *);
static int (*cuMemcpyHtoDAsync)(dptr, const void *, size_t, void *);
static int (*cuEventCreate)(void **, unsigned);
static int (*cuEventRecord)(void *, void *);
static int (*cuEventQuery)(void *);
static int (*cuLaunchHostFunc)(void *, void (*)(void *), void *);

static void *ctx, *helper_stream;
static volatile unsigned *flag;
static dptr flag_dev, dev;
static void *pinned;
static volatile int done;
static int which;
static const char *names[] = {"no CUDA call", "cuMemcpyHtoDAsync(pinned)+cuStreamSynchronize on another stream",
                              "cuEventRecord+cuEventQuery", "cuStreamCreate", "cuMemHostRegister(malloc)",
                              "cuMemHostAlloc", "cuMemAlloc"};
#define N (sizeof names / sizeof *names)

static void *helper(void *arg) {
    (void)arg;
    cuCtxSetCurrent(ctx);
    usleep(100000);
    int r = 0;
    void *x = NULL;
    switch (which) {
    case 1: r = cuMemcpyHtoDAsync(dev, pinned, 1 << 20, helper_stream); if (!r) r = cuStreamSynchronize(helper_stream); break;
    case 2: { void *e; r = cuEventCreate(&e, 0); if (!r) r = cuEventRecord(e, helper_stream); if (!r) cuEventQuery(e); break; }
    case 3: r = cuStreamCreate(&x, 1); break;
    case 4: { void *m = aligned_alloc(4096, 1 << 20); r = cuMemHostRegister(m, 1 << 20, 1); break; }
    case 5: r = cuMemHostAlloc(&x, 1 << 20, 0); break;
    case 6: { dptr d; r = cuMemAlloc(&d, 1 << 20); break; }
    }
    done = 1;
    *flag = 1; /* open the gate */
    return (void *)(intptr_t)r;
}

static void *watchdog(void *arg) {
    (void)arg;
    for (int i = 0; i < 30 && !done; i++) usleep(100000);
    if (!done) { printf("  BLOCKS: %s\n", names[which]); fflush(stdout); *flag = 1; }
    return NULL;
}

#define LOAD(f, name) do { *(void **)&f = dlsym(cuda, name); if (!f) { printf("no %s\n", name); return 1; } } while (0)
int main(void) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cuda) { printf("no libcuda\n"); return 1; }
    LOAD(cuInit, "cuInit"); LOAD(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    LOAD(cuCtxSetCurrent, "cuCtxSetCurrent"); LOAD(cuMemAlloc, "cuMemAlloc_v2");
    LOAD(cuMemHostAlloc, "cuMemHostAlloc"); LOAD(cuMemHostRegister, "cuMemHostRegister_v2");
    LOAD(cuMemHostUnregister, "cuMemHostUnregister"); LOAD(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2");
    LOAD(cuStreamCreate, "cuStreamCreate"); LOAD(cuStreamSynchronize, "cuStreamSynchronize");
    LOAD(cuStreamWaitValue32, "cuStreamWaitValue32_v2"); LOAD(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    LOAD(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"); LOAD(cuEventCreate, "cuEventCreate");
    LOAD(cuEventRecord, "cuEventRecord"); LOAD(cuEventQuery, "cuEventQuery"); LOAD(cuLaunchHostFunc, "cuLaunchHostFunc");
    if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx)) { printf("no GPU\n"); return 1; }
    void *s;
    cuStreamCreate(&s, 1);
    cuStreamCreate(&helper_stream, 1);
    cuMemAlloc(&dev, 8 << 20);
    cuMemHostAlloc(&pinned, 1 << 20, 0);
    void *fl;
    cuMemHostAlloc(&fl, 4096, 0x02 /* DEVICEMAP */);
    flag = fl;
    cuMemHostGetDevicePointer(&flag_dev, fl, 0);
    for (int pageable = 0; pageable < 2; pageable++) {
        printf("caller's copy after the gate: %s\n", pageable ? "pageable cuMemcpyDtoHAsync" : "pinned cuMemcpyDtoHAsync");
        for (which = 0; which < (int)N; which++) {
            *flag = 0; done = 0;
            pthread_t h, w;
            pthread_create(&h, NULL, helper, NULL);
            pthread_create(&w, NULL, watchdog, NULL);
            int r = cuStreamWaitValue32(s, flag_dev, 1, 0x1 /* GEQ */);
            void *dst = pageable ? malloc(1 << 20) : pinned;
            r |= cuMemcpyDtoHAsync(dst, dev, 1 << 20, s);
            r |= cuStreamSynchronize(s);
            void *hr;
            pthread_join(h, &hr);
            pthread_join(w, NULL);
            printf("  %-70s ok (call %d, stream %d)\n", names[which], (int)(intptr_t)hr, r);
            fflush(stdout);
        }
    }
    return 0;
}
