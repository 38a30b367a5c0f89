/* A workload that spends its time in the vDSO: clock_gettime in a loop. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) static long poll_clock(long n)
{
	struct timespec ts;
	long sum = 0;
	for (long i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sum += ts.tv_nsec & 1;
	}
	return sum;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	printf("%ld\n", poll_clock(n));
	return 0;
}
