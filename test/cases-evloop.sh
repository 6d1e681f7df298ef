# Event-loop fds (issue 8): eventfd, timerfd, signalfd, epoll. Each target
# program checks its own fds after restore; the images must decode with crit
# (crit_decodes, run.sh) and `memdump show` must list them.

# shows DIR REGEX...: `memdump show -D DIR` prints every REGEX
shows() {
	local dir=$1; shift
	md show show -D "$dir" || fail "show failed: $(tail -n1 "$MD_ERR")"
	for re in "$@"; do
		grep -qE "$re" "$MD_OUT" || { show_file "show" "$MD_OUT"; fail "show does not print '$re'"; }
	done
}

# evloop_rst PROG SHOW_REGEX...: dump (killing), check images and show, restore twice
case_evloop_rst() {
	local prog=$1; shift
	start_prog "$prog"
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit_decodes "$T/d"
	shows "$T/d" "$@"
	restore_and_pass "$T/d" 1
	STATE_BEFORE=
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}

# evloop_lr PROG: --leave-running leaves every fd as it was
case_evloop_lr() {
	start_prog "$1"
	dump "$PID" "$T/d" --leave-running
	check_child_pass
}

add evloop-eventfd case_evloop_rst t-eventfd 'eventfd.count.5.semaphore' 'eventfd.count.4294967299'
add evloop-eventfd-lr case_evloop_lr t-eventfd

# An io_uring instance that is not mapped (python, io_uring_setup alone) stays
# refused, by name, before the target is seized.
case_evloop_refuse_iouring() {
	command -v python3 > /dev/null || { note "no python3: skipped"; return 0; }
	python3 -c '
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
params = (ctypes.c_char * 120)()
fd = libc.syscall(425, 4, params)   # io_uring_setup
if fd < 0:
    print("NOURING", ctypes.get_errno(), flush=True)
    time.sleep(60); sys.exit(0)
print("READY", os.getpid(), fd, flush=True)
time.sleep(60)' > "$T/u.out" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$T/u.out" '^(READY|NOURING)' 10 || fail "the io_uring program did not start"
	grep -q NOURING "$T/u.out" && { note "io_uring_setup refused here: skipped"; return 0; }
	md dump dump -t "$PID" -D "$T/d" --leave-running
	expect_md_error
	grep -qE "fd [0-9]+ \(anon_inode:\[io_uring\]: an io_uring instance \(SqHead 0, SqTail 0, CqHead 0, CqTail 0\), which memdump does not restore: no mapping of its rings \(IORING_SETUP_NO_MMAP, or unmapped\)\)" "$MD_ERR" ||
		fail "the error does not name the io_uring instance"
	no_inventory "$T/d"
	expect_untraced "$PID"
}
add evloop-refuse-iouring case_evloop_refuse_iouring

