# A killing dump returns without waiting for the killed process's parent to
# reap it (this VM's PID 1 takes 1-2 s for an orphan): a restore that
# follows at once waits for the zombie to go; one whose parent never reaps
# it is refused naming that parent.

# parent_of_target REAP_AFTER_S: a python parent starts t-pattern and reaps
# it REAP_AFTER_S seconds after it died; sets PID (the target), PARENT
parent_of_target() {
	python3 -c 'import os, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], sys.argv[2]], stdout=open(sys.argv[3], "w"))
print(p.pid, flush=True)
while os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT) is None: pass
time.sleep(float(sys.argv[4])); p.wait(); time.sleep(60)' \
		"$TESTBIN/t-pattern" "$T" "$T/t-pattern.out" "$1" > "$T/parent.out" 2> /dev/null < /dev/null &
	PARENT=$!
	track "$PARENT"
	wait_line "$T/parent.out" '^[0-9]+$' 5 || fail "python parent did not start t-pattern"
	PID=$(head -n1 "$T/parent.out")
	track "$PID"
	OUT=$T/t-pattern.out
	wait_line "$OUT" "^READY " "$OP_TIMEOUT" || fail "t-pattern did not become READY"
	READY_SIZE=$(stat -c %s "$OUT")
}

case_restore_waits_for_zombie() {
	parent_of_target 1.5
	dump "$PID" "$T/d"
	[[ $(proc_state "$PID") == Z ]] || fail "the killed target is not a zombie held by its parent"
	truncate -s "$READY_SIZE" "$OUT"
	md restore restore -D "$T/d" -d || fail "restore after the dump failed: $(tail -n1 "$MD_ERR")"
	wait_until 5 untraced "$PID" || fail "restored pid $PID not running"
	kill -USR1 "$PID"
	get_result "$OUT"
}

case_restore_zombie_never_reaped() {
	parent_of_target 3600
	dump "$PID" "$T/d"
	md restore restore -D "$T/d"
	expect_md_error
	grep -q "PID $PID is held by a zombie: its parent $PARENT (python3) has not reaped it" "$MD_ERR" ||
		fail "the parent holding the zombie not named"
}

add rst-waits-for-zombie case_restore_waits_for_zombie
add rst-zombie-never-reaped case_restore_zombie_never_reaped

# SIGKILL of the dump's worker (the tracer) must leave the target as it was:
# running, untraced, its registers (xmm too), signals and memory its own and
# no parasite mapping left. The parasite notices the closed page pipe and
# returns into the thread through a signal frame (infect/selfcure.c).

# no_parasite_left PID: no memfd mapping, no pending signal in any thread
no_parasite_left() {
	! grep -q '/memfd: (deleted)' "/proc/$1/maps" ||
		fail "a parasite mapping is left in $1: $(grep memfd "/proc/$1/maps")"
	local t
	for t in /proc/$1/task/*; do
		[[ $(proc_field "$1/task/${t##*/}" SigPnd) == 0000000000000000 ]] ||
			fail "thread ${t##*/} has signals pending: $(proc_field "$1/task/${t##*/}" SigPnd)"
	done
	[[ $(proc_field "$1" ShdPnd) == 0000000000000000 ]] ||
		fail "process $1 has signals pending: $(proc_field "$1" ShdPnd)"
}

# kill_worker MDPID: SIGKILL the worker child of memdump MDPID
kill_worker() {
	local w
	w=$(pgrep -P "$1" | head -n1)
	[[ -n $w ]] || fail "memdump $1 has no worker process"
	kill -9 "$w"
	note "killed worker $w of memdump $1"
	wait_until "$OP_TIMEOUT" eval '! kill -0 '"$1"' 2>/dev/null' || fail "memdump did not exit after its worker died"
	wait "$1"; MD_RC=$?
	sed 's/^/#   stderr: /' "$MD_ERR"
	(( MD_RC != 0 )) || fail "memdump exited 0 after its worker was killed"
	grep -q "worker process $w was killed by signal 9" "$MD_ERR" || fail "no error naming the killed worker"
}

# While the parasite serves (stalled there by MEMDUMP_FAULT): t-threads keeps
# known values in general and xmm registers in every thread, the leader too.
case_worker_killed_parasite() {
	mkdir -p "$T/d"
	start_prog t-threads
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=parasite-running "$MEMDUMP" dump -t "$PID" -D "$T/d" --leave-running --no-snapshot 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" 'fault point parasite-running' "$OP_TIMEOUT" || fail "the dump never reached the parasite"
	kill_worker "$mdpid"
	expect_untraced "$PID"
	sleep 0.2	# the parasite wakes when its pipe loses its reader
	no_parasite_left "$PID"
	no_inventory "$T/d"
	check_child_pass
}

