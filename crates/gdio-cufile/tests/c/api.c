/* Calls every function of cufile.h 1.15 through gdio's header and library, on host memory,
 * and on device memory where libcuda and a GPU exist (else prints SKIP for that part;
 * GDIO_REQUIRE_GPU=1 turns the skip into a failure). Prints OK when everything held. */
#define _GNU_SOURCE
#include "cufile.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;
#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); failures++; } } while (0)
#define ERR(call) ((int)(call).err)

static unsigned long long rng = 88172645463325252ULL;
static unsigned char rnd(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (unsigned char)(rng >> 24); }

/* Progress on stderr, so that a hang names the step it is in. */
#define STEP(name) do { fprintf(stderr, "api: %s\n", name); fflush(stderr); } while (0)

static void fill(unsigned char *p, size_t n) { for (size_t i = 0; i < n; i++) p[i] = rnd(); }

static CUfileHandle_t reg(int fd, int *err) {
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    CUfileHandle_t fh = NULL;
    *err = ERR(cuFileHandleRegister(&fh, &d));
    return fh;
}

/* Device memory through the CUDA driver API, loaded at run time. */
typedef int (*cuInit_t)(unsigned);
typedef int (*cuDeviceGetCount_t)(int *);
typedef int (*cuDevicePrimaryCtxRetain_t)(void **, int);
typedef int (*cuCtxSetCurrent_t)(void *);
typedef int (*cuMemAlloc_t)(unsigned long long *, size_t);
typedef int (*cuMemFree_t)(unsigned long long);
typedef int (*cuMemcpyHtoD_t)(unsigned long long, const void *, size_t);
typedef int (*cuMemcpyDtoH_t)(void *, unsigned long long, size_t);
typedef int (*cuStreamCreate_t)(void **, unsigned);
typedef int (*cuStreamDestroy_t)(void *);
typedef int (*cuMemsetD8Async_t)(unsigned long long, unsigned char, size_t, void *);
typedef int (*cuMemcpyDtoHAsync_t)(void *, unsigned long long, size_t, void *);

/* Waits for the null stream's work where a GPU exists (stream-ordered I/O there runs when the
 * stream reaches it, not before cuFile*Async returns); without a GPU the I/O already ran. */
typedef int (*cuCtxGetCurrent_t)(void **);
typedef int (*cuStreamSynchronize_t)(void *);
static void sync_null_stream(void) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    int count = 0;
    cuInit_t init = cuda ? (cuInit_t)dlsym(cuda, "cuInit") : NULL;
    if (!init || init(0) != 0 || ((cuDeviceGetCount_t)dlsym(cuda, "cuDeviceGetCount"))(&count) != 0 || count == 0)
        return;
    void *ctx = NULL;
    /* The library made GPU 0's primary context current when it queued the I/O (as NVIDIA's
     * does); make sure of it, then wait for that context's null stream. */
    if (((cuCtxGetCurrent_t)dlsym(cuda, "cuCtxGetCurrent"))(&ctx) != 0 || ctx == NULL) {
        CHECK(((cuDevicePrimaryCtxRetain_t)dlsym(cuda, "cuDevicePrimaryCtxRetain"))(&ctx, 0) == 0);
        CHECK(((cuCtxSetCurrent_t)dlsym(cuda, "cuCtxSetCurrent"))(ctx) == 0);
    }
    CHECK(((cuStreamSynchronize_t)dlsym(cuda, "cuStreamSynchronize"))(NULL) == 0);
}

/* Batch and stream-ordered I/O into and out of device memory. `data` is the file's model and
 * is kept equal to it. */
