#!/usr/bin/env python3
"""Compares two folded files (`stack weight` lines; `#` lines ignored).

  compare_folded.py reference KFLAME REFERENCE
      kflame against inferno: the three things kflame keeps and the reference drops
      (frames starting with `(`, i.e. C++ anonymous namespaces taken for process names;
      samples without frames; samples of exited tasks, comm `:-1`; see collapse.sh) are
      removed from kflame's side first; then total weight, the 20 heaviest stacks and the
      weight on identical stacks.
  compare_folded.py same A B
      two kflame outputs that should be equal: stacks, total weight, weight on identical
      stacks, number of stacks that differ.
"""
import sys


def load(path):
    d = {}
    for line in open(path, encoding="utf-8", errors="replace"):
        if line.startswith("#"):
            continue
        s, _, w = line.rstrip("\n").rpartition(" ")
        d[s] = d.get(s, 0) + int(w)
    return d


def reference_rules(d):
    out = {}
    for s, w in d.items():
        f = s.split(";")
        kept = [x for x in f[1:] if not x.startswith("(")]
        if kept and f[0] != ":-1":
            k = ";".join([f[0]] + kept)
            out[k] = out.get(k, 0) + w
    return out


def shared(a, b):
    return sum(min(a.get(s, 0), w) for s, w in b.items())


def main(mode, path_a, path_b):
    a, b = load(path_a), load(path_b)
    if mode == "reference":
        before = sum(a.values())
        a = reference_rules(a)
        print(f"  kflame's weight the reference's drop rules remove: {before - sum(a.values())}")
        ta, tb = sum(a.values()), sum(b.values())
        top = lambda d: {s for s, _ in sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))[:20]}
        print(f"  total weight: kflame {ta}, reference {tb} ({'same' if ta == tb else 'DIFFERENT'})")
        print(f"  top 20 stacks in common: {len(top(a) & top(b))}/20; "
              f"weight on identical stacks: {100 * shared(a, b) / max(tb, 1):.2f}%")
    else:
        differ = sum(1 for s in set(a) | set(b) if a.get(s) != b.get(s))
        same_total = sum(a.values()) == sum(b.values())
        print(f"  {len(a)} and {len(b)} stacks, total weight {'same' if same_total else 'DIFFERENT'}, "
              f"{100 * shared(a, b) / max(sum(b.values()), 1):.3f}% of it on identical stacks "
              f"({differ} stacks differ)")


if __name__ == "__main__":
    main(*sys.argv[1:4])
