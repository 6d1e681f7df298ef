# After a killing dump memdump returns once the PID is free, so that a
# restore can follow at once; a parent that never reaps is named.

case_pid_free_after_dump() {
	start_prog t-pattern
	dump "$PID" "$T/d"
	[[ ! -e /proc/$PID ]] || fail "dump returned while $PID still exists ($(proc_field "$PID" State))"
	truncate -s "$READY_SIZE" "$OUT"
	md restore restore -D "$T/d" -d || fail "immediate restore failed: $(tail -n1 "$MD_ERR")"
	track "$PID"
	wait_until 5 untraced "$PID" || fail "restored pid $PID not running"
	kill -USR1 "$PID"
	get_result "$OUT"
}

case_pid_held_by_parent() {
	python3 -c 'import subprocess, sys, time
p = subprocess.Popen(["sleep", "300"]); print(p.pid, flush=True); time.sleep(60)' \
		> "$T/parent.out" 2> /dev/null < /dev/null &
	track $!
	wait_line "$T/parent.out" '^[0-9]+$' 5 || fail "python parent did not start sleep"
	PID=$(head -n1 "$T/parent.out")
	track "$PID"
	dump "$PID" "$T/d"
	grep -q "killed process $PID is still a zombie: its parent $! (python3)" "$MD_ERR" ||
		fail "no warning naming the parent that holds the zombie"
}

add rst-pid-free-after-dump case_pid_free_after_dump
add dump-pid-held-by-parent case_pid_held_by_parent
