# Stopped processes (t-stopped): a child in group-stop, with SIGSTOPs queued
# again while it is stopped (`again`) or stopped by SIGTSTP (`tstp`). The
# remote syscalls dequeue a queued SIGSTOP: it must not fail the dump, must
# be queued again after a --leave-running dump, and the restored child must
# be stopped by the signal it was stopped with (its parent's waitid says).

# sigstop_queued PID KEY: is SIGSTOP (19, bit 0x40000) in KEY of /proc/PID/status?
sigstop_queued() {
	(( 0x$(proc_field "$1" "$2") & 0x40000 ))
}

case_stopped_rst() {
	start_prog t-stopped "$1"
	local c=${READY[2]}
	track "$c"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}

case_stopped_leave() {
	start_prog t-stopped "$1"
	local c=${READY[2]}
	track "$c"
	dump "$PID" "$T/d" --leave-running
	expect_untraced "$PID"
	[[ $(proc_field "$c" TracerPid) == 0 ]] || fail "child $c is still traced"
	[[ $(proc_state "$c") == T ]] || fail "child $c is not stopped after the dump"
	if [[ $1 == again ]]; then
		sigstop_queued "$c" SigPnd || fail "child $c lost its own queued SIGSTOP: $(proc_field "$c" SigPnd)"
		sigstop_queued "$c" ShdPnd || fail "child $c lost its process's queued SIGSTOP: $(proc_field "$c" ShdPnd)"
	fi
	check_child_pass
}

for m in again tstp; do
	add "rst-stopped-$m" case_stopped_rst "$m"
	add "dump-stopped-$m-leave" case_stopped_leave "$m"
done
