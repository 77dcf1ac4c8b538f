// Can the GPU's own cores move a pinned bounce buffer into GPU memory faster than its copy
// engines? Every "× limit" in BENCHMARKS.md divides by one 1 GiB copy-engine copy out of
// cudaHostAlloc memory (55.2 GB/s on the H200 machine); the engine's ring of 4 MiB bounce
// buffers reaches 51.3-53.2 of it (BENCHMARKS.md session 22 run 4). This probe measures,
// without gdio and without a file:
//   ce      copy-engine copies (cudaMemcpyAsync host→device)
//   kernel  a kernel that loads the mapped pinned buffer over the link and stores to GPU memory
//           (GRID blocks × 256 threads, each thread keeping UNROLL 16-byte loads in flight)
//   both    half of every chunk by each, on two streams, at once
// for one 1 GiB buffer (the limit's shape) and for T threads each cycling two 4 MiB buffers on
// one shared stream (the engine's ring's shape), from cudaHostAlloc memory ("alloc") and from
// 2 MiB-aligned anonymous memory on huge pages registered with cudaHostRegister ("reg", what
// gdio's workers pin). Every kernel result is checked against the source once per shape.
// build: nvcc -O3 -o kernel-copy-probe bench/kernel-copy-probe.cu
// usage: kernel-copy-probe [SECONDS_PER_RING_ROW]
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

template <int U>
__global__ void pull(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n16) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (U - 1) * stride < n16; i += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; u++) v[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < U; u++) dst[i + u * stride] = v[u];
  }
  for (; i < n16; i += stride) dst[i] = src[i];
}

static void launch(int unroll, int grid, const void* src, void* dst, size_t bytes, cudaStream_t s) {
  size_t n = bytes / 16;
  switch (unroll) {
    case 1: pull<1><<<grid, 256, 0, s>>>((const uint4*)src, (uint4*)dst, n); break;
    case 4: pull<4><<<grid, 256, 0, s>>>((const uint4*)src, (uint4*)dst, n); break;
    case 8: pull<8><<<grid, 256, 0, s>>>((const uint4*)src, (uint4*)dst, n); break;
    default: pull<16><<<grid, 256, 0, s>>>((const uint4*)src, (uint4*)dst, n); break;
  }
}

enum Way { CE, KERNEL, BOTH };
static const char* way_name[] = {"ce", "kernel", "both"};

struct Pinned { unsigned char* host; unsigned char* dev_view; size_t len; bool registered; };

static Pinned pin(size_t len, bool registered) {
  Pinned p{nullptr, nullptr, len, registered};
  if (registered) {
    size_t huge = 2u << 20, span = (len + huge - 1) / huge * huge + huge;
    void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) { perror("mmap"); exit(1); }
    unsigned char* aligned = (unsigned char*)(((uintptr_t)raw + huge - 1) / huge * huge);
    madvise(aligned, len, MADV_HUGEPAGE);
    memset(aligned, 0, len);
    CK(cudaHostRegister(aligned, len, cudaHostRegisterMapped | cudaHostRegisterPortable));
    p.host = aligned;
  } else {
    CK(cudaHostAlloc((void**)&p.host, len, cudaHostAllocMapped | cudaHostAllocPortable));
  }
  CK(cudaHostGetDevicePointer((void**)&p.dev_view, p.host, 0));
  return p;
}

static void fill(unsigned char* p, size_t len, unsigned seed) {
  unsigned long long x = 0x9e3779b97f4a7c15ull ^ seed;
  for (size_t i = 0; i + 8 <= len; i += 8) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    memcpy(p + i, &x, 8);
  }
}

static bool same(const unsigned char* host, const void* dev, size_t len) {
  std::vector<unsigned char> back(len);
  CK(cudaMemcpy(back.data(), dev, len, cudaMemcpyDeviceToHost));
  return memcmp(back.data(), host, len) == 0;
}

static void queue(Way w, int unroll, int grid, const Pinned& p, size_t off, void* dst, size_t len,
                  cudaStream_t s, cudaStream_t s2) {
  if (w == CE) {
    CK(cudaMemcpyAsync(dst, p.host + off, len, cudaMemcpyHostToDevice, s));
  } else if (w == KERNEL) {
    launch(unroll, grid, p.dev_view + off, dst, len, s);
  } else {
    size_t half = len / 2 / 4096 * 4096;
    CK(cudaMemcpyAsync(dst, p.host + off, half, cudaMemcpyHostToDevice, s));
    launch(unroll, grid, p.dev_view + off + half, (unsigned char*)dst + half, len - half, s2);
  }
}

// One large buffer, one stream (two for "both"): median GB/s of five passes after one warm-up.
static void one_buffer(Way w, int unroll, int grid, bool registered, size_t len) {
  Pinned p = pin(len, registered);
  fill(p.host, len, 7 + grid + unroll);
  void* dst; CK(cudaMalloc(&dst, len));
  cudaStream_t s, s2; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t a, b, j; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b)); CK(cudaEventCreate(&j));
  std::vector<double> r;
  for (int pass = 0; pass < 6; pass++) {
    CK(cudaMemset(dst, 0, len)); CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(a, s)); CK(cudaStreamWaitEvent(s2, a, 0));
    queue(w, unroll, grid, p, 0, dst, len, s, s2);
    CK(cudaEventRecord(j, s2)); CK(cudaStreamWaitEvent(s, j, 0));
    CK(cudaEventRecord(b, s)); CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b));
    if (pass > 0) r.push_back(len / (ms * 1e6));
  }
  bool ok = same(p.host, dst, len);
  std::sort(r.begin(), r.end());
  printf("one %s %zu MiB %s grid %d unroll %d: %.2f GB/s (min %.2f max %.2f) %s\n",
         registered ? "reg" : "alloc", len >> 20, way_name[w], grid, unroll, r[r.size() / 2],
         r.front(), r.back(), ok ? "verified" : "MISMATCH");
  CK(cudaFree(dst));
  if (registered) CK(cudaHostUnregister(p.host)); else CK(cudaFreeHost(p.host));
  CK(cudaStreamDestroy(s)); CK(cudaStreamDestroy(s2));
}

