#!/usr/bin/env python3
"""streamcraft.py IN OUT HOW: a memdump image stream (docs/images.md, "Streams")
rewritten with valid checksums (include/hash64.h, written again here from its
description) but a wrong structure, so that only unpack's structural checks
can refuse it:
  same        rewritten as it is, every entry under 1 MiB hashed again (the same
              bytes: the checksums are right)
  v1          a chain's stream (version 2) with head version 1
  nolink-dir  the entries of the parent set's proc-PID (the first one) dropped,
              so that a proc-PID/parent link entry names a directory never made
"""
import struct
import sys

M = (1 << 64) - 1
K1, K2, K3 = 0x9e3779b185ebca87, 0xc2b2ae3d27d4eb4f, 0x165667b19e3779f9


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def mix(acc, word):
    return (rotl((acc + word * K2) & M, 31) * K1) & M


def hash64(data):
    lane = [(K1 + K2) & M, K2, 0, (-K1) & M]
    full = len(data) // 32 * 32
    for off in range(0, full, 32):
        for i in range(4):
            lane[i] = mix(lane[i], struct.unpack_from('<Q', data, off + 8 * i)[0])
    acc = (rotl(lane[0], 1) + rotl(lane[1], 7) + rotl(lane[2], 12) + rotl(lane[3], 18)) & M
    for i in range(4):
        acc = ((acc ^ mix(0, lane[i])) * K1 + K3) & M
    acc = (acc + len(data)) & M
    for b in data[full:]:
        acc = (rotl(acc ^ ((b * K3) & M), 11) * K1) & M
    acc ^= acc >> 33
    acc = (acc * K2) & M
    acc ^= acc >> 29
    acc = (acc * K3) & M
    acc ^= acc >> 32
    return acc


def read(path):
    """The head and entries [kind, name, body, index, checksum] of a stream."""
    d = open(path, 'rb').read()
    head, pos, ents = bytearray(d[:32]), 32, []
    while True:
        magic, idx, kind, nl, zero, size = struct.unpack_from('<IIHHIQ', d, pos)
        name = d[pos + 24:pos + 24 + nl]
        body = d[pos + 24 + nl:pos + 24 + nl + (size if kind != 3 else 0)]
        if kind == 3:
            return head, ents
        pos += 24 + nl + len(body)
        ents.append([kind, name.decode(), body, idx, d[pos:pos + 8]])
        pos += 8


def write(path, head, ents):
    """Entries whose index did not change keep their checksum (hashing a big
    pages image in python is slow); the others, and the end, are hashed."""
    chain, out, sums = bytes(head), [bytes(head)], []
    for i, (kind, name, body, idx, s) in enumerate(ents):
        eh = struct.pack('<IIHHIQ', 0x4553444d, i, kind, len(name), 0, len(body)) + name.encode()
        if i != idx or len(body) < (1 << 20):
            s = struct.pack('<Q', hash64(eh + body))
        sums.append(s)
        out += [eh, body, s]
    out.append(struct.pack('<IIHHIQ', 0x4553444d, len(ents), 3, 0, 0, len(ents)))
    out.append(struct.pack('<Q', hash64(chain + b''.join(sums))))
    open(path, 'wb').write(b''.join(out))


def main():
    src, dst, how = sys.argv[1:4]
    head, ents = read(src)
    if how == 'same':
        pass
    elif how == 'v1':
        assert struct.unpack_from('<I', head, 8)[0] == 2, 'not a chain stream'
        struct.pack_into('<I', head, 8, 1)
    elif how == 'nolink-dir':
        sub = next(e[1] for e in ents if e[0] == 2 and e[1].startswith('parent/proc-'))
        ents = [e for e in ents if e[1] != sub and not e[1].startswith(sub + '/')]
    else:
        sys.exit('unknown HOW ' + how)
    write(dst, head, ents)


if __name__ == '__main__':
    main()
