"""kflame's OTLP profiles decoded with OpenTelemetry's own Python bindings.

PyPI `opentelemetry-proto` (pinned in requirements.txt) carries the generated classes of the
development profiles signal (`opentelemetry.proto.collector.profiles.v1development`). Each
request kflame writes is decoded with them, its stacks rebuilt from the dictionary (stack ->
locations leaf first -> lines innermost first -> function -> string) and compared with the
folded stacks `kflame collapse` gives for the same input; the per-sample time stamps of a
time-ordered perf script export are compared with the sample headers of the perf script
text, read here on their own.

Run from the repository root: `python -m unittest tests/otlp/test_otlp_python.py`
(`KFLAME_BIN` names the binary, else target/debug/kflame).
"""

import collections
import os
import re
import subprocess
import tempfile
import unittest

from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("KFLAME_BIN") or os.path.join(ROOT, "target", "debug", "kflame")
DATA = os.path.join(ROOT, "crates", "kflame", "tests", "data")

# Folded files of every unit kflame writes (as the Rust and browser interop tests).
FOLDED = [
    "render/perf-sys-cpuclock.folded",
    "ftrace/expected/ftrace-dd-mixed.alloc.folded",
    "ftrace/expected/ftrace-dd-mixed.offcpu-comm.folded",
    "ftrace/expected/ftrace-raw_syscalls-write.syscalls.folded",
    "ftrace/expected/ftrace-dd-mixed.events.folded",
    "function-graph/raw-basic.total.folded",
]
PERF_SCRIPT = "perf/captures/perf-sys-cpuclock.script.txt"


def kflame(*args):
    return subprocess.run([BIN, *args], check=True, capture_output=True).stdout


def folded_lines(text):
    """[(stack, weight)] of folded text, header lines left out."""
    out = []
    for line in text.decode().splitlines():
        if line and not line.startswith("#"):
            stack, weight = line.rsplit(" ", 1)
            out.append((stack, int(weight)))
    return out


def decode(path):
    req = profiles_service_pb2.ExportProfilesServiceRequest()
    with open(path, "rb") as f:
        req.ParseFromString(f.read())
    return req


def stacks_of(req):
    """The profile, and each sample as (stack root first, [(time or None, value)])."""
    d = req.dictionary
    s = d.string_table
    profiles = [p for r in req.resource_profiles for sp in r.scope_profiles for p in sp.profiles]
    assert len(profiles) == 1, len(profiles)
    p = profiles[0]
    samples = []
    for sample in p.samples:
        frames = []
        for li in reversed(d.stack_table[sample.stack_index].location_indices):
            for line in reversed(d.location_table[li].lines):
                frames.append(s[d.function_table[line.function_index].name_strindex])
        values = list(sample.values) or [1] * len(sample.timestamps_unix_nano)
        times = list(sample.timestamps_unix_nano) or [None] * len(values)
        assert len(values) == len(times), (len(values), len(times))
        samples.append((";".join(frames), list(zip(times, values))))
    return p, samples


def perf_headers(path):
    """(time in ns, period) of every sample header of perf script text."""
    out = []
    header = re.compile(r"\s(\d+)\.(\d+):\s+(\d+)\s")
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip() or line[0].isspace():
                continue
            m = header.search(line)
            if m:
                out.append((int(m[1]) * 10**9 + int(m[2].ljust(9, "0")), int(m[3])))
    return out


class OtlpDecodedWithTheOfficialProto(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def test_stacks_and_totals_are_the_folded_input(self):
        for rel in FOLDED:
            with self.subTest(rel=rel):
                src = os.path.join(DATA, rel)
                out = os.path.join(self.tmp.name, "p.otlp.pb")
                kflame("flamegraph", src, "-o", out)
                req = decode(out)
                p, samples = stacks_of(req)
                got = collections.Counter()
                for stack, obs in samples:
                    got[stack] += sum(v for _, v in obs)
                want = collections.Counter()
                folded = kflame("collapse", src)
                for stack, w in folded_lines(folded):
                    want[stack] += w
                self.assertEqual(dict(got), dict(want))
                s = req.dictionary.string_table
                unit = s[p.sample_type.unit_strindex]
                header = folded.decode().splitlines()[0]
                expected = {"# unit=bytes": "bytes", "# unit=ns": "nanoseconds"}.get(header)
                if expected:
                    self.assertEqual(unit, expected)
                self.assertEqual(req.resource_profiles[0].scope_profiles[0].scope.name, "kflame")

    def test_time_ordered_perf_samples_carry_their_time_stamps(self):
        src = os.path.join(DATA, PERF_SCRIPT)
        out = os.path.join(self.tmp.name, "t.otlp.pb")
        kflame("collapse", "--time-order", src, "-o", out)
        p, samples = stacks_of(decode(out))
        observations = [(t, v, stack) for stack, obs in samples for t, v in obs]
        self.assertTrue(all(t is not None for t, _, _ in observations))
        # Exactly the (time, period) of every sample header of the input.
        want = sorted(perf_headers(src))
        self.assertGreater(len(want), 100)
        self.assertEqual(sorted((t, v) for t, v, _ in observations), want)
        self.assertEqual(p.time_unix_nano, want[0][0])
        self.assertEqual(p.duration_nano, want[-1][0] - want[0][0] + 1)
        self.assertEqual(len({stack for stack, _ in samples}), len(samples), "one sample per stack")
        # Replayed in time order, the stacks are those of `collapse --time-order`.
        runs = []
        for t, v, stack in sorted(observations, key=lambda o: o[0]):
            if runs and runs[-1][0] == stack:
                runs[-1][1] += v
            else:
                runs.append([stack, v])
        ordered = folded_lines(kflame("collapse", "--time-order", src))
        self.assertEqual([tuple(r) for r in runs], ordered)


if __name__ == "__main__":
    unittest.main()
