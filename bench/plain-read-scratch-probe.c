// Does a plain parallel read time the page faults of its own buffers? THREADS threads `pread` a
// file in 8 MiB chunks, three passes, each thread into (MODE 0) a buffer it allocates in each
// pass (what `gdio bench`'s host-read limit did before session 45), (1) a buffer allocated and
// written once before the passes, (2) the same with MADV_HUGEPAGE. Prints GB/s per pass.
//   cc -O2 -Wall -pthread bench/plain-read-scratch-probe.c -o /tmp/pr && /tmp/pr FILE THREADS MODE
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (8L << 20)
#define MAX_THREADS 256

static int fd, mode;
static long len, next_chunk;
static char *kept[MAX_THREADS];

static void *reader(void *arg) {
  long t = (long)arg;
  char *buf = mode ? kept[t] : aligned_alloc(4096, CHUNK);
  if (!buf) return (void *)1;
  for (;;) {
    long off = __atomic_fetch_add(&next_chunk, 1, __ATOMIC_RELAXED) * CHUNK;
    if (off >= len) break;
    if (pread(fd, buf, CHUNK, off) < 0) return (void *)1;
  }
  if (!mode) free(buf);
  return NULL;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s FILE THREADS MODE(0 fresh, 1 kept, 2 kept + MADV_HUGEPAGE)\n", argv[0]);
    return 2;
  }
  fd = open(argv[1], O_RDONLY);
  int threads = atoi(argv[2]);
  mode = atoi(argv[3]);
  if (fd < 0 || threads < 1 || threads > MAX_THREADS) {
    perror(argv[1]);
    return 2;
  }
  len = lseek(fd, 0, SEEK_END);
  for (int i = 0; mode && i < threads; i++) {
    kept[i] = aligned_alloc(2L << 20, CHUNK);
    if (!kept[i]) return 1;
    if (mode == 2) madvise(kept[i], CHUNK, MADV_HUGEPAGE);
    memset(kept[i], 0xA5, CHUNK);
  }
  for (int pass = 0; pass < 3; pass++) {
    pthread_t th[MAX_THREADS];
    next_chunk = 0;
    double t0 = now();
    for (long i = 0; i < threads; i++) pthread_create(&th[i], NULL, reader, (void *)i);
    int failed = 0;
    for (int i = 0; i < threads; i++) {
      void *r;
      pthread_join(th[i], &r);
      failed |= r != NULL;
    }
    if (failed) {
      fprintf(stderr, "a read failed\n");
      return 1;
    }
    printf("mode %d pass %d: %.2f GB/s\n", mode, pass, len / (now() - t0) / 1e9);
  }
  return 0;
}
