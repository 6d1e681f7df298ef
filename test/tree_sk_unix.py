# A tree talking over UNIX sockets (cases-tree-sk.sh): P listens on a path and
# binds an abstract datagram socket D (SO_PASSCRED); its child C connects to
# the listener twice; P accepts both, forks worker W with the first accepted
# connection and closes it, keeps the second. Queued at the dump, both ways:
# C->W, W->C on the first connection, C->P, P->C on the second; datagrams d1,
# d3, d2 on D from C (connected to D) and from W (bound to a path). On SIGUSR1
# (P forwards it) every byte must arrive once, in order, after it the new
# ones, with the names and the senders' credentials as before.
import os, signal, socket, struct, sys, time

d = sys.argv[1]
SRV, WDG = d + "/srv.sock", d + "/wdg.sock"
DG = b"\0memdump-tree-sk-%d" % os.getpid()
usr1 = []
signal.signal(signal.SIGUSR1, lambda *x: usr1.append(1))

def wait_usr1():
    while not usr1:
        time.sleep(0.01)

def read_exactly(s, want):
    s.settimeout(5)
    got = b""
    while len(got) < len(want):
        b = s.recv(100)
        if not b:
            break
        got += b
    s.setblocking(False)
    try:
        got += s.recv(100)	# nothing more may be there
    except BlockingIOError:
        pass
    return got

def check(cond, what):
    if not cond:
        print("FAIL %s (pid %d)" % (what, os.getpid()), flush=True)
        os._exit(1)

L = socket.socket(socket.AF_UNIX)
L.bind(SRV)
L.listen(4)
D = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
D.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
D.bind(DG)
pa_r, pa_w = os.pipe()
pb_r, pb_w = os.pipe()
rr_r, rr_w = os.pipe()

c = os.fork()
if c == 0:
    c1 = socket.socket(socket.AF_UNIX); c1.connect(SRV)
    c2 = socket.socket(socket.AF_UNIX); c2.connect(SRV)
    dg = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); dg.connect(DG)
    c1.send(b"c2w-1"); c2.send(b"c2p-1"); dg.send(b"d1")
    os.write(pa_w, b"1")
    os.read(pb_r, 1)
    dg.send(b"d2")
    os.write(rr_w, b"C")
    wait_usr1()
    check(c1.getpeername() == SRV and not c1.getsockname(),
          "names of C's first end: %r %r" % (c1.getsockname(), c1.getpeername()))
    c1.send(b"c2w-2"); c2.send(b"c2p-2")
    g1 = read_exactly(c1, b"w2c-1w2c-2"); g2 = read_exactly(c2, b"p2c-1p2c-2")
    check(g1 == b"w2c-1w2c-2" and g2 == b"p2c-1p2c-2", "C got %r and %r" % (g1, g2))
    os._exit(0)

s1, _ = L.accept()
s2, _ = L.accept()
w = os.fork()
if w == 0:
    s2.close()
    wdg = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); wdg.bind(WDG)
    os.read(pa_r, 1)
    wdg.sendto(b"d3", DG)
    os.write(pb_w, b"2")
    s1.send(b"w2c-1")
    os.write(rr_w, b"W")
    wait_usr1()
    check(s1.getsockname() == SRV and not s1.getpeername(),
          "names of W's end: %r %r" % (s1.getsockname(), s1.getpeername()))
    s1.send(b"w2c-2")
    g = read_exactly(s1, b"c2w-1c2w-2")
    check(g == b"c2w-1c2w-2", "W got %r" % g)
    os._exit(0)
s1.close()
s2.send(b"p2c-1")
os.read(rr_r, 1); os.read(rr_r, 1)
print("READY %d %d %d" % (os.getpid(), c, w), flush=True)
wait_usr1()
os.kill(c, signal.SIGUSR1); os.kill(w, signal.SIGUSR1)
bad = []
if s2.getsockname() != SRV or L.getsockname() != SRV or D.getsockname() != DG:
    bad.append("names in P: %r %r %r" % (s2.getsockname(), L.getsockname(), D.getsockname()))
s2.send(b"p2c-2")
g = read_exactly(s2, b"c2p-1c2p-2")
if g != b"c2p-1c2p-2":
    bad.append("P got %r" % g)
D.settimeout(5)
dgs = []
for i in range(3):
    m, anc, _, addr = D.recvmsg(100, socket.CMSG_SPACE(12))
    pid = [struct.unpack("iII", x[2][:12])[0] for x in anc if x[1] == socket.SCM_CREDENTIALS]
    dgs.append((m, addr or "", pid[0] if pid else 0))
want = [(b"d1", "", c), (b"d3", WDG, w), (b"d2", "", c)]
if dgs != want:
    bad.append("datagrams %r, want %r" % (dgs, want))
D.setblocking(False)
try:
    bad.append("one more datagram %r" % D.recv(100))
except BlockingIOError:
    pass
for p in (c, w):
    _, st = os.waitpid(p, 0)
    if st:
        bad.append("child %d exited %d" % (p, st))
print("PASS" if not bad else "FAIL " + "; ".join(bad), flush=True)
