/* Does the GPU pull pinned host memory faster with its SMs (a copy kernel reading mapped host
 * memory) than with a copy engine (cuMemcpyHtoDAsync), in gdio's bounce pattern?
 *
 * T threads read a cached file in CHUNK MiB pieces taken in turn (a shared counter), each into
 * one of its NBUF pinned buffers (waiting for that buffer's last copy first), then queue the
 * piece's host->device copy on one of NSTREAMS shared streams and record an event: what gdio's
 * workers do. MODE says who copies:
 *   ce    the copy engine (cudaMemcpyAsync);
 *   sm    a kernel of BLOCKS blocks x 512 threads loading 16-byte words from the mapped buffer;
 *   mix   even threads ce, odd threads sm (on streams of their own kind).
 * NOFILE=1: no pread (the ring of buffers alone). LAT=1: each copy is polled (cudaEventQuery, as
 * gdio's watcher does) until it lands before the thread goes on, and the pass also prints the
 * mean pread time and the mean and largest time from queueing a copy to its landing: a lone
 * caller's pattern with THREADS=1. PINALLOC=hp: buffers are 2 MiB-aligned
 * huge-page memory registered with cudaHostRegister (gdio's default), else cudaHostAlloc; both
 * mapped and portable. Before the modes: one 1 GiB copy by the copy engine and by the kernel
 * (the link each way of pulling).
 * Build (GPU machine): nvcc -O2 -o /tmp/smprobe bench/h2d-sm-probe.cu
 * Run:   /tmp/smprobe FILE CHUNK_MIB THREADS MODE [MODE...]   (environment: BLOCKS, NBUF,
 *        NSTREAMS, PASSES, NOFILE, PINALLOC) */
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__global__ void pull(uint4 *dst, const uint4 *__restrict__ src, size_t words) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < words; i += 4 * stride) {
        uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a; dst[i + stride] = b; dst[i + 2 * stride] = c; dst[i + 3 * stride] = d;
    }
    for (; i < words; i += stride) dst[i] = src[i];
}

static int blocks = 132, nbuf = 2, nstreams = 1, nofile = 0, hp = 0, lat = 0;

static void *pinned(size_t len) {
    void *p;
    if (!hp) { CK(cudaHostAlloc(&p, len, cudaHostAllocMapped | cudaHostAllocPortable)); return p; }
    size_t huge = 2 << 20, span = len + huge;
    char *raw = (char *)mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) { perror("mmap"); exit(1); }
    char *start = (char *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
    madvise(start, len, MADV_HUGEPAGE);
    for (size_t o = 0; o < len; o += 4096) start[o] = 1;
    CK(cudaHostRegister(start, len, cudaHostRegisterMapped | cudaHostRegisterPortable));
    return start;
}

static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static void copy(int sm, char *dst, void *src, size_t len, cudaStream_t s) {
    if (!sm) { CK(cudaMemcpyAsync(dst, src, len, cudaMemcpyHostToDevice, s)); return; }
    void *dsrc;
    CK(cudaHostGetDevicePointer(&dsrc, src, 0));
    pull<<<blocks, 512, 0, s>>>((uint4 *)dst, (const uint4 *)dsrc, len / 16);
    CK(cudaGetLastError());
}

