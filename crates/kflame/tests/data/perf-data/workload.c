/* Test workload for the perf.data fixtures: a recognizable call chain that burns CPU in
 * user space (spin <- level3 <- level2 <- level1 <- main) and a system call path that
 * burns it in the kernel (read_zero <- fill <- main, reading /dev/zero). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile double sink;

__attribute__((noinline)) double spin(double x, int n) {
  for (int i = 0; i < n; i++) x = x * 1.0000001 + 0.5;
  return x;
}
__attribute__((noinline)) double level3(double x) { return spin(x, 3000); }
__attribute__((noinline)) double level2(double x) { return level3(x) + spin(x, 1000); }
__attribute__((noinline)) double level1(double x) { return level2(x) * 0.5; }
__attribute__((noinline)) void read_zero(int fd, char *buf) {
  if (read(fd, buf, 1 << 20) < 0) abort();
}
__attribute__((noinline)) void fill(int fd, char *buf) {
  for (int i = 0; i < 4; i++) read_zero(fd, buf);
}

int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 100000;
  int fd = open("/dev/zero", O_RDONLY);
  char *buf = malloc(1 << 20);
  double acc = 1;
  for (long i = 0; i < iters; i++) {
    acc += level1(acc);
    if ((i & 63) == 0) fill(fd, buf);
  }
  sink = acc;
  return 0;
}
