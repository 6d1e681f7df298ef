# File leases being broken (issue 24: zdtm file_lease02-04): another open met
# the lease and started its break. Restore takes each lease as it was taken
# and breaks it again (t-leasebrk), with no signal to anyone for that break.
# Held leases: cases-fkinds.sh.

# Read and write leases being broken to an unlock or a read lease, a write
# lease on a read-only fd among them: the same fdinfo lines (statecmp), the
# same F_GETLEASE, still breaking, no break signal but the dumped ones.
case_leasebrk_rst() {
	start_prog t-leasebrk
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	md show show -D "$T/d" || fail "show failed"
	grep -qE '^locks +fd 10 lease read, being broken to unlock$' "$MD_OUT" &&
		grep -qE '^ +fd 11 lease write, being broken to read$' "$MD_OUT" &&
		grep -qE '^ +fd 12 lease write, being broken to unlock$' "$MD_OUT" &&
		grep -qE '^ +fd 13 lease write, being broken to unlock$' "$MD_OUT" ||
		{ show_file show "$MD_OUT"; fail "show does not list the leases being broken"; }
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add lease-brk-rst case_leasebrk_rst
# --leave-running: the dump leaves every break as it was (its looks at them
# are an F_GETLEASE and a non-blocking open for reading)
add lease-brk-lr case_f2_lr t-leasebrk

# A write lease being broken on a description a parent and its child hold
# (`tree`, the parent restores the lease), or the child alone (`handed`).
case_leasebrk_tree() {
	start_prog t-leasebrk "$1"
	local c=${READY[2]}
	track "$c"
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	if [[ $1 == tree ]]; then
		md show show -D "$T/d/proc-$c"
		grep -qE "^ *10 .*\(shared with fd [0-9]+ of process $PID\)" "$MD_OUT" ||
			fail "the child's fd 10 is not its parent's description: $(cat "$MD_OUT")"
	fi
	restore_and_pass "$T/d" 1
	[[ $RESULT == "PASS $1" ]] || fail "program said $RESULT"
}
add lease-brk-tree case_leasebrk_tree tree
add lease-brk-handed case_leasebrk_tree handed

# A child's blocking open for writing waits on its parent's read lease: after
# the restore it waits on, restarted, until the parent gives the lease up.
case_leasebrk_waiter() {
	start_prog t-leasebrk waiter
	local c=${READY[2]}
	track "$c"
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
	[[ $RESULT == "PASS waiter" ]] || fail "program said $RESULT"
}
add lease-brk-waiter case_leasebrk_waiter

# Another process opened brk-ro for reading since the dump: the write lease
# cannot be taken again, the restore fails naming it and leaves nothing running.
case_leasebrk_conflict() {
	start_prog t-leasebrk
	dump "$PID" "$T/d"
	expect_killed "$PID"
	sleep 300 3< "$T/brk-ro" < /dev/null > /dev/null 2>&1 &
	local holder=$!; track "$holder"
	wait_until 5 eval '[[ -e /proc/'"$holder"'/fd/3 ]]' || fail "the reader did not start"
	md restore restore -D "$T/d"
	expect_md_error
	grep -q "cannot take the write lease of fd 13: the file is open elsewhere in a conflicting mode" "$MD_ERR" ||
		fail "the error does not name the lease"
	alive "$PID" && fail "a failed restore left pid $PID running"
	kill "$holder"; wait "$holder" 2> /dev/null
	restore_and_pass "$T/d" 1
}
add lease-brk-conflict case_leasebrk_conflict

# Two read leases of one file, two open file descriptions, both being broken:
# the first one broken again at restore would stop the second being taken.
# Refused by name before the seize; the target runs on with both (--leave-running
# too: expect_dump_refused), and checks them.
case_leasebrk_two() {
	start_prog t-leasebrk two
	expect_dump_refused "$PID" "fd 1[01] holds a lease being broken on a file with 2 leases"
	check_child_pass
}
add lease-brk-two-refused case_leasebrk_two

# A killing dump whose worker is killed while the parasite runs: the target
# runs on untraced, its leases still being broken (cases-fkinds.sh).
add lease-brk-worker-killed case_fk_worker_killed t-leasebrk
