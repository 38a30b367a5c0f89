/* A workload with real inlining, for perf's DWARF inline frames: built with
 * gcc -O2 -g, its hot loop runs in functions gcc inlines into their callers (and in a
 * .constprop clone whose DWARF name differs from its symbol name). */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned sink;

static inline __attribute__((always_inline)) unsigned mix(unsigned x)
{
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

static inline __attribute__((always_inline)) unsigned churn(unsigned x, int rounds)
{
	for (int i = 0; i < rounds; i++)
		x = mix(x) + (unsigned)i;
	return x;
}

__attribute__((noinline)) unsigned hot_path(unsigned seed, int n)
{
	unsigned acc = seed;
	for (int i = 0; i < n; i++)
		acc += churn(acc + (unsigned)i, 64);
	return acc;
}

/* Called with a constant `rounds`: gcc makes a .constprop clone of it. */
static __attribute__((noinline)) unsigned scaled(unsigned seed, int n, int rounds)
{
	unsigned acc = seed;
	for (int i = 0; i < n; i++)
		acc ^= churn(acc * 3u + (unsigned)i, rounds);
	return acc;
}

__attribute__((noinline)) unsigned driver(int n)
{
	unsigned a = hot_path(1u, n);
	a += scaled(a, n, 48);
	return a;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	unsigned total = 0;
	for (int r = 0; r < 20; r++)
		total += driver(n);
	sink = total;
	printf("%u\n", total);
	return 0;
}
