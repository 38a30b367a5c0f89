/*
 * Test workload for `kflame record` (written for this project, Apache-2.0).
 * Built by the tests with: cc -O1 -fno-omit-frame-pointer -pthread -o kfwork workload.c
 *
 *   kfwork cpu SECONDS     spin in kf_deep_6, called through kf_deep_1..kf_deep_5
 *   kfwork mem PAGES       mmap PAGES anonymous pages and touch each one (kf_touch_pages)
 *   kfwork nap COUNT MS    sleep COUNT times MS milliseconds (kf_nap)
 *   kfwork naptimed COUNT MS SPIN_MS
 *                          the same in kf_nap_timed, spinning SPIN_MS on the CPU after each
 *                          nap, and printing for each nap its start and end (CLOCK_MONOTONIC
 *                          ns), the ns it was neither running nor runnable, its voluntary
 *                          context switches, and the ns it was not running (the kernel's
 *                          own accounting)
 *   kfwork write COUNT     COUNT write(2) calls of 64 bytes to /dev/null (kf_writer)
 *   kfwork pipe            block reading stdin until it closes (kf_wait_input)
 *   kfwork spin SECONDS    count loop iterations for SECONDS and print the count (benchmarks)
 *   kfwork churn SECONDS   map, touch and unmap 64 pages over and over for SECONDS (kf_churn)
 *   kfwork threads SECONDS spin in kf_deep_6 (main thread) and in kf_thread_spin (a second
 *                          thread, whose tid is printed first) for SECONDS
 *   kfwork wakers COUNT MS a thread blocked reading a pipe (kf_pipe_reader) that the main
 *                          thread writes one byte to every MS ms, COUNT times (kf_pipe_writer)
 *   kfwork mappers N SECONDS
 *                          N threads mapping, touching and unmapping 64 KiB (kf_map_unmap)
 *   kfwork crowd N SECONDS N threads spinning on CPU 0 (kf_crowd_spin): run-queue waits
 *   kfwork dsync SECONDS FILE
 *                          64 KiB writes with O_DSYNC to FILE, over and over (kf_dsync_writer);
 *                          then prints its time blocked (ns) and the writes made
 *
 * Every function is noinline and does work after its call, so no call becomes a jump and the
 * frame-pointer chain names each level. kf_nap, kf_nap_timed, kf_writer and the pipe's reader
 * and writer make their system calls with an inlined `syscall` instruction: through libc's
 * wrappers (built without frame pointers) a frame-pointer unwind would skip the function that
 * called the wrapper.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

/* x86_64 system call made in the calling function itself. */
static inline __attribute__((always_inline)) long kf_syscall3(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

/* The same with six arguments (mmap). */
static inline __attribute__((always_inline)) long kf_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

NOINLINE void kf_deep_6(double end)
{
	while (now() < end)
		for (int i = 0; i < 100000; i++)
			sink += i * 7;
}
NOINLINE void kf_deep_5(double end) { kf_deep_6(end); sink++; }
NOINLINE void kf_deep_4(double end) { kf_deep_5(end); sink++; }
NOINLINE void kf_deep_3(double end) { kf_deep_4(end); sink++; }
NOINLINE void kf_deep_2(double end) { kf_deep_3(end); sink++; }
NOINLINE void kf_deep_1(double end) { kf_deep_2(end); sink++; }

NOINLINE void kf_touch_pages(long pages)
{
	long size = pages * 4096;
	char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	madvise(p, size, MADV_NOHUGEPAGE);
	for (long i = 0; i < size; i += 4096)
		p[i] = 1;
	munmap(p, size);
	sink++;
}

NOINLINE void kf_nap(int count, int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	for (int i = 0; i < count; i++)
		kf_syscall3(SYS_nanosleep, (long)&ts, 0, 0);
	sink++;
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The calling thread's time on the CPU (its CPU-time clock, which reads the running slice
 * too), its time waiting on a run queue (ns, /proc/thread-self/schedstat's run_delay) and its
 * voluntary context switches so far. */
struct sched_acct {
	long long on_cpu, runnable, blocks;
};

static struct sched_acct sched_acct(int fd)
{
	struct sched_acct a = { 0, 0, 0 };
	char buf[128];
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	long long exec;
	if (n > 0) {
		buf[n] = 0;
		sscanf(buf, "%lld %lld", &exec, &a.runnable);
	}
	struct timespec ts;
	if (!clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		a.on_cpu = ts.tv_sec * 1000000000LL + ts.tv_nsec;
	struct rusage ru;
	if (!getrusage(RUSAGE_THREAD, &ru))
		a.blocks = ru.ru_nvcsw;
	return a;
}

NOINLINE void kf_nap_timed(int count, int ms, int spin_ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	int fd = open("/proc/thread-self/schedstat", O_RDONLY);
	for (int i = 0; i < count; i++) {
		struct sched_acct before = sched_acct(fd);
		long long start = now_ns();
		kf_syscall3(SYS_nanosleep, (long)&ts, 0, 0);
		long long end = now_ns();
		struct sched_acct after = sched_acct(fd);
		/* What the kernel counts as neither running nor runnable: the nap's blocked time. A
		 * nap preempted after it set its sleeping state and runnable until its timer fired
		 * never blocks (no voluntary switch); a loaded machine does that now and then. */
		long long off = (end - start) - (after.on_cpu - before.on_cpu);
		long long waited = off - (after.runnable - before.runnable);
		printf("%lld %lld %lld %lld %lld\n", start, end, waited > 0 ? waited : 0, after.blocks - before.blocks,
		       off > 0 ? off : 0);
		while (now_ns() < end + spin_ms * 1000000LL)
			sink++;
	}
	if (fd >= 0)
		close(fd);
	sink++;
}

NOINLINE void kf_writer(int count)
{
	char buf[64];
	int fd = open("/dev/null", O_WRONLY);
	memset(buf, 'x', sizeof buf);
	for (int i = 0; i < count; i++)
		if (kf_syscall3(SYS_write, fd, (long)buf, sizeof buf) < 0)
			exit(1);
	close(fd);
	sink++;
}

NOINLINE void kf_wait_input(void)
{
	char c;
	while (read(0, &c, 1) > 0)
		;
	sink++;
}

NOINLINE unsigned long kf_spin(double seconds)
{
	unsigned long iterations = 0;
	double end = now() + seconds;
	while (now() < end) {
		for (int i = 0; i < 10000; i++)
			sink += i;
		iterations++;
	}
	return iterations;
}

NOINLINE void kf_churn(double seconds)
{
	double end = now() + seconds;
	while (now() < end)
		kf_touch_pages(64);
	sink++;
}

NOINLINE void kf_thread_spin(double end)
{
	while (now() < end)
		for (int i = 0; i < 100000; i++)
			sink += i * 3;
}

static void *kf_thread_main(void *arg)
{
	printf("%ld\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	kf_thread_spin(*(double *)arg);
	sink++;
	return NULL;
}

NOINLINE void kf_two_threads(double seconds)
{
	double end = now() + seconds;
	pthread_t t;
	if (pthread_create(&t, NULL, kf_thread_main, &end)) {
		perror("pthread_create");
		exit(1);
	}
	kf_deep_1(end);
	pthread_join(t, NULL);
	sink++;
}

static int kf_pipe_fds[2];

NOINLINE void kf_pipe_reader(void)
{
	char c;
	while (kf_syscall3(SYS_read, kf_pipe_fds[0], (long)&c, 1) > 0)
		sink++;
}

static void *kf_reader_main(void *arg)
{
	(void)arg;
	kf_pipe_reader();
	return NULL;
}

/* A thread blocked on a pipe that this one writes every `ms` ms, `count` times. */
NOINLINE void kf_pipe_writer(int count, int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	pthread_t t;
	if (pipe(kf_pipe_fds) || pthread_create(&t, NULL, kf_reader_main, NULL)) {
		perror("pipe reader");
		exit(1);
	}
	for (int i = 0; i < count; i++) {
		kf_syscall3(SYS_nanosleep, (long)&ts, 0, 0);
		if (kf_syscall3(SYS_write, kf_pipe_fds[1], (long)"x", 1) != 1)
			exit(1);
	}
	close(kf_pipe_fds[1]);
	pthread_join(t, NULL);
	sink++;
}

static double kf_until;

/* Maps 64 KiB, touches a page, unmaps it, until kf_until: the address space's lock
 * (mmap_lock, an rwsem) taken for writing by every call. */
NOINLINE void kf_map_unmap(void)
{
	while (now() < kf_until) {
		char *p = (char *)kf_syscall6(SYS_mmap, 0, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if ((long)p < 0 && (long)p > -4096)
			exit(1);
		p[0] = 1;
		kf_syscall3(SYS_munmap, (long)p, 65536, 0);
	}
	sink++;
}

static void *kf_mapper_main(void *arg)
{
	(void)arg;
	kf_map_unmap();
	return NULL;
}

/* `n` threads mapping and unmapping memory for `seconds`. */
NOINLINE void kf_mappers(int n, double seconds)
{
	pthread_t t[64];
	kf_until = now() + seconds;
	n = n > 64 ? 64 : n;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, kf_mapper_main, NULL))
			exit(1);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	sink++;
}

/* Spins until kf_until on CPU 0, with the other spinners of kf_crowd. */
NOINLINE void kf_crowd_spin(void)
{
	while (now() < kf_until)
		for (int i = 0; i < 10000; i++)
			sink += i;
}

static void *kf_crowd_main(void *arg)
{
	(void)arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof set, &set))
		exit(1);
	kf_crowd_spin();
	return NULL;
}

/* `n` threads spinning on CPU 0 for `seconds`: each waits on its run queue. */
NOINLINE void kf_crowd(int n, double seconds)
{
	pthread_t t[64];
	kf_until = now() + seconds;
	n = n > 64 ? 64 : n;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, kf_crowd_main, NULL))
			exit(1);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	sink++;
}