// T threads, each with two `chunk` buffers it cycles (waits for the copy from the buffer before
// it reuses it), every copy queued on one shared stream (one more for "both"), as gdio's workers
// with copy_streams 1 do. GB/s over `secs`, buffers made before the clock starts.
static void ring(Way w, int unroll, int grid, bool registered, int threads, size_t chunk,
                 double secs) {
  cudaStream_t s, s2; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  std::vector<Pinned> bufs;
  for (int i = 0; i < threads * 2; i++) { bufs.push_back(pin(chunk, registered)); fill(bufs.back().host, chunk, i); }
  size_t slots = 64;
  unsigned char* dst; CK(cudaMalloc((void**)&dst, slots * chunk));
  std::atomic<long long> bytes{0};
  std::atomic<int> ready{0};
  std::atomic<bool> go{false}, stop{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++) {
    ts.emplace_back([&, t] {
      CK(cudaSetDevice(0));
      cudaEvent_t ev[2]; CK(cudaEventCreateWithFlags(&ev[0], cudaEventDisableTiming));
      CK(cudaEventCreateWithFlags(&ev[1], cudaEventDisableTiming));
      bool used[2] = {false, false};
      ready++;
      while (!go) std::this_thread::yield();
      long long mine = 0; unsigned k = 0;
      while (!stop) {
        int b = k & 1;
        if (used[b]) CK(cudaEventSynchronize(ev[b]));
        size_t slot = (t * 7 + k) % slots;
        queue(w, unroll, grid, bufs[t * 2 + b], 0, dst + slot * chunk, chunk, s, s2);
        if (w == BOTH) { CK(cudaEventRecord(ev[b], s2)); CK(cudaStreamWaitEvent(s, ev[b], 0)); }
        CK(cudaEventRecord(ev[b], s));
        used[b] = true; mine += chunk; k++;
      }
      for (int b = 0; b < 2; b++) if (used[b]) CK(cudaEventSynchronize(ev[b]));
      bytes += mine;
    });
  }
  while (ready < threads) std::this_thread::yield();
  auto t0 = std::chrono::steady_clock::now();
  go = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(secs));
  stop = true;
  for (auto& th : ts) th.join();
  double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Check: one more copy of buffer 0 through this way, compared.
  queue(w, unroll, grid, bufs[0], 0, dst, chunk, s, s2);
  CK(cudaDeviceSynchronize());
  bool ok = same(bufs[0].host, dst, chunk);
  printf("ring %s %d thr x 2 x %zu KiB %s grid %d unroll %d: %.2f GB/s %s\n",
         registered ? "reg" : "alloc", threads, chunk >> 10, way_name[w], grid, unroll,
         bytes / el / 1e9, ok ? "verified" : "MISMATCH");
  for (auto& p : bufs) { if (registered) CK(cudaHostUnregister(p.host)); else CK(cudaFreeHost(p.host)); }
  CK(cudaFree(dst));
  CK(cudaStreamDestroy(s)); CK(cudaStreamDestroy(s2));
}

int main(int argc, char** argv) {
  double secs = argc > 1 ? atof(argv[1]) : 1.0;
  CK(cudaSetDevice(0));
  CK(cudaSetDeviceFlags(cudaDeviceMapHost));
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  int sms = prop.multiProcessorCount;
  size_t big = 1ull << 30;
  for (int reg = 0; reg < 2; reg++) one_buffer(CE, 1, 0, reg, big);
  int grids[] = {sms / 2, sms, 2 * sms, 4 * sms, 8 * sms};
  int unrolls[] = {1, 4, 8, 16};
  for (int g : grids) for (int u : unrolls) one_buffer(KERNEL, u, g, false, big);
  // The registered source and "both" at two shapes each.
  one_buffer(KERNEL, 8, 2 * sms, true, big);
  one_buffer(KERNEL, 4, 4 * sms, true, big);
  one_buffer(BOTH, 8, sms, false, big);
  one_buffer(BOTH, 4, 2 * sms, false, big);
  size_t mib4 = 4u << 20;
  for (int reg = 0; reg < 2; reg++) {
    ring(CE, 1, 0, reg, 12, mib4, secs);
    ring(KERNEL, 8, sms, reg, 12, mib4, secs);
    ring(KERNEL, 8, 2 * sms, reg, 12, mib4, secs);
    ring(KERNEL, 4, 4 * sms, reg, 12, mib4, secs);
    ring(BOTH, 8, sms / 2, reg, 12, mib4, secs);
  }
  ring(CE, 1, 0, true, 12, 1u << 20, secs);
  ring(KERNEL, 8, sms / 2, true, 12, 1u << 20, secs);
  ring(KERNEL, 8, sms, true, 12, 1u << 20, secs);
  return 0;
}
