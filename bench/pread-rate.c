/* One thread's pread rate out of a file's page cache, no GPU: the CPU cost of the kernel's
 * copy, which differs by how the page cache keeps the file (tmpfs's 4 KiB pages, tmpfs huge
 * pages, ext4's large folios; BENCHMARKS.md session 35, src file/tmpfs_pages.rs).
 *   cc -O2 bench/pread-rate.c -o /tmp/pread-rate && /tmp/pread-rate FILE CHUNK_KIB
 * Reads FILE (cached first by the caller, e.g. cat FILE >/dev/null) start to end in CHUNK_KIB
 * chunks into one buffer on transparent huge pages, three passes, GB/s per pass. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s FILE CHUNK_KIB\n", argv[0]); return 2; }
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror(argv[1]); return 1; }
    size_t chunk = (size_t)atol(argv[2]) << 10;
    off_t size = lseek(fd, 0, SEEK_END);
    if (chunk == 0 || size <= 0) { fprintf(stderr, "empty file or chunk\n"); return 2; }
    size_t len = chunk + (2u << 20);
    char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) { perror("mmap"); return 1; }
    madvise(buf, len, MADV_HUGEPAGE);
    for (size_t i = 0; i < len; i += 4096) buf[i] = 1;
    for (int pass = 0; pass < 3; pass++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (off_t off = 0; off < size; off += (off_t)chunk)
            if (pread(fd, buf, chunk, off) < 0) { perror("pread"); return 1; }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        printf("%s chunk %zu KiB pass %d: %.2f GB/s\n", argv[1], chunk >> 10, pass, (double)size / s / 1e9);
    }
    return 0;
}
