/* cuFileRead in a plain C loop, KvikIO's request shape without KvikIO: THREADS threads take
 * CHUNK_MIB pieces of FILE in order (a shared counter, as KvikIO's pool hands out its tasks)
 * and read each with cuFileRead into the same place of one device buffer of the file's size.
 * Separates a cuFile library's own per-call cost from its caller's: the time a call takes
 * measured around it here against what the library reports inside it.
 *   cc -O2 -pthread -Icrates/gdio-cufile/include bench/cufile-loop.c -o /tmp/cufile-loop -ldl
 *   LIB=.dev/lib/libcufile.so.0 /tmp/cufile-loop FILE CHUNK_MIB THREADS PASSES [plain|direct|reg]
 * `direct` registers a descriptor opened with O_DIRECT (as KvikIO with compat mode off does);
 * `reg` that too and registers the device buffer with cuFileBufRegister first. One untimed pass, then
 * PASSES timed ones; prints one JSON line: GB/s of each pass, their mean, a call's mean and
 * median time in microseconds, and whether the first and last MiB equal the file's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cufile.h"

typedef unsigned long long dptr;
static int (*cuInit)(unsigned);
static int (*cuDevicePrimaryCtxRetain)(void **, int);
static int (*cuCtxSetCurrent)(void *);
static int (*cuMemAlloc)(dptr *, size_t);
static int (*cuMemcpyDtoH)(void *, dptr, size_t);
static int (*cuMemsetD8)(dptr, unsigned char, size_t);
static CUfileError_t (*fDriverOpen)(void);
static CUfileError_t (*fHandleRegister)(CUfileHandle_t *, CUfileDescr_t *);
static CUfileError_t (*fBufRegister)(const void *, size_t, int);
static ssize_t (*fRead)(CUfileHandle_t, void *, size_t, off_t, off_t);

static void *ctx;
static dptr dev;
static CUfileHandle_t fh;
static size_t file_size, chunk;
static atomic_size_t next_piece;
static long long *call_ns;  /* one slot per piece */
static atomic_int failed;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void *reader(void *arg) {
    (void)arg;
    if (cuCtxSetCurrent(ctx)) { atomic_store(&failed, 1); return NULL; }
    size_t pieces = (file_size + chunk - 1) / chunk;
    for (;;) {
        size_t i = atomic_fetch_add(&next_piece, 1);
        if (i >= pieces) return NULL;
        off_t off = (off_t)(i * chunk);
        size_t len = file_size - off < chunk ? file_size - off : chunk;
        long long t = now_ns();
        ssize_t n = fRead(fh, (void *)dev, len, off, off);
        call_ns[i] = now_ns() - t;
        if (n != (ssize_t)len) {
            fprintf(stderr, "cuFileRead at %lld of %zu bytes returned %zd\n", (long long)off, len, n);
            atomic_store(&failed, 1);
            return NULL;
        }
    }
}

