# shellcheck shell=bash
# pages-1.img's page cache made before the freeze (src/mem/pagewarm.c):
# the image is created at the size of the target's anonymous memory,
# allocated and read into the cache while the target runs; the frozen copy
# overwrites cached pages and the image is cut to what was written.

# pages written: the summary line's "N pages"
summary_pages() { sed -n 's/.* VMAs, \([0-9]*\) pages .*/\1/p' "$MD_OUT" | head -n1; }

# the image is exactly the pages written, verifies, and restores
expect_exact_pages() {
	local n size
	n=$(summary_pages)
	[[ -n $n ]] || fail "no page count in the summary: $(cat "$MD_OUT")"
	size=$(stat -c %s "$T/d/pages-1.img")
	(( size == n * 4096 )) || fail "pages-1.img is $size bytes for $n pages"
	md verify verify -D "$T/d" || fail "the set does not verify: $(tail -n1 "$MD_ERR")"
	restore_and_pass "$T/d" good
}

# A 64 MiB target: warmed, in each mode; MEMDUMP_PAGES_WARM=0: not warmed.
case_pagewarm() {
	local mode=$1
	start_prog t-pattern 64
	dump "$PID" "$T/d" --mode "$mode" -v 3
	expect_killed "$PID"
	grep -q "pages image of process $PID: [0-9]* MiB of page cache ready" "$MD_ERR" ||
		fail "pages-1.img not warmed: $(grep pages-1 "$MD_ERR")"
	expect_exact_pages
}
add pagewarm-splice case_pagewarm splice
add pagewarm-read case_pagewarm read

case_pagewarm_off() {
	start_prog t-pattern 64
	MEMDUMP_PAGES_WARM=0 dump "$PID" "$T/d" -v 3
	expect_killed "$PID"
	grep -q "page cache ready" "$MD_ERR" && fail "warmed with MEMDUMP_PAGES_WARM=0"
	expect_exact_pages
}
add pagewarm-off case_pagewarm_off

# Warmed further than the pages go (the target freed memory meanwhile):
# the image is cut to the pages written. And warmed short of them: the
# rest is written past the warm part.
case_pagewarm_size() {
	local bytes=$1
	start_prog t-pattern 16
	MEMDUMP_PAGES_WARM=$bytes dump "$PID" "$T/d" -v 3
	expect_killed "$PID"
	grep -q "pages image of process $PID: $((bytes >> 20)) MiB of page cache ready" "$MD_ERR" ||
		fail "pages-1.img not warmed to $((bytes >> 20)) MiB: $(grep pages-1 "$MD_ERR")"
	expect_exact_pages
}
add pagewarm-trim case_pagewarm_size $((96 << 20))
add pagewarm-short case_pagewarm_size $((4 << 20))

# No room for the warm image (a 48 MiB tmpfs, 64 MiB asked): not warmed,
# the dump goes on and fits.
case_pagewarm_nospace() {
	start_prog t-pattern 16
	mkdir -p "$T/small"
	mount -t tmpfs -o size=48m memdump-t "$T/small" || fail "cannot mount a tmpfs"	# run.sh unmounts it
	MEMDUMP_PAGES_WARM=$((64 << 20)) md dump.small dump -t "$PID" -D "$T/small" -v 4 ||
		fail "dump failed (exit $MD_RC): $(tail -n1 "$MD_ERR")"
	expect_killed "$PID"
	grep -q "pages image of process $PID not warmed (No space left on device)" "$MD_ERR" ||
		fail "no 'not warmed' for the full tmpfs: $(grep pages-1 "$MD_ERR")"
	mkdir -p "$T/d" && cp -a "$T/small/." "$T/d/" || fail "cannot copy the set"
	expect_exact_pages
}
add pagewarm-nospace case_pagewarm_nospace

# SIGTERM to memdump while it warms (1 GiB asked): it exits non-zero
# saying so, the target was never touched, and nothing is left in the set's
# directory (the image is an unnamed file until the frozen dump names it).
# SIGKILL to every memdump process: the same, without the message.
warm_file_open() { find /proc/[0-9]*/fd -lname "$T/d/#*" 2>/dev/null | grep -q .; }

