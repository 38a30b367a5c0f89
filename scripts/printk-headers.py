#!/usr/bin/env python3
"""The report extractor against the kernel's own printing code, as syzkaller would judge it.

    python3 scripts/printk-headers.py KERNEL_TREE SYZKALLER_TREE [--kflame BIN] [--list]

For every string literal of KERNEL_TREE (a kernel source tree: .c, .h, .rs; tools/, scripts/,
samples/ and Documentation/ left out) that holds one of syzkaller's report headers
(`BUG:`, `WARNING:`, `INFO:`, `general protection fault`, `Alignment trap:`...), the
message the kernel prints is made: the literal joined with the literals after it, printf
conversions filled with plausible values (`%s` a task name, `%pS` a symbol+offset, ...),
the `pr_fmt()` prefix of its file for pr_*() calls, a device prefix for dev_*() and
netdev_*(). Each message is put in a small timestamped log followed by a call trace, and
given to `kflame analyze --json`.

The reference is syzkaller's `ContainsCrash()`: a log holds a report when one of its lines
holds an oops header and none of that header's suppressions, read from SYZKALLER_TREE's
pkg/report/linux.go and report.go (a checkout of github.com/google/syzkaller). The script
prints how many of the messages syzkaller takes for a report kflame finds a report in,
and how many it finds where syzkaller would not; `--list` prints each disagreement with
the file and line of the literal.

Neither tree's text goes into this repository: both are read where they are.
"""

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

HEADERS = [
    "BUG:", "WARNING:", "INFO:", "Unable to handle kernel", "general protection fault",
    "stack segment: ", "Kernel panic", "PANIC: double fault", "kernel BUG", "Kernel BUG",
    "BUG kmalloc-", "divide error:", "divide_error:", "invalid opcode:", "int3:", "UBSAN:",
    "Booting the kernel", "unregister_netdevice: waiting for", "VFS: Close: file count is 0",
    "VFS: Busy inodes after unmount", "Internal error:", "Unhandled fault:", "Alignment trap:",
    "trusty: panic", "rust_kernel: panicked", "Oops", "list_add corruption",
    "list_del corruption", "refcount_t:", "unreferenced object", "Watchdog detected hard LOCKUP",
    "usercopy:", "ODEBUG:", "DEBUG_LOCKS_WARN_ON", "invoked oom-killer", "KASAN:", "KFENCE:",
    "KCSAN:", "KMSAN:",
]
SKIP_DIRS = ("tools/", "scripts/", "samples/", "Documentation/", "usr/")
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
NEXT_LITERAL = re.compile(r'\s*"((?:[^"\\\n]|\\.)*)"')
PREV_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"\s*$')
CALL = re.compile(r'(\w+)\s*\(\s*(?:KERN_\w+\s*)?(?:[\w\->.&\[\]]+\s*,\s*)*$')
PR_FMT = re.compile(r'#define\s+pr_fmt\(fmt\)\s+(.*)')


def kernel_messages(root):
    """(file, line, call, format, pr_fmt prefix) of every literal holding a header."""
    out = []
    for dirpath, _, names in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if (rel + "/").startswith(SKIP_DIRS):
            continue
        for name in names:
            if not name.endswith((".c", ".h", ".rs")):
                continue
            path = os.path.join(dirpath, name)
            src = open(path, encoding="latin-1").read()
            if not any(h in src for h in HEADERS):
                continue
            prefix = None
            m = PR_FMT.search(src)
            if m:
                lits = LITERAL.findall(m.group(1))
                if "KBUILD_MODNAME" in m.group(1):
                    prefix = name.split(".")[0] + (lits[-1] if lits else ": ")
                elif lits:
                    prefix = "".join(lits)
            for lm in LITERAL.finditer(src):
                if not any(h in lm.group(1) for h in HEADERS):
                    continue
                before = src[max(0, lm.start() - 200):lm.start()]
                if PREV_LITERAL.search(before):
                    continue  # part of a message counted from its first literal
                full, end = lm.group(1), lm.end()
                while (m2 := NEXT_LITERAL.match(src, end)) is not None:
                    full += m2.group(1)
                    end = m2.end()
                cm = CALL.search(before)
                out.append({
                    "file": os.path.relpath(path, root),
                    "line": src.count("\n", 0, lm.start()) + 1,
                    "call": cm.group(1) if cm else "",
                    "fmt": full,
                    "pr_fmt": prefix,
                })
    return out


SPEC = re.compile(r'%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d+))?(hh|h|ll|l|z|t|j)?([diouxXcsp%])([A-Za-z0-9]*)')
POINTER_EXT = [
    ("SR", "do_sys_open+0x12/0x340"), ("Sb", "do_sys_open+0x12/0x340"),
    ("S", "do_sys_open+0x12/0x340"), ("s", "do_sys_open"), ("B", "do_sys_open+0x12/0x340"),
    ("K", "ffff888012345678"), ("x", "ffff888012345678"), ("d", "dentry"), ("g", "sda1"),
    ("OF", "/soc/node"), ("I4", "10.0.0.1"), ("I6c", "::1"), ("I6", "::1"),
    ("a", "0x0000000012345678"), ("V", "message"), ("GP", "0x0"), ("Gp", "referenced"),
    ("Gg", "GFP_KERNEL"), ("h", "00 01"), ("M", "00:11:22:33:44:55"), ("e", "-22"),
]


