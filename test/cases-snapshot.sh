# --snapshot: a copy-on-write snapshot (userfaultfd write-protection) lets a
# --leave-running dump resume the target before its pages are written; the
# image is still the memory of one instant (mem/snapshot.c).

# t-writer's threads write their pages all the time: every image one instant,
# and pages the copier saved (it lifts no protection) are written through the
# handler.
# $1 prearm: the snapshot is armed while the target runs, the pages written
# until the freeze protected again then; frozen: armed while frozen
# (MEMDUMP_SNAPSHOT_PREARM=0, as when no arming is possible before).
case_snapshot_writer() {
	local i how=$1 prearm=1 through=0 n
	[[ $how == frozen ]] && prearm=0
	start_prog t-writer
	local addr=${READY[2]} len=${READY[3]} nth=${READY[4]}
	for i in 1 2 3; do
		MEMDUMP_SNAPSHOT_PREARM=$prearm dump "$PID" "$T/d$i" --leave-running --snapshot -v 3
		grep -q "snapshot: [0-9]* of [0-9]* pages saved on a write fault" "$MD_ERR" ||
			fail "dump $i did not go through the snapshot"
		snapshot_summary_says "$i"
		n=$(sed -n 's/.*pages saved on a write fault, \([0-9]*\) writes to saved pages let through.*/\1/p' "$MD_ERR")
		through=$((through + ${n:-0}))
		if [[ $how == prearm ]]; then
			grep -q "write-protected in .* ms before the freeze" "$MD_ERR" ||
				fail "dump $i: the snapshot was not armed before the freeze"
			grep -Eq "protected before the freeze, [1-9][0-9]* KiB written since protected again" "$MD_ERR" ||
				fail "dump $i: t-writer's writes before the freeze were not protected again"
		else
			grep -q "write-protected in .* ms before the freeze" "$MD_ERR" &&
				fail "dump $i: armed before the freeze"
		fi
		md readmem.$i read-mem -D "$T/d$i" "$addr" "$len" || fail "read-mem failed: $(tail -n1 "$MD_ERR")"
		"$TESTBIN/t-writer" --check "$MD_OUT" "$nth" > "$T/check.$i" 2>&1
		grep -q '^PASS' "$T/check.$i" || fail "dump $i: image is not one instant: $(grep -m1 FAIL "$T/check.$i")"
		expect_untraced "$PID"
		no_write_protection "$PID"
	done
	# the copier lifts nothing: the writers' writes to pages it saved fault and are let through
	(( through > 0 )) || fail "no write to a page the copier saved went through the handler"
	check_child_pass
}

# snapshot_summary_says N: dump N's summary line says that its frozen time
# leaves out what the target paid after the thaw, with the number of pages
# the log says the target waited for.
snapshot_summary_says() {
	local faults
	faults=$(sed -n 's/.*snapshot: \([0-9]*\) of [0-9]* pages saved on a write fault.*/\1/p' "$MD_ERR")
	grep -q " s frozen (snapshot: not counted, $faults page(s) the target waited for after the thaw" \
		"$MD_OUT" || fail "dump $1: the summary does not say what its frozen time leaves out" \
		"($faults pages waited for): $(cat "$MD_OUT")"
}

# no_write_protection PID: no userfaultfd and no uffd-wp VMA left in PID
no_write_protection() {
	! grep -qE '^VmFlags:.* (uw|um)( |$)' "/proc/$1/smaps" ||
		fail "process $1 still has userfaultfd-registered VMAs"
	! ls -l "/proc/$1/fd" 2>/dev/null | grep -q userfaultfd ||
		fail "process $1 holds a userfaultfd"
}

# A snapshot dump restores byte-identical (t-pattern checks its memory).
case_snapshot_restore() {
	start_prog t-pattern 64
	dump "$PID" "$T/d" --leave-running --snapshot
	no_write_protection "$PID"
	kill -9 "$PID"
	wait "$PID" 2> /dev/null
	wait_until 5 eval '! alive '"$PID"
	restore_and_pass "$T/d" snap
}

# memdump and its worker killed while the target runs write-protected, at
# fault point $1 (snapshot-prearmed: armed, before the freeze;
# snapshot-copy: during the copy): the kernel lifts the protection with the
# userfaultfd, and the writers go on.
case_snapshot_killed() {
	local point=$1
	mkdir -p "$T/d"
	start_prog t-writer
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=$point "$MEMDUMP" dump -t "$PID" -D "$T/d" --leave-running --snapshot \
		2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point $point" "$OP_TIMEOUT" || fail "the dump never reached $point"
	[[ $point == snapshot-prearmed ]] && ! grep -qE '^VmFlags:.* uw( |$)' "/proc/$PID/smaps" &&
		fail "no VMA of $PID is write-protected while armed"
	expect_untraced "$PID"
	pkill -9 -P "$mdpid"
	kill -9 "$mdpid"
	wait "$mdpid"
	note "killed memdump $mdpid and its worker at $point"
	wait_until 5 eval '! grep -qE "^VmFlags:.* uw( |$)" /proc/'"$PID"'/smaps' ||
		fail "write protection left in $PID after memdump died"
	no_write_protection "$PID"
	no_inventory "$T/d"
	check_child_pass
}

