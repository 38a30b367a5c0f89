#!/usr/bin/env python3
"""Writes the hand-made perf.data regressions of this folder: the smallest files that make
linux-perf-data 0.13 trust a size or count from the file (see README.md). Each is a valid
header (the sections lie inside the file) around one bad field. Run from this folder:
`python3 make_perf_data.py` (writes perf_data/*.data)."""

import struct

HEADER = 104
EVENT_DESC = 12
SIMPLEPERF_META_INFO = 129
AUXTRACE = 71
MMAP2 = 10


def attr(e, size=136):
    """A cpu-clock perf_event_attr of `size` bytes (PERF_ATTR_SIZE_VER8 = 136)."""
    sample_type = 0x1 | 0x2 | 0x4 | 0x100  # IP, TID, TIME, PERIOD
    flags = 1 << 18  # sample_id_all
    head = struct.pack(e + "IIQQQQQIIQ", 1, size, 0, 4000, sample_type, 0, flags, 0, 0, 0)
    return head + bytes(size - len(head))


def perf_data(e, attr_size, attrs=b"", records=b"", event_types=b"", features=()):
    """Header, then the attribute, event types and data sections, then the feature table
    (which must follow the data section) and the feature sections (`features`: (bit, bytes)
    in increasing bit order)."""
    magic = b"PERFILE2" if e == "<" else b"2ELIFREP"
    at = HEADER
    attrs_at, at = at, at + len(attrs)
    types_at, at = at, at + len(event_types)
    data_at, at = at, at + len(records)
    at += 16 * len(features)
    table, bodies, words = b"", b"", [0, 0, 0, 0]
    for bit, body in features:
        words[bit // 64] |= 1 << (bit % 64)
        table += struct.pack(e + "QQ", at + len(bodies), len(body))
        bodies += body
    header = magic + struct.pack(
        e + "QQQQQQQQ4Q", HEADER, attr_size, attrs_at, len(attrs), data_at, len(records),
        types_at, len(event_types), *words)
    return header + attrs + event_types + records + table + bodies


def event_desc(e, nr, attr_size, events):
    """An EVENT_DESC section: counts, then per event its attr, id count, name and ids."""
    out = struct.pack(e + "II", nr, attr_size)
    for a, nr_ids, name_len, name, ids in events:
        out += a + struct.pack(e + "II", nr_ids, name_len) + name + b"".join(struct.pack(e + "Q", i) for i in ids)
    return out


LE, BE = "<", ">"
files = {
    # The attribute section divided by an attribute size of 0.
    "attr-size-zero.data": perf_data(LE, 0, attrs=attr(LE)),
    # EVENT_DESC: 4 billion events reserved before the first is read.
    "event-desc-count.data": perf_data(LE, 136, features=[(EVENT_DESC, event_desc(LE, 0xFFFFFFFF, 136, []))]),
    # EVENT_DESC: one event with 4 billion ids.
    "event-desc-ids.data": perf_data(
        LE, 136, features=[(EVENT_DESC, event_desc(LE, 1, 136, [(attr(LE), 0xFFFFFFFF, 0, b"", [])]))]),
    # EVENT_DESC: one event whose name is 4 GB long.
    "event-desc-name.data": perf_data(
        LE, 136, features=[(EVENT_DESC, event_desc(LE, 1, 136, [(attr(LE), 0, 0xFFFFFFFF, b"", [])]))]),
    # Old event types section: the id list of an attribute is 2^40 bytes long.
    "event-types-ids.data": perf_data(LE, 136, event_types=attr(LE) + struct.pack(LE + "QQ", HEADER, 1 << 40)),
    # Old event types section: an attribute size that overflows when 16 is added (entry size 0).
    "event-types-attr-size-wraps.data": perf_data(
        LE, (1 << 64) - 16, event_types=attr(LE) + struct.pack(LE + "QQ", HEADER, 8)),
    # simpleperf attribute section: the id list of an attribute is 2^40 bytes long.
    "simpleperf-ids.data": perf_data(
        LE, 152, attrs=attr(LE) + struct.pack(LE + "QQ", HEADER, 1 << 40),
        features=[(SIMPLEPERF_META_INFO, b"event_type_info\0cpu-clock,1,0\0")]),
    # An MMAP2 record with a build id of 21 bytes: linux-perf-event-reader asserts <= 20.
    "mmap2-build-id-too-long.data": perf_data(
        LE, 136, attrs=attr(LE),
        records=struct.pack(LE + "IHH", MMAP2, 1 << 14, 8 + 80)
        + struct.pack(LE + "iiQQQBBH20sII", 1, 1, 0x400000, 0x1000, 0, 21, 0, 0, bytes(20), 5, 2)
        + b"/bin/true\0\0\0\0\0\0\0"),
    # Big-endian file (read by the container's record iterator): an AUXTRACE record whose
    # trace data is 2^40 bytes long.
    "big-endian-auxtrace-size.data": perf_data(
        BE, 136, attrs=attr(BE),
        records=struct.pack(BE + "IHH", AUXTRACE, 0, 48) + struct.pack(BE + "QQQIIII", 1 << 40, 0, 0, 0, 0, 0, 0)),
}

for name, data in files.items():
    with open("perf_data/" + name, "wb") as f:
        f.write(data)
