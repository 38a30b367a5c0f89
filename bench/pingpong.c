/* Two processes bouncing one byte over a pair of pipes for DUR seconds: every round trip
 * is two blocks and two wakeups, the worst case for an off-CPU recorder. Prints the round
 * trips done. Usage: pingpong DUR */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double dur = argc > 1 ? atof(argv[1]) : 5;
	int ab[2], ba[2];
	char c = 0;
	if (pipe(ab) || pipe(ba))
		return 1;
	pid_t child = fork();
	if (child == 0) {
		while (read(ab[0], &c, 1) == 1 && c)
			if (write(ba[1], &c, 1) != 1)
				break;
		_exit(0);
	}
	long trips = 0;
	double end = now() + dur;
	c = 1;
	while (now() < end) {
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			break;
		trips++;
	}
	c = 0;
	if (write(ab[1], &c, 1) != 1)
		return 1;
	waitpid(child, NULL, 0);
	printf("%ld\n", trips);
	return 0;
}
