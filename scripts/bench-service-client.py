# A redis client for scripts/bench-service.
#   bench-service-client.py PORT fill MIB   SET 1 KiB values until MIB MiB are stored
#   bench-service-client.py PORT ping OUT   a PING every 2 ms on one connection, until
#        SIGTERM; then writes "<longest gap between replies, ms> <replies> <reconnects>"
#        to OUT. SIGUSR1: close the connection and send nothing; SIGUSR2: connect again
#        (retrying every 2 ms) and go on. A connection lost otherwise is a failure
#        ("FAIL ..." in OUT).
import signal, socket, sys, time

port, mode = int(sys.argv[1]), sys.argv[2]


def connect():
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s, s.makefile("rb")


def fill(mib):
    s, f = connect()
    value = b"x" * 1024
    batch = 512
    for first in range(0, mib * 1024, batch):
        cmds = b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\nkey:%d\r\n$1024\r\n%s\r\n" %
                        (len(b"key:%d" % k), k, value) for k in range(first, first + batch))
        s.sendall(cmds)
        for _ in range(batch):
            if f.readline() != b"+OK\r\n":
                sys.exit("fill: a SET failed")
    print("filled %d MiB" % mib, flush=True)


flags = {"stop": False, "close": False, "reopen": False}


def on(sig, key):
    signal.signal(sig, lambda *_: flags.__setitem__(key, True))


def ping(out):
    on(signal.SIGTERM, "stop")
    on(signal.SIGUSR1, "close")
    on(signal.SIGUSR2, "reopen")
    s, f = connect()
    last = time.monotonic()
    worst = 0.0
    n = reconnects = 0
    print("READY", flush=True)
    while not flags["stop"]:
        if flags["close"]:
            flags["close"] = False
            f.close()	# the makefile holds the socket open too
            s.close()
            s = None
        if flags["reopen"] and s is None:
            try:
                s, f = connect()
                reconnects += 1
            except OSError:
                time.sleep(0.002)
                continue
        if s is None:
            time.sleep(0.002)
            continue
        try:
            s.sendall(b"PING\r\n")
            reply = f.readline()
        except (OSError, InterruptedError) as e:
            reply = b"error " + str(e).encode()
        if reply != b"+PONG\r\n" and s is not None and not flags["close"]:
            open(out, "w").write("FAIL reply %r after %d replies\n" % (reply, n))
            return
        now = time.monotonic()
        worst = max(worst, now - last)
        last = now
        n += 1
        time.sleep(0.002)
    open(out, "w").write("%.1f %d %d\n" % (worst * 1000, n, reconnects))


if mode == "fill":
    fill(int(sys.argv[3]))
else:
    ping(sys.argv[3])
