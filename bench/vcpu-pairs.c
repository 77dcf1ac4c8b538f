// Which CPUs slow each other down when both copy out of the page cache: the copy a gdio
// worker's file I/O does (pread of a cached file into a huge-page buffer). Each CPU alone, then
// every pair at once; a pair whose two copies together run little faster than one alone shares
// something the guest cannot see (a host core's two hyperthreads, or a host core time-shared
// between two vCPUs). One line per CPU and per pair, then the pairs ranked by how much they
// kept of twice the solo rate.
//   cc -O2 -pthread bench/vcpu-pairs.c -o /tmp/vcpu-pairs && /tmp/vcpu-pairs FILE [MS_PER_RUN]
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (4 << 20)
static int fd;
static off_t fsize;
static double run_s;
static pthread_barrier_t bar;

struct job { int cpu; off_t start; double gbps; };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void *copy_loop(void *arg) {
  struct job *j = arg;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(j->cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set)) { j->gbps = -1; return NULL; }
  size_t span = CHUNK + (2 << 20);
  char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char *buf = (char *)(((unsigned long)raw + (2 << 20) - 1) & ~((2UL << 20) - 1));
  madvise(buf, CHUNK, MADV_HUGEPAGE);
  memset(buf, 1, CHUNK);
  off_t off = j->start;
  pthread_barrier_wait(&bar);
  double t0 = now(), t = t0;
  long long bytes = 0;
  do {
    if (off + CHUNK > fsize) off = 0;
    ssize_t n = pread(fd, buf, CHUNK, off);
    if (n <= 0) { j->gbps = -1; break; }
    bytes += n;
    off += n;
  } while ((t = now()) - t0 < run_s);
  if (j->gbps == 0) j->gbps = bytes / (t - t0) / 1e9;
  munmap(raw, span);
  return NULL;
}

static void run(struct job *jobs, int n) {
  pthread_t th[2];
  pthread_barrier_init(&bar, NULL, n);
  for (int i = 0; i < n; i++) { jobs[i].gbps = 0; pthread_create(&th[i], NULL, copy_loop, &jobs[i]); }
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&bar);
}

struct pair { int a, b; double kept; };
static int by_kept(const void *x, const void *y) {
  double d = ((const struct pair *)x)->kept - ((const struct pair *)y)->kept;
  return (d > 0) - (d < 0);
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s FILE [MS_PER_RUN]\n", argv[0]); return 2; }
  fd = open(argv[1], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) || st.st_size < 2 * CHUNK) { perror(argv[1]); return 2; }
  fsize = st.st_size / CHUNK * CHUNK;
  run_s = (argc > 2 ? atof(argv[2]) : 200) / 1e3;
  int cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus > 256) cpus = 256;
  double solo[256];
  for (int c = 0; c < cpus; c++) {
    struct job j = {c, 0, 0};
    run(&j, 1);
    solo[c] = j.gbps;
    printf("cpu %d alone: %.2f GB/s\n", c, solo[c]);
  }
  struct pair *pairs = calloc(cpus * cpus, sizeof *pairs);
  int np = 0;
  for (int a = 0; a < cpus; a++)
    for (int b = a + 1; b < cpus; b++) {
      struct job j[2] = {{a, 0, 0}, {b, fsize / 2 / CHUNK * CHUNK, 0}};
      run(j, 2);
      double kept = (j[0].gbps + j[1].gbps) / (solo[a] + solo[b]);
      pairs[np++] = (struct pair){a, b, kept};
      printf("pair %d %d: %.2f + %.2f GB/s, %.2f of the two alone\n", a, b, j[0].gbps, j[1].gbps, kept);
    }
  qsort(pairs, np, sizeof *pairs, by_kept);
  printf("weakest pairs (share of the two alone kept):");
  for (int i = 0; i < np && i < 16; i++) printf(" %d+%d %.2f", pairs[i].a, pairs[i].b, pairs[i].kept);
  printf("\nmedian pair kept %.2f, strongest %.2f\n", pairs[np / 2].kept, pairs[np - 1].kept);
  return 0;
}