case_snapshot_needs_leave_running() {
	start_prog t-pattern
	md dump dump -t "$PID" -D "$T/d" --snapshot
	expect_md_error
	grep -q "needs --leave-running" "$MD_ERR" || fail "the error does not say --snapshot needs --leave-running"
	expect_untraced "$PID"
}

add snap-writer case_snapshot_writer prearm
add snap-writer-frozen-arm case_snapshot_writer frozen
add snap-restore case_snapshot_restore
add snap-killed case_snapshot_killed snapshot-copy
add snap-prearm-killed case_snapshot_killed snapshot-prearmed
add err-snap-killing case_snapshot_needs_leave_running

# Another user's process cannot make a userfaultfd (no CAP_SYS_PTRACE,
# vm.unprivileged_userfaultfd 0): the dump says so and is taken frozen.
case_snapshot_fallback() {
	[[ $(cat /proc/sys/vm/unprivileged_userfaultfd) == 0 ]] || { note "unprivileged userfaultfd allowed: skipped"; return 0; }
	setpriv --reuid=65534 --regid=65534 --clear-groups sleep 300 < /dev/null > /dev/null 2>&1 &
	PID=$!
	track "$PID"
	wait_until 5 grep -q '^Uid:[[:space:]]*65534' "/proc/$PID/status" || fail "sleeper is not uid 65534"
	dump "$PID" "$T/d" --leave-running --snapshot
	grep -q "no snapshot of process $PID (.*userfaultfd.*): its pages are written while it is frozen" "$MD_ERR" ||
		fail "no warning that the snapshot was not possible"
	expect_untraced "$PID"
	md verify verify -D "$T/d" || fail "the frozen fallback's image does not verify: $(tail -n1 "$MD_ERR")"
}

add snap-fallback case_snapshot_fallback

# Every test program: a snapshot dump, the original killed, the image
# restored: the program checks its memory, registers, fds... as after any
# restore.
case_snapshot_rst() {
	start_prog "$1"
	dump "$PID" "$T/d" --leave-running --snapshot
	expect_untraced "$PID"
	no_write_protection "$PID"
	kill -9 "$PID"
	wait "$PID" 2> /dev/null
	wait_until 5 eval '! alive '"$PID" || fail "$PID did not die"
	restore_and_pass "$T/d" snap
}
for p in "${PROGS[@]}"; do
	[[ $p == t-sleeper ]] && continue	# its time is judged by the lr- cases
	add "snap-rst-$p" case_snapshot_rst "$p"
done

# The target discards memory the snapshot has not saved yet (MADV_DONTNEED
# while the copy is held back): the dump fails by name, the target runs on.
case_snapshot_discard() {
	mkdir -p "$T/d"
	start_prog t-discard
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=snapshot-copy MEMDUMP_FAULT_SECS=2 "$MEMDUMP" dump -t "$PID" -D "$T/d" \
		--leave-running --snapshot 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" 'fault point snapshot-copy' "$OP_TIMEOUT" || fail "the dump never reached its copy"
	kill -USR2 "$PID"
	wait "$mdpid"; MD_RC=$?
	sed 's/^/#   stderr: /' "$MD_ERR"
	(( MD_RC != 0 )) || fail "the dump succeeded although the target discarded unsaved memory"
	grep -q "process $PID discarded its memory at" "$MD_ERR" || fail "the error does not name the discard"
	no_inventory "$T/d"
	no_write_protection "$PID"
	check_child_pass
}
add err-snap-discard case_snapshot_discard

# Armed before the freeze, then the target rewrites pages, discards some,
# writes a page it never had and maps a new region (a t-incr step) before
# it is frozen: the image is the memory after the step, byte for byte.
case_snapshot_prearm_step() {
	mkdir -p "$T/d"
	start_prog t-incr 64 16 grow
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=snapshot-prearmed MEMDUMP_FAULT_SECS=3 "$MEMDUMP" dump -t "$PID" -D "$T/d" \
		--leave-running --snapshot -v 3 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" 'fault point snapshot-prearmed' "$OP_TIMEOUT" || fail "the dump never armed its snapshot"
	grep -qE '^VmFlags:.* uw( |$)' "/proc/$PID/smaps" || fail "no VMA of $PID is write-protected while armed"
	incr_step
	wait "$mdpid"; MD_RC=$?
	(( MD_RC == 0 )) || fail "the dump failed: $(grep -m1 '^memdump:' "$MD_ERR")"
	grep -Eq "protected before the freeze, [1-9][0-9]* KiB written since" "$MD_ERR" ||
		fail "the step's writes were not protected again at the freeze"
	expect_untraced "$PID"
	no_write_protection "$PID"
	kill -9 "$PID"
	wait "$PID" 2> /dev/null
	wait_until 5 eval '! alive '"$PID" || fail "$PID did not die"
	restore_and_pass "$T/d" snap
}
add snap-prearm-step case_snapshot_prearm_step


