# shellcheck shell=bash
# pages-1.img queued for the disk as it is written (src/mem/pageflush.c):
# by the time a killing dump's images are all written, before the kill and
# the sync, the pages image's blocks are on their way to the disk.

# Extents of FILE not written back yet: still unwritten (fallocated, the
# warming's) or delayed allocation (dirty, no block yet), by filefrag -v.
extents_pending() { filefrag -v "$1" 2>/dev/null | grep -Ec 'unwritten|delalloc'; }

# A killing dump stalled at images-written (the target frozen, nothing
# synced yet): every extent of pages-1.img is written back while it waits.
# Without the writeback thread (MEMDUMP_PAGES_FLUSH=0) they stay pending
# until the sync, after the stall. Then the dump ends, and the set verifies
# and restores.
case_pageflush_before_sync() {
	local mdpid n
	start_prog t-pattern 64
	MD_ERR=$T/md.dump.err
	mkdir -p "$T/d"
	MEMDUMP_FAULT=images-written MEMDUMP_FAULT_SECS=15 "$MEMDUMP" dump -t "$PID" -D "$T/d" -v 3 \
		> "$T/md.dump.out" 2> "$MD_ERR" &
	mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point images-written" "$OP_TIMEOUT" ||
		fail "the dump never reached images-written: $(tail -n1 "$MD_ERR")"
	[[ -f $T/d/pages-1.img ]] || fail "no pages-1.img at images-written"
	wait_until 12 eval '(( $(extents_pending "$T/d/pages-1.img") == 0 ))' ||
		fail "pages-1.img not written back before the sync: $(extents_pending "$T/d/pages-1.img") extent(s) pending: $(filefrag -v "$T/d/pages-1.img" | tail -n3)"
	wait "$mdpid"; MD_RC=$?
	(( MD_RC == 0 )) || fail "dump failed (exit $MD_RC): $(tail -n1 "$MD_ERR")"
	expect_killed "$PID"
	n=$(sed -n 's/.* VMAs, \([0-9]*\) pages .*/\1/p' "$T/md.dump.out" | head -n1)
	(( $(stat -c %s "$T/d/pages-1.img") == n * 4096 )) || fail "pages-1.img is not its $n pages"
	md verify verify -D "$T/d" || fail "the set does not verify: $(tail -n1 "$MD_ERR")"
	restore_and_pass "$T/d" good
}
add pageflush-before-sync case_pageflush_before_sync
