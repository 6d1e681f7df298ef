# Files in flight (issue 24): fds carried by messages queued on UNIX sockets
# (SCM_RIGHTS) are dumped with the queue and sent again with their message;
# those memdump cannot dump are refused by name, the target left as it was.

# scm_rst MODE: t-scm (dgram, seqpacket, stream) dumped (killing), restored twice
# from the same images; the program receives every message and checks its fds.
case_scm_rst() {
	start_prog t-scm "$1"
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit_decodes "$T/d"
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add scm-rst-dgram case_scm_rst dgram
add scm-rst-seqpacket case_scm_rst seqpacket
add scm-rst-stream case_scm_rst stream

# Event-loop files only in flight (t-scmev): epoll sets with their registrations (one on
# a number closed since, a taken edge), an eventfd, timerfds, a signalfd; dumped
# (killing), restored twice; the program receives each and checks it.
case_scm_evloop() {
	start_prog t-scmev "$@"
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit_decodes "$T/d"
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add scm-rst-evloop case_scm_evloop
# the same on a socketpair: made again by the process with its peer credentials, then
# the sets in flight filled with the new ends (zdtm scm05)
add scm-rst-evloop-pair case_scm_evloop pair

# --leave-running: the queue and the files in flight are the target's still.
case_scm_lr() {
	start_prog t-scm "$1"
	dump "$PID" "$T/d" --leave-running
	check_child_pass
}
add scm-lr-dgram case_scm_lr dgram
add scm-lr-stream case_scm_lr stream

# scm_refused KIND: a file only in flight that memdump cannot dump (a pidfd, a UNIX
# socket no process holds, a file whose description holds an flock, an epoll set
# watching a pipe only in flight too) is refused naming the socket and the file; the
# target runs on untraced and still receives its message with the fd.
SCM_REFUSED='
import fcntl, os, signal, socket, sys
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
fds = []
if sys.argv[1] == "pidfd":
    f = os.pidfd_open(os.getpid())
elif sys.argv[1] == "epoll":
    import select
    r, w = os.pipe()
    e = select.epoll()
    e.register(r, select.EPOLLIN)
    f = os.dup(e.fileno())
    e.close()
    fds = [r]
elif sys.argv[1] == "flock":
    f = os.open(sys.argv[2], os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(f, fcntl.LOCK_EX)
else:
    f = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).detach()
socket.send_fds(a, [b"msg"], [f] + fds)
for x in [f] + fds:
    os.close(x)
print("READY", os.getpid(), b.fileno(), flush=True)
while not got:
    signal.pause()
data, fds, _, _ = socket.recv_fds(b, 100, 4)
link = os.readlink("/proc/self/fd/%d" % fds[0]) if len(fds) == 1 else "none"
ok = data == b"msg" and len(fds) == (2 if sys.argv[1] == "epoll" else 1)
if ok and sys.argv[1] == "pidfd":
    ok = os.readlink("/proc/self/fd/%d" % fds[0]) == "anon_inode:[pidfd]"
if ok and sys.argv[1] == "flock":
    try:
        fcntl.flock(os.open(sys.argv[2], os.O_RDONLY), fcntl.LOCK_EX | fcntl.LOCK_NB)
        ok = False
    except BlockingIOError:
        pass
print("PASS" if ok else "FAIL %r %r %s" % (data, fds, link), flush=True)'
case_scm_refused() {
	local want
	start_py scm-refused "$SCM_REFUSED" "$1" "$T/locked"
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	want='that is an anonymous-inode file no process of the dump holds \(anon_inode:\[pidfd\]\)'
	[[ $1 == socket ]] && want='that is a socket no process of the dump holds \(socket:\[[0-9]+\]\)'
	[[ $1 == flock ]] && want="that is a file with a lock \\(flock, OFD\\) no process of the dump holds \\($T/locked\\)"
	[[ $1 == epoll ]] && want='an epoll set in flight \(SCM_RIGHTS\) watches fd [0-9]+, a file that process [0-9]+ does not hold as any fd'
	[[ $1 == epoll ]] || want="UNIX socket [0-9]+ has a file descriptor in flight \\(SCM_RIGHTS\\) $want"
	grep -qE "$want" "$MD_ERR" || fail "the error does not name the file in flight"
	no_inventory "$T/d"
	expect_untraced "$PID"
	check_child_pass
}
add scm-refused-pidfd case_scm_refused pidfd
add scm-refused-epoll case_scm_refused epoll
add scm-refused-socket case_scm_refused socket
add scm-refused-flock case_scm_refused flock

# scm_killed POINT: every memdump process SIGKILLed at POINT of a killing dump,
# while memdump holds its copies of the files in flight: the target runs on
# untraced, and every message still carries its files (t-scm checks them all).
case_scm_killed() {
	local point=$1 w
	start_prog t-scm dgram
	MD_ERR=$T/md.dump.err
	mkdir -p "$T/d"
	MEMDUMP_FAULT=$point "$MEMDUMP" dump -t "$PID" -D "$T/d" -v 3 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point $point" "$OP_TIMEOUT" || fail "the dump never reached $point"
	w=$(pgrep -P "$mdpid")
	[[ -n $w ]] || fail "memdump $mdpid has no worker process"
	ls -l /proc/$w/fd | grep -q 'pipe:' || fail "memdump's worker holds no pipe in flight at $point"
	kill -STOP "$mdpid" $w
	kill -9 "$mdpid" $w
	note "killed memdump $mdpid and its worker $w at $point"
	wait "$mdpid" 2> /dev/null
	alive "$PID" || fail "the target died with memdump"
	expect_untraced "$PID"
	check_child_pass
}
add scm-killed-infected case_scm_killed infected
add scm-killed-written case_scm_killed images-written

# A tree (issue 24): parent P and child C, a socketpair between them (P keeps one
# end, C the other), messages queued both ways at the dump. P's to C carries the
# write end of a pipe both hold, a file only P holds (opened after the fork) and a
# file both hold; C's to P a file only C holds and the read end of a pipe only in
# flight (C keeps the write end). After the restore each file must be the same
# open file description as before: flags and offsets changed through the received
# fd are seen through the held one, in the other process too, and the pipe in
# flight carries what C writes after the restore.
SCM_TREE='import fcntl, os, signal, socket, sys, time
usr1 = []
signal.signal(signal.SIGUSR1, lambda *x: usr1.append(1))
d, kind = sys.argv[1], getattr(socket, sys.argv[2])
a, b = socket.socketpair(socket.AF_UNIX, kind)
pr, pw = os.pipe()
f = os.open(d + "/both", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(f, b"0123456789"); os.lseek(f, 3, os.SEEK_SET)
ctl_r, ctl_w = os.pipe()
ack_r, ack_w = os.pipe()
c = os.fork()
if c == 0:
    a.close()
    h = os.open(d + "/child", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(h, b"child")
    qr, qw = os.pipe()
    socket.send_fds(b, [b"c2p"], [h, qr])
    os.close(qr)
    os.write(ack_w, b"1")
    os.read(ctl_r, 1)
    b.settimeout(10)
    data, fds, _, _ = socket.recv_fds(b, 100, 4)
    bad = []
    if data != b"p2c" or len(fds) != 3:
        bad.append("got %r %r" % (data, fds))
    else:
        fcntl.fcntl(fds[0], fcntl.F_SETFL, os.O_NONBLOCK)
        if not fcntl.fcntl(pw, fcntl.F_GETFL) & os.O_NONBLOCK:
            bad.append("the pipe end in flight is not the held one")
        if os.lseek(fds[1], 0, os.SEEK_CUR) != 6:
            bad.append("the parent-only file is at %d" % os.lseek(fds[1], 0, os.SEEK_CUR))
        os.write(fds[1], b"Z")
        if os.lseek(fds[2], 0, os.SEEK_CUR) != 3:
            bad.append("the shared file is at %d" % os.lseek(fds[2], 0, os.SEEK_CUR))
        os.lseek(fds[2], 8, os.SEEK_SET)
        if os.lseek(f, 0, os.SEEK_CUR) != 8:
            bad.append("the shared file in flight is not the held one")
    os.write(qw, b"Q")
    os.read(ctl_r, 1)
    if os.lseek(h, 0, os.SEEK_CUR) != 6:
        bad.append("the child-only file in flight is not the held one")
    os.write(ack_w, ("; ".join(bad) or "ok").encode())
    os._exit(0)
b.close()
g = os.open(d + "/parent", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(g, b"parent")
socket.send_fds(a, [b"p2c"], [pw, g, f])
os.read(ack_r, 1)
print("READY %d %d" % (os.getpid(), c), flush=True)
while not usr1:
    time.sleep(0.01)
os.write(ctl_w, b"g")
a.settimeout(10)
data, fds, _, _ = socket.recv_fds(a, 100, 4)
bad = []
if data != b"c2p" or len(fds) != 2:
    bad.append("got %r %r" % (data, fds))
else:
    if os.lseek(fds[0], 0, os.SEEK_CUR) != 5:
        bad.append("the child-only file is at %d" % os.lseek(fds[0], 0, os.SEEK_CUR))
    os.write(fds[0], b"X")
os.write(ctl_w, b"2")
child = os.read(ack_r, 1000).decode()
if len(fds) == 2 and os.read(fds[1], 1) != b"Q":
    bad.append("the pipe only in flight is not the child one")
if os.lseek(g, 0, os.SEEK_CUR) != 7:
    bad.append("the parent-only file in flight is not the held one")
_, st = os.waitpid(c, 0)
ok = not bad and child == "ok" and st == 0
print("PASS" if ok else "FAIL parent: %s; child: %s; status %d" % (bad, child, st), flush=True)'

# scm_tree TYPE: the tree above dumped (killing), its images decoded, restored.
case_scm_tree() {
	py_pair_rst "$SCM_TREE" "$T" "$1"
	crit_decodes "$T/d"
	py_pair_pass
}
add scm-tree-stream case_scm_tree SOCK_STREAM
add scm-tree-dgram case_scm_tree SOCK_DGRAM
add scm-tree-seqpacket case_scm_tree SOCK_SEQPACKET

# --leave-running: the tree's queues and their files are its own still.
case_scm_tree_lr() {
	start_py scm-tree-lr "$SCM_TREE" "$T" SOCK_STREAM
	track "$(awk '/^READY/ { print $3 }' "$OUT")"
	dump "$PID" "$T/d" --leave-running
	check_child_pass
}
add scm-tree-lr case_scm_tree_lr

# A file only in flight on sockets of two processes of a tree (P sent a pipe's read
# end to C and to itself, then closed it): the two sets would each make a pipe of
# their own, so the dump refuses it naming the socket and the other process; the
# tree runs on untraced and both still receive that pipe.
SCM_TREE_TWICE='import os, signal, socket, time
usr1 = []
signal.signal(signal.SIGUSR1, lambda *x: usr1.append(1))
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
c, e = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
xr, xw = os.pipe()
ino = os.fstat(xr).st_ino
ctl_r, ctl_w = os.pipe()
ack_r, ack_w = os.pipe()
k = os.fork()
if k == 0:
    a.close(); c.close(); e.close(); os.close(xr); os.close(xw)
    os.read(ctl_r, 1)
    _, fds, _, _ = socket.recv_fds(b, 10, 1)
    os.write(ack_w, b"ok" if len(fds) == 1 and os.fstat(fds[0]).st_ino == ino else b"no")
    os._exit(0)
b.close()
socket.send_fds(a, [b"x"], [xr])
socket.send_fds(c, [b"x"], [xr])
os.close(xr)
time.sleep(0.2)
print("READY %d %d" % (os.getpid(), k), flush=True)
while not usr1:
    time.sleep(0.01)
os.write(ctl_w, b"g")
_, fds, _, _ = socket.recv_fds(e, 10, 1)
child = os.read(ack_r, 2)
ok = child == b"ok" and len(fds) == 1 and os.fstat(fds[0]).st_ino == ino
print("PASS" if ok else "FAIL child %r, parent %r" % (child, fds), flush=True)'

case_scm_tree_twice() {
	local child
	start_py scm-tree-twice "$SCM_TREE_TWICE"
	child=$(awk '/^READY/ { print $3 }' "$OUT"); track "$child"
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qE "UNIX socket [0-9]+ has a file descriptor in flight \(SCM_RIGHTS\) that is in flight on a socket of process $PID of the tree too" "$MD_ERR" ||
		fail "the error does not name the file in flight twice"
	no_inventory "$T/d"
	expect_untraced "$child"
	check_child_pass
}
add scm-tree-refused-twice case_scm_tree_twice

# A pidfd in flight to the child that only the parent holds: the restored parent
# opens its pidfd itself, memdump would have nothing to send; refused naming the
# socket, the parent and its fd, the tree left running.
SCM_TREE_PIDFD='import os, signal, socket, time
usr1 = []
signal.signal(signal.SIGUSR1, lambda *x: usr1.append(1))
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
ctl_r, ctl_w = os.pipe()
ack_r, ack_w = os.pipe()
k = os.fork()
if k == 0:
    a.close()
    os.read(ctl_r, 1)
    _, fds, _, _ = socket.recv_fds(b, 10, 1)
    ok = len(fds) == 1 and os.readlink("/proc/self/fd/%d" % fds[0]) == "anon_inode:[pidfd]"
    os.write(ack_w, b"ok" if ok else b"no")
    os._exit(0)
b.close()
pfd = os.pidfd_open(os.getpid())
socket.send_fds(a, [b"x"], [pfd])
print("READY %d %d %d" % (os.getpid(), k, pfd), flush=True)
while not usr1:
    time.sleep(0.01)
os.write(ctl_w, b"g")
child = os.read(ack_r, 2)
print("PASS" if child == b"ok" else "FAIL child %r" % child, flush=True)'

case_scm_tree_pidfd() {
	local child fd
	start_py scm-tree-pidfd "$SCM_TREE_PIDFD"
	child=$(awk '/^READY/ { print $3 }' "$OUT"); track "$child"
	fd=$(awk '/^READY/ { print $4 }' "$OUT")
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qE "UNIX socket [0-9]+ has a file descriptor in flight \(SCM_RIGHTS\) that is a pidfd process $PID of the tree holds as fd $fd, which the restored process opens itself" "$MD_ERR" ||
		fail "the error does not name the pidfd in flight"
	no_inventory "$T/d"
	expect_untraced "$child"
	check_child_pass
}
add scm-tree-refused-pidfd case_scm_tree_pidfd
