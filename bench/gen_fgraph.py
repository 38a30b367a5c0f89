#!/usr/bin/env python3
"""Writes a deterministic raw function_graph trace (tracefs `trace` layout, funcgraph-proc
and funcgraph-tail on) of about N lines to stdout, for benchmarking the collapser.

Two CPUs interleave; each runs calls drawn from 64 fixed call-tree shapes (depth up to 12,
40 function names), as a real trace repeats the same code paths, with random durations
that are consistent (a parent lasts longer than its children)."""
import random
import sys

NAMES = [f"fn_{i:02d}_{w}" for i, w in enumerate(
    "read write open close mmap fault alloc free lock unlock wake sleep sched tick irq "
    "softirq copy zero map unmap lookup walk insert erase send recv poll wait signal exit "
    "fork exec clone futex timer nanosleep select epoll ioctl fsync".split())]


def shape(rng, depth):
    """A call-tree shape: (name, [children]) with leaves having no children list."""
    name = rng.choice(NAMES)
    if depth == 0 or rng.random() < 0.35:
        return (name, None)
    return (name, [shape(rng, depth - 1) for _ in range(rng.randint(1, 4))])


def tree(rng, node, out, indent):
    """Appends the lines of one call (and its children); returns its duration in ns."""
    name, children = node
    pad = "  " * (indent + 1)
    if children is None:
        d = rng.randint(100, 5000)
        out.append((d, f"{pad}{name}();"))
        return d
    out.append((None, f"{pad}{name}() {{"))
    total = rng.randint(50, 2000)
    for child in children:
        total += tree(rng, child, out, indent + 1)
    out.append((total, f"{pad}}} /* {name} */"))
    return total


def fmt(cpu, task, dur):
    if dur is None:
        col = " " * 13
    else:
        mark = "!" if dur >= 100_000 else "+" if dur >= 10_000 else " "
        col = f"{mark} {dur // 1000}.{dur % 1000:03d} us".ljust(13)
    return f" {cpu})  {task:>10}  | {col} |"


def main():
    target = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    rng = random.Random(42)
    shapes = [shape(rng, 12) for _ in range(64)]
    w = sys.stdout.write
    w("# tracer: function_graph\n#\n")
    lines = 0
    while lines < target:
        calls = []
        for cpu, task in ((0, "burn-4242"), (1, "kworker-77")):
            out = []
            tree(rng, rng.choice(shapes), out, 0)
            calls.append([fmt(cpu, task, d) + text for d, text in out])
        a, b = calls
        i = j = 0
        while i < len(a) or j < len(b):
            if j >= len(b) or (i < len(a) and rng.random() < 0.5):
                w(a[i] + "\n")
                i += 1
            else:
                w(b[j] + "\n")
                j += 1
        lines += len(a) + len(b)


if __name__ == "__main__":
    main()