static void device_batch_and_stream(void *cuda, unsigned long long dev, size_t len, CUfileHandle_t fh, int fd,
                                    unsigned char *data) {
    cuMemcpyHtoD_t htod = (cuMemcpyHtoD_t)dlsym(cuda, "cuMemcpyHtoD_v2");
    cuMemcpyDtoH_t dtoh = (cuMemcpyDtoH_t)dlsym(cuda, "cuMemcpyDtoH_v2");
    void *dp = (void *)(uintptr_t)dev;
    unsigned char *src = malloc(len), *back = malloc(len), *chk = malloc(len);
    fill(src, len);
    CHECK(htod(dev, src, len) == 0);

    STEP("device batch");
    /* A batch of three reads into device memory (odd sizes and offsets) and one write out of
     * it, to a range none of the reads touch. */
    CUfileBatchHandle_t batch;
    CHECK(ERR(cuFileBatchIOSetUp(&batch, 4)) == 0);
    CUfileIOParams_t io[4];
    memset(io, 0, sizeof io);
    const off_t foff[4] = {3, 65536 + 17, 400001, 700000};
    const off_t doff[4] = {0, 262144 + 5, 600000, 900000};
    const size_t sz[4] = {65536, 131072 + 3, 4096, 50000};
    for (int i = 0; i < 4; i++) {
        io[i].mode = CUFILE_BATCH;
        io[i].fh = fh;
        io[i].opcode = i < 3 ? CUFILE_READ : CUFILE_WRITE;
        io[i].u.batch.devPtr_base = dp;
        io[i].u.batch.file_offset = foff[i];
        io[i].u.batch.devPtr_offset = doff[i];
        io[i].u.batch.size = sz[i];
        io[i].cookie = (void *)(uintptr_t)(100 + i);
    }
    CHECK(ERR(cuFileBatchIOSubmit(batch, 4, io, 0)) == 0);
    CUfileIOEvents_t ev[4];
    unsigned total = 0;
    while (total < 4) {
        unsigned nr = 4 - total;
        struct timespec t = {5, 0};
        CUfileError_t st = cuFileBatchIOGetStatus(batch, nr, &nr, ev + total, &t);
        CHECK(ERR(st) == 0);
        if (ERR(st) != 0 || nr == 0) break;
        total += nr;
    }
    CHECK(total == 4);
    for (unsigned i = 0; i < total; i++) {
        int k = (int)((uintptr_t)ev[i].cookie - 100);
        CHECK(k >= 0 && k < 4 && ev[i].status == CUFILE_COMPLETE && ev[i].ret == sz[k]);
    }
    cuFileBatchIODestroy(batch);
    CHECK(dtoh(back, dev, len) == 0);
    for (int i = 0; i < 3; i++) CHECK(memcmp(back + doff[i], data + foff[i], sz[i]) == 0);
    CHECK(pread(fd, chk, sz[3], foff[3]) == (ssize_t)sz[3] && memcmp(chk, src + doff[3], sz[3]) == 0);
    memcpy(data + foff[3], src + doff[3], sz[3]);

    /* Stream-ordered, on a stream of its own registered with all four FIXED/ALIGNED flags: a
     * memset queued before the write is what the write stores; a copy queued after the read
     * sees the file's bytes. */
    STEP("device stream-ordered I/O");
    cuStreamCreate_t screate = (cuStreamCreate_t)dlsym(cuda, "cuStreamCreate");
    cuStreamDestroy_t sdestroy = (cuStreamDestroy_t)dlsym(cuda, "cuStreamDestroy_v2");
    cuStreamSynchronize_t ssync = (cuStreamSynchronize_t)dlsym(cuda, "cuStreamSynchronize");
    cuMemsetD8Async_t memset_async = (cuMemsetD8Async_t)dlsym(cuda, "cuMemsetD8Async");
    cuMemcpyDtoHAsync_t dtoh_async = (cuMemcpyDtoHAsync_t)dlsym(cuda, "cuMemcpyDtoHAsync_v2");
    void *s = NULL;
#ifndef API_STREAM_FLAGS
#define API_STREAM_FLAGS 0
#endif
    CHECK(screate && sdestroy && ssync && memset_async && dtoh_async && screate(&s, API_STREAM_FLAGS) == 0);
    CHECK(ERR(cuFileStreamRegister(s, 0xF)) == 0);
    unsigned char v = (unsigned char)(rnd() | 1);
    size_t wsz = 8192;
    off_t wfo = 4096 * 40, wbo = 4096 * 100;
    ssize_t wgot = 0;
    CHECK(memset_async(dev + (unsigned long long)wbo, v, wsz, s) == 0);
    CHECK(ERR(cuFileWriteAsync(fh, dp, &wsz, &wfo, &wbo, &wgot, s)) == 0);
    size_t rsz = 16384;
    off_t rfo = 4096 * 60, rbo = 4096 * 120;
    ssize_t rgot = 0;
    CHECK(ERR(cuFileReadAsync(fh, dp, &rsz, &rfo, &rbo, &rgot, s)) == 0);
    unsigned char *host_copy = malloc(rsz);
#ifndef API_NO_PAGEABLE_ASYNC
    CHECK(dtoh_async(host_copy, dev + (unsigned long long)rbo, rsz, s) == 0);
    STEP("device stream: synchronize");
    CHECK(ssync(s) == 0);
#else
    STEP("device stream: synchronize");
    CHECK(ssync(s) == 0);
    CHECK(dtoh(host_copy, dev + (unsigned long long)rbo, rsz) == 0);
#endif
    CHECK(wgot == (ssize_t)wsz && rgot == (ssize_t)rsz);
    CHECK(pread(fd, chk, wsz, wfo) == (ssize_t)wsz);
    for (size_t i = 0; i < wsz; i++) if (chk[i] != v) { CHECK(chk[i] == v); break; }
    memset(data + wfo, v, wsz);
    CHECK(memcmp(host_copy, data + rfo, rsz) == 0);
    CHECK(ERR(cuFileStreamDeregister(s)) == 0);
    CHECK(sdestroy(s) == 0);
    free(host_copy);
    free(src);
    free(back);
    free(chk);
}

