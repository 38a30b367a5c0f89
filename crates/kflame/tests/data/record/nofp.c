/* nofp SECONDS: a hot function two calls below main (main -> kfbar_outer -> kfbar_inner),
 * for the user-stack tests: built with -O2 -fomit-frame-pointer against the C library, so
 * that the kernel's walk of frame pointers cannot find its callers and DWARF unwinding must
 * go through the program's and the C library's unwind tables. Written for kflame
 * (Apache-2.0). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long kfbar_inner(unsigned long n) {
    volatile unsigned long buf[16];
    unsigned long x = 0;
    for (unsigned long i = 0; i < n; i++) {
        buf[i & 15] = i * i;
        x += buf[(i * 7) & 15];
    }
    return x;
}

__attribute__((noinline)) unsigned long kfbar_outer(unsigned long n) {
    unsigned long r = kfbar_inner(n);
    __asm__ volatile("" : "+r"(r) : : "memory");
    return r ^ n;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    double end = now() + seconds;
    unsigned long sum = 0;
    while (now() < end)
        sum += kfbar_outer(200000);
    printf("%lu\n", sum & 1);
    return 0;
}