static int cmp_ll(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

#define LOAD(lib, f, name) do { *(void **)&f = dlsym(lib, name); if (!f) { printf("no %s\n", name); return 1; } } while (0)
int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: %s FILE CHUNK_MIB THREADS PASSES [reg]\n", argv[0]); return 2; }
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cuda) { printf("no libcuda.so.1: %s\n", dlerror()); return 1; }
    const char *libpath = getenv("LIB") ? getenv("LIB") : "libcufile.so.0";
    void *cufile = dlopen(libpath, RTLD_NOW);
    if (!cufile) { printf("no %s: %s\n", libpath, dlerror()); return 1; }
    LOAD(cuda, cuInit, "cuInit"); LOAD(cuda, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    LOAD(cuda, cuCtxSetCurrent, "cuCtxSetCurrent"); LOAD(cuda, cuMemAlloc, "cuMemAlloc_v2");
    LOAD(cuda, cuMemcpyDtoH, "cuMemcpyDtoH_v2"); LOAD(cuda, cuMemsetD8, "cuMemsetD8_v2");
    LOAD(cufile, fDriverOpen, "cuFileDriverOpen"); LOAD(cufile, fHandleRegister, "cuFileHandleRegister");
    LOAD(cufile, fBufRegister, "cuFileBufRegister"); LOAD(cufile, fRead, "cuFileRead");
    if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx)) { printf("no GPU\n"); return 1; }
    const char *mode = argc > 5 ? argv[5] : "plain";
    int reg = !strcmp(mode, "reg"), direct = reg || !strcmp(mode, "direct");
    if (!reg && !direct && strcmp(mode, "plain")) { fprintf(stderr, "mode is plain, direct or reg\n"); return 2; }
    int fd = open(argv[1], O_RDONLY), io_fd = direct ? open(argv[1], O_RDONLY | O_DIRECT) : fd;
    struct stat st;
    if (fd < 0 || io_fd < 0 || fstat(fd, &st)) { perror(argv[1]); return 1; }
    file_size = st.st_size;
    chunk = (size_t)atol(argv[2]) << 20;
    int threads = atoi(argv[3]), passes = atoi(argv[4]);
    if (chunk == 0 || threads < 1 || threads > 256 || passes < 1) { fprintf(stderr, "bad arguments\n"); return 2; }
    if (cuMemAlloc(&dev, file_size)) { printf("cuMemAlloc failed\n"); return 1; }
    CUfileError_t e = fDriverOpen();
    if (e.err) { printf("cuFileDriverOpen: %d\n", e.err); return 1; }
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.handle.fd = io_fd;
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    e = fHandleRegister(&fh, &d);
    if (e.err) { printf("cuFileHandleRegister: %d\n", e.err); return 1; }
    if (reg && (e = fBufRegister((void *)dev, file_size, 0)).err) { printf("cuFileBufRegister: %d\n", e.err); return 1; }
    size_t pieces = (file_size + chunk - 1) / chunk;
    call_ns = calloc(pieces * (size_t)passes, sizeof *call_ns);
    if (!call_ns) { printf("out of memory for %zu call times\n", pieces * (size_t)passes); return 1; }
    long long *all = call_ns;
    printf("{\"threads\": %d, \"chunk_mib\": %zu, \"mode\": \"%s\", \"pass_gbps\": [", threads,
           chunk >> 20, mode);
    double sum = 0;
    for (int p = 0; p <= passes; p++) {
        cuMemsetD8(dev, 0, file_size);
        call_ns = all + (size_t)(p > 0 ? p - 1 : 0) * pieces;
        atomic_store(&next_piece, 0);
        pthread_t th[256];
        long long t = now_ns();
        for (int i = 0; i < threads; i++) pthread_create(&th[i], NULL, reader, NULL);
        for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
        double gbps = file_size / ((now_ns() - t) * 1e-9) / 1e9;
        if (atomic_load(&failed)) { printf("]}\nfailed\n"); return 1; }
        printf("%s%.2f", p ? ", " : "", gbps);
        if (p > 0) sum += gbps;
    }
    size_t n = pieces * (size_t)passes;
    double mean = 0;
    for (size_t i = 0; i < n; i++) mean += all[i];
    mean /= n;
    qsort(all, n, sizeof *all, cmp_ll);
    static unsigned char got[1 << 20], want[1 << 20];
    int ok = 1;
    size_t mib = file_size < sizeof got ? file_size : sizeof got;
    size_t at[2] = {0, file_size - mib};
    for (int k = 0; k < 2; k++) {
        if (pread(fd, want, mib, at[k]) != (ssize_t)mib || cuMemcpyDtoH(got, dev + at[k], mib) ||
            memcmp(got, want, mib))
            ok = 0;
    }
    printf("], \"gbps\": %.2f, \"call_us_mean\": %.1f, \"call_us_median\": %.1f, \"verified\": %s}\n",
           sum / passes, mean / 1e3, all[n / 2] / 1e3, ok ? "true" : "false");
    return ok ? 0 : 1;
}
