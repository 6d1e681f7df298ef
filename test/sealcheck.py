#!/usr/bin/env python3
# sealcheck.py KEYFILE DIR [NEEDLE]: an independent reader of a sealed set
# (docs/images.md, "Encrypted images"), with python3-cryptography, not OpenSSL
# through memdump: every *.img and stats-dump file of DIR (and its proc-PID/
# sets) authenticated chunk by chunk with the set's key, HKDF-SHA256(key,
# salt = set id, info = "memdump image set key v2"). Prints "sealcheck: N files,
# set key <first 4 bytes hex>" and, given NEEDLE, the files whose plaintext
# holds it. Exit 1 on any file that does not authenticate.
import os
import struct
import sys
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

key = open(sys.argv[1], 'rb').read()
top = sys.argv[2]
needle = sys.argv[3].encode() if len(sys.argv) > 3 else None
CHUNK, TAG = 1 << 20, 16


def set_key(setid):
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=setid,
                info=b"memdump image set key v2").derive(key)


def open_file(path, name):
    d = open(path, 'rb').read()
    head = d[:64]
    magic, version, chunk, setid, nonce, keyid, size, zero = struct.unpack('<8sII16s8s8sQQ', head)
    assert magic == b'MDSEAL01', f"{name}: not sealed"
    assert version == 2 and chunk == CHUNK and zero == 0, f"{name}: version {version}"
    sk = set_key(setid)
    nr = max(1, (size + CHUNK - 1) // CHUNK)
    assert len(d) == 64 + size + nr * TAG, f"{name}: size"
    out, off = bytearray(), 64
    for i in range(nr):
        n = min(CHUNK, size - i * CHUNK)
        iv = nonce + struct.pack('<I', i)
        aad = head + struct.pack('<QB', i, i + 1 == nr) + name.encode()
        out += AESGCM(sk).decrypt(iv, d[off:off + n + TAG], aad)
        off += n + TAG
    return setid, sk, bytes(out)


files, keys, hits = 0, set(), []
for root, dirs, names in os.walk(top):
    for f in sorted(names):
        if not (f.endswith('.img') or f == 'stats-dump'):
            continue
        path = os.path.join(root, f)
        name = os.path.relpath(path, top)
        try:
            setid, sk, plain = open_file(path, name)
        except Exception as e:
            print(f"sealcheck: {name} does not open: {e!r}")
            sys.exit(1)
        files += 1
        keys.add(sk)
        if needle and needle in plain:
            hits.append(name)
assert len(keys) == 1, "more than one set key in one set"
print(f"sealcheck: {files} files, set key {keys.pop()[:4].hex()}")
if needle:
    print("holds:", *hits)
