# Dump-time refusals (src/dump/refuse.c): found before the target is seized,
# all listed in one error line, the target left running and untraced.

# first_child PID: the PID of a child of PID, once it has one
first_child() { cat "/proc/$1/task/$1/children" 2>/dev/null | awk '{print $1}'; }
has_child() { [[ -n $(first_child "$1") ]]; }

# expect_dump_refused PID REGEX...: dump of PID fails once, naming every REGEX
expect_dump_refused() {
	local pid=$1; shift
	md dump dump -t "$pid" -D "$T/d" --leave-running
	(( MD_RC != 124 )) || fail "the dump hung until its timeout (refused only then)"
	expect_md_error
	for re in "$@"; do
		grep -qE "$re" "$MD_ERR" || fail "the error does not say '$re'"
	done
	no_inventory "$T/d"
}

# a child in a namespace of its own: the tree's restore would put it in its parent's
case_refuse_children() {
	bash -c 'unshare --uts sleep 300 & wait' < /dev/null > /dev/null 2>&1 &
	PID=$!; track "$PID"
	wait_until 5 eval '[[ $(cat /proc/$(first_child '"$PID"')/comm 2> /dev/null) == sleep ]]' ||
		fail "no child appeared"
	local child; child=$(first_child "$PID"); track "$child"
	md dump dump -t "$PID" -D "$T/d" --leave-running
	expect_md_error
	grep -qE "process $child \(sleep\) of the tree of $PID is in another uts namespace than it" \
		"$MD_ERR" || fail "the error does not name the child's namespace"
	no_inventory "$T/d"
	expect_untraced "$PID"
	expect_untraced "$child"
}

# everything the tree holds, in one line: the root's reasons, then each child's
# (a root directory removed: a restore has no root to put them in)
REFUSE_TWO='
import os, signal, sys
os.chroot(sys.argv[1])
os.chdir("/")
if os.fork() == 0:
    signal.pause()
print("READY", os.getpid(), flush=True)
signal.pause()'
case_refuse_two() {
	mkdir "$T/jail"
	start_py refuse-two "$REFUSE_TWO" "$T/jail"
	wait_until 5 has_child "$PID" || fail "no child appeared"
	local child; child=$(first_child "$PID"); track "$child"
	rmdir "$T/jail"
	expect_dump_refused "$PID" "process $PID holds state memdump cannot dump: .*a deleted root \\($T/jail \\(deleted\\)\\)" \
		"process $child \\(python3\\): .*a deleted root \\($T/jail \\(deleted\\)\\)"
	expect_untraced "$PID"
	expect_untraced "$child"
}

case_refuse_init() {
	local t0; t0=$(now_ms)
	expect_dump_refused 1 "process 1 .*is init: memdump does not dump PID 1"
	(( $(now_ms) - t0 < 5000 )) || fail "refusing PID 1 took more than 5 s"
	[[ $(proc_field 1 TracerPid) == 0 ]] || fail "init is traced"
}

# the init of a PID namespace two levels below memdump's: refused by name
case_refuse_pidns() {
	unshare --pid --fork unshare --pid --fork sleep 300 < /dev/null > /dev/null 2>&1 &
	local u=$!; track "$u"
	wait_until 5 eval '[[ -n $(first_child $(first_child '"$u"')) ]]' || fail "unshare started no child"
	PID=$(first_child "$(first_child "$u")"); track "$PID"
	expect_dump_refused "$PID" "in a PID namespace of which it is not the init \(NSpid of more than two levels\)"
	expect_untraced "$PID"
}

add refuse-children case_refuse_children
add refuse-two-at-once case_refuse_two
add refuse-init case_refuse_init
add refuse-pidns case_refuse_pidns

