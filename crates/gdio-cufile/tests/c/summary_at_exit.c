/* A program that reads through cuFile from four threads and exits without closing the driver,
 * as torch.cuda.gds and many others do: with CUFILE_LOGGING_LEVEL=INFO the library still logs
 * its summary of the calls at exit. usage: summary_at_exit FILE [fork] (FILE of at least
 * 1 MiB; with `fork`, a child forked after the reads exits through exit() too, and must log
 * nothing). Every read is checked against pread of the same range; prints OK when all held. */
#define _GNU_SOURCE
#include "cufile.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 4
#define READS 8
#define LEN 65536

static int fd;
static CUfileHandle_t fh;
static off_t size;
static int failures;

static void *reader(void *arg) {
    unsigned long long r = 0x9e3779b97f4a7c15ULL * (unsigned long long)(size_t)arg + 1;
    unsigned char *got = malloc(LEN), *want = malloc(LEN);
    for (int i = 0; i < READS; i++) {
        r ^= r << 13; r ^= r >> 7; r ^= r << 17;
        off_t at = (off_t)(r % (unsigned long long)(size - LEN));
        ssize_t n = cuFileRead(fh, got, LEN, at, 0);
        if (n != LEN || pread(fd, want, LEN, at) != LEN || memcmp(got, want, LEN) != 0) {
            fprintf(stderr, "read %d at %lld: %zd\n", i, (long long)at, n);
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
        }
    }
    free(got);
    free(want);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror("open"); return 1; }
    size = lseek(fd, 0, SEEK_END);
    if (size < 1 << 20) { fprintf(stderr, "file too small\n"); return 1; }
    CUfileDescr_t d;
    memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    if (cuFileHandleRegister(&fh, &d).err != CU_FILE_SUCCESS) { fprintf(stderr, "register\n"); return 1; }
    pthread_t t[THREADS];
    for (size_t i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, reader, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    if (failures) return 1;
    if (argc > 2 && strcmp(argv[2], "fork") == 0) {
        pid_t child = fork();
        if (child == 0) exit(0);
        int st = 0;
        if (child < 0 || waitpid(child, &st, 0) != child || !WIFEXITED(st)) return 1;
    }
    printf("OK\n");
    return 0; /* no cuFileHandleDeregister, no cuFileDriverClose */
}
