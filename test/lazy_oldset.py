#!/usr/bin/env python3
"""lazy_oldset.py DIR: the set in DIR made as a memdump without block marks
wrote it: pagemap_head.block_shift (230) and pagemap_entry.block_lanes (231)
taken out of every pagemap-*.img at the protobuf wire level (crit would drop
memdump's other fields too: the runs' sums), and the inventory's checksum and
size of each such pagemap written again (include/hash64.h, streamcraft.py)."""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from streamcraft import hash64  # noqa: E402

HEAD = 8  # the two magics of an image
INV_HEAD = 4  # inventory.img has one


def varint(d, p):
    v = s = 0
    while True:
        b = d[p]
        p += 1
        v |= (b & 0x7f) << s
        s += 7
        if b < 0x80:
            return v, p


def enc(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def fields(d):
    """(number, wire type, raw bytes of the whole field) of a message"""
    p = 0
    while p < len(d):
        s = p
        tag, p = varint(d, p)
        wt = tag & 7
        if wt == 0:
            _, p = varint(d, p)
        elif wt == 1:
            p += 8
        elif wt == 2:
            n, p = varint(d, p)
            p += n
        elif wt == 5:
            p += 4
        else:
            raise SystemExit(f"wire type {wt}")
        yield tag >> 3, wt, d[s:p]


def strip(msg):
    return b''.join(raw for num, _, raw in fields(msg) if num not in (230, 231))


def strip_pagemap(path):
    d = open(path, 'rb').read()
    out, p = [d[:HEAD]], HEAD
    while p < len(d):
        n = struct.unpack_from('<I', d, p)[0]
        m = strip(d[p + 4:p + 4 + n])
        out += [struct.pack('<I', len(m)), m]
        p += 4 + n
    data = b''.join(out)
    open(path, 'wb').write(data)
    return len(data), hash64(data)


def body(raw):
    _, p = varint(raw, 0)
    _, p = varint(raw, p)
    return raw[p:]


def reseal(inv, sums):
    d = open(inv, 'rb').read()
    n = struct.unpack_from('<I', d, INV_HEAD)[0]
    out = bytearray()
    for num, wt, raw in fields(d[INV_HEAD + 4:INV_HEAD + 4 + n]):
        if num == 53:
            e = body(raw)
            name = next(body(r) for k, _, r in fields(e) if k == 1).decode()
            if name in sums:
                size, h = sums[name]
                e = b''.join(enc(16) + enc(size) if k == 2 else enc(24) + enc(h) if k == 3 else r
                             for k, _, r in fields(e))
                raw = enc(53 << 3 | 2) + enc(len(e)) + e
        out += raw
    open(inv, 'wb').write(d[:INV_HEAD] + struct.pack('<I', len(out)) + bytes(out) +
                          d[INV_HEAD + 4 + n:])


def main():
    top = sys.argv[1]
    sums = {f: strip_pagemap(os.path.join(top, f)) for f in os.listdir(top)
            if f.startswith('pagemap-') and f.endswith('.img')}
    reseal(os.path.join(top, 'inventory.img'), sums)


main()