# Rlimits come from /proc/PID/limits and are restored exactly.
case_rst_rlimits() {
	OUT=$T/t-pattern.out
	prlimit --core=4096:8192 --nofile=100:200 --nproc=500:600 "$TESTBIN/t-pattern" "$T" 1 \
		> "$OUT" 2> /dev/null < /dev/null &
	track $!
	wait_line "$OUT" "^READY " "$OP_TIMEOUT" || fail "t-pattern did not become READY"
	PID=$(awk '/^READY/{print $2; exit}' "$OUT"); track "$PID"
	cp "/proc/$PID/limits" "$T/limits.before"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	diff "$T/limits.before" "/proc/$PID/limits" > "$T/limits.diff" ||
		{ show_file "limits diff" "$T/limits.diff"; fail "rlimits differ after restore"; }
	grep -q "^Max open files  *100  *200 " "$T/limits.before" || fail "prlimit did not apply"
}
add rst-rlimits case_rst_rlimits

# File locks and leases are restored (cases-files2.sh, cases-fkinds.sh), and
# leases being broken too (cases-leases.sh).

# A SIGSTOPped target stays stopped with --leave-running and comes back stopped.
case_rst_stopped() {
	start_prog t-pattern
	kill -STOP "$PID"
	wait_until 5 eval '[[ $(proc_state '"$PID"') == T ]]' || fail "target did not stop"
	dump "$PID" "$T/lr" --leave-running
	[[ $(proc_state "$PID") == T ]] || fail "stopped target is $(proc_field "$PID" State) after --leave-running"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	# not through md: timeout's own process group would be left orphaned
	# with a stopped member, which the kernel sends SIGHUP
	timeout --foreground -k 5 "$OP_TIMEOUT" "$MEMDUMP" restore -D "$T/d" -d > "$T/r.out" 2>&1 ||
		fail "restore -d failed: $(tail -n1 "$T/r.out")"
	track "$PID"
	wait_until 5 eval '[[ $(proc_state '"$PID"') == T ]]' ||
		fail "restored process is $(proc_field "$PID" State), not stopped"
	[[ $(proc_field "$PID" TracerPid) == 0 ]] || fail "restored process is still traced"
	kill -CONT "$PID"
	kill -USR1 "$PID"
	get_result "$OUT"
}

add rst-stopped case_rst_stopped

# Another process in the target's session (not its child) keeps the SID in use.
case_refuse_session_holder() {
	setsid sh -c '(sleep 300 < /dev/null > /dev/null 2>&1 &); exec sleep 301' < /dev/null > /dev/null 2>&1 &
	PID=$!
	track "$PID"
	local holder=""
	wait_until 5 eval 'holder=$(pgrep -s '"$PID"' -x sleep | grep -vx '"$PID"' | head -n1); [[ -n $holder ]]' ||
		fail "no second process in the session"
	track "$holder"
	md dump dump -t "$PID" -D "$T/d" --leave-running
	expect_md_error
	grep -q "process $holder (sleep) in its session" "$MD_ERR" || fail "the error does not name the holder $holder"
	no_inventory "$T/d"
	expect_untraced "$PID"
	kill -9 "$holder"
}

add refuse-session-holder case_refuse_session_holder

# A program run from a memfd (fexecve): its text is a private memfd mapping.
case_refuse_memfd_exec() {
	start_prog t-memfdexec
	expect_dump_refused "$PID" "a private mapping of /memfd:t-memfdexec \\(deleted\\) \\(a program run from a memfd"
	expect_untraced "$PID"
	check_child_pass
}
add refuse-memfd-exec case_refuse_memfd_exec

# a POSIX message queue fd of memdump's own IPC namespace: a restore would replace the host's
# queue, refused by name (cases-mqueue.sh: a namespace of its own)
case_refuse_mqueue() {
	start_prog t-mqueue
	expect_dump_refused "$PID" "fd ${READY[2]} \(/memdump-t$PID( \(deleted\))?: a POSIX message queue \(mq_open\) of memdump's IPC namespace"
	check_child_pass
}
add refuse-mqueue case_refuse_mqueue

