// How the host's copies out of the page cache scale with readers at once: N threads (not
// pinned: the scheduler places them, as it places gdio's workers) each `pread` 4 MiB pieces of
// the cached FILE into a huge-page buffer of its own for MS (300) ms; the total GB/s, each
// reader's, and the share of the CPUs' time the hypervisor gave to others while they read
// ("steal" in /proc/stat). Session 47 run 2, an H100 host: one CPU alone copied 6-7 GB/s and
// any two at once kept 1.0 x their sum, yet twelve at once (gdio's workers, the bench's limit)
// moved 24 GB/s in all (session 45) while KvikIO's eight threads read 36: where the total stops
// growing is how many readers this host can use.
//   cc -O2 -pthread bench/reader-scaling.c -o /tmp/reader-scaling && /tmp/reader-scaling FILE [MS] [N...]
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (4 << 20)
#define HUGE (2UL << 20)
static int fd;
static off_t fsize;
static double run_s;
static pthread_barrier_t bar;

struct reader { off_t start; long long bytes; double secs; int failed; };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

// (all ticks, steal ticks) of the "cpu" line of /proc/stat; steal is its eighth number.
static void cpu_ticks(unsigned long long *all, unsigned long long *steal) {
  unsigned long long v[10] = {0};
  FILE *f = fopen("/proc/stat", "r");
  *all = *steal = 0;
  if (!f) return;
  if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
             &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) >= 8) {
    for (int i = 0; i < 8; i++) *all += v[i];
    *steal = v[7];
  }
  fclose(f);
}

static void *read_loop(void *arg) {
  struct reader *r = arg;
  char *raw = mmap(NULL, CHUNK + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) { r->failed = 1; pthread_barrier_wait(&bar); return NULL; }
  char *buf = (char *)(((unsigned long)raw + HUGE - 1) & ~(HUGE - 1));
  madvise(buf, CHUNK, MADV_HUGEPAGE);
  memset(buf, 1, CHUNK);
  off_t off = r->start;
  pthread_barrier_wait(&bar);
  double t0 = now(), t = t0;
  do {
    if (off + CHUNK > fsize) off = 0;
    ssize_t n = pread(fd, buf, CHUNK, off);
    if (n <= 0) { r->failed = 1; break; }
    r->bytes += n;
    off += n;
  } while ((t = now()) - t0 < run_s);
  r->secs = t - t0;
  munmap(raw, CHUNK + HUGE);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s FILE [MS] [N...]\n", argv[0]); return 2; }
  fd = open(argv[1], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) || st.st_size < 2 * CHUNK) { perror(argv[1]); return 2; }
  fsize = st.st_size / CHUNK * CHUNK;
  run_s = (argc > 2 ? atof(argv[2]) : 300) / 1e3;
  int def[] = {1, 2, 4, 6, 8, 10, 12, 16}, nn = argc > 3 ? argc - 3 : 8;
  double best = 0;
  int best_n = 0;
  for (int k = 0; k < nn; k++) {
    int n = argc > 3 ? atoi(argv[3 + k]) : def[k];
    if (n < 1 || n > 256) { fprintf(stderr, "N must be 1-256\n"); return 2; }
    struct reader *r = calloc(n, sizeof *r);
    pthread_t *th = calloc(n, sizeof *th);
    pthread_barrier_init(&bar, NULL, n);
    for (int i = 0; i < n; i++) {
      r[i].start = (off_t)((fsize / CHUNK) * i / n) * CHUNK;
      pthread_create(&th[i], NULL, read_loop, &r[i]);
    }
    unsigned long long a0, s0, a1, s1;
    cpu_ticks(&a0, &s0);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    cpu_ticks(&a1, &s1);
    pthread_barrier_destroy(&bar);
    double total = 0, lo = 1e9, hi = 0;
    int failed = 0;
    for (int i = 0; i < n; i++) {
      double g = r[i].secs > 0 ? r[i].bytes / r[i].secs / 1e9 : 0;
      total += g;
      lo = g < lo ? g : lo;
      hi = g > hi ? g : hi;
      failed |= r[i].failed;
    }
    double steal = a1 > a0 ? 100.0 * (s1 - s0) / (a1 - a0) : 0;
    printf("%2d readers: %6.2f GB/s in all, each %.2f-%.2f, steal %.1f %% of the CPUs' time%s\n", n, total, lo,
           hi, steal, failed ? " (a read failed)" : "");
    fflush(stdout);
    if (total > best) { best = total; best_n = n; }
    free(r);
    free(th);
  }
  printf("most in all: %.2f GB/s at %d readers\n", best, best_n);
  return 0;
}
