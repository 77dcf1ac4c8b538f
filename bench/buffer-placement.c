// Does where a bounce buffer lands in memory set how fast the kernel copies into it? Session 47
// run 1: at four reads in flight a gdio worker's `pread` out of the page cache ran 3.93 GB/s in
// one process and 6.26 in the next, each process's bounce buffers wholly on (guest) huge pages.
// In a VM a guest huge page need not be a host huge page, so two buffers alike to the guest may
// cost the copy differently. This maps NBUF (24) buffers of 4 MiB as gdio does (2 MiB-aligned
// anonymous memory, MADV_HUGEPAGE, faulted in), all kept at once so that each has pages of its
// own, and from one pinned CPU times `pread` of the cached FILE into each, MS (60) ms a time,
// ROUNDS (3) rounds. If buffers differ far more than one buffer does from round to round, the
// buffer's memory sets the rate. One line per buffer, then the two spreads.
//   cc -O2 bench/buffer-placement.c -o /tmp/buffer-placement && /tmp/buffer-placement FILE [CPU] [NBUF] [MS] [ROUNDS]
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (4 << 20)
#define HUGE (2UL << 20)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b) {
  double d = *(const double *)a - *(const double *)b;
  return (d > 0) - (d < 0);
}

// KiB of the mapping at `addr` the kernel backs with huge pages (smaps' AnonHugePages), or -1.
static long huge_kib(unsigned long addr) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  char line[512];
  int in = 0;
  long kib = -1;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {  // a mapping's first line
      in = lo <= addr && addr < hi;
      continue;
    }
    if (in && sscanf(line, "AnonHugePages: %ld kB", &kib) == 1) break;
  }
  fclose(f);
  return kib;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s FILE [CPU] [NBUF] [MS] [ROUNDS]\n", argv[0]); return 2; }
  int cpu = argc > 2 ? atoi(argv[2]) : 2, nbuf = argc > 3 ? atoi(argv[3]) : 24;
  double run_s = (argc > 4 ? atof(argv[4]) : 60) / 1e3;
  int rounds = argc > 5 ? atoi(argv[5]) : 3;
  if (nbuf < 2 || nbuf > 256 || rounds < 1 || rounds > 16) { fprintf(stderr, "NBUF 2-256, ROUNDS 1-16\n"); return 2; }
  int fd = open(argv[1], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) || st.st_size < 2 * CHUNK) { perror(argv[1]); return 2; }
  off_t fsize = st.st_size / CHUNK * CHUNK, off = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set)) { perror("sched_setaffinity"); return 2; }
  char **buf = calloc(nbuf, sizeof *buf);
  for (int b = 0; b < nbuf; b++) {
    char *raw = mmap(NULL, CHUNK + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) { perror("mmap"); return 2; }
    buf[b] = (char *)(((unsigned long)raw + HUGE - 1) & ~(HUGE - 1));
    madvise(buf[b], CHUNK, MADV_HUGEPAGE);
    memset(buf[b], b + 1, CHUNK);
  }
  double *rate = calloc((size_t)nbuf * rounds, sizeof *rate);
  for (int r = 0; r < rounds; r++)
    for (int b = 0; b < nbuf; b++) {
      long long bytes = 0;
      double t0 = now(), t = t0;
      do {
        if (off + CHUNK > fsize) off = 0;
        ssize_t n = pread(fd, buf[b], CHUNK, off);
        if (n <= 0) { perror("pread"); return 1; }
        bytes += n;
        off += n;
      } while ((t = now()) - t0 < run_s);
      rate[b * rounds + r] = bytes / (t - t0) / 1e9;
    }
  double *med = calloc(nbuf, sizeof *med), *within = calloc(nbuf, sizeof *within), tmp[16];
  for (int b = 0; b < nbuf; b++) {
    memcpy(tmp, rate + b * rounds, rounds * sizeof *tmp);
    qsort(tmp, rounds, sizeof *tmp, cmp);
    med[b] = tmp[rounds / 2];
    within[b] = tmp[rounds - 1] / tmp[0];
    printf("buffer %2d (huge pages %ld of %d KiB):", b, huge_kib((unsigned long)buf[b]), CHUNK >> 10);
    for (int r = 0; r < rounds; r++) printf(" %.2f", rate[b * rounds + r]);
    printf(" GB/s, median %.2f\n", med[b]);
  }
  double lo = med[0], hi = med[0];
  for (int b = 1; b < nbuf; b++) { lo = med[b] < lo ? med[b] : lo; hi = med[b] > hi ? med[b] : hi; }
  qsort(within, nbuf, sizeof *within, cmp);
  printf("cpu %d: buffers' medians %.2f-%.2f GB/s (fastest / slowest %.3f); one buffer's rounds apart by %.3f (median of max / min)\n",
         cpu, lo, hi, hi / lo, within[nbuf / 2]);
  return 0;
}
