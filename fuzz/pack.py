#!/usr/bin/env python3
"""Pack image files into an input of fuzz/fuzz-images.c.

    pack.py [--flags N] [--only NAME]... [--skip NAME]... DIR OUT

Writes one byte of flags (1: fix the inventory's sums, 2: on the base set),
then for every file of DIR (sorted, pages images last, or only the --only ones): a name length
byte, the name, a little-endian u32 length and the content.
"""
import argparse
import os
import struct
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flags", type=int, default=0)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--skip", action="append", default=[])
    ap.add_argument("dir")
    ap.add_argument("out")
    a = ap.parse_args()
    # pages images last: a cut-short input loses their bytes, not the other images
    names = a.only or sorted(os.listdir(a.dir), key=lambda n: (n.startswith("pages-"), n))
    out = bytearray([a.flags & 0xFF])
    for n in names:
        if n in a.skip:
            continue
        with open(os.path.join(a.dir, n), "rb") as f:
            data = f.read()
        b = n.encode()
        if len(b) > 255:
            sys.exit(f"pack.py: name too long: {n}")
        out += bytes([len(b)]) + b + struct.pack("<I", len(data)) + data
    with open(a.out, "wb") as f:
        f.write(out)


if __name__ == "__main__":
    main()
