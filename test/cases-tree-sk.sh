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

# the set shared by a fork, the child's registration on a number it closed
# since (its file kept as a dup): after the restore the child's events come
# with that number, and MOD on it (the file put back there) finds it
EP_GONE_TREE='import os, select, signal, sys, time
ep = select.epoll()
ctl_r, ctl_w = os.pipe()
ack_r, ack_w = os.pipe()
usr1 = []
signal.signal(signal.SIGUSR1, lambda *x: usr1.append(1))
c = os.fork()
if c == 0:
    r, w = os.pipe()
    ep.register(r, select.EPOLLIN)
    r2 = os.dup(r); os.close(r)
    os.write(ack_w, b"%d" % r)
    os.read(ctl_r, 1)
    os.write(w, b"c")
    ev = dict(ep.poll(5))
    os.dup2(r2, r)
    ep.modify(r, select.EPOLLIN | select.EPOLLET)
    ep.unregister(r)
    os.write(ack_w, b"ok" if r in ev else b"no")
    os._exit(0)
n = int(os.read(ack_r, 16))
print("READY %d %d" % (os.getpid(), c), flush=True)
while not usr1:
    time.sleep(0.01)
os.write(ctl_w, b"g")
child = os.read(ack_r, 2)
_, st = os.waitpid(c, 0)
ok = child == b"ok" and st == 0
print("PASS" if ok else "FAIL child %r, status %d" % (child, st), flush=True)'

case_tree_epoll_gone() {
	py_pair_rst "$EP_GONE_TREE"
	py_pair_pass
}
add tree-sk-epoll-gone case_tree_epoll_gone

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

# sk_tree_start SCRIPT: test/SCRIPT started, READY P C W read (sets PID, C, W)
sk_tree_start() {
	OUT=$T/sk.out
	mkdir -p "$T/s"
	command -p python3 "$TESTSRC/$1" "$T/s" < /dev/null > "$OUT" 2> "$T/sk.err" &
	PID=$!; track "$PID"
	wait_line "$OUT" "^READY " "$OP_TIMEOUT" || fail "the program did not start: $(cat "$T/sk.err")"
	read -r _ _ C W < <(grep -m1 '^READY' "$OUT")
	track "$C"; track "$W"
	READY_SIZE=$(stat -c %s "$OUT")
}

# sk_tree_pass WPARENT: C is P's child again, W WPARENT's; SIGUSR1, PASS, the restore exits 0
sk_tree_pass() {
	wait_until "$OP_TIMEOUT" eval '[[ $(proc_field '"$C"' PPid) == '"$PID"' && $(proc_field '"$W"' PPid) == '"$1"' ]]' ||
		fail "C and W were not restored below P: $(cat "$MD_ERR")"
	wait_until 5 eval '(( 0x$(proc_field '"$PID"' SigCgt) & (1 << 9) ))' || fail "no SIGUSR1 handler"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}

# a named listener, connections accepted from it living in another process
# than it, bytes queued both ways on each, datagrams queued from two other
# processes of the tree (tree_sk_unix.py, W P's child); tree_sk_rev.py: the
# other order, the parent a client of its child's listener, whose accepted end
# is in a grandchild W. The connections were made after the forks: their
# accepted ends' peer credentials name the connecting process, which the
# restore cannot make again (docs/refused.md): refused by name, with
# --leave-running too, the tree unharmed: it finishes as if never dumped.
case_tree_sk_unix_refused() {
	sk_tree_start "$1"
	shift
	md dump dump -t "$PID" -D "$T/d" "$@"
	expect_md_error
	grep -qE 'fd [0-9]+ \(socket:\[[0-9]+\]: a UNIX stream socket whose peer credentials \(pid [0-9]+, uid 0\) memdump cannot make again: the accepted end of a connection process [0-9]+ made to a listener' "$MD_ERR" ||
		{ show_file err "$MD_ERR"; fail "the refusal does not name the accepted end"; }
	no_inventory "$T/d"
	tree_untouched "$PID" "$C" "$W"
	kill -USR1 "$PID"
	get_result "$OUT"
	local rc=0
	timeout_wait "$PID" || rc=$?
	(( rc == 0 )) || fail "the tree exited with $rc"
}
add tree-sk-unix case_tree_sk_unix_refused tree_sk_unix.py
add tree-sk-unix-lr case_tree_sk_unix_refused tree_sk_unix.py --leave-running
add tree-sk-unix-rev case_tree_sk_unix_refused tree_sk_rev.py

