"""memdump's page transfer wire (include/xfer.h) for the suite's fake peers:
a 16-byte header (magic, command, body length), then the body."""
import struct

MAGIC = 0x4d445846
HELLO, DATA, COMMIT, RESTORE, REPLY, SYNC, LAZY, GET = 1, 4, 6, 7, 9, 10, 11, 12
VERSION = 6  # include/xfer.h XFER_VERSION


def exact(s, n):
    """n bytes from socket s, or None at EOF."""
    b = b''
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            return None
        b += c
    return b


def send(s, cmd, body):
    s.sendall(struct.pack('<IIQ', MAGIC, cmd, len(body)) + body)


def recv(s):
    """(command, body) of the next message, (None, None) at EOF."""
    h = exact(s, 16)
    if h is None:
        return None, None
    _, cmd, n = struct.unpack('<IIQ', h)
    return cmd, exact(s, n)
