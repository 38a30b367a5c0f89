/* Sleeps N times for 1 ms in a function of its own (a uprobe target), then exits. */
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) int nap(long ns)
{
	struct timespec ts = { 0, ns };
	return nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;
	int bad = 0;
	for (int i = 0; i < n; i++)
		bad += nap(1000000) != 0;
	return bad != 0;
}
