/* Loads libcufile into a process that never calls it: no thread may start and no file may be
 * opened (compares /proc/self/task and /proc/self/fd before and after dlopen). */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int count(const char *dir, int is_fd) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return is_fd ? n - 1 : n; /* the directory stream's own descriptor */
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    int tasks = count("/proc/self/task", 0), fds = count("/proc/self/fd", 1);
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
    if (!dlsym(h, "cuFileDriverOpen")) { fprintf(stderr, "no cuFileDriverOpen\n"); return 1; }
    usleep(100000);
    int tasks2 = count("/proc/self/task", 0), fds2 = count("/proc/self/fd", 1);
    if (tasks2 != tasks || fds2 != fds) {
        fprintf(stderr, "loading started threads or opened files: tasks %d -> %d, fds %d -> %d\n", tasks, tasks2, fds, fds2);
        return 1;
    }
    if (access("cufile.log", F_OK) == 0) { fprintf(stderr, "cufile.log written\n"); return 1; }
    printf("OK tasks %d fds %d\n", tasks2, fds2);
    return 0;
}