def fill(fmt):
    """The format with its conversions filled and its C escapes read."""
    def conv(m):
        c, ext = m.group(5), m.group(6)
        if c == "%":
            return "%" + ext
        if c == "s":
            return "syz-executor" + ext
        if c == "c":
            return "x" + ext
        if c in "diu":
            return "1" + ext
        if c in "xXo":
            return "1f" + ext
        for k, v in POINTER_EXT:
            if ext.startswith(k):
                return v + ext[len(k):]
        return "ffff888012345678" + ext
    text = SPEC.sub(conv, fmt)
    return text.encode("latin-1", "replace").decode("unicode_escape", "replace")


def message_lines(e):
    body = re.sub(r'^\x01[0-7cd]', "", fill(e["fmt"]))
    call, prefix = e["call"], ""
    if call.startswith("pr_") and e["pr_fmt"]:
        prefix = fill(e["pr_fmt"])
    elif call.startswith(("dev_", "ata_dev_")):
        prefix = "e1000 0000:00:03.0: "
    elif call.startswith(("netdev_", "netif_")):
        prefix = "e1000 0000:00:03.0 eth0: "
    lines = (prefix + body).split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def syzkaller_oopses(tree):
    """(header, suppressions) of syzkaller's linuxOopses and commonOopses."""
    def parse(src, marker):
        body = src[src.index("{", src.index(marker)) + 1:]
        oopses, cur, depth, in_re = [], None, 0, False
        for ln in body.split("\n"):
            s = ln.strip()
            if depth == 0 and s.startswith("{"):
                cur = {"header": None, "lists": []}
                oopses.append(cur)
            if cur is not None and depth == 1:
                if cur["header"] is None and (m := re.match(r'\[\]byte\("(.*)"\)', s)):
                    cur["header"] = m.group(1)
                if s.startswith("[]*regexp.Regexp{"):
                    cur["lists"].append([])
                    in_re = True
            if cur is not None and in_re and depth >= 2:
                for m in re.finditer(r'compile\((`[^`]*`|"(?:[^"\\]|\\.)*")\)', s):
                    lit = m.group(1)
                    pat = lit[1:-1] if lit[0] == "`" else bytes(lit[1:-1], "utf-8").decode("unicode_escape")
                    cur["lists"][-1].append(pat)
            depth += ln.count("{") - ln.count("}")
            if depth <= 1:
                in_re = False
            if depth < 0:
                break
        return [(o["header"], [re.compile(p) for p in (o["lists"][-1] if o["lists"] else [])])
                for o in oopses if o["header"]]
    linux = open(os.path.join(tree, "pkg/report/linux.go")).read()
    report = open(os.path.join(tree, "pkg/report/report.go")).read()
    return parse(linux, "var linuxOopses") + parse(report, "var commonOopses")


def contains_crash(oopses, line):
    return any(h in line and not any(r.search(line) for r in sups) for h, sups in oopses)


TRACE = ["CPU: 0 PID: 1 Comm: syz Not tainted 6.8.0 #1", "Call Trace:", " <TASK>",
         " dump_stack_lvl+0x10/0x20", " foo_bar+0x10/0x20", " do_syscall_64+0x10/0x20", " </TASK>"]


def kflame_reports(binary, path):
    out = subprocess.run([binary, "analyze", "--json", path], capture_output=True, text=True)
    try:
        d = json.loads(out.stdout)
    except json.JSONDecodeError:
        return None
    return [t for g in d["groups"] for t in g["titles"]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kernel_tree")
    ap.add_argument("syzkaller_tree")
    ap.add_argument("--kflame", help="kflame binary (default: build it with cargo)")
    ap.add_argument("--list", action="store_true", help="print every disagreement")
    args = ap.parse_args()
    binary = args.kflame
    if not binary:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "kflame-cli"], check=True)
        binary = os.path.join("target", "release", "kflame")
    oopses = syzkaller_oopses(args.syzkaller_tree)
    msgs = [(e, message_lines(e)) for e in kernel_messages(args.kernel_tree)]
    msgs = [(e, ls) for e, ls in msgs if ls]
    with tempfile.TemporaryDirectory(prefix="kflame-printk-") as tmp:
        paths = []
        for i, (_, lines) in enumerate(msgs):
            p = os.path.join(tmp, f"{i}.log")
            with open(p, "w") as f:
                for j, line in enumerate(lines + TRACE):
                    f.write(f"[  100.{j:06d}][    T1] {line}\n")
            paths.append(p)
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            found = list(pool.map(lambda p: kflame_reports(binary, p), paths))
    counts = {(a, b): 0 for a in (True, False) for b in (True, False)}
    for (e, lines), titles in zip(msgs, found):
        syz = any(contains_crash(oopses, ln) for ln in lines)
        ours = bool(titles)
        counts[(syz, ours)] += 1
        if args.list and syz != ours:
            what = "missed" if syz else "extra "
            print(f"{what} {e['file']}:{e['line']} {e['call']}: {' // '.join(lines)[:160]!r} -> {titles}")
    taken = counts[(True, True)] + counts[(True, False)]
    print(f"kernel messages holding a header: {len(msgs)}")
    print(f"  syzkaller takes for a report: {taken}; kflame finds a report in "
          f"{counts[(True, True)]} ({100.0 * counts[(True, True)] / max(taken, 1):.1f}%)")
    print(f"  kflame finds a report where syzkaller takes none: {counts[(False, True)]} "
          f"(of {counts[(False, True)] + counts[(False, False)]})")


if __name__ == "__main__":
    sys.exit(main())
