# Resource limits: read even where prlimit() on the target is refused (another
# user's process, no CAP_SYS_RESOURCE), restored exactly, and a hard limit the
# restore may not set refused by name before anything starts.

# start_nobody_sleeper: sleep 300 as uid 65534 with chosen limits; sets PID
start_nobody_sleeper() {
	command -v setpriv > /dev/null || fail "setpriv missing"
	prlimit --nofile=900:1900 --fsize=5000000:6000000 --cpu=5000:unlimited \
		setpriv --reuid=65534 --regid=65534 --clear-groups sleep 300 \
		< /dev/null > "$T/sleeper.out" 2>&1 &
	PID=$!
	track "$PID"
	wait_until 5 grep -q 'sleep' "/proc/$PID/comm" || fail "sleeper did not start"
	wait_until 5 grep -q '^Uid:[[:space:]]*65534' "/proc/$PID/status" || fail "sleeper is not uid 65534"
}

case_limits_other_user() {
	start_nobody_sleeper
	cat "/proc/$PID/limits" > "$T/limits.before"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	md restore restore -D "$T/d" -d || fail "restore failed: $(tail -n1 "$MD_ERR")"
	track "$PID"
	diff "$T/limits.before" "/proc/$PID/limits" > "$T/limits.diff" ||
		{ show_file "limits diff" "$T/limits.diff"; fail "limits differ after restore"; }
}

case_limits_restore_refused() {
	start_nobody_sleeper
	dump "$PID" "$T/d"
	expect_killed "$PID"
	# a hard RLIMIT_NOFILE (1900) above the restoring memdump's own (512)
	printf '#!/bin/sh\nexec prlimit --nofile=512:512 %s "$@"\n' "$MEMDUMP" > "$T/md-low"
	chmod +x "$T/md-low"
	MEMDUMP=$T/md-low md restore restore -D "$T/d" -d
	expect_md_error
	grep -q "RLIMIT_NOFILE hard limit 1900 is above memdump's own (512)" "$MD_ERR" ||
		fail "the error does not name RLIMIT_NOFILE and both limits"
	[[ ! -e /proc/$PID ]] || fail "a process $PID exists after a refused restore"
}

add rst-limits-other-user case_limits_other_user
add err-restore-limits case_limits_restore_refused

# A periodic interval timer whose signal is pending at the dump (blocked by the
# program): the kernel reports 0 time left until the signal is taken, and a
# restore that set 0 would disarm the timer for good.
case_itimer_pending() {
	start_prog t-itimer
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add rst-itimer-pending case_itimer_pending
