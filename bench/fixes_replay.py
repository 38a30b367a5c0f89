#!/usr/bin/env python3
"""Replays a git history several times, one copy after the other, into one longer history.

Reads `git fast-export` of one branch on stdin and writes a fast-import stream on stdout:
the original history, then COPIES-1 more copies of its commits, each copy's root commit
starting from the previous copy's tip with `deleteall`, so every replayed commit has the
same tree changes (diff), message, author and dates as the original. Blobs are shared.

Usage: git fast-export --signed-tags=strip BRANCH | fixes_replay.py COPIES | git fast-import
"""

import sys


def read_stream(f):
    """Yields (kind, lines, payload) commands; payload is the bytes of a `data` block."""
    cmd = None
    while True:
        line = f.readline()
        if not line:
            if cmd:
                yield cmd
            return
        if line.startswith(b"data "):
            n = int(line[5:].strip())
            payload = f.read(n)
            cmd[1].append(line)
            cmd[2].append(payload)
            continue
        word = line.split(b" ", 1)[0].strip()
        if word in (b"blob", b"commit", b"reset", b"tag", b"feature", b"done", b"progress"):
            if cmd:
                yield cmd
            cmd = [word, [line], []]
        else:
            if cmd is None:
                cmd = [b"", [], []]
            cmd[1].append(line)


def emit(out, lines, payloads):
    it = iter(payloads)
    for line in lines:
        out.write(line)
        if line.startswith(b"data "):
            out.write(next(it))


def main():
    copies = int(sys.argv[1])
    src = sys.stdin.buffer
    out = sys.stdout.buffer
    commits = []
    max_mark = 0
    for kind, lines, payloads in read_stream(src):
        if kind == b"commit":
            commits.append((lines, payloads))
        for line in lines:
            if line.startswith(b"mark :"):
                max_mark = max(max_mark, int(line[6:].strip()))
        emit(out, lines, payloads)
    tip = None
    for lines, _ in commits:
        for line in lines:
            if line.startswith(b"mark :"):
                tip = int(line[6:].strip())
    for k in range(1, copies):
        off = k * max_mark
        prev_tip = tip + (k - 1) * max_mark
        for lines, payloads in commits:
            new = []
            has_from = any(l.startswith(b"from ") for l in lines)
            for line in lines:
                if line.startswith(b"mark :"):
                    line = b"mark :%d\n" % (int(line[6:].strip()) + off)
                elif line.startswith(b"from :") or line.startswith(b"merge :"):
                    word, mark = line.split(b":", 1)
                    line = word + b":%d\n" % (int(mark.strip()) + off)
                new.append(line)
            if not has_from:
                # Right after the message (written after its `data` line): fast-import
                # wants `from` before the file commands, and `deleteall` resets the tree.
                i = max(j for j, l in enumerate(new) if l.startswith(b"data "))
                new[i + 1:i + 1] = [b"from :%d\n" % prev_tip, b"deleteall\n"]
            emit(out, new, payloads)


main()
