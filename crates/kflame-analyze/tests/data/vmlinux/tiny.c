// SPDX-License-Identifier: Apache-2.0
// A stand-in for a kernel image in tests: functions with a call and an inlined helper.

static inline int helper(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) int leaf(int x)
{
	volatile int y = helper(x);

	return y ^ 5;
}

__attribute__((noinline)) int caller(int x)
{
	int r = leaf(x);

	return r + 2;
}

int main(int argc, char **argv)
{
	(void)argv;
	return caller(argc);
}