# A write-protect registration that is not memdump's (its userfaultfd held by
# another process) is refused by name, armed before the freeze or not.
case_snapshot_foreign_uw() {
	local prearm
	start_prog t-incr 16 16 uffd-wp-away
	grep -qE '^VmFlags:.* uw( |$)' "/proc/$PID/smaps" || fail "t-incr's region is not registered"
	for prearm in 1 0; do
		MEMDUMP_SNAPSHOT_PREARM=$prearm md "dump.$prearm" dump -t "$PID" -D "$T/d$prearm" \
			--leave-running --snapshot
		expect_md_error
		grep -q 'userfaultfd write-protect registration (VmFlags uw)' "$MD_ERR" ||
			fail "the refusal does not name the registration: $(cat "$MD_ERR")"
		expect_untraced "$PID"
		no_inventory "$T/d$prearm"
	done
	check_child_pass
}
add err-snap-foreign-uw case_snapshot_foreign_uw

# anon_huge PID: its AnonHugePages, kB
anon_huge() { awk '/^AnonHugePages:/ { print $2 }' "/proc/$1/smaps_rollup"; }

# t-writer in transparent huge pages: the handler saves and lets go a whole
# huge page, the copier goes 2 MiB at a time, so none is split (a split
# target stays slower); every image is still one instant.
case_snapshot_writer_thp() {
	local i before
	[[ $(cat /sys/kernel/mm/transparent_hugepage/enabled) == *"[never]"* ]] &&
		{ note "transparent huge pages off: skipped"; return 0; }
	start_prog t-writer 2 thp
	local addr=${READY[2]} len=${READY[3]} nth=${READY[4]}
	before=$(anon_huge "$PID")
	(( before >= 16384 )) || { note "only ${before} kB in huge pages: skipped"; return 0; }
	for i in 1 2; do
		dump "$PID" "$T/d$i" --leave-running --snapshot -v 3
		md readmem.$i read-mem -D "$T/d$i" "$addr" "$len" || fail "read-mem failed: $(tail -n1 "$MD_ERR")"
		"$TESTBIN/t-writer" --check "$MD_OUT" "$nth" > "$T/check.$i" 2>&1
		grep -q '^PASS' "$T/check.$i" || fail "dump $i: image is not one instant: $(grep -m1 FAIL "$T/check.$i")"
		(( $(anon_huge "$PID") >= before )) ||
			fail "dump $i split huge pages: $(anon_huge "$PID") kB in huge pages, $before before"
		no_write_protection "$PID"
	done
	check_child_pass
}
add snap-writer-thp case_snapshot_writer_thp

# --leave-running takes the snapshot by default; --no-snapshot and hooks (the
# post-dump hook must see a complete set while the target is frozen) do not;
# --snapshot with an action script is refused (its set would not be complete).
case_snap_default() {
	start_prog t-pattern
	printf '#!/bin/sh\nexit 0\n' > "$T/hook"; chmod +x "$T/hook"
	dump "$PID" "$T/d1" --leave-running -v 3
	grep -q "snapshot" "$MD_ERR" || fail "no snapshot by default with --leave-running"
	md verify1 verify -D "$T/d1" || fail "the default snapshot does not verify: $(tail -n1 "$MD_ERR")"
	dump "$PID" "$T/d2" --leave-running --no-snapshot -v 3
	grep -q "snapshot" "$MD_ERR" && fail "--no-snapshot took a snapshot"
	grep -q "(snapshot:" "$MD_OUT" && fail "the summary of a dump without snapshot speaks of one"
	dump "$PID" "$T/d3" --leave-running --action-script "$T/hook"
	md verify3 verify -D "$T/d3" || fail "a dump with hooks does not verify: $(tail -n1 "$MD_ERR")"
	md refused dump -t "$PID" -D "$T/d4" --leave-running --snapshot --action-script "$T/hook"
	expect_md_error
	grep -q "snapshot with action scripts" "$MD_ERR" || fail "the refusal does not say why"
	no_inventory "$T/d4"
	check_child_pass
}
add snap-default case_snap_default
