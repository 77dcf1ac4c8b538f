/* How the size of one pread/pwrite call moves one thread's rate through the page cache: the
 * host-side cost that `gather_adjacent_runs` saves by merging adjacent gathered pieces.
 *   cc -O2 bench/call-size-probe.c -o /tmp/call-size-probe
 *   /tmp/call-size-probe FILE CALL_BYTES [w]
 * Reads the whole FILE (which must exist) in calls of CALL_BYTES (a power of two, at most
 * 1 MiB) into consecutive places of one 1 MiB buffer, as the engine reads a gathered group's
 * pieces into its bounce buffer, or with `w` overwrites the file from it; best of 5 passes. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s FILE CALL_BYTES [w]\n", argv[0]);
    return 2;
  }
  int write = argc > 3;
  int fd = open(argv[1], write ? O_RDWR : O_RDONLY);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  long size = lseek(fd, 0, SEEK_END);
  long call = atol(argv[2]);
  if (call <= 0 || call > (1 << 20) || (call & (call - 1)) != 0) {
    fprintf(stderr, "CALL_BYTES must be a power of two, at most 1048576\n");
    return 2;
  }
  char *buf = aligned_alloc(4096, 1 << 20);
  for (int i = 0; i < 1 << 20; i++) buf[i] = (char)(i * 7 + 3);
  double best = 1e9;
  for (int pass = 0; pass < 5; pass++) {
    double t = now();
    for (long off = 0; off + call <= size; off += call) {
      char *at = buf + (off & ((1 << 20) - 1));
      ssize_t n = write ? pwrite(fd, at, call, off) : pread(fd, at, call, off);
      if (n != call) {
        perror(write ? "pwrite" : "pread");
        return 1;
      }
    }
    double s = now() - t;
    if (s < best) best = s;
  }
  printf("%s in calls of %ld bytes: %.2f GB/s\n", write ? "write" : "read", call, size / best / 1e9);
  return 0;
}
