// A C++ workload for DWARF inline frames: gcc gives the function in the anonymous
// namespace no DW_AT_linkage_name, so addr2line names it after the symbol table where it
// is the innermost function and by its plain DWARF name where it calls inlined code.
#include <cstdio>
#include <cstdlib>

namespace app {
template <typename T> struct Acc {
	T v{};
	inline __attribute__((always_inline)) void add(T x)
	{
		for (int i = 0; i < 50; i++)
			v = v * 31 + x + i;
	}
};

namespace {
__attribute__((noinline)) unsigned work(const unsigned *d, int n)
{
	Acc<unsigned> a;
	for (int i = 0; i < n; i++)
		a.add(d[i]);
	return a.v;
}
} // namespace

struct Runner {
	__attribute__((noinline)) unsigned run(int n);
};

unsigned Runner::run(int n)
{
	unsigned *d = static_cast<unsigned *>(calloc(n, sizeof *d));
	unsigned t = 0;
	for (int r = 0; r < 200; r++) {
		d[r % n] = r;
		t += work(d, n);
	}
	free(d);
	return t;
}
} // namespace app

int main(int argc, char **argv)
{
	app::Runner r;
	printf("%u\n", r.run(argc > 1 ? atoi(argv[1]) : 100000));
}
