// What the CUDA driver lets 4 KiB reads into GPU memory cost, without gdio: how many 4 KiB
// pieces per second T threads (each with its own stream and pinned buffer) can move host→device
// when each group of G pieces is sent as
//   per-piece  G copies and G events (one marker per piece)
//   copies     G copies and one event
//   batch      one cudaMemcpyBatchAsync of G copies and one event
//   scatter    one copy of the whole group (data + descriptors) into a device staging buffer,
//              one scatter kernel that puts each piece at its destination, one event
//   staged     the scatter's single copy alone (what the kernel adds)
// Each thread keeps two groups in flight (waits for the event of the group before last).
// The scatter result is checked against the pinned source once per (T, G). The pieces of a
// group go to distinct slots: the kernel's blocks run in no order, so two pieces of one group on
// the same slot would leave either. The first version drew slots at random and its check
// expected the last piece written to win; it failed at 12 threads and groups of 64 on the H200
// host on 2026-11-30, most likely for that reason, and the probe stopped there (BENCHMARKS.md
// reports no scatter rate for that row).
// build: nvcc -O2 -o small-copy-probe bench/small-copy-probe.cu
// usage: small-copy-probe [SECONDS] [PIECE_BYTES]
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

struct Desc { unsigned long long dst; unsigned int src_off; unsigned int len; };

// One block per piece; 16-byte moves where source, destination and length allow, else bytes.
__global__ void scatter(const unsigned char* staging, const Desc* d) {
  Desc p = d[blockIdx.x];
  const unsigned char* s = staging + p.src_off;
  unsigned char* t = (unsigned char*)p.dst;
  if (((p.dst | p.src_off | p.len) & 15) == 0) {
    const uint4* s4 = (const uint4*)s; uint4* t4 = (uint4*)t;
    for (unsigned i = threadIdx.x; i < p.len / 16; i += blockDim.x) t4[i] = s4[i];
  } else {
    for (unsigned i = threadIdx.x; i < p.len; i += blockDim.x) t[i] = s[i];
  }
}

enum Mode { PER_PIECE, COPIES, BATCH, SCATTER, STAGED };
static const char* names[] = {"per-piece", "copies", "batch", "scatter", "staged"};

static double run(Mode m, int threads, int group, size_t piece, double secs, bool check) {
  std::vector<std::thread> ts;
  std::vector<long long> done(threads, 0);
  size_t desc_off = group * piece;
  size_t span = desc_off + group * sizeof(Desc);
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(secs);
  for (int t = 0; t < threads; t++) {
    ts.emplace_back([&, t] {
      CK(cudaSetDevice(0));
      cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      unsigned char* host[2]; CK(cudaHostAlloc(&host[0], span, 0)); CK(cudaHostAlloc(&host[1], span, 0));
      unsigned char *dst, *staging[2];
      size_t dst_len = 4096 * piece;
      CK(cudaMalloc(&dst, dst_len)); CK(cudaMalloc(&staging[0], span)); CK(cudaMalloc(&staging[1], span));
      cudaEvent_t ev[2][64]; for (auto& a : ev) for (auto& e : a) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      unsigned seed = 12345 + t;
      for (int b = 0; b < 2; b++) for (size_t i = 0; i < desc_off; i++) host[b][i] = (unsigned char)rand_r(&seed);
      std::vector<void*> dsts(group), srcs(group); std::vector<size_t> sizes(group);
      long long n = 0; int k = 0; bool pending[2] = {false, false};
      while (std::chrono::steady_clock::now() < until) {
        int b = k & 1;
        if (pending[b]) CK(cudaEventSynchronize(ev[b][m == PER_PIECE ? group - 1 : 0]));
        Desc* d = (Desc*)(host[b] + desc_off);
        size_t first = (size_t)(rand_r(&seed) % 4096);
        for (int i = 0; i < group; i++) {
          size_t slot = (first + (size_t)i * 61) % 4096;  // distinct for i < 4096
          d[i] = Desc{(unsigned long long)(dst + slot * piece), (unsigned)(i * piece), (unsigned)piece};
          dsts[i] = dst + slot * piece; srcs[i] = host[b] + i * piece; sizes[i] = piece;
        }
        switch (m) {
          case PER_PIECE:
            for (int i = 0; i < group; i++) { CK(cudaMemcpyAsync(dsts[i], srcs[i], piece, cudaMemcpyHostToDevice, s)); CK(cudaEventRecord(ev[b][i], s)); }
            break;
          case COPIES:
            for (int i = 0; i < group; i++) CK(cudaMemcpyAsync(dsts[i], srcs[i], piece, cudaMemcpyHostToDevice, s));
            CK(cudaEventRecord(ev[b][0], s)); break;
          case BATCH: {
            cudaMemcpyAttributes a; memset(&a, 0, sizeof a);
            a.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
            size_t ai = 0;
#if CUDART_VERSION >= 13000
            CK(cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), group, &a, &ai, 1, s));
#else
            size_t fail = 0;
            CK(cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), group, &a, &ai, 1, &fail, s));
#endif
            CK(cudaEventRecord(ev[b][0], s)); break; }
          case SCATTER:
            CK(cudaMemcpyAsync(staging[b], host[b], span, cudaMemcpyHostToDevice, s));
            scatter<<<group, 128, 0, s>>>(staging[b], (const Desc*)(staging[b] + desc_off));
            CK(cudaGetLastError());
            CK(cudaEventRecord(ev[b][0], s)); break;
          case STAGED:
            CK(cudaMemcpyAsync(staging[b], host[b], span, cudaMemcpyHostToDevice, s));
            CK(cudaEventRecord(ev[b][0], s)); break;
        }
        pending[b] = true; n += group; k++;
        if (check && m == SCATTER) {
          CK(cudaStreamSynchronize(s));
          std::vector<unsigned char> back(piece);
          for (int i = 0; i < group; i++) {
            CK(cudaMemcpy(back.data(), (void*)d[i].dst, piece, cudaMemcpyDeviceToHost));
            if (memcmp(back.data(), host[b] + i * piece, piece) != 0) { fprintf(stderr, "scatter: piece %d wrong\n", i); exit(2); }
          }
          check = false;
        }
      }
      CK(cudaStreamSynchronize(s));
      done[t] = n;
      CK(cudaFreeHost(host[0])); CK(cudaFreeHost(host[1])); CK(cudaFree(dst)); CK(cudaFree(staging[0])); CK(cudaFree(staging[1]));
      for (auto& a : ev) for (auto& e : a) CK(cudaEventDestroy(e));
      CK(cudaStreamDestroy(s));
    });
  }
  for (auto& th : ts) th.join();
  long long total = 0; for (auto v : done) total += v;
  return total / secs;
}

int main(int argc, char** argv) {
  double secs = argc > 1 ? atof(argv[1]) : 1.0;
  size_t piece = argc > 2 ? (size_t)atol(argv[2]) : 4096;
  CK(cudaSetDevice(0)); CK(cudaFree(0));
  printf("%-10s %7s %5s %14s\n", "mode", "threads", "group", "pieces/s");
  for (int threads : {1, 4, 12})
    for (int group : {16, 64})
      for (int m = 0; m < 5; m++) {
        if (m == PER_PIECE && group != 64) continue;
        double r = run((Mode)m, threads, group, piece, secs, true);
        printf("%-10s %7d %5d %14.0f\n", names[m], threads, group, r);
        fflush(stdout);
      }
  return 0;
}
