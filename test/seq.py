#!/usr/bin/env python3
"""Real-program test target: computes a sequence (big integers, a dict and
a list kept in the interpreter heap) and appends one line per step to OUT
(line buffered, O_APPEND), sleeping DELAY seconds between steps.
usage: seq.py OUT [STEPS=80] [DELAY=0.05]; prints "READY <pid>" first."""
import hashlib
import os
import sys
import time

out = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 80
delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0.05

print("READY", os.getpid(), flush=True)
a, b = 0, 1
seen = {}
hist = []
with open(out, "a", buffering=1) as f:
    for i in range(steps):
        a, b = b, a + b
        h = hashlib.sha256(str(a).encode()).hexdigest()[:16]
        seen[h] = i
        hist.append(a % 1000003)
        f.write(f"{i} {h} {len(str(a))} {sum(hist) % 999983} {len(seen)}\n")
        time.sleep(delay)
print("DONE", flush=True)
