# A client that sends a request every 5 ms on one connection and checks that
# every reply comes, in order, on that connection (no reconnect).
#   sk-client.py redis|memcached|http|echo PORT SECONDS
# prints "PASS <n> replies, longest wait <s>" or "FAIL ...".
import socket, sys, time

kind, port, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rb")
n = worst = 0
end = time.time() + secs


def http_reply():
    status = f.readline()
    length = 0
    while True:
        h = f.readline()
        if h in (b"\r\n", b""):
            break
        if h.lower().startswith(b"content-length:"):
            length = int(h.split(b":")[1])
    body = f.read(length)
    return status.startswith(b"HTTP/1.1 200") and len(body) == length


while time.time() < end:
    t0 = time.time()
    n += 1
    if kind == "redis":
        s.sendall(b"INCR k\r\n")
        ok = f.readline() == b":%d\r\n" % n
    elif kind == "echo":
        s.sendall(b"%d\n" % n)
        ok = f.readline() == b"%d\n" % n
    elif kind == "memcached":
        s.sendall(b"incr k 1\r\n")
        ok = f.readline() == b"%d\r\n" % n
    else:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n")
        ok = http_reply()
    if not ok:
        print("FAIL reply", n, flush=True)
        sys.exit(1)
    worst = max(worst, time.time() - t0)
    time.sleep(0.005)
print("PASS %d replies, longest wait %.3f s" % (n, worst), flush=True)