# t-iouring's ring (fixed file and buffer, 302 requests done, MODE's state)
# when a restore cannot make it again is refused with what it holds and why,
# before the seize: the program then finds its counters as it left them and
# does more I/O through the ring (docs/io_uring.md). kill: a killing dump,
# refused as early.
iouring_refusal() {
	local iou='fd 10 \(anon_inode:\[io_uring\]: an io_uring instance \(SqHead 30[23], SqTail 30[23], CqHead 30[23], CqTail 30[23]'
	local reg='1 registered files, 1 registered buffers\), which memdump does not restore'
	case $1 in
	sqpoll) echo "$iou, 1 SQPOLL thread, $reg: an SQPOLL thread\)$" ;;
	inflight) echo "$iou, 1 requests armed for poll, $reg: requests armed for poll, held by the kernel\)$" ;;
	shared) echo "$iou, $reg: the ring held by process [0-9]+ too \(each restored process would make a ring of its own\)\)$" ;;
	small) echo "$iou, $reg: too few entries to tell 64- from 128-byte SQEs \(IORING_SETUP_SQE128\) by its mapping\)$" ;;
	hidden) echo "thread [0-9]+ of process [0-9]+ holds io_uring instances registered by index \(IORING_REGISTER_RING_FDS, indexes 0x1\), which memdump does not restore yet$" ;;
	closed) echo "unsupported mapping 0x[0-9a-f]+-0x[0-9a-f]+ anon_inode:\[io_uring\]: an io_uring instance's (SQE array|SQ ring \(and CQ ring\)) mapped, which memdump does not map again yet$" ;;
	esac
}
# expect_refused_unharmed REGEX WHAT [kill]: a dump of $PID (killing with
# "kill", else --leave-running) is refused naming WHAT (REGEX), leaves no
# inventory, and the program runs on to its own check
expect_refused_unharmed() {
	if [[ ${3-} == kill ]]; then
		md dump dump -t "$PID" -D "$T/d"
	else
		md dump dump -t "$PID" -D "$T/d" --leave-running
	fi
	expect_md_error
	grep -qE -- "$1" "$MD_ERR" || fail "the error does not name $2 ($1)"
	no_inventory "$T/d"
	check_child_pass
}
iouring_enabled() {
	[[ $(cat /proc/sys/kernel/io_uring_disabled 2> /dev/null || echo 0) == 0 ]]
}
case_evloop_iouring_refuse() {
	local mode=$1 want; want=$(iouring_refusal "$1")
	iouring_enabled || { note "io_uring disabled here: skipped"; return 0; }
	start_prog t-iouring "$mode"
	expect_refused_unharmed "$want" "the ring's state" "${2-}"
	grep -qx "PASS $mode.*" "$OUT" || fail "t-iouring did not check its $mode ring"
}
for m in sqpoll inflight shared closed hidden small; do
	add "evloop-iouring-refuse-$m" case_evloop_iouring_refuse "$m"
done
add evloop-iouring-refuse-inflight-kill case_evloop_iouring_refuse inflight kill
add evloop-iouring-refuse-closed-kill case_evloop_iouring_refuse closed kill
add evloop-iouring-refuse-hidden-kill case_evloop_iouring_refuse hidden kill

