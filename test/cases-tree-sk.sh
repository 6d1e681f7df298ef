# Process trees (cases-tree.sh's helpers): UNIX sockets, epoll sets and inotify
# instances shared between processes of a tree.

# an epoll set made before a fork, registrations added by both processes on
# their own fds (the child's on a number the parent has open as another file):
# after the restore each process's MOD/DEL find its own registration, and
# both see both processes' targets ready through the one set
EP_TREE='import os, select, signal, sys, time
ep = select.epoll()
p1r, p1w = os.pipe()
ep.register(p1r, select.EPOLLIN)
ctl_r, ctl_w = os.pipe()
ack_r, ack_w = os.pipe()
usr1 = []
signal.signal(signal.SIGUSR1, lambda *x: usr1.append(1))
c = os.fork()
if c == 0:
    os.close(p1w)
    os.close(p1r)
    p2r, p2w = os.pipe()
    if p2r != p1r:
        os.dup2(p2r, p1r); os.close(p2r); p2r = p1r
    ep.register(p2r, select.EPOLLIN)
    os.write(ack_w, b"%d" % p2r)
    os.read(ctl_r, 1)
    os.write(p2w, b"c")
    ev = dict(ep.poll(5))
    ep.modify(p2r, select.EPOLLIN | select.EPOLLET)
    ep.unregister(p2r)
    os.write(ack_w, b"ok" if p2r in ev else b"no")
    os._exit(0)
n = int(os.read(ack_r, 16))
print("READY %d %d" % (os.getpid(), c), flush=True)
while not usr1:
    time.sleep(0.01)
os.write(p1w, b"p")
ev = dict(ep.poll(5))
os.write(ctl_w, b"g")
child = os.read(ack_r, 2)
ev2 = dict(ep.poll(5))
ep.unregister(p1r)
_, st = os.waitpid(c, 0)
ok = p1r in ev and child == b"ok" and st == 0
print("PASS" if ok else "FAIL parent saw %r then %r, child %r, status %d" % (ev, ev2, child, st), flush=True)'

case_tree_epoll() {
	py_pair_rst "$EP_TREE"
	py_pair_pass
}
add tree-sk-epoll case_tree_epoll
