"""`kflame mcp` driven by the official Python MCP SDK (PyPI `mcp`), over stdio and over
streamable HTTP: every tool called with real inputs (a syzkaller report, a hung-task capture,
crash `bt` output, perf captures, a history database written through the store, the libbpf
git history, a small kernel tree written here), the prompt and the view resource read, bad
input through every tool, and the HTTP server's token, Host and Origin checks.

Expectations come from the kflame CLI on the same inputs (`kflame analyze --json`,
`kflame collapse`), never from constants. Run by `scripts/test` (which installs the SDK):

    KFLAME_BIN=target/debug/kflame python3 -m unittest tests/mcp/test_python_client.py
"""

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ROOT = Path(__file__).resolve().parents[2]
KFLAME = os.environ.get("KFLAME_BIN", str(ROOT / "target/debug/kflame"))
HISTORY = os.environ.get("KFLAME_HISTORY_BIN", str(ROOT / "target/debug/examples/history"))
DATA = ROOT / "crates/kflame/tests/data"
REPORT = DATA / "kernel-log/syzkaller/report/106"
HUNG = DATA / "kernel-log/captures/dmesg-hung-task-calltrace.txt"
CRASH = DATA / "crash/foreach-UN-bt.txt"
PERF = DATA / "perf/captures/perf-sys-cpuclock.script.txt"
PERF_BEFORE = DATA / "perf/captures/perf-burn-fp-fp.script.txt"
TOKEN = "python-client-token-1"


