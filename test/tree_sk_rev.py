# The other order (cases-tree-sk.sh): the parent P is the client, its child S
# the server, S's child W holds the connection S accepted from P (S closed
# its copy). P comes first in the tree: restore makes S's listener and its
# datagram socket ahead for S. Queued at the dump: P->W, W->P, and datagrams
# on S's socket from P's (connected) and from W's (unnamed, connected too).
import os, signal, socket, sys, time

d = sys.argv[1]
SRV, DG = d + "/rev.sock", d + "/revdg.sock"
usr1 = []
signal.signal(signal.SIGUSR1, lambda *x: usr1.append(1))

def wait_usr1():
    while not usr1:
        time.sleep(0.01)

def read_exactly(s, n):
    s.settimeout(5)
    got = b""
    while len(got) < n:
        b = s.recv(100)
        if not b:
            break
        got += b
    return got

rr_r, rr_w = os.pipe()
go_r, go_w = os.pipe()
srv = os.fork()
if srv == 0:
    L = socket.socket(socket.AF_UNIX); L.bind(SRV); L.listen(2)
    D = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); D.bind(DG)
    os.write(rr_w, b"L")
    a, _ = L.accept()
    w = os.fork()
    if w == 0:
        os.read(go_r, 1)
        wd = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); wd.connect(DG)
        wd.send(b"w1")
        a.send(b"w2p-1")
        os.write(rr_w, b"W")
        wait_usr1()
        a.send(b"w2p-2")
        g = read_exactly(a, 10)
        ok = g == b"p2w-1p2w-2" and a.getsockname() == SRV and not a.getpeername()
        os._exit(0 if ok else 1)
    a.close()
    os.write(rr_w, b"%08d" % w)
    wait_usr1()
    os.kill(w, signal.SIGUSR1)
    D.settimeout(5)
    got = [D.recv(100) for _ in range(2)]
    _, st = os.waitpid(w, 0)
    os._exit(0 if got == [b"p1", b"w1"] and st == 0 else 1)
os.read(rr_r, 1)
c = socket.socket(socket.AF_UNIX); c.connect(SRV)
dg = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); dg.connect(DG)
w = int(os.read(rr_r, 8))
c.send(b"p2w-1"); dg.send(b"p1")
os.write(go_w, b"g")
os.read(rr_r, 1)
print("READY %d %d %d" % (os.getpid(), srv, w), flush=True)
wait_usr1()
os.kill(srv, signal.SIGUSR1)
c.send(b"p2w-2")
g = read_exactly(c, 10)
_, st = os.waitpid(srv, 0)
ok = g == b"w2p-1w2p-2" and c.getpeername() == SRV and st == 0
print("PASS" if ok else "FAIL P got %r, names %r %r, server status %d" % (g, c.getsockname(), c.getpeername(), st), flush=True)
