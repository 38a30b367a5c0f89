#!/usr/bin/env python3
"""Rewrites a pipe-mode perf.data stream of perf 6.1 into the layout perf 6.16 writes.

    make-newer-perf.py compressed-pipe.data compressed2-attr136-pipe.data

perf 6.16 differs from 6.1 in what this touches:
  - PERF_RECORD_COMPRESSED (81) became PERF_RECORD_COMPRESSED2 (83): a u64 with the size
    of the zstd data, the data, then zero padding to 8 bytes (the record size counts it);
  - perf_event_attr grew to 136 bytes (config3 after sig_data): each HEADER_ATTR record's
    attribute gets 8 zero bytes and size 136.
Every other record is copied unchanged, so the zstd frames, samples and metadata are the
ones perf 6.1 recorded. (No perf newer than 6.1 could be built here to record them.)
"""
import struct
import sys

HEADER_ATTR, COMPRESSED, COMPRESSED2 = 64, 81, 83


def main(src, dst):
    data = open(src, "rb").read()
    magic, size = struct.unpack_from("<8sQ", data, 0)
    assert magic == b"PERFILE2" and size == 16, "not a little-endian pipe-mode file"
    out = bytearray(data[:16])
    at = 16
    while at + 8 <= len(data):
        kind, misc, rec_size = struct.unpack_from("<IHH", data, at)
        body = data[at + 8 : at + rec_size]
        if kind == HEADER_ATTR:
            attr_size = struct.unpack_from("<I", body, 4)[0]
            attr = bytearray(body[:attr_size])
            struct.pack_into("<I", attr, 4, attr_size + 8)
            body = bytes(attr) + bytes(8) + body[attr_size:]
        elif kind == COMPRESSED:
            kind = COMPRESSED2
            pad = -(8 + 8 + len(body)) % 8
            body = struct.pack("<Q", len(body)) + body + bytes(pad)
        assert 8 + len(body) < 1 << 16
        out += struct.pack("<IHH", kind, misc, 8 + len(body)) + body
        at += rec_size
    assert at == len(data), "trailing bytes"
    open(dst, "wb").write(out)


if __name__ == "__main__":
    main(*sys.argv[1:])