# While the area is mapped only for remote syscalls' buffers (no blob runs
# yet): memdump's parent process unmaps it, told where by the worker.
#   point in-remote-syscall: the leader is inside a remote syscall; it finishes
#   it and returns home through its frame.
case_worker_killed_infected() {
	mkdir -p "$T/d"
	local point=$2
	start_prog t-threads
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=$point "$MEMDUMP" dump -t "$PID" -D "$T/d" --mode "$1" -v 3 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point $point" "$OP_TIMEOUT" || fail "the dump never reached $point"
	grep -q '/memfd: (deleted)' "/proc/$PID/maps" || fail "no parasite area in the target at the fault point"
	kill_worker "$mdpid"
	grep -q "removed the parasite area the dead worker left in process $PID" "$MD_ERR" ||
		fail "memdump did not say it removed the parasite area"
	expect_untraced "$PID"
	no_parasite_left "$PID"
	no_inventory "$T/d"
	check_child_pass
}

# At a moment of a large dump, in each mode: in splice mode the parasite is
# then in vmsplice or waiting for its next command.
case_worker_killed_pages() {
	mkdir -p "$T/d"
	local mode=$1
	BIG_MB=1024 start_big
	MD_ERR=$T/md.dump.err
	if [[ $2 == half ]]; then
		MEMDUMP_FAULT=pages-half "$MEMDUMP" dump -t "$PID" -D "$T/d" --mode "$mode" 2> "$MD_ERR" &
	else
		"$MEMDUMP" dump -t "$PID" -D "$T/d" --mode "$mode" 2> "$MD_ERR" &
	fi
	local mdpid=$!
	track "$mdpid"
	if [[ $2 == half ]]; then
		wait_line "$MD_ERR" "fault point pages-half" "$OP_TIMEOUT" || fail "the dump never got half way"
	else
		wait_seized "$PID" "$mdpid"
		sleep "$2"
	fi
	kill -0 "$mdpid" 2>/dev/null || fail "dump finished before its worker could be killed"
	kill_worker "$mdpid"
	expect_untraced "$PID"
	sleep 0.2
	no_parasite_left "$PID"
	no_inventory "$T/d"
	check_child_pass
}

add err-worker-killed-parasite case_worker_killed_parasite

# While every thread but the leader runs the parasite for its own state
# (stalled there): the leader's blob, woken by its pipe losing its reader,
# sends them home before it goes; t-threads checks each thread's registers,
# xmm, stack, altstack and TLS, and the target keeps no fd of memdump's.
# (case_worker_killed_remote, cases-infectkill.sh, at this fault point)
add err-worker-killed-threads case_worker_killed_remote threads-in-parasite
add err-worker-killed-infected-splice case_worker_killed_infected splice infected
add err-worker-killed-infected-mem case_worker_killed_infected mem infected
add err-worker-killed-in-syscall case_worker_killed_infected read in-remote-syscall

# worker_killed_at POINT [CHECK]: a killing dump of t-threads held at fault
# point POINT, its worker killed there (after CHECK, if given): the target
# runs on untraced, no parasite mapping and no fd of memdump's left in it, no
# inventory, and t-threads passes its own checks
worker_killed_at() {
	local point=$1 check=${2:-}
	mkdir -p "$T/d"
	start_prog t-threads
	ls "/proc/$PID/fd" > "$T/fds.before"
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=$point "$MEMDUMP" dump -t "$PID" -D "$T/d" -v 3 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point $point" "$OP_TIMEOUT" ||
		fail "the dump never reached $point: $(tail -n1 "$MD_ERR")"
	[[ -z $check ]] || $check
	kill_worker "$mdpid"
	expect_untraced "$PID"
	sleep 0.2
	no_parasite_left "$PID"
	ls "/proc/$PID/fd" > "$T/fds.after"
	cmp -s "$T/fds.before" "$T/fds.after" ||
		fail "the target's fds changed: $(diff "$T/fds.before" "$T/fds.after" | tr '\n' ' ')"
	no_inventory "$T/d"
	check_child_pass
}

# A killing dump keeps its parasite in until the kill (dump.c, cure_late):
# at images-written, the images all written and the dry run next, the blob
# still waits in the leader. The worker killed there, the blob cures itself
# and memdump's parent process unmaps the rest: t-threads runs on untraced
# from where it was, every thread's registers its own, no fd or mapping of
# memdump's left, no inventory.
parasite_still_in() {
	grep -q '/memfd: (deleted)' "/proc/$PID/maps" ||
		fail "no parasite area in the target at images-written (cured before the kill?)"
}
case_worker_killed_images() { worker_killed_at images-written parasite_still_in; }
add err-worker-killed-images case_worker_killed_images
for m in splice read mem; do
	add "err-worker-killed-$m-early" case_worker_killed_pages "$m" 0.02
	add "err-worker-killed-$m-late" case_worker_killed_pages "$m" half
