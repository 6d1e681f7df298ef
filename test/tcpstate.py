#!/usr/bin/env python3
"""One end of a TCP connection brought to a state, for cases-tcpstates.sh.

  tcpstate.py peer STATE FAMILY DIR       the outside end: listens, prints
        "PORT n", then plays its part; what must happen after the restore
        waits for DIR/go; prints PASS or FAIL.
  tcpstate.py target STATE FAMILY DIR PORT   the dumped end: connects, brings
        the connection to STATE (TCP_INFO says so), prints "READY <pid>";
        on SIGUSR1 checks what the restored connection does; PASS or FAIL.

FAMILY: v4 (127.0.0.1), v6 (::1), v4mapped (an IPv6 socket to
::ffff:127.0.0.1, the peer IPv4). The case drops what must not arrive before
the restore (nft): the target's FIN (FIN_WAIT1, CLOSING, LAST_ACK), its SYN
(SYN_SENT).
"""
import os
import select
import signal
import socket
import struct
import sys
import time

STATES = {"ESTABLISHED": 1, "SYN_SENT": 2, "FIN_WAIT1": 4, "FIN_WAIT2": 5, "CLOSE_WAIT": 8,
          "LAST_ACK": 9, "CLOSING": 11}


def out(*a):
    print(*a, flush=True)


def die(msg):
    out("FAIL", msg)
    sys.exit(1)


def tcp_state(s):
    return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0]


def wait_state(s, name, secs=20):
    end = time.time() + secs
    while tcp_state(s) != STATES[name]:
        if time.time() > end:
            die("state %d, not %s" % (tcp_state(s), name))
        time.sleep(0.02)


def read_all(s, secs=600):
    """Everything until EOF."""
    s.settimeout(secs)
    data = b""
    while True:
        try:
            b = s.recv(65536)
        except socket.timeout:
            die("no EOF within %ds, %d bytes read" % (secs, len(data)))
        if not b:
            return data
        data += b


def wait_file(path, secs=120):
    end = time.time() + secs
    while not os.path.exists(path):
        if time.time() > end:
            die("no " + path)
        time.sleep(0.02)


def peer(state, fam, d):
    l = socket.socket(socket.AF_INET6 if fam == "v6" else socket.AF_INET)
    l.bind(("::1" if fam == "v6" else "127.0.0.1", 0))
    l.listen()
    out("PORT", l.getsockname()[1])
    a, _ = l.accept()
    go = os.path.join(d, "go")
    if state == "FIN_WAIT1":
        got = read_all(a)              # the target's FIN arrives after the restore
        want = b"w" * 100000
        if got != want:
            die("got %d bytes, not the %d sent" % (len(got), len(want)))
        a.sendall(b"reply")
        a.close()
    elif state == "FIN_WAIT2":
        got = read_all(a)
        if got != b"hello":
            die("got %r" % got)
        wait_file(go)
        a.sendall(b"late")
        a.close()
    elif state == "CLOSE_WAIT":
        a.sendall(b"bye")
        a.shutdown(socket.SHUT_WR)
        got = read_all(a)              # after the restore
        if got != b"reply":
            die("got %r" % got)
    elif state == "LAST_ACK":
        a.sendall(b"bye")
        a.shutdown(socket.SHUT_WR)
        got = read_all(a)
        if got != b"last":
            die("got %r" % got)
    elif state == "CLOSING":
        wait_file(os.path.join(d, "fin-sent"))
        a.sendall(b"p")
        a.shutdown(socket.SHUT_WR)
        got = read_all(a)
        if got != b"t":
            die("got %r" % got)
    elif state == "SYN_SENT":
        got = read_all(a)
        if got != b"syn":
            die("got %r" % got)
    out("PASS", state)


def target(state, fam, d, port):
    signal.signal(signal.SIGUSR1, lambda *a: None)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    host = {"v4": "127.0.0.1", "v6": "::1", "v4mapped": "::ffff:127.0.0.1"}[fam]
    s = socket.socket(socket.AF_INET if fam == "v4" else socket.AF_INET6)
    if state == "SYN_SENT":
        s.setblocking(False)
        try:
            s.connect((host, port))
        except BlockingIOError:
            pass
    else:
        s.connect((host, port))
    if state == "FIN_WAIT1":
        s.sendall(b"w" * 100000)
        s.shutdown(socket.SHUT_WR)
    elif state == "FIN_WAIT2":
        s.sendall(b"hello")
        s.shutdown(socket.SHUT_WR)
    elif state == "LAST_ACK":
        wait_state(s, "CLOSE_WAIT")
        s.sendall(b"last")
        s.shutdown(socket.SHUT_WR)
    elif state == "CLOSING":
        s.sendall(b"t")
        s.shutdown(socket.SHUT_WR)
        wait_state(s, "FIN_WAIT1")
        open(os.path.join(d, "fin-sent"), "w").close()
    wait_state(s, state)
    out("READY", os.getpid(), s.fileno())
    signal.sigwait([signal.SIGUSR1])
    st = tcp_state(s)
    if state == "SYN_SENT":
        if not select.select([], [s], [], 60)[1]:
            die("the connection did not complete (state %d)" % tcp_state(s))
        err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            die("connect: " + os.strerror(err))
        s.setblocking(True)
        s.sendall(b"syn")
        s.close()
    elif state == "FIN_WAIT1":
        if st not in (STATES["FIN_WAIT1"], STATES["FIN_WAIT2"]):
            die("restored in state %d" % st)
        got = read_all(s)
        if got != b"reply":
            die("got %r" % got)
    elif state == "FIN_WAIT2":
        if st not in (STATES["FIN_WAIT2"], 7):     # 7: CLOSE, the peer's FIN came
            die("restored in state %d" % st)
        try:
            s.send(b"x")
            die("send after shutdown worked")
        except BrokenPipeError:
            pass
        got = read_all(s)
        if got != b"late":
            die("got %r" % got)
    elif state == "CLOSE_WAIT":
        if st != STATES["CLOSE_WAIT"]:
            die("restored in state %d" % st)
        got = read_all(s)
        if got != b"bye":
            die("got %r" % got)
        s.sendall(b"reply")
        s.close()
    elif state == "LAST_ACK":
        got = read_all(s)
        if got != b"bye":
            die("got %r" % got)
    elif state == "CLOSING":
        got = read_all(s)
        if got != b"p":
            die("got %r" % got)
    out("PASS", state)


if __name__ == "__main__":
    if sys.argv[1] == "peer":
        peer(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        target(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
