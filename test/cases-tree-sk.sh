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

# an inotify instance made before a fork, a watch added by each process: one
# instance after the restore, both watches delivering, wds as before and the
# next wd the one it would have been
IN_TREE='import ctypes, os, signal, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
d = sys.argv[1]
os.makedirs(d + "/a"); os.makedirs(d + "/b")
fd = libc.inotify_init1(os.O_NONBLOCK)
wa = libc.inotify_add_watch(fd, (d + "/a").encode(), 0x100)
ack_r, ack_w = os.pipe()
ctl_r, ctl_w = os.pipe()
usr1 = []
signal.signal(signal.SIGUSR1, lambda *x: usr1.append(1))
c = os.fork()
if c == 0:
    wb = libc.inotify_add_watch(fd, (d + "/b").encode(), 0x100)
    os.write(ack_w, b"%d" % wb)
    os.read(ctl_r, 1)
    wc = libc.inotify_add_watch(fd, (d + "/b").encode(), 0x200)
    os.write(ack_w, b"%d" % wc)
    os._exit(0)
wb = int(os.read(ack_r, 16))
print("READY %d %d" % (os.getpid(), c), flush=True)
while not usr1:
    time.sleep(0.01)
open(d + "/a/x", "w").close(); open(d + "/b/y", "w").close()
time.sleep(0.2)
buf = os.read(fd, 4096)
wds = []
while buf:
    w, m, k, l = struct.unpack("iIII", buf[:16]); wds.append(w); buf = buf[16 + l:]
os.write(ctl_w, b"g")
wc = int(os.read(ack_r, 16))
_, st = os.waitpid(c, 0)
ok = sorted(wds) == sorted([wa, wb]) and wc == wb and st == 0
print("PASS" if ok else "FAIL events for %r (want %d %d), child re-add wd %d, status %d" % (wds, wa, wb, wc, st), flush=True)'

case_tree_inotify() {
	py_pair_rst "$IN_TREE" "$T/in"
	py_pair_pass
}
add tree-sk-inotify case_tree_inotify

# sk_tree_start ARGS...: test/tree_sk_unix.py started, READY P C W read (sets PID, C, W)
sk_tree_start() {
	OUT=$T/sk.out
	mkdir -p "$T/s"
	command -p python3 "$TESTSRC/tree_sk_unix.py" "$T/s" "$@" < /dev/null > "$OUT" 2> "$T/sk.err" &
	PID=$!; track "$PID"
	wait_line "$OUT" "^READY " "$OP_TIMEOUT" || fail "the program did not start: $(cat "$T/sk.err")"
	read -r _ _ C W < <(grep -m1 '^READY' "$OUT")
	track "$C"; track "$W"
	READY_SIZE=$(stat -c %s "$OUT")
}

# sk_tree_pass: C and W are P's children again; SIGUSR1, PASS, the restore exits 0
sk_tree_pass() {
	wait_until "$OP_TIMEOUT" eval '[[ $(proc_field '"$C"' PPid) == '"$PID"' && $(proc_field '"$W"' PPid) == '"$PID"' ]]' ||
		fail "C and W were not restored below P: $(cat "$MD_ERR")"
	wait_until 5 eval '(( 0x$(proc_field '"$PID"' SigCgt) & (1 << 9) ))' || fail "no SIGUSR1 handler"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}

# a named listener, connections accepted from it living in another process
# than it, bytes queued both ways on each, datagrams queued from two other
# processes of the tree: every byte once and in order, names and credentials
case_tree_sk_unix() {
	sk_tree_start
	dump "$PID" "$T/d"
	expect_killed "$PID"
	local label
	for label in 1 2; do
		truncate -s "$READY_SIZE" "$OUT"
		restore_bg "$T/d" "$label"
		sk_tree_pass
		[[ ! -S $T/s/srv.sock ]] || rm "$T/s/srv.sock" "$T/s/wdg.sock"
	done
}
add tree-sk-unix case_tree_sk_unix