# Two memdumps on one PID: the second names the first as another memdump,
# and the first's dump goes on unharmed.
case_err_traced_by_memdump() {
	mkdir -p "$T/d1" "$T/d2"
	start_prog t-pattern
	MEMDUMP_FAULT=parasite-running "$MEMDUMP" dump -t "$PID" -D "$T/d1" --leave-running --no-snapshot \
		2> "$T/first.err" &
	local first=$!
	track "$first"
	wait_line "$T/first.err" 'fault point parasite-running' "$OP_TIMEOUT" ||
		fail "the first dump never reached the parasite"
	md dump2 dump -t "$PID" -D "$T/d2"
	expect_md_error
	grep -q "already traced by [0-9]*: another memdump is dumping it" "$MD_ERR" ||
		fail "the second dump does not say another memdump holds the process"
	no_inventory "$T/d2"
	kill -TERM "$first"; wait "$first" 2>/dev/null
	expect_untraced "$PID"
	check_child_pass
}
add err-traced-by-memdump case_err_traced_by_memdump

# An unprivileged memdump names the privilege it lacks, not a bare EPERM:
# another user's process (CAP_SYS_PTRACE), its own (CAP_CHECKPOINT_RESTORE).
case_err_unprivileged() {
	command -v setpriv > /dev/null || fail "setpriv missing"
	mkdir -p "$T/d" && chmod 777 "$T" "$T/d"
	start_prog t-pattern
	printf '#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all %s "$@"\n' \
		"$MEMDUMP" > "$T/md-nobody"
	chmod 755 "$T/md-nobody"
	local MEMDUMP=$T/md-nobody
	md root-target dump -t "$PID" -D "$T/d"
	(( MD_RC != 0 )) || fail "an unprivileged dump of root's process succeeded"
	grep -q "belongs to uid 0: tracing another user's process needs CAP_SYS_PTRACE" "$MD_ERR" ||
		fail "the error does not name CAP_SYS_PTRACE: $(tail -n1 "$MD_ERR")"
	setpriv --reuid=65534 --regid=65534 --clear-groups sleep 60 < /dev/null > /dev/null 2>&1 &
	local own=$!
	track "$own"
	wait_until 5 grep -q '^Uid:[[:space:]]*65534' "/proc/$own/status" || fail "sleep is not uid 65534"
	md own-target dump -t "$own" -D "$T/d"
	(( MD_RC != 0 )) || fail "an unprivileged dump succeeded"
	grep -q "has neither CAP_CHECKPOINT_RESTORE nor CAP_SYS_ADMIN" "$MD_ERR" ||
		fail "the error does not name CAP_CHECKPOINT_RESTORE: $(tail -n1 "$MD_ERR")"
	no_inventory "$T/d"
	untraced "$own" || fail "process $own harmed"
	kill "$own"
	check_child_pass
}
add err-unprivileged case_err_unprivileged

# System V shm in the host's IPC namespace (postgres run on the host): refused,
# and the refusal says how to run such a program so that it can be dumped.
case_err_sysv_host() {
	mkdir -p "$T/d"
	start_prog t-sysvshm
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "System V shared memory outside an IPC namespace of its own (start the program in one, e.g. with \`unshare --ipc\`" "$MD_ERR" ||
		fail "the refusal does not say how to make it dumpable"
	no_inventory "$T/d"
	check_child_pass
}
add err-sysv-host case_err_sysv_host

# A UNIX socket made in a network namespace the process left since (zdtm
# netns_sub): sock_diag of its namespace does not list it; refused naming that
case_err_sk_netns() {
	mkdir -p "$T/d"
	start_prog t-sknetns
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qE "a UNIX datagram socket \(protocol 0\): it was made in another network namespace \(net:\[[0-9]+\]\) than the one its process is in" "$MD_ERR" ||
		fail "the refusal does not say the socket is of another namespace: $(tail -n1 "$MD_ERR")"
	no_inventory "$T/d"
	check_child_pass
}
add err-sk-netns case_err_sk_netns

