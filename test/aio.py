#!/usr/bin/env python3
"""Real-program test target: an asyncio event loop whose timer (call_later)
appends one line of a sequence per tick to OUT, DELAY seconds apart.
usage: aio.py OUT [STEPS=80] [DELAY=0.05]; prints "READY <pid>", then "DONE"."""
import asyncio
import hashlib
import os
import sys

out = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 80
delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0.05


def tick(loop, f, state, done):
    a, b, i = state
    a, b = b, a + b
    h = hashlib.sha256(str(a).encode()).hexdigest()[:16]
    f.write(f"{i} {h} {len(str(a))}\n")
    if i + 1 == steps:
        done.set_result(None)
    else:
        loop.call_later(delay, tick, loop, f, (a, b, i + 1), done)


async def main():
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    print("READY", os.getpid(), flush=True)
    with open(out, "a", buffering=1) as f:
        loop.call_later(delay, tick, loop, f, (0, 1, 0), done)
        await done
    print("DONE", flush=True)

asyncio.run(main())