/* Writes 64 KiB with O_DSYNC to `path` (created, truncated) for `seconds`: each write
 * waits for the disk (and the journal). */
NOINLINE void kf_dsync_writer(double seconds, const char *path)
{
	static char buf[65536];
	double end = now() + seconds;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DSYNC, 0600);
	if (fd < 0) {
		perror(path);
		exit(1);
	}
	memset(buf, 'k', sizeof buf);
	int acct = open("/proc/thread-self/schedstat", O_RDONLY);
	struct sched_acct before = sched_acct(acct);
	long long start = now_ns(), writes = 0;
	while (now() < end) {
		if (kf_syscall3(SYS_write, fd, (long)buf, sizeof buf) != sizeof buf)
			exit(1);
		if (kf_syscall3(SYS_lseek, fd, 0, SEEK_SET) != 0)
			exit(1);
		writes++;
	}
	/* The time blocked, as the kernel accounted it (neither running nor runnable), and the
	 * writes made: on a loaded machine the writer waits for a CPU more than for the disk. */
	struct sched_acct after = sched_acct(acct);
	long long blocked = (now_ns() - start) - (after.on_cpu - before.on_cpu) - (after.runnable - before.runnable);
	printf("%lld %lld\n", blocked > 0 ? blocked : 0, writes);
	if (acct >= 0)
		close(acct);
	close(fd);
	sink++;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "cpu"))
		kf_deep_1(now() + atof(argv[2]));
	else if (argc >= 3 && !strcmp(argv[1], "mem"))
		kf_touch_pages(atol(argv[2]));
	else if (argc >= 4 && !strcmp(argv[1], "nap"))
		kf_nap(atoi(argv[2]), atoi(argv[3]));
	else if (argc >= 5 && !strcmp(argv[1], "naptimed"))
		kf_nap_timed(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
	else if (argc >= 3 && !strcmp(argv[1], "write"))
		kf_writer(atoi(argv[2]));
	else if (argc >= 3 && !strcmp(argv[1], "spin"))
		printf("%lu\n", kf_spin(atof(argv[2])));
	else if (argc >= 3 && !strcmp(argv[1], "churn"))
		kf_churn(atof(argv[2]));
	else if (argc >= 3 && !strcmp(argv[1], "threads"))
		kf_two_threads(atof(argv[2]));
	else if (argc >= 2 && !strcmp(argv[1], "pipe"))
		kf_wait_input();
	else if (argc >= 4 && !strcmp(argv[1], "wakers"))
		kf_pipe_writer(atoi(argv[2]), atoi(argv[3]));
	else if (argc >= 4 && !strcmp(argv[1], "mappers"))
		kf_mappers(atoi(argv[2]), atof(argv[3]));
	else if (argc >= 4 && !strcmp(argv[1], "crowd"))
		kf_crowd(atoi(argv[2]), atof(argv[3]));
	else if (argc >= 4 && !strcmp(argv[1], "dsync"))
		kf_dsync_writer(atof(argv[2]), argv[3]);
	else {
		fprintf(stderr, "usage: kfwork cpu S | mem PAGES | nap N MS | naptimed N MS SPIN_MS | write N | "
				"pipe | spin S | churn S | threads S | wakers N MS | mappers N S | crowd N S | dsync S FILE\n");
		return 2;
	}
	return 0;
}