int main(int argc, char **argv) {
    if (argc < 5) { fprintf(stderr, "usage: %s FILE CHUNK_MIB THREADS MODE...\n", argv[0]); return 2; }
    const char *path = argv[1];
    size_t chunk = (size_t)atol(argv[2]) << 20;
    int threads = atoi(argv[3]);
    if (getenv("BLOCKS")) blocks = atoi(getenv("BLOCKS"));
    if (getenv("NBUF")) nbuf = atoi(getenv("NBUF"));
    if (getenv("NSTREAMS")) nstreams = atoi(getenv("NSTREAMS"));
    if (getenv("NOFILE")) nofile = atoi(getenv("NOFILE"));
    if (getenv("LAT")) lat = atoi(getenv("LAT"));
    if (getenv("PINALLOC")) hp = !strcmp(getenv("PINALLOC"), "hp");
    int passes = getenv("PASSES") ? atoi(getenv("PASSES")) : 2;
    int fd = open(path, O_RDONLY);
    if (fd < 0) { perror(path); return 1; }
    struct stat st;
    fstat(fd, &st);
    size_t size = (size_t)st.st_size / chunk * chunk;
    CK(cudaSetDevice(0));
    char *dev;
    CK(cudaMalloc(&dev, size));

    {   /* The link: one 1 GiB copy each way of pulling. */
        size_t len = 1ul << 30;
        void *big = pinned(len);
        memset(big, 7, len);
        cudaStream_t s;
        CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        for (int sm = 0; sm < 2; sm++)
            for (int r = 0; r < 3; r++) {
                CK(cudaStreamSynchronize(s));
                double t = now();
                copy(sm, dev, big, len, s);
                CK(cudaStreamSynchronize(s));
                if (r > 0) printf("link %s 1 GiB: %.2f GB/s\n", sm ? "sm" : "ce", len / (now() - t) / 1e9);
            }
        fflush(stdout);
    }

    std::vector<cudaStream_t> streams(2 * nstreams);
    for (auto &s : streams) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::vector<std::vector<char *>> bufs(threads);
    for (auto &b : bufs)
        for (int i = 0; i < nbuf; i++) { b.push_back((char *)pinned(chunk)); memset(b.back(), 3, chunk); }

    for (int a = 4; a < argc; a++) {
        const char *mode = argv[a];
        for (int pass = 0; pass < passes; pass++) {
            std::atomic<size_t> next{0};
            std::atomic<int> failed{0};
            std::atomic<long> read_ns{0}, land_ns{0}, land_max_ns{0}, copies{0};
            double t0 = now();
            std::vector<std::thread> ts;
            for (int t = 0; t < threads; t++)
                ts.emplace_back([&, t] {
                    CK(cudaSetDevice(0));
                    int sm = !strcmp(mode, "sm") || (!strcmp(mode, "mix") && (t & 1));
                    cudaStream_t s = streams[(sm ? nstreams : 0) + t / (strcmp(mode, "mix") ? 1 : 2) % nstreams];
                    std::vector<cudaEvent_t> ev(nbuf);
                    for (auto &e : ev) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
                    std::vector<int> used(nbuf, 0);
                    for (int k = 0;; k++) {
                        size_t off = next.fetch_add(chunk);
                        if (off >= size) break;
                        int i = k % nbuf;
                        if (used[i]) CK(cudaEventSynchronize(ev[i]));
                        double r0 = now();
                        if (!nofile && pread(fd, bufs[t][i], chunk, off) != (ssize_t)chunk) failed = 1;
                        double q = now();
                        copy(sm, dev + off, bufs[t][i], chunk, s);
                        CK(cudaEventRecord(ev[i], s));
                        used[i] = 1;
                        if (lat) {
                            cudaError_t e;
                            while ((e = cudaEventQuery(ev[i])) == cudaErrorNotReady) {}
                            CK(e);
                            long landed = (long)((now() - q) * 1e9);
                            read_ns += (long)((q - r0) * 1e9);
                            land_ns += landed;
                            copies += 1;
                            for (long m = land_max_ns; landed > m && !land_max_ns.compare_exchange_weak(m, landed);) {}
                        }
                    }
                    for (int i = 0; i < nbuf; i++) if (used[i]) CK(cudaEventSynchronize(ev[i]));
                    for (auto &e : ev) cudaEventDestroy(e);
                });
            for (auto &t : ts) t.join();
            double dt = now() - t0;
            if (!nofile) { /* The device holds the file: three chunks compared byte for byte. */
                std::vector<char> got(chunk), want(chunk);
                size_t offs[3] = {0, size / 2 / chunk * chunk, size - chunk};
                for (size_t o : offs) {
                    CK(cudaMemcpy(got.data(), dev + o, chunk, cudaMemcpyDeviceToHost));
                    if (pread(fd, want.data(), chunk, o) != (ssize_t)chunk || memcmp(got.data(), want.data(), chunk))
                        failed = 1;
                }
            }
            printf("%s %s chunk %zu MiB x %d threads nbuf %d streams %d blocks %d%s: %.2f GB/s%s\n", mode,
                   hp ? "hp" : "host", chunk >> 20, threads, nbuf, nstreams, blocks, nofile ? " nofile" : "",
                   size / dt / 1e9, failed ? " (WRONG BYTES)" : "");
            if (lat && copies > 0)
                printf("  pread %.1f us, copy landed %.1f us after queueing (largest %.1f) over %ld copies\n",
                       read_ns / 1e3 / copies, land_ns / 1e3 / copies, land_max_ns / 1e3, (long)copies);
            fflush(stdout);
        }
    }
    return 0;
}