# A file of a namespace the process is no longer in (it unshared since): refused
# by name (one of its own namespaces is restored: nsfile-* in cases-fkinds.sh).
case_err_nsfile() {
	mkdir -p "$T/d"
	python3 -c '
import ctypes, os, time
fd = os.open("/proc/self/ns/net", os.O_RDONLY)
if ctypes.CDLL(None, use_errno=True).unshare(0x40000000):
    print("NOUNSHARE", ctypes.get_errno(), flush=True); time.sleep(120)
print("READY", os.getpid(), fd, flush=True)
time.sleep(120)' > "$T/ns.out" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$T/ns.out" '^READY' "$OP_TIMEOUT" || { show_file out "$T/ns.out"; fail "the program did not start"; }
	local fd; fd=$(awk '/^READY/ { print $3 }' "$T/ns.out")
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qE "fd $fd \(net:\[[0-9]+\]: a file of a net namespace the process is not in" "$MD_ERR" ||
		fail "the namespace file is not named"
	no_inventory "$T/d"
	untraced "$PID" || fail "the process was harmed"
}
add err-nsfile case_err_nsfile

# Signal-driven I/O (O_ASYNC with F_SETOWN) on a kind of fd whose owner restore does
# not give back (a FIFO; pipes, files, sockets and terminals are restored: fown-rst in
# cases-ghost.sh). Refused by name.
case_err_async() {
	mkdir -p "$T/d"
	python3 -c '
import fcntl, os, sys, time
p = sys.argv[1]
os.mkfifo(p)
r = os.open(p, os.O_RDWR)
fcntl.fcntl(r, fcntl.F_SETOWN, os.getpid())
fcntl.fcntl(r, fcntl.F_SETFL, fcntl.fcntl(r, fcntl.F_GETFL) | os.O_ASYNC)
print("READY", os.getpid(), r, flush=True)
time.sleep(120)' "$T/async-fifo" > "$T/async.out" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$T/async.out" '^READY' 10 || { show_file out "$T/async.out"; fail "the program did not start"; }
	local fd; fd=$(awk '/^READY/ { print $3 }' "$T/async.out")
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qE "fd $fd \([^)]*async-fifo\) with signal-driven I/O \(O_ASYNC" "$MD_ERR" ||
		fail "the O_ASYNC fd is not named: $(tail -n1 "$MD_ERR")"
	no_inventory "$T/d"
	expect_untraced "$PID"
}
add err-async case_err_async

# MAP_HUGETLB memory of a deleted file of a hugetlbfs mount: it came back as
# a plain file mapping of a ghost once --ghost-limit allowed it (hugetlb
# lost); refused by name, even with the limit raised. (Anonymous MAP_HUGETLB
# memory, memfds of huge pages and System V ones are restored: cases-hugetlb.sh.)
case_err_hugetlb() {
	hugetlb_reserve 1 || { note "no free hugetlb page: skipped"; return 0; }
	mkdir -p "$T/htlb"
	mount -t hugetlbfs none "$T/htlb" || { note "no hugetlbfs mount: skipped"; return 0; }
	OUT=$T/fh.out
	python3 -c '
import mmap, os, signal, sys
p = sys.argv[1] + "/f"
fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o600)
os.ftruncate(fd, 2 << 20)
m = mmap.mmap(fd, 2 << 20)
m[0] = 0x5a
os.unlink(p)
got = []
signal.signal(signal.SIGUSR1, lambda *x: got.append(1))
print("READY", os.getpid(), flush=True)
while not got:
    signal.pause()
print("PASS" if m[0] == 0x5a else "FAIL", flush=True)' "$T/htlb" > "$OUT" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$OUT" '^READY ' 10 || { show_file out "$OUT"; umount "$T/htlb"; fail "the program did not start"; }
	md dump dump -t "$PID" -D "$T/d" --ghost-limit 64M
	expect_md_error
	grep -q "htlb/f (deleted): MAP_HUGETLB memory of a deleted hugetlbfs file" "$MD_ERR" ||
		{ umount -l "$T/htlb"; fail "the hugetlb mapping is not named: $(cat "$MD_ERR")"; }
	no_inventory "$T/d"
	expect_untraced "$PID"
	check_child_pass
	umount -l "$T/htlb"
}
add err-hugetlb case_err_hugetlb

