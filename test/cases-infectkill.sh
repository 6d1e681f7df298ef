# SIGKILL of the dump's worker at each step of the infection's first remote
# syscalls, before the parasite area exists (they run on a signal return of
# the target's own code, its cure frame on its stack): memfd_create and
# mmap (memdump sizes the memfd itself), and the close of the memfd (on the
# area's trampoline), with its registers set, stopped at its entry, stopped
# at its exit. The target must run on untraced from where it was (t-threads
# checks its registers, xmm too, in every thread), with no parasite mapping
# and no fd of memdump's left. Uses no_parasite_left and kill_worker from
# cases-faults.sh.

case_worker_killed_remote() {
	mkdir -p "$T/d"
	local point=$1
	start_prog t-threads
	ls "/proc/$PID/fd" > "$T/fds.before"
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=$point "$MEMDUMP" dump -t "$PID" -D "$T/d" -v 3 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point $point" "$OP_TIMEOUT" || fail "the dump never reached $point"
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

for nr in 319 9 3; do
	for step in set entry exit; do
		add "err-worker-killed-remote-$step-$nr" case_worker_killed_remote "remote-$step-$nr"
	done
done