def cli(*args):
    out = subprocess.run([KFLAME, *args], capture_output=True, text=True, check=True, timeout=120)
    return out.stdout


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def write_tree(root):
    files = {
        "Makefile": "VERSION = 6\nPATCHLEVEL = 1\n",
        "include/linux/fs.h": "struct file;\nssize_t vfs_read(struct file *f);\n",
        "fs/read_write.c": "#include <linux/fs.h>\n\nssize_t vfs_read(struct file *f)\n{\n\treturn 0;\n}\n\n"
                           "SYSCALL_DEFINE3(read, unsigned int, fd, char __user *, buf, size_t, count)\n"
                           "{\n\treturn vfs_read(0);\n}\n",
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


class Fixture:
    """The inputs of one test run, in a temporary directory."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="kflame-mcp-py-"))
        self.tree = self.dir / "linux"
        write_tree(self.tree)
        self.repo = self.dir / "libbpf"
        bundle = ROOT / "crates/kflame-fixes/tests/data/libbpf-2023.bundle"
        subprocess.run(["git", "clone", "-q", "--no-checkout", "--branch", "history-2023", str(bundle),
                        str(self.repo)], check=True)
        order = git(self.repo, "rev-list", "--topo-order", "--reverse", "HEAD").split()
        git(self.repo, "update-ref", "refs/heads/small", order[399])
        git(self.repo, "symbolic-ref", "HEAD", "refs/heads/small")
        self.db = self.dir / "history.db"
        subprocess.run([HISTORY, str(self.db), "180"], check=True, capture_output=True, timeout=300)
        self.inputs = self.dir / "inputs"
        self.inputs.mkdir()
        (self.inputs / "garbage.bin").write_bytes(bytes((i * 7919) % 251 for i in range(4096)))
        (self.inputs / "empty.log").write_bytes(b"")
        os.symlink("/etc/passwd", self.inputs / "passwd")
        self.cache = self.dir / "cache"

    def args(self):
        return ["mcp", "--allow", str(DATA), "--allow", str(self.inputs), "--db", str(self.db),
                "--kernel-src", str(self.tree), "--kernel-git", str(self.repo),
                "--cache-dir", str(self.cache), "--timeout", "300"]

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


FIX = None


def setUpModule():
    global FIX
    FIX = Fixture()


def tearDownModule():
    if FIX:
        FIX.close()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 600))


async def call(c, name, args):
    r = await c.call_tool(name, args)
    text = r.content[0].text if r.content else ""
    return r.is_error, r.structured_content, text, r


async def exercise(test, c):
    """Every tool, the prompt and the resource, on one connected client."""
    tools = (await c.list_tools()).tools
    names = sorted(t.name for t in tools)
    test.assertEqual(names, sorted(["analyze_kernel_log", "analyze_crash", "summarize_profile", "diff_profiles",
                                    "kernel_source", "find_callers", "search_fixes", "list_reports",
                                    "get_report", "query_history"]))
    for t in tools:
        test.assertEqual(t.input_schema["type"], "object", t.name)
        test.assertGreater(len(t.description), 60, t.name)
        meta = (t.meta or {})
        has_view = t.name in ("summarize_profile", "diff_profiles", "get_report")
        test.assertEqual(meta.get("ui", {}).get("resourceUri") == "ui://kflame/flamegraph", has_view, t.name)

    # Reports: the culprit objects of `kflame analyze --json`.
    for path in (REPORT, HUNG):
        err, got, text, _ = await call(c, "analyze_kernel_log", {"path": str(path)})
        test.assertFalse(err, text)
        want = json.loads(cli("analyze", "--json", str(path)))
        test.assertEqual([g["signature"] for g in got["groups"]], [g["signature"] for g in want["groups"]][:5])
        for g, w in zip(got["groups"], want["groups"]):
            test.assertEqual(g["error"]["culprit"], w["error"]["culprit"])
    err, got, text, _ = await call(c, "analyze_crash", {"path": str(CRASH), "limit": 3})
    test.assertFalse(err, text)
    want = json.loads(cli("analyze", "--json", str(CRASH)))
    test.assertEqual(got["reports"], want["reports"])
    test.assertEqual(got["groups"][0]["signature"], want["groups"][0]["signature"])

    # Profiles: the total is what `kflame collapse` folds.
    folded = cli("collapse", str(PERF))
    total = sum(int(l.rsplit(" ", 1)[1]) for l in folded.splitlines() if l and not l.startswith("#"))
    err, got, text, r = await call(c, "summarize_profile", {"path": str(PERF), "limit": 4})
    test.assertFalse(err, text)
    test.assertEqual(int(got["total"]["weight"]), total)
    test.assertEqual(len(got["by_self"]), 4)
    view = (r.meta or {}).get("kflame/view")
    test.assertIsNotNone(view, "the result carries the view's data")
    test.assertEqual(int(view["profile"]["total"]), total)
    err, got, text, _ = await call(c, "diff_profiles", {"before": {"path": str(PERF_BEFORE)},
                                                         "after": {"path": str(PERF)}, "limit": 5})
    test.assertFalse(err, text)
    test.assertTrue(0 < len(got["grew"]) <= 5)
    test.assertGreater(got["grew"][0]["delta"], 0)

    # Kernel source, callers, fixes.
    err, got, text, _ = await call(c, "kernel_source", {"function": "vfs_read+0x1a/0x80"})
    test.assertFalse(err, text)
    test.assertEqual(got["definitions"][0]["file"], "fs/read_write.c")
    err, got, text, _ = await call(c, "find_callers", {"function": "vfs_read"})
    test.assertFalse(err, text)
    test.assertEqual(got["callers"][0]["file"], "fs/read_write.c")
    err, got, text, _ = await call(c, "search_fixes", {"functions": ["bpf_object__load"], "limit": 3})
    test.assertFalse(err, text)
    test.assertTrue(got["fixes"])
    for f in got["fixes"]:
        test.assertIn("bpf_object__load", git(FIX.repo, "show", "--format=%s", f["id"]))

    # The history.
    err, got, text, _ = await call(c, "query_history", {"what": "overview"})
    test.assertFalse(err, text)
    span = got["span"]
    err, got, text, _ = await call(c, "query_history", {"what": "events", "from": span["from"], "to": span["to"]})
    test.assertFalse(err, text)
    test.assertTrue(any(e["type"] == "report" for e in got["events"]), got)
    err, got, text, _ = await call(c, "list_reports", {"from": span["from"], "to": span["to"]})
    test.assertFalse(err, text)
    test.assertGreaterEqual(got["reports"], 1)
    test.assertIn("<b>bad_work_fn</b>", json.dumps(got["groups"]), "stored text comes back as it was")
    # One of them, by the time list_reports gives: its text as stored, and the minute before.
    latest = got["groups"][0]["latest"][0]
    err, rep, text, _ = await call(c, "get_report", {"time": latest["time"], "host": latest["host"]})
    test.assertFalse(err, text)
    test.assertEqual((rep["time"], rep["host"]), (latest["time"], latest["host"]))
    test.assertEqual(rep["before"]["seconds"], 60)
    test.assertIn("similar", rep)
    err, got, text, _ = await call(c, "summarize_profile", {"range": {"from": span["from"], "to": span["to"]}})
    test.assertFalse(err, text)
    test.assertGreater(int(got["total"]["weight"]), 0)

    # The prompt and the view resource.
    prompts = (await c.list_prompts()).prompts
    test.assertEqual([p.name for p in prompts], ["explain_kernel_report"])
    p = await c.get_prompt("explain_kernel_report", {"path": str(REPORT)})
    test.assertIn(str(REPORT), p.messages[0].content.text)
    test.assertIn("Resolution", p.messages[0].content.text)
    res = await c.read_resource("ui://kflame/flamegraph")
    test.assertEqual(res.contents[0].mime_type, "text/html;profile=mcp-app")
    test.assertIn("ui/notifications/tool-result", res.contents[0].text)


BAD = [
    ("analyze_kernel_log", {"path": "/etc/shadow"}, "outside the directories"),
    ("analyze_crash", {"path": "/etc/shadow"}, "outside the directories"),
    ("summarize_profile", {"path": "/etc/shadow"}, "outside the directories"),
    ("diff_profiles", {"before": {"path": "/etc/shadow"}, "after": {"path": str(PERF)}}, "outside"),
    ("analyze_kernel_log", {"path": "PASSWD"}, "outside the directories"),
    ("analyze_kernel_log", {"path": "MISSING"}, "No such file"),
    ("analyze_kernel_log", {"path": "EMPTY"}, "is empty"),
    ("summarize_profile", {"path": "GARBAGE"}, "match none of the formats"),
    ("analyze_kernel_log", {"path": 42}, "invalid arguments"),
    ("summarize_profile", {"path": str(PERF), "range": {"from": "-1h"}}, "exactly one of"),
    ("kernel_source", {"function": ""}, "empty name"),
    ("kernel_source", {"function": ["vfs_read"]}, "invalid arguments"),
    ("find_callers", {"function": 1}, "invalid arguments"),
    ("search_fixes", {}, "at least one of"),
    ("list_reports", {"from": "yesterday-ish"}, "from"),
    ("get_report", {"time": "yesterday-ish"}, "time"),
    ("get_report", {}, "invalid arguments"),
    ("query_history", {"what": "everything"}, "invalid arguments"),
    ("query_history", {"what": "metrics", "from": "now", "to": "-1h"}, "range is empty"),
]


async def bad_inputs(test, c):
    for tool, args, want in BAD:
        args = json.loads(json.dumps(args).replace("PASSWD", str(FIX.inputs / "passwd"))
                          .replace("MISSING", str(FIX.inputs / "missing.log"))
                          .replace("EMPTY", str(FIX.inputs / "empty.log"))
                          .replace("GARBAGE", str(FIX.inputs / "garbage.bin")))
        err, _, text, _ = await call(c, tool, args)
        test.assertTrue(err, f"{tool} {args}: not an error: {text}")
        test.assertIn(want, text, f"{tool} {args}")
    # Still serving.
    err, _, text, _ = await call(c, "analyze_kernel_log", {"path": str(REPORT)})
    test.assertFalse(err, text)


class Stdio(unittest.TestCase):
    def test_every_tool_over_stdio(self):
        async def main():
            async with Client(StdioServerParameters(command=KFLAME, args=FIX.args())) as c:
                await exercise(self, c)
                await bad_inputs(self, c)
        run(main())


class Http(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        tok = FIX.dir / "token"
        tok.write_text(TOKEN + "\n")
        cls.proc = subprocess.Popen([KFLAME, *FIX.args(), "--http", "127.0.0.1:0", "--token-file", str(tok)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = cls.proc.stdout.readline()
        m = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line)
        if not m:
            cls.proc.kill()
            raise RuntimeError(f"kflame mcp --http printed {line!r}: {cls.proc.stderr.read()}")
        cls.url = m.group(1)

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        try:
            cls.proc.wait(10)
        except subprocess.TimeoutExpired:
            cls.proc.kill()

    def client(self):
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
        return Client(streamable_http_client(self.url, http_client=http))

    def test_every_tool_over_http(self):
        async def main():
            async with self.client() as c:
                await exercise(self, c)
                await bad_inputs(self, c)
        run(main())

    def raw(self, headers, url=None):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
             "MCP-Protocol-Version": "2025-11-25"}
        h.update(headers)
        req = urllib.request.Request(url or self.url, data=body, headers=h, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def test_token_host_and_origin(self):
        status, body = self.raw({})
        self.assertEqual(status, 401, body)
        self.assertIn("Bearer", body)
        self.assertEqual(self.raw({"Authorization": "Bearer wrong"})[0], 401)
        self.assertEqual(self.raw({}, self.url + "?token=wrong")[0], 401)
        ok = {"Authorization": f"Bearer {TOKEN}"}
        status, body = self.raw({**ok, "Origin": "http://evil.example"})
        self.assertEqual(status, 403, body)
        status, body = self.raw({**ok, "Host": "evil.example"})
        self.assertEqual(status, 403, body)
        # A well-formed, authorized request that is not an initialize gets a protocol answer,
        # not a transport refusal.
        status, _ = self.raw({**ok})
        self.assertNotIn(status, (401, 403))

    def test_non_loopback_listen_is_refused_without_allow_remote(self):
        out = subprocess.run([KFLAME, "mcp", "--http", "0.0.0.0:0"], capture_output=True, text=True, timeout=30)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("not a loopback address", out.stderr)


if __name__ == "__main__":
    unittest.main()
