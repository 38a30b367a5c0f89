#!/usr/bin/env python3
"""Computes, from a recording of record_proc.py, the metric values the watcher's sampler
computes from the same files (the names, labels and formulas of `kflame watch`'s metric
table: mpstat shares per CPU and in total, rates over the /proc/uptime interval, iostat
device figures, meminfo, loadavg, PSI avg10). Writes "TIME_NS NAME LABEL VALUE" lines, the
time relative to the first read, an empty label as "-", values at full f64 precision.

Usage: proc_metrics.py < RECORDING > METRICS   (see bench/data/README.md)
"""
import re, sys

def reads(text):
    cur = None
    for line in text.splitlines():
        if line.startswith("@ "):
            if cur:
                yield cur
            cur = {"t": int(line[2:]), "files": {}}
            name = None
        elif line.startswith("# /proc/"):
            name = line[2:]
            cur["files"][name] = []
        elif cur is not None and name:
            cur["files"][name].append(line)
    if cur:
        yield cur

def stat(lines):
    cpus, other = {}, {}
    for l in lines:
        f = l.split()
        if not f:
            continue
        if f[0].startswith("cpu"):
            cpus["" if f[0] == "cpu" else f[0]] = [int(x) for x in (f[1:] + ["0"] * 10)[:10]]
        elif f[0] in ("ctxt", "processes", "procs_running", "procs_blocked"):
            other[f[0]] = int(f[1])
    return cpus, other

def shares(label, a, b, out):
    d = lambda i: float(max(b[i] - a[i], 0))
    total = float(max(sum(b) - sum(a), 0))
    if total <= 0:
        return
    user, nice, system, idle, iowait, irq, soft, steal, guest, gnice = (d(i) for i in range(10))
    pct = lambda v: 100.0 * v / total
    for name, v in [("cpu", max(total - idle - iowait, 0.0)), ("cpu.usr", max(user - guest, 0.0)),
                    ("cpu.nice", max(nice - gnice, 0.0)), ("cpu.sys", system), ("cpu.iowait", iowait),
                    ("cpu.irq", irq), ("cpu.soft", soft), ("cpu.steal", steal),
                    ("cpu.guest", guest + gnice), ("cpu.idle", idle)]:
        out.append((name, label, pct(v)))

def disks(lines):
    out = {}
    for l in lines:
        f = l.split()
        if len(f) >= 14:
            out[f[2]] = [int(x) for x in (f[3:] + ["0"] * 17)[:17]]
    return out

def shown(name, all_names, fields):
    if name.startswith("loop") or re.fullmatch(r"ram\d+", name) or all(v == 0 for v in fields):
        return False
    for d in all_names:
        rest = name[len(d):] if name.startswith(d) and name != d else None
        if rest and (rest.isdigit() or (rest[0] == "p" and rest[1:].isdigit())):
            return False
    return True

def main():
    need = ["/proc/uptime", "/proc/stat", "/proc/diskstats", "/proc/meminfo", "/proc/loadavg"]
    # A read cut short (the recorder stopped while writing it) is left out.
    rs = [r for r in reads(sys.stdin.read()) if all(r["files"].get(n) for n in need)]
    t0 = rs[0]["t"]
    prev = None
    w = sys.stdout.write
    for r in rs:
        f = r["files"]
        out = []
        up = float(f["/proc/uptime"][0].split()[0])
        cpus, other = stat(f["/proc/stat"])
        dk = disks(f["/proc/diskstats"])
        if prev:
            secs = up - prev["up"] if up > prev["up"] else None
            for label, b in cpus.items():
                if label in prev["cpus"]:
                    shares(label, prev["cpus"][label], b, out)
            if secs:
                for name, key in [("ctxt", "ctxt"), ("forks", "processes")]:
                    out.append((name, "", max(other[key] - prev["other"][key], 0) / secs))
        for name, key in [("procs.running", "procs_running"), ("procs.blocked", "procs_blocked")]:
            out.append((name, "", float(other[key])))
        if prev and secs:
            for name, b in dk.items():
                if not shown(name, dk.keys(), b) or name not in prev["dk"]:
                    continue
                a = prev["dk"][name]
                d = lambda k: float(max(b[k] - a[k], 0))
                ms = secs * 1000.0
                aw = lambda ticks, ios: ticks / ios if ios > 0 else 0.0
                out += [("io.read_bytes", name, d(2) * 512.0 / secs), ("io.write_bytes", name, d(6) * 512.0 / secs),
                        ("io.reads", name, d(0) / secs), ("io.writes", name, d(4) / secs),
                        ("io.iops", name, (d(0) + d(4) + d(11) + d(15)) / secs),
                        ("io.util", name, min(100.0 * d(9) / ms, 100.0)),
                        ("io.await", name, aw(d(3) + d(7) + d(14), d(0) + d(4) + d(11))),
                        ("io.r_await", name, aw(d(3), d(0))), ("io.w_await", name, aw(d(7), d(4))),
                        ("io.queue", name, d(10) / ms)]
        mem = {}
        for l in f["/proc/meminfo"]:
            k, _, v = l.partition(":")
            v = v.split()
            if v:
                mem[k] = int(v[0]) * (1024 if len(v) > 1 and v[1] == "kB" else 1)
        if mem.get("MemTotal"):
            out.append(("mem.available", "", 100.0 * mem["MemAvailable"] / mem["MemTotal"]))
        for name, k in [("mem.available_bytes", "MemAvailable"), ("mem.cached", "Cached"), ("mem.dirty", "Dirty"),
                        ("mem.writeback", "Writeback"), ("mem.slab", "Slab")]:
            out.append((name, "", float(mem[k])))
        if mem.get("SwapTotal"):
            used = max(mem["SwapTotal"] - mem["SwapFree"], 0)
            out += [("swap.used", "", 100.0 * used / mem["SwapTotal"]), ("swap.used_bytes", "", float(used))]
        la = f["/proc/loadavg"][0].split()
        out += [("load1", "", float(la[0])), ("load5", "", float(la[1])), ("load15", "", float(la[2]))]
        for file, res in [("cpu", "cpu"), ("memory", "mem"), ("io", "io")]:
            for l in f.get(f"/proc/pressure/{file}", []):
                g = l.split()
                if g and g[0] in ("some", "full"):
                    avg10 = dict(x.split("=") for x in g[1:])["avg10"]
                    out.append((f"psi.{res}.{g[0]}", "", float(avg10)))
        for name, label, v in out:
            w(f"{r['t'] - t0} {name} {label or '-'} {v!r}\n")
        prev = {"up": up, "cpus": cpus, "other": other, "dk": dk}

main()
