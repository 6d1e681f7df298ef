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
	start_prog t-scmev
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit_decodes "$T/d"
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add scm-rst-evloop case_scm_evloop

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
