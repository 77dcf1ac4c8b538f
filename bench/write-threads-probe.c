/* How many threads writing one file at once moves the page cache's write rate: is the engine's
 * twelve workers' `pwrite` of 4 MiB bounce chunks into one file slower than fewer writers or
 * larger calls (buffered writes to one file take its inode lock one at a time)?
 *   cc -O2 -pthread bench/write-threads-probe.c -o /tmp/write-threads-probe
 *   /tmp/write-threads-probe FILE GIB THREADS CHUNK_BYTES
 * Empties FILE, then THREADS threads write GIB GiB into it in CHUNK_BYTES calls (each thread
 * takes the next chunk's offset from a shared counter, from its own buffer of bytes that are
 * not zero); prints GB/s of the writes alone, then the seconds of the fsync after them. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fd;
static long total, chunk;
static atomic_long next;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *writer(void *arg) {
  char *buf = aligned_alloc(4096, chunk);
  if (!buf) return (void *)1;
  for (long i = 0; i < chunk; i++) buf[i] = (char)(i * 13 + (long)arg + 1);
  for (;;) {
    long off = atomic_fetch_add(&next, chunk);
    if (off >= total) break;
    long n = total - off < chunk ? total - off : chunk;
    for (long done = 0; done < n;) {
      ssize_t w = pwrite(fd, buf + done, n - done, off + done);
      if (w <= 0) { perror("pwrite"); return (void *)1; }
      done += w;
    }
  }
  free(buf);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s FILE GIB THREADS CHUNK_BYTES\n", argv[0]);
    return 2;
  }
  total = atol(argv[2]) << 30;
  int threads = atoi(argv[3]);
  chunk = atol(argv[4]);
  if (total <= 0 || threads < 1 || threads > 256 || chunk < 4096) return 2;
  fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) { perror(argv[1]); return 1; }
  pthread_t t[256];
  double t0 = now();
  for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, writer, (void *)i);
  long bad = 0;
  for (int i = 0; i < threads; i++) { void *r; pthread_join(t[i], &r); bad |= (long)r; }
  double t1 = now();
  fsync(fd);
  double t2 = now();
  printf("%d threads x %ld KiB calls: %.2f GB/s (fsync %.2f s)%s\n", threads, chunk >> 10,
         total / (t1 - t0) / 1e9, t2 - t1, bad ? " FAILED" : "");
  close(fd);
  return bad != 0;
}
