/* What cachestat(2) costs by range size: the engine's page-cache check of a read task
 * (`engine/transfer.rs` RESIDENCY_WINDOWS) asked it about the whole task until session 37.
 * Build: cc -O2 bench/cachestat-cost.c -o /tmp/cscost
 * Run:   /tmp/cscost FILE   (a cached file of at least 256 MiB) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <time.h>
struct r { uint64_t off, len; };
struct c { uint64_t cache, dirty, wb, evicted, recently_evicted; };
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(int argc,char**argv){int fd=open(argv[1],O_RDONLY);struct c cs;
uint64_t sizes[]={4096,16384,65536,262144,1<<20,4<<20,8<<20};
for(int s=0;s<7;s++){double t=now();int n=4000;
for(int i=0;i<n;i++){struct r rg={(uint64_t)(i%32)*(8<<20),sizes[s]};if(syscall(451,fd,&rg,&cs,0)){perror("cachestat");return 1;}}
printf("%8lu bytes: %.2f us\n",sizes[s],(now()-t)/n*1e6);}}