done

# A seccomp filter that kills the process on the syscalls the parasite runs
# (memfd_create, pipe2, eventfd2, ppoll, vmsplice, ...): memdump suspends the
# filters while it traces the process, in every mode, and they are back after.
case_seccomp_kill_filter() {
	start_prog t-seccomp kill
	dump "$PID" "$T/d" --mode "$1" --leave-running
	expect_untraced "$PID"
	[[ $(proc_field "$PID" Seccomp) == 2 ]] || fail "the filter is gone from $PID after the dump"
	check_child_pass
}
for m in splice read mem; do add "dump-seccomp-kill-filter-$m" case_seccomp_kill_filter "$m"; done

# A tree's dump whose worker is killed while the parasite is in its root (every
# process frozen): every process runs on, untraced, with no parasite left,
# and the tree finishes as it would have.
case_worker_killed_tree() {
	mkdir -p "$T/d"
	start_prog t-tree
	local a=${READY[2]} b=${READY[3]} g=${READY[4]} p
	track "$a"; track "$b"; track "$g"
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=$1 "$MEMDUMP" dump -t "$PID" -D "$T/d" --leave-running --no-snapshot 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point $1" "$OP_TIMEOUT" || fail "the dump never reached $1"
	for p in "$a" "$b" "$g"; do
		[[ $(proc_field "$p" TracerPid) != 0 ]] || fail "process $p of the tree is not frozen"
	done
	kill_worker "$mdpid"
	for p in "$PID" "$a" "$b" "$g"; do expect_untraced "$p"; done
	sleep 0.2
	for p in "$PID" "$a" "$b" "$g"; do no_parasite_left "$p"; done
	no_inventory "$T/d"
	kill -USR1 "$PID"
	get_result "$OUT"
	timeout_wait "$PID" || fail "t-tree exited with $? after PASS"
}
add err-worker-killed-tree-parasite case_worker_killed_tree parasite-running
add err-worker-killed-tree-infected case_worker_killed_tree infected

# A process of the tree killed while the tree is being dumped (SIGKILL reaches a
# frozen process): the dump fails with one line naming it, every other process
# runs on untraced with no parasite left, and no image set looks complete.
case_tree_child_killed_mid_dump() {
	mkdir -p "$T/d"
	start_prog t-tree
	local a=${READY[2]} b=${READY[3]} g=${READY[4]} p
	track "$a"; track "$b"; track "$g"
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=parasite-running MEMDUMP_FAULT_SECS=2 "$MEMDUMP" dump -t "$PID" -D "$T/d" \
		--leave-running 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point parasite-running" "$OP_TIMEOUT" || fail "the dump never reached its parasite"
	kill -9 "$g"
	wait "$mdpid"
	MD_RC=$?
	show_file "memdump stderr" "$MD_ERR"
	(( MD_RC != 0 && MD_RC < 128 )) || fail "memdump exited $MD_RC"
	[[ $(grep -c '^memdump: ' "$MD_ERR") == 1 ]] || fail "not one error line"
	grep -q "^memdump: dump failed: process $g of the tree of $PID was killed during the dump" \
		"$MD_ERR" || fail "the error does not say process $g was killed"
	for p in "$PID" "$a" "$b"; do expect_untraced "$p"; done
	sleep 0.2
	for p in "$PID" "$a" "$b"; do no_parasite_left "$p"; done
	no_inventory "$T/d"
}
add err-tree-child-killed case_tree_child_killed_mid_dump

# A restored process that makes no progress (here: stopped by SIGSTOP as
# soon as it exists) fails the restore by name after the stall limit
# (MEMDUMP_STALL_S), and is killed: memdump never waits for it forever.
case_restore_stalled() {
	start_prog t-pattern 256
	dump "$PID" "$T/d"
	( for _ in $(seq 2000); do kill -STOP "$PID" 2>/dev/null && exit 0; sleep 0.002; done ) &
	local stopper=$!
	MEMDUMP_STALL_S=2 md restore restore -D "$T/d"
	wait "$stopper" || fail "the restored process never appeared to be stopped"
	expect_md_error
	grep -q "the restored process $PID made no progress for 2 s" "$MD_ERR" ||
		fail "a stalled restore not named: $(tail -n1 "$MD_ERR")"
	wait_until 5 eval '[[ ! -d /proc/'"$PID"' ]]' || fail "the stalled process $PID was left behind"
}
add err-restore-stalled case_restore_stalled