case_pagewarm_killed() {
	local sig=$1
	mkdir -p "$T/d"
	start_prog t-pattern 16
	MD_ERR=$T/md.dump.err
	MEMDUMP_PAGES_WARM=$((1 << 30)) "$MEMDUMP" dump -t "$PID" -D "$T/d" 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_until "$OP_TIMEOUT" eval 'warm_file_open || ! kill -0 '"$mdpid"' 2>/dev/null'
	kill -0 "$mdpid" 2>/dev/null || fail "dump finished before it could be killed: $(cat "$MD_ERR")"
	if [[ $sig == KILL ]]; then
		pkill -KILL -P "$mdpid"
		kill -KILL "$mdpid"
		wait "$mdpid"
		wait_until "$OP_TIMEOUT" eval '! warm_file_open' || fail "the unnamed pages image is still open"
		[[ -z $(ls -A "$T/d") ]] || fail "left in the set's directory: $(ls -A "$T/d")"
		check_child_pass
		return
	fi
	kill -TERM "$mdpid"
	wait_until "$OP_TIMEOUT" eval '! kill -0 '"$mdpid"' 2>/dev/null' || fail "memdump did not exit after SIGTERM"
	wait "$mdpid"; MD_RC=$?
	sed 's/^/#   stderr: /' "$MD_ERR"
	(( MD_RC != 0 )) || fail "memdump exited 0 after SIGTERM"
	grep -q "interrupted while filling the page cache of the pages image, before process $PID was frozen" \
		"$MD_ERR" || fail "not stopped while warming: $(cat "$MD_ERR")"
	[[ -z $(ls -A "$T/d") ]] || fail "left in the set's directory: $(ls -A "$T/d")"
	check_child_pass
}
add pagewarm-killed-TERM case_pagewarm_killed TERM
add pagewarm-killed-KILL case_pagewarm_killed KILL

# A tree: each process's pages image is warmed in the set's directory
# before the freeze and named in its own directory once frozen (8 MiB asked
# of each, more than t-tree's processes hold: every image cut).
case_pagewarm_tree() {
	start_prog t-tree
	local a=${READY[2]} b=${READY[3]} g=${READY[4]} p f
	track "$a"; track "$b"; track "$g"
	MEMDUMP_PAGES_WARM=$((8 << 20)) dump "$PID" "$T/d" -v 3
	for p in "$PID" "$a" "$b" "$g"; do
		grep -q "pages image of process $p: 8 MiB of page cache ready" "$MD_ERR" ||
			fail "process $p's pages image not warmed: $(grep 'pages image' "$MD_ERR")"
		wait_until 5 eval '[[ ! -d /proc/'"$p"' ]]' || fail "process $p outlived the killing dump"
	done
	for f in "$T/d/pages-1.img" "$T/d"/proc-*/pages-1.img; do
		[[ -f $f ]] || fail "no $f"
		(( $(stat -c %s "$f") < (8 << 20) )) || fail "$f not cut to its pages"
	done
	[[ -z $(find "$T/d" -name '.*' -o -name '*tmp*') ]] || fail "stray files: $(find "$T/d" -name '.*')"
	md verify verify -D "$T/d" || fail "the set does not verify: $(tail -n1 "$MD_ERR")"
	tree_restore_pass 1 "$PID" "$a" "$b" "$g"
}
add pagewarm-tree case_pagewarm_tree

# A snapshot's image is not warmed, even asked to: its pages are written once
# the target runs again (the copier's with O_DIRECT where the file takes it),
# their checksums taken in the copy; t-writer's image is still one instant
# and verifies.
case_pagewarm_snapshot() {
	start_prog t-writer
	local addr=${READY[2]} len=${READY[3]} nth=${READY[4]} n
	MEMDUMP_PAGES_WARM=$((64 << 20)) dump "$PID" "$T/d" --leave-running --snapshot -v 3
	grep -q "page cache ready" "$MD_ERR" && fail "a snapshot's pages-1.img was warmed"
	grep -q "snapshot: [0-9]* of [0-9]* pages saved on a write fault" "$MD_ERR" ||
		fail "the dump did not go through the snapshot"
	note "$(grep -m1 'snapshot: pages-1.img' "$MD_ERR")"
	n=$(summary_pages)
	(( $(stat -c %s "$T/d/pages-1.img") == n * 4096 )) || fail "pages-1.img is not its $n pages"
	md verify verify -D "$T/d" || fail "the set does not verify: $(tail -n1 "$MD_ERR")"
	md readmem read-mem -D "$T/d" "$addr" "$len" || fail "read-mem failed: $(tail -n1 "$MD_ERR")"
	"$TESTBIN/t-writer" --check "$MD_OUT" "$nth" > "$T/check" 2>&1
	grep -q '^PASS' "$T/check" || fail "the image is not one instant: $(grep -m1 FAIL "$T/check")"
	no_write_protection "$PID"
	check_child_pass
}
add pagewarm-snapshot case_pagewarm_snapshot