# A ring with nothing in the kernel is dumped and made again by the restorer
# blob (issue 24; nosqarray: a ring without an SQ index array, which no flag
# shows, restored with an identity array): t-iouring, after the restore, reaps its pending CQE
# (user_data 77), submits its queued SQE (restore, pending, unsubmitted),
# writes and reads through the fixed file and buffer, finds every counter
# advanced by exactly what it did and fdinfo's cached counters equal to the
# shared ones; the ring's mappings are at their addresses (maps compared).
case_evloop_iouring_restore() {
	local mode=$1 before after
	iouring_enabled || { note "io_uring disabled here: skipped"; return 0; }
	start_prog t-iouring "$mode"
	before=$(grep -F 'anon_inode:[io_uring]' "/proc/$PID/maps" | awk '{print $1, $2, $3}')
	[[ -n $before ]] || fail "t-iouring has no ring mapped"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit_decodes "$T/d"
	md show show -D "$T/d" || fail "show failed: $(tail -n1 "$MD_ERR")"
	grep -qE "^io_uring   fd 10: 64/128 entries, 30[23] requests done, 1 registered file\(s\), 1 registered buffer\(s\), mapped 0x" "$MD_OUT" ||
		fail "show does not list the ring: $(grep io_uring "$MD_OUT")"
	md lazy restore -D "$T/d" -d --lazy-pages
	expect_md_error
	grep -qF "has an io_uring ring (fd 10), which restore --lazy-pages does not restore" "$MD_ERR" ||
		fail "restore --lazy-pages does not refuse the ring by name"
	alive "$PID" && fail "the refused lazy restore left pid $PID"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	after=$(grep -F 'anon_inode:[io_uring]' "/proc/$PID/maps" | awk '{print $1, $2, $3}')
	[[ $after == "$before" ]] || fail "the ring's mappings moved: $before / $after"
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC, want 0 (the program's status)"
	grep -qx "PASS $mode" "$OUT" || fail "t-iouring: $(grep -m1 -E 'PASS|FAIL' "$OUT")"
}
for m in restore plain pending unsubmitted nosqarray; do
	add "evloop-iouring-restore-$m" case_evloop_iouring_restore "$m"
done

# A userfaultfd of the process's own (t-uffdserve: a handler thread serving MISSING
# faults, page 3 with the zero page, a WP range with 2 pages protected; issue 24)
# is dumped and made again by the restorer blob: after the restore the handler
# serves the pages never served (each page once: the zero page is still there),
# the write to protected page 2 is reported, the one to page 3 is not.
case_evloop_uffd() {
	start_prog t-uffdserve idle
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit_decodes "$T/d"
	md lazy restore -D "$T/d" -d --lazy-pages
	expect_md_error
	grep -qF "has a userfaultfd of its own (fd 9), which restore --lazy-pages does not restore" "$MD_ERR" ||
		fail "restore --lazy-pages does not refuse the userfaultfd by name"
	alive "$PID" && fail "the refused lazy restore left pid $PID"
	restore_and_pass "$T/d" 1
	grep -qx "PASS idle 16 served, 1 WP report" "$OUT" || fail "t-uffdserve: $(grep -m1 PASS "$OUT")"
}
add evloop-uffd case_evloop_uffd

# With a fault in flight (pending: unread by the handler) it is refused, naming
# its features, flags, ranges and protected pages; the program, unharmed,
# serves its faults after.
uffd_refusal() {
	echo "fd 9 \(anon_inode:\[userfaultfd\]: a userfaultfd \(features 0x100, O_NONBLOCK, O_CLOEXEC, 1 faults pending, not read by its handler, 1 MISSING ranges, 1 WP ranges, 2 pages write-protected; the ranges are the process's, of every userfaultfd it has\) with faults in flight \(fdinfo pending/total\), which a restore cannot give back\)"
}
case_evloop_uffd_refuse() {
	local mode=$1 want; want=$(uffd_refusal "$1")
	start_prog t-uffdserve "$mode"
	expect_refused_unharmed "$want" "the userfaultfd's state" "${2-}"
	grep -qx "PASS $mode 16 served, 1 WP report" "$OUT" || fail "t-uffdserve did not serve its faults"
}
add evloop-uffd-refuse-pending case_evloop_uffd_refuse pending
add evloop-uffd-refuse-pending-kill case_evloop_uffd_refuse pending kill

# A MISSING range locked by mlock (not MLOCK_ONFAULT): no order of mlock and
# register keeps its absent pages exact, so it is refused by name.
case_evloop_uffd_refuse_locked() {
	start_prog t-uffdserve locked
	expect_refused_unharmed "fd 9 \(anon_inode:\[userfaultfd\]: a userfaultfd \(features 0x100, O_NONBLOCK, O_CLOEXEC, 1 MISSING ranges, 1 WP ranges, 2 pages write-protected; .*\) with a MISSING range locked by mlock \(not MLOCK_ONFAULT\)" \
		"the locked MISSING range" kill
	grep -qx "PASS locked 16 served, 1 WP report" "$OUT" || fail "t-uffdserve did not serve its faults"
}
add evloop-uffd-refuse-locked-kill case_evloop_uffd_refuse_locked

# t-timerfd's absolute timer (READY + 2 s) expires while the process is dumped.
case_evloop_timerfd() {
	start_prog t-timerfd
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit_decodes "$T/d"
	shows "$T/d" 'TIMERFD.*clock.1.in.0[.][0-9]+.s,.every.0[.]100000000.s,.([2-9]|[1-9][0-9]+).tick' 'clock.0.in.*absolute' \
		'clock.1.disarmed,.1.tick' 'clock.7.disarmed,.0.tick'
	sleep 2.5
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}

case_evloop_timerfd_lr() {
	start_prog t-timerfd
	dump "$PID" "$T/d" --leave-running
	sleep 2.5
	check_child_pass
}
add evloop-timerfd case_evloop_timerfd
add evloop-timerfd-lr case_evloop_timerfd_lr

add evloop-signalfd case_evloop_rst t-signalfd 'SIGNALFD.*signalfd.mask.0x800000800' 'signalfd.mask.0x1$'
add evloop-signalfd-lr case_evloop_lr t-signalfd

add evloop-epoll case_evloop_rst t-epoll '20.*EVENTPOLL.*epoll,.3.target' '[:;].fd.10.events.0x19.data.0x1010(;|$)' 'fd.11.events.0x8000001c.data.0x1111.ET(;|$)' 'fd.21.events.0x19.data.0x2121' 'fd.12.events.0x80000019.data.0x1212.ET.\(edge.taken\)' 'fd.13.events.0x40000019.data.0x1313.ONESHOT(;|$)' 'fd.13.events.0x10000019.data.0x2213.EXCLUSIVE'
add evloop-epoll-lr case_evloop_lr t-epoll

# Registrations whose fd the process closed since, the file still open as
# another fd (one number closed, one reused by another file): restored on
# their own numbers (issue 24), the fd table as it was.
add evloop-epoll-closed case_evloop_rst t-epollgone \
	'fd.40.events.0x19.data.0x4040.\(closed.since:.the.file.of.fd.10\)' \
	'fd.41.events.0x19.data.0x4141.\(closed.since:.the.file.of.fd.12\)' \
	'fd.41.events.0x19.data.0x4142(;|$)' 'fd.10.events.0x19.data.0x1010(;|$)'
add evloop-epoll-closed-lr case_evloop_lr t-epollgone

# A registration whose file the process has open as no fd (only a process
# outside holds it) cannot be recreated: refused by name before the seize.
case_evloop_epoll_nowhere() {
	start_prog t-epollgone nowhere
	md dump dump -t "$PID" -D "$T/d" --leave-running
	expect_md_error
	grep -qE "fd 20 \(anon_inode:\[eventpoll\]: an epoll set watching fd 42, a file the process no longer has open as any fd" "$MD_ERR" ||
		fail "the error does not name the registration: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	expect_untraced "$PID"
}
add evloop-epoll-nowhere case_evloop_epoll_nowhere

# ---- real event loops

# real_loop_start NAME CMD...: start CMD OUT STEPS DELAY in the background
# after a reference run (delay 0); waits for 15 lines. Sets PID.
real_loop_start() {
	local name=$1; shift
	"$@" "$T/ref.txt" 60 0 > /dev/null 2>&1 || fail "$name: reference run failed"
	"$@" "$T/run.txt" 60 "$REAL_DELAY" > "$T/real.out" 2> "$T/real.err" < /dev/null &
	PID=$!; track "$PID"
	wait_until 20 eval '(( $(wc -l 2>/dev/null < $T/run.txt || echo 0) >= 15 ))' ||
		fail "$name did not start"
}

# real_loop_same NAME: the output is exactly an uninterrupted run's
real_loop_same() {
	cmp -s "$T/ref.txt" "$T/run.txt" || {
		diff "$T/ref.txt" "$T/run.txt" | head -n 10 | sed 's/^/#   /'
		fail "$1: output differs from an uninterrupted run"
	}
	grep -q '^DONE' "$T/real.out" || fail "$1 did not print DONE"
}

# node's setInterval on libuv: epoll, eventfds and pipes; killed mid-run,
# restored, or dumped --leave-running, it finishes as if uninterrupted.
case_real_node() {
	REAL_SHOWS='EVENTPOLL EVENTFD' case_real_loop node 50 "$1" node "$TESTSRC/interval.js"
}

# asyncio: epoll, and a UNIX socketpair as its self-pipe; killed mid-run and
# restored, it finishes as if uninterrupted.
case_real_asyncio() {
	local py; py=$(python3 -c 'import sys; print(sys.executable)')
	REAL_DELAY=0.05 real_loop_start asyncio "$py" "$TESTSRC/aio.py"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_to_completion asyncio "$T/real.err"
	real_loop_same asyncio
}

if command -v node > /dev/null; then
	add real-node-interval case_real_node kill
	add real-node-interval-lr case_real_node lr
	add real-node-compute case_real_loop node-compute 50 kill node "$TESTSRC/compute.js"
	add real-node-compute-lr case_real_loop node-compute 50 lr node "$TESTSRC/compute.js"
else
	echo "# node not on PATH: real-node-* cases skipped"
fi
python3 -c 'import asyncio' 2> /dev/null && add real-python-asyncio case_real_asyncio

# case_real_loop NAME DELAY kill|lr CMD...: a real program's loop (CMD OUT
# STEPS DELAY) dumped mid-run, killed and restored or left running, finishes
# with exactly the output of an uninterrupted run; $REAL_SHOWS: words `show`
# must print for the killing dump's images.
case_real_loop() {
	local name=$1 delay=$2 how=$3; shift 3
	REAL_DELAY=$delay real_loop_start "$name" "$@"
	if [[ $how == lr ]]; then
		dump "$PID" "$T/d" --leave-running
		wait_until 30 eval '! alive '"$PID" || fail "$name did not finish"
		wait "$PID" || fail "$name exited with $?"
	else
		dump "$PID" "$T/d"
		expect_killed "$PID"
		(( $(wc -l < "$T/run.txt") < 60 )) || fail "$name finished before the dump"
		# shellcheck disable=SC2086
		[[ -z ${REAL_SHOWS:-} ]] || shows "$T/d" $REAL_SHOWS
		restore_to_completion "$name" "$T/real.err"
	fi
	real_loop_same "$name"
}

# ruby: a worker thread fed through Queues (condition variables, ruby's timer thread)
if command -v ruby > /dev/null; then
	add real-ruby case_real_loop ruby 0.05 kill ruby "$TESTSRC/tick.rb"
	add real-ruby-lr case_real_loop ruby 0.05 lr ruby "$TESTSRC/tick.rb"
else
	echo "# ruby not on PATH: real-ruby cases skipped"
fi

# Go: a time.Ticker and a goroutine (the runtime's threads, netpoller, signals)
case_real_go() {
	command -v go > /dev/null || fail "go is not installed"
	HOME=$T GOCACHE=$T/gocache GOPATH=$T/gopath \
		go build -o "$T/ticker" "$TESTSRC/ticker.go" > "$T/go.out" 2>&1 ||
		{ show_file "go build" "$T/go.out"; fail "go build failed"; }
	case_real_loop go 50 "$1" "$T/ticker"
}
if command -v go > /dev/null; then
	add real-go-ticker case_real_go kill
	add real-go-ticker-lr case_real_go lr
else
	echo "# go not on PATH: real-go cases skipped"
fi

# tail -f on a file a writer appends to: dumped mid-run and restored, it
# prints every line once. The writer pauses while tail is down: a file that
# grew between dump and restore is refused by restore (as CRIU does: the size
# of every open file must be the dumped one).
case_real_tail() {
	: > "$T/grow.txt"
	tail -n +1 -f "$T/grow.txt" > "$T/tail.out" 2> "$T/tail.err" < /dev/null &
	PID=$!; track "$PID"
	local i
	for i in $(seq 0 49); do echo "line $i" >> "$T/grow.txt"; sleep 0.01; done
	wait_until 10 eval '(( $(wc -l < "$T/tail.out") == 50 ))' || fail "tail did not follow"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_bg "$T/d" 1
	wait_until "$OP_TIMEOUT" eval '[[ -s $RPIDFILE ]]' || fail "tail was not restored"
	for i in $(seq 50 99); do echo "line $i" >> "$T/grow.txt"; sleep 0.01; done
	wait_until 10 eval '(( $(wc -l < "$T/tail.out") >= 100 ))' ||
		fail "the restored tail printed $(wc -l < "$T/tail.out") of 100 lines"
	kill "$PID"
	wait_restore_exit
	seq 0 99 | sed 's/^/line /' | cmp -s - "$T/tail.out" ||
		fail "tail's output is not every line once, in order"
}
add real-tail-f case_real_tail

# pidfds (src/files/pidfd.c): of itself and of its child (opened again by the
# restored process on the restored PIDs), of two processes that had exited
# (made anew, sharing an inode as before); refused for a process outside the dump.
case_pidfd_refuse_outside() {
	python3 -c '
import os, time
fd = os.pidfd_open(os.getppid())
print("READY", os.getpid(), os.getppid(), flush=True)
time.sleep(60)' > "$T/p.out" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$T/p.out" '^READY' "$OP_TIMEOUT" || fail "the pidfd program did not start"
	local ppid; ppid=$(awk '/^READY/ {print $3}' "$T/p.out")
	md dump dump -t "$PID" -D "$T/d" --leave-running
	expect_md_error
	grep -qE "a pidfd of process $ppid, which is not dumped with it" "$MD_ERR" ||
		fail "the error does not name the pidfd of process $ppid"
	no_inventory "$T/d"
	expect_untraced "$PID"
}
add evloop-pidfd case_evloop_rst t-pidfd 'pidfd.of.process.[0-9]+' 'pidfd.of.a.process.that.had.exited'
add evloop-pidfd-lr case_evloop_lr t-pidfd
add evloop-pidfd-refuse case_pidfd_refuse_outside

# An inotify watch on a file whose dentry was dropped (only the watch keeps the
# inode): open_by_handle_at gives a disconnected dentry that reads back as "/".
# The dump finds the file's path below the process's cwd (inotify04 of CRIU's
# tests was restored watching "/", then lost), and the watch still reports.
case_inotify_dropped_dentry() {
	mkdir -p "$T/w/sub"
	: > "$T/w/sub/watched"
	start_py inodrop '
import ctypes, os, select, signal, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
os.chdir(sys.argv[1])
fd = libc.inotify_init1(os.O_NONBLOCK)
wd = libc.inotify_add_watch(fd, b"sub/watched", 0x2)	# IN_MODIFY
print("READY", os.getpid(), flush=True)
while not got:
    signal.pause()
with open("sub/watched", "a") as f:
    f.write("x")
r, _, _ = select.select([fd], [], [], 5)
ev = os.read(fd, 4096) if r else b""
ok = len(ev) >= 16 and struct.unpack("iIII", ev[:16])[:2] == (wd, 0x2)
print("PASS" if ok else "FAIL events %r" % ev, flush=True)' "$T/w"
	echo 2 > /proc/sys/vm/drop_caches
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add inotify-dropped-dentry case_inotify_dropped_dentry

# ---- fanotify (zdtm fanotify00)

# Two groups: their init and event flags, inode and mount marks with masks,
# ignored masks (FAN_MARK_IGNORED_MASK with FAN_MARK_IGNORED_SURV_MODIFY, and
# FAN_MARK_IGNORE) restored as fdinfo showed them, and their events after
# (t-fanotify); the restore's own events on the marked mount read away.
add fanotify-rst case_f2_rst t-fanotify
add fanotify-lr case_f2_lr t-fanotify

# case_fanotify_refuse MODE WHAT: t-fanotify MODE's fd 12 refused by name, before the seize.
case_fanotify_refuse() {
	start_prog t-fanotify "$1"
	md dump dump -t "$PID" -D "$T/d" --leave-running
	expect_md_error
	grep -qE "fd 12 \(anon_inode:\[fanotify\]: $2" "$MD_ERR" ||
		fail "the error does not name the fanotify group: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	expect_untraced "$PID"
}
add fanotify-perm case_fanotify_refuse perm 'a fanotify group that gets permission events'
add fanotify-fs case_fanotify_refuse fs 'a fanotify mark memdump cannot restore .*on a whole filesystem'