static int device_part(const char *path, unsigned char *data, size_t n) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    int count = 0;
    cuInit_t init = cuda ? (cuInit_t)dlsym(cuda, "cuInit") : NULL;
    if (!init || init(0) != 0 || ((cuDeviceGetCount_t)dlsym(cuda, "cuDeviceGetCount"))(&count) != 0 || count == 0) {
        const char *req = getenv("GDIO_REQUIRE_GPU");
        if (req && strcmp(req, "1") == 0) { fprintf(stderr, "FAIL: GDIO_REQUIRE_GPU=1 but no GPU\n"); return 1; }
        printf("SKIP device memory: no CUDA GPU\n");
        return 0;
    }
    STEP("device memory");
    void *ctx = NULL;
    CHECK(((cuDevicePrimaryCtxRetain_t)dlsym(cuda, "cuDevicePrimaryCtxRetain"))(&ctx, 0) == 0);
    CHECK(((cuCtxSetCurrent_t)dlsym(cuda, "cuCtxSetCurrent"))(ctx) == 0);
    cuMemAlloc_t alloc = (cuMemAlloc_t)dlsym(cuda, "cuMemAlloc_v2");
    cuMemFree_t mfree = (cuMemFree_t)dlsym(cuda, "cuMemFree_v2");
    cuMemcpyDtoH_t dtoh = (cuMemcpyDtoH_t)dlsym(cuda, "cuMemcpyDtoH_v2");
    cuMemcpyHtoD_t htod = (cuMemcpyHtoD_t)dlsym(cuda, "cuMemcpyHtoD_v2");
    unsigned long long dev = 0;
    size_t len = 1 << 20;
    CHECK(alloc(&dev, len) == 0);
    void *dp = (void *)(uintptr_t)dev;
    CHECK(ERR(cuFileBufRegister(dp, len, 0)) == 0);
    CHECK(ERR(cuFileBufRegister(dp, len, 0)) == CU_FILE_MEMORY_ALREADY_REGISTERED);
    CHECK(ERR(cuFileBufRegister((char *)dp + 4096, 4096, 0)) == 0);
    CHECK(ERR(cuFileBufRegister(dp, 64 << 20, 0)) == CU_FILE_MEMORY_ALREADY_REGISTERED);
    CHECK(ERR(cuFileBufRegister((char *)dp + 8192, 64 << 20, 0)) == CU_FILE_CUDA_POINTER_RANGE_ERROR);
    int fd = open(path, O_RDWR), e = 0;
    CUfileHandle_t fh = reg(fd, &e);
    CHECK(e == 0);
    CHECK(cuFileRead(fh, dp, 300000, 1234, 5000) == 300000);
    unsigned char *back = malloc(len);
    CHECK(dtoh(back, dev, len) == 0);
    CHECK(memcmp(back + 5000, data + 1234, 300000) == 0);
    /* GPU → file, then read back through the page cache. */
    fill(back, len);
    CHECK(htod(dev, back, len) == 0);
    CHECK(cuFileWrite(fh, dp, 100000, 7, 99) == 100000);
    unsigned char *chk = malloc(100000);
    CHECK(pread(fd, chk, 100000, 7) == 100000);
    CHECK(memcmp(chk, back + 99, 100000) == 0);
    memcpy(data + 7, back + 99, 100000);
    device_batch_and_stream(cuda, dev, len, fh, fd, data);
    size_t bar = 0;
    CHECK(ERR(cuFileGetBARSizeInKB(0, &bar)) == 0 && bar > 0);
    cuFileHandleDeregister(fh);
    close(fd);
    CHECK(ERR(cuFileBufDeregister((char *)dp + 4096)) == 0);
    CHECK(ERR(cuFileBufDeregister(dp)) == 0);
    mfree(dev);
    free(back);
    free(chk);
    (void)n;
    printf("device memory: ok\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: api DIR\n"); return 2; }
    char path[4096];
    snprintf(path, sizeof path, "%s/c-api.bin", argv[1]);
    size_t n = 1 << 20;
    unsigned char *data = malloc(n);
    fill(data, n);
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
    CHECK(fd >= 0 && write(fd, data, n) == (ssize_t)n);
    close(fd);

    int v = 0;
    CHECK(ERR(cuFileGetVersion(&v)) == 0 && v == 1150);
    CHECK(cuFileUseCount() == 0);
    CHECK(ERR(cuFileDriverClose()) == CU_FILE_DRIVER_NOT_INITIALIZED);
    CHECK(strcmp(CUFILE_ERRSTR(-5019), "unsupported file open flags") == 0);

    /* Parameters, staged before open. */
    size_t s = 0, lo = 0, hi = 0;
    bool b = false;
    char str[64];
    CHECK(ERR(cuFileSetParameterSizeT(CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB, 64)) == 0);
    CHECK(ERR(cuFileGetParameterSizeT(CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB, &s)) == 0 && s == 64);
    CHECK(ERR(cuFileSetParameterSizeT((CUFileSizeTConfigParameter_t)99, 1)) == CU_FILE_INVALID_VALUE);
    CHECK(ERR(cuFileGetParameterMinMaxValue(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, &lo, &hi)) == 0 && lo == 1 && hi == 256);
    CHECK(ERR(cuFileSetParameterBool(CUFILE_PARAM_PROFILE_NVTX, true)) == 0);
    CHECK(ERR(cuFileGetParameterBool(CUFILE_PARAM_PROFILE_NVTX, &b)) == 0 && b);
    CHECK(ERR(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "ERROR")) == 0);
    CHECK(ERR(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, str, sizeof str)) == 0);
    size_t sz[3], ct[3];
    CHECK(ERR(cuFileGetParameterPosixPoolSlabArray(sz, ct, 3)) == 0 && sz[0] == 4 && ct[0] == 128);
    size_t nsz[2] = {64, 1024}, nct[2] = {4, 2};
    CHECK(ERR(cuFileSetParameterPosixPoolSlabArray(nsz, nct, 2)) == 0);
    CHECK(ERR(cuFileDriverSetPollMode(false, 4)) == 0);

    /* Driver. */
    CUfileDrvProps_t props;
    CHECK(ERR(cuFileDriverGetProperties(&props)) == 0 && cuFileUseCount() == 0);
    CHECK(ERR(cuFileDriverOpen()) == 0 && ERR(cuFileDriverOpen()) == 0 && cuFileUseCount() == 2);
    CHECK(ERR(cuFileDriverGetProperties(&props)) == 0);
    CHECK(props.nvfs.major_version == 0 && props.nvfs.poll_thresh_size == 4);
    CHECK(ERR(cuFileSetParameterSizeT(CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB, 8)) == CU_FILE_DRIVER_ALREADY_OPEN);
    CHECK(ERR(cuFileGetParameterPosixPoolSlabArray(sz, ct, 2)) == 0 && sz[1] == 1024 && ct[1] == 2);
    CHECK(ERR(cuFileDriverSetMaxDirectIOSize(1024)) == 0);
    CHECK(ERR(cuFileDriverSetMaxCacheSize(2048)) == 0);
    CHECK(ERR(cuFileDriverSetMaxPinnedMemSize(4096)) == 0);
    CHECK(ERR(cuFileDriverGetProperties(&props)) == 0);
    CHECK(props.nvfs.max_direct_io_size == 1024 && props.max_device_cache_size == 2048 && props.max_device_pinned_mem_size == 4096);

    /* Stats on. */
    int lvl = 0;
    CHECK(ERR(cuFileSetStatsLevel(3)) == 0 && ERR(cuFileGetStatsLevel(&lvl)) == 0 && lvl == 3);
    CHECK(ERR(cuFileStatsStart()) == 0);

    /* Handles and buffers. */
    int e = 0;
    fd = open(path, O_RDWR);
    CUfileHandle_t fh = reg(fd, &e);
    CHECK(e == 0);
    reg(fd, &e);
    CHECK(e == CU_FILE_HANDLE_ALREADY_REGISTERED);
    int dfd = open(argv[1], O_RDONLY | O_DIRECTORY);
    reg(dfd, &e);
    CHECK(e == CU_FILE_INVALID_FILE_TYPE);
    int afd = open(path, O_WRONLY | O_APPEND);
    reg(afd, &e);
    CHECK(e == CU_FILE_INVALID_FILE_OPEN_FLAG);
    CHECK(ERR(cuFileHandleRegister(NULL, NULL)) == CU_FILE_INVALID_VALUE);
    unsigned char *buf = malloc(n);
    CHECK(ERR(cuFileBufRegister(buf, n, 0)) == 0);
    CHECK(ERR(cuFileBufRegister(buf, n, 0)) == CU_FILE_MEMORY_ALREADY_REGISTERED);
    CHECK(ERR(cuFileBufDeregister(buf + 1)) == CU_FILE_MEMORY_NOT_REGISTERED);

    STEP("host sync I/O");
    /* Sync I/O. */
    CHECK(cuFileRead(fh, buf, 500000, 777, 1000) == 500000);
    CHECK(memcmp(buf + 1000, data + 777, 500000) == 0);
    CHECK(cuFileRead(fh, buf, 100, (off_t)n - 40, 0) == 40);
    unsigned char *w = malloc(70000);
    fill(w, 70000);
    CHECK(cuFileWrite(fh, w, 60000, 4096, 10000) == 60000);
    memcpy(data + 4096, w + 10000, 60000);
    CHECK(cuFileRead((CUfileHandle_t)0x42, buf, 10, 0, 0) == -1 && errno == EBADF);

    STEP("host batch");
    /* Batch. */
    CUfileBatchHandle_t batch;
    CHECK(ERR(cuFileBatchIOSetUp(&batch, 0)) == CU_FILE_INVALID_VALUE);
    CHECK(ERR(cuFileBatchIOSetUp(&batch, 8)) == 0);
    CUfileIOParams_t io[2];
    memset(io, 0, sizeof io);
    for (int i = 0; i < 2; i++) {
        io[i].mode = CUFILE_BATCH;
        io[i].fh = fh;
        io[i].opcode = CUFILE_READ;
        io[i].u.batch.devPtr_base = buf;
        io[i].u.batch.file_offset = 100000 * (i + 1);
        io[i].u.batch.devPtr_offset = 200000 * i;
        io[i].u.batch.size = 65536;
        io[i].cookie = (void *)(uintptr_t)(i + 1);
    }
    CHECK(ERR(cuFileBatchIOSubmit(batch, 2, io, 0)) == 0);
    CUfileIOEvents_t ev[4];
    unsigned nr = 4;
    struct timespec t = {1, 0};
    CHECK(ERR(cuFileBatchIOGetStatus(batch, 2, &nr, ev, &t)) == 0 && nr == 2);
    for (unsigned i = 0; i < nr; i++) CHECK(ev[i].status == CUFILE_COMPLETE && ev[i].ret == 65536);
    CHECK(memcmp(buf, data + 100000, 65536) == 0 && memcmp(buf + 200000, data + 200000, 65536) == 0);
    CHECK(ERR(cuFileBatchIOCancel(batch)) == 0);
    cuFileBatchIODestroy(batch);
    CHECK(ERR(cuFileBatchIOCancel(batch)) == CU_FILE_INVALID_VALUE);

    STEP("host stream-ordered I/O");
    /* Stream-ordered I/O on the default stream. */
    size_t asz = 4096;
    off_t afo = 8192, abo = 0;
    ssize_t got = 0;
    CHECK(ERR(cuFileStreamRegister(NULL, 0xF)) == 0);
    CHECK(ERR(cuFileStreamRegister(NULL, 0xF)) == CU_FILE_INVALID_VALUE);
    CHECK(ERR(cuFileReadAsync(fh, buf, &asz, &afo, &abo, &got, NULL)) == 0);
    sync_null_stream();
    CHECK(got == 4096 && memcmp(buf, data + 8192, 4096) == 0);
    got = 0;
    CHECK(ERR(cuFileWriteAsync(fh, w, &asz, &afo, &abo, &got, NULL)) == 0);
    sync_null_stream();
    CHECK(got == 4096);
    memcpy(data + 8192, w, 4096);
    CHECK(ERR(cuFileReadAsync((CUfileHandle_t)0x42, buf, &asz, &afo, &abo, &got, NULL)) == CU_FILE_INVALID_VALUE && got == -22);
    CHECK(ERR(cuFileStreamDeregister(NULL)) == 0);
    CHECK(ERR(cuFileStreamDeregister(NULL)) == CU_FILE_INVALID_VALUE);

    STEP("stats");
    /* Stats. */
    CUfileStatsLevel1_t l1;
    static CUfileStatsLevel2_t l2;
    static CUfileStatsLevel3_t l3;
    CHECK(sizeof l1 == 512 && sizeof l2 == 1024 && sizeof l3 == 5000);
    CHECK(ERR(cuFileGetStatsL1(&l1)) == 0 && l1.read_ops.ok >= 4 && l1.write_bytes == 60000 + 4096);
    CHECK(ERR(cuFileGetStatsL2(&l2)) == 0 && l2.basic.read_bytes == l1.read_bytes);
    CHECK(ERR(cuFileGetStatsL3(&l3)) == 0);
    CHECK(ERR(cuFileStatsStop()) == 0 && ERR(cuFileStatsReset()) == 0);
    CHECK(ERR(cuFileGetStatsL1(&l1)) == 0 && l1.read_ops.ok == 0);
    size_t bar = 0;
    CHECK(ERR(cuFileGetBARSizeInKB(-1, &bar)) == CU_FILE_INVALID_VALUE);

    CHECK(ERR(cuFileBufDeregister(buf)) == 0);
    cuFileHandleDeregister(fh);
    close(fd);
    close(dfd);
    close(afd);

    /* The file holds exactly what was written. */
    unsigned char *all = malloc(n);
    fd = open(path, O_RDONLY);
    CHECK(read(fd, all, n) == (ssize_t)n && memcmp(all, data, n) == 0);
    close(fd);

    failures += device_part(path, data, n);
    /* And still, after the device part's writes. */
    fd = open(path, O_RDONLY);
    CHECK(read(fd, all, n) == (ssize_t)n && memcmp(all, data, n) == 0);
    close(fd);

    CHECK(ERR(cuFileDriverClose_v2()) == 0);
    CHECK(ERR(cuFileDriverClose_v2()) == 0);
    CHECK(cuFileUseCount() == 0);
    CHECK(ERR(cuFileDriverClose_v2()) == CU_FILE_DRIVER_NOT_INITIALIZED);
    if (failures) { fprintf(stderr, "%d failures\n", failures); return 1; }
    printf("OK\n");
    return 0;
}