# python multiprocessing with a Manager(): its server process listens on a
# UNIX socket path, the parent and two workers each hold a connection accepted
# there (requests and replies in flight at any instant), made after the forks:
# the manager listens again once forked, the parent and the workers connect
# with their ids, the manager accepts each on the fd of its connector's. Dumped
# mid-run and restored, the output of an uninterrupted run (the Manager's list,
# lock and barrier work through the connections made again). The dump waits
# for the program's "started" (every connection made so far accepted) and the
# workers go on until $T/go exists (made once the dump is done).
case_tree_real_mp_manager() {
	touch "$T/ref.go"
	command -p python3 "$TESTSRC/tree_sk_manager.py" 40 "$T/ref.go" < /dev/null > "$T/ref.out" 2>&1 ||
		fail "the reference run failed: $(cat "$T/ref.out")"
	command -p python3 "$TESTSRC/tree_sk_manager.py" 40 "$T/go" < /dev/null > "$T/mp.out" 2>&1 &
	PID=$!; track "$PID"
	wait_line "$T/mp.out" '^started' "$OP_TIMEOUT" || fail "the workers did not start"
	local p; for p in $(tree_pids "$PID"); do track "$p"; done
	tree_has 3 "$PID" || fail "not a manager and two workers below $PID: $(tree_pids "$PID")"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	touch "$T/go"
	restore_bg "$T/d" 1
	wait_restore_exit
	(( MD_RC == 0 )) || fail "the restored program exited with $MD_RC: $(cat "$T/mp.out")"
	cmp -s "$T/ref.out" "$T/mp.out" ||
		fail "the output is not an uninterrupted run's: $(tr '\n' '|' < "$T/mp.out")"
}
add tree-real-mp-manager case_tree_real_mp_manager

# what a tree still cannot take, each named in the one refusal, the tree left
# running. "open" (seen before the freeze): a connection accepted from a
# listener since closed (its name cannot be given again without one), an
# epoll registration whose fd the child closed after sending its file outside
# the tree (open in no process of it), a UNIX socket whose peer is outside the tree. "queue" (seen
# frozen): a datagram queued from a socket outside the tree.
SK_REFUSE_TREE='import os, select, signal, socket, sys, time
d = sys.argv[1]
u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); u.bind(d + "/u.sock")
if sys.argv[2] == "open":
    L = socket.socket(socket.AF_UNIX); L.bind(d + "/gone.sock"); L.listen(1)
    c1 = socket.socket(socket.AF_UNIX); c1.bind(d + "/c1.sock"); c1.connect(d + "/gone.sock")
    a, _ = L.accept(); L.close()
    o = socket.socket(socket.AF_UNIX); o.connect(d + "/outside.sock")
ep = select.epoll()
c = os.fork()
if c == 0:
    r, w = os.pipe()
    ep.register(r, select.EPOLLIN)
    if sys.argv[2] == "open":
        socket.send_fds(o, [b"r"], [r]); os.close(r)
    while True:
        time.sleep(1)
print("READY %d %d" % (os.getpid(), c), flush=True)
while True:
    time.sleep(1)'

# case_tree_sk_refuse open|queue (queue: a datagram from a named sender outside the
# tree, gone since; an unnamed one is sent again by a stand-in)
case_tree_sk_refuse() {
	command -p python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1] + "/outside.sock"); s.listen(1)
print("READY", flush=True); c, _ = s.accept(); time.sleep(300)' "$T" > "$T/outside.out" 2>&1 &
	track $!
	wait_line "$T/outside.out" '^READY' 10 || fail "the outside peer did not start"
	OUT=$T/r.out
	command -p python3 -c "$SK_REFUSE_TREE" "$T" "$1" < /dev/null > "$OUT" 2> "$T/r.err" &
	PID=$!; track "$PID"
	wait_line "$OUT" '^READY' "$OP_TIMEOUT" || fail "the program did not start: $(cat "$T/r.err")"
	local c; c=$(awk '/^READY/ { print $3 }' "$OUT"); track "$c"
	command -p python3 -c 'import socket, sys
x = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); x.bind(sys.argv[1] + "/x.sock")
x.sendto(b"o", sys.argv[1] + "/u.sock")' "$T" ||
		fail "cannot send the outside datagram"
	md refuse dump -t "$PID" -D "$T/d"
	expect_md_error
	local want=("datagram queued from a socket outside the tree")
	[[ $1 == open ]] && want=(
		"gone.sock connected: it is named and connected to a named socket, and no listening socket of the tree has its name"
		"watching fd [0-9]+, a file that no process of the tree holding the set has open as any fd"
		"outside.sock connected, socket:\\[[0-9]+\\]\\) is outside the tree")
	local w
	for w in "${want[@]}"; do
		grep -qE "$w" "$MD_ERR" || fail "the refusal does not say /$w/: $(cat "$MD_ERR")"
	done
	no_inventory "$T/d"
	tree_untouched "$PID" "$c"
}
add tree-sk-refuse case_tree_sk_refuse open
add tree-sk-refuse-queue case_tree_sk_refuse queue
