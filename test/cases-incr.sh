# Incremental dumps: memdump pre-dump leaves the target running with a
# userfaultfd (WP_ASYNC) of its own that tracks the pages it writes; a dump
# with --prev-images-dir writes only those and lists the others with
# PE_PARENT; restore follows the parent links. t-incr rewrites 1/STRIDE of
# its pages at each step (SIGUSR2) and checks every byte on SIGUSR1.

INCR_MB=64
INCR_STRIDE=16
INCR_PAGES=$(( INCR_MB * 256 ))
INCR_WRITTEN=$(( INCR_PAGES / INCR_STRIDE ))

# incr_step: one step of t-incr ($PID), waited for
incr_step() {
	INCR_STEP=$(( ${INCR_STEP:-0} + 1 ))
	kill -USR2 "$PID" || fail "cannot signal pid $PID"
	wait_line "$OUT" "^STEP $INCR_STEP\$" "$OP_TIMEOUT" || fail "t-incr did not do step $INCR_STEP"
	READY_SIZE=$(stat -c %s "$OUT")	# what a restore of a later dump starts from
}

# pre_dump DIR [options]: must succeed and leave the target running
pre_dump() {
	local dir=$1; shift
	mkdir -p "$dir"
	md "pre-dump.$(basename "$dir")" pre-dump -t "$PID" -D "$dir" "$@" ||
		fail "pre-dump failed (exit $MD_RC): $(tail -n1 "$MD_ERR")"
	[[ -f $dir/inventory.img ]] || fail "pre-dump succeeded but $dir/inventory.img missing"
	expect_untraced "$PID"
}

# tracker_fd PID: the fd number of the userfaultfd the process holds, or nothing
tracker_fd() {
	local f
	for f in /proc/"$1"/fd/*; do
		[[ $(readlink "$f") == 'anon_inode:[userfaultfd]' ]] && echo "${f##*/}"
	done
}

# tracked PID: memdump's tracker is there (fd, registrations, record)
expect_tracked() {
	[[ -n $(tracker_fd "$1") ]] || fail "pid $1 holds no userfaultfd after a tracking dump"
	grep -q '^VmFlags:.* uw' "/proc/$1/smaps" || fail "no VMA of $1 is registered (VmFlags uw)"
	[[ -f /run/memdump/track-$1 ]] || fail "no tracking record for $1"
}

# untracked PID: nothing of the tracker left
expect_untracked() {
	[[ -z $(tracker_fd "$1") ]] || fail "pid $1 still holds a userfaultfd (fd $(tracker_fd "$1"))"
	! grep -q '^VmFlags:.* \(uw\|um\|ui\)' "/proc/$1/smaps" ||
		fail "a VMA of $1 is still registered: $(grep -m1 '^VmFlags:.* uw' "/proc/$1/smaps")"
	[[ ! -e /run/memdump/track-$1 ]] || fail "the tracking record of $1 is left"
}

# pages_between DIR MIN MAX: pages-1.img of DIR holds MIN..MAX pages
pages_between() {
	local n=$(( $(stat -c %s "$1/pages-1.img") / 4096 ))
	note "$1/pages-1.img: $n pages"
	(( n >= $2 && n <= $3 )) || fail "$1/pages-1.img holds $n pages, expected $2..$3"
}

# parent_entries DIR: crit decodes the pagemap, which lists pages in the parent
expect_parent_entries() {
	timeout 30 crit show "$1/pagemap-$PID.img" > "$T/pagemap.json" ||
		fail "crit cannot decode $1/pagemap-$PID.img"
	grep -q '"PE_PARENT"' "$T/pagemap.json" || fail "no PE_PARENT entry in $1/pagemap-$PID.img"
	timeout 30 crit show "$1/inventory.img" > /dev/null || fail "crit cannot decode $1/inventory.img"
	[[ -L $1/parent ]] || fail "$1/parent is not a symlink"
}

# pre-dump, a step, dump: the second pages image holds the written pages only
case_incr_chain() {
	local mode=$1
	start_prog t-incr "$INCR_MB" "$INCR_STRIDE"
	pre_dump "$T/p1" --mode "$mode"
	expect_tracked "$PID"
	pages_between "$T/p1" "$INCR_PAGES" $(( INCR_PAGES + 256 ))
	timeout 30 crit show "$T/p1/pagemap-$PID.img" > /dev/null || fail "crit cannot decode the pre-dump"
	incr_step
	dump "$PID" "$T/d2" --mode "$mode" --prev-images-dir ../p1
	expect_killed "$PID"
	# the written pages, the step's sparse page and a few of libc's and the stack
	pages_between "$T/d2" $(( INCR_WRITTEN + 1 )) $(( INCR_WRITTEN + 64 ))
	expect_parent_entries "$T/d2"
	md verify verify -D "$T/d2" || fail "verify of the chain failed: $(cat "$MD_ERR")"
	# page 0 was rewritten (in d2's own pages), page 1 not (in p1's)
	local a=$(( READY[2] )) p
	for p in 0:0x1acc0002 1:0x1acc0001; do
		md read-mem read-mem -D "$T/d2" $(( a + ${p%%:*} * 4096 )) 4096 ||
			fail "read-mem of the chain failed: $(cat "$MD_ERR")"
		"$TESTBIN/t-incr" --gen $(( a + ${p%%:*} * 4096 )) 4096 "${p#*:}" | cmp -s - "$MD_OUT" ||
			fail "read-mem of page ${p%%:*} through the chain differs"
	done
	restore_and_pass "$T/d2" 1
	note "the same chain restores again"
	restore_and_pass "$T/d2" 2
}
for m in "${MODES[@]}"; do add "incr-chain-$m" case_incr_chain "$m"; done

# A pre-dump reads its pages after the thaw: held half way through them, the
# process runs (untraced, it does a step that rewrites and drops pages on both
# sides of the half); the dump on it takes what the step wrote, and the chain
# restores every byte as the process last had it.
case_incr_late() {
	start_prog t-incr "$INCR_MB" "$INCR_STRIDE"
	mkdir -p "$T/p1"
	MD_ERR=$T/md.late.err
	MEMDUMP_FAULT=pages-half MEMDUMP_FAULT_SECS=3 \
		"$MEMDUMP" pre-dump -t "$PID" -D "$T/p1" > "$T/md.late.out" 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point pages-half" "$OP_TIMEOUT" ||
		fail "the pre-dump never got half way: $(tail -n1 "$MD_ERR")"
	expect_untraced "$PID"
	incr_step
	wait "$mdpid" || fail "the pre-dump failed: $(tail -n1 "$MD_ERR")"
	grep -q 'its pages read after the thaw' "$T/md.late.out" ||
		fail "the pre-dump does not say it read its pages after the thaw: $(cat "$T/md.late.out")"
	[[ -f $T/p1/inventory.img ]] || fail "no inventory.img in the pre-dump"
	expect_tracked "$PID"
	incr_step
	dump "$PID" "$T/d2" --prev-images-dir ../p1
	expect_killed "$PID"
	expect_parent_entries "$T/d2"
	restore_and_pass "$T/d2" 1
}
add incr-late case_incr_late

# Mappings changed under a pre-dump reading after the thaw (t-lategone): part
# of the unread memory unmapped (zeros in the set: 1024 pages gone), part
# mapped again, part made PROT_NONE (read through /proc/PID/mem: the dump on
# it takes those pages from the pre-dump); the chain restores every byte.
case_incr_late_gone() {
	start_prog t-lategone
	mkdir -p "$T/p1"
	MD_ERR=$T/md.late.err
	MEMDUMP_FAULT=pages-half MEMDUMP_FAULT_SECS=3 \
		"$MEMDUMP" pre-dump -t "$PID" -D "$T/p1" -v 3 > /dev/null 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point pages-half" "$OP_TIMEOUT" ||
		fail "the pre-dump never got half way: $(tail -n1 "$MD_ERR")"
	kill -USR2 "$PID"
	wait_line "$OUT" '^STEP 1$' "$OP_TIMEOUT" || fail "t-lategone did not change its mappings"
	wait "$mdpid" || fail "the pre-dump failed: $(tail -n1 "$MD_ERR")"
	grep -q "1024 page(s) of process $PID gone after the thaw" "$MD_ERR" ||
		fail "the pre-dump does not count the unmapped pages: $(grep -m1 'gone' "$MD_ERR")"
	READY_SIZE=$(stat -c %s "$OUT")
	dump "$PID" "$T/d2" --prev-images-dir ../p1
	expect_killed "$PID"
	expect_parent_entries "$T/d2"
	restore_and_pass "$T/d2" 1
}
add incr-late-gone case_incr_late_gone

# A tree's process that exits while the pre-dump reads the tree's pages after the
# thaw (as a shell's short-lived child does): the pre-dump goes on and leaves no set
# of it; the dump on it (the child a zombie now) restores the tree.
case_incr_late_tree_exit() {
	local child
	printf '#!/bin/sh\nsleep 600 &\nexec "$@"\n' > "$T/wrap"
	chmod +x "$T/wrap"
	START_WRAP=$T/wrap start_prog t-incr "$INCR_MB" "$INCR_STRIDE"
	wait_until 5 eval '[[ -n $(pgrep -P '"$PID"' -x sleep) ]]' || fail "no sleep below t-incr"
	child=$(pgrep -P "$PID" -x sleep)
	mkdir -p "$T/p1"
	MD_ERR=$T/md.late.err
	MEMDUMP_FAULT=pages-half MEMDUMP_FAULT_SECS=3 \
		"$MEMDUMP" pre-dump -t "$PID" -D "$T/p1" -v 3 > "$T/md.late.out" 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point pages-half" "$OP_TIMEOUT" ||
		fail "the pre-dump never got half way: $(tail -n1 "$MD_ERR")"
	kill -9 "$child"
	wait "$mdpid" || fail "the pre-dump failed: $(tail -n1 "$MD_ERR")"
	grep -q "process $child of the tree of $PID exited before its pages were read" "$MD_ERR" ||
		fail "the pre-dump does not name the process gone: $(grep -m1 "$child" "$MD_ERR")"
	[[ -f $T/p1/inventory.img && ! -e $T/p1/proc-$child ]] ||
		fail "the pre-dump's set is not the root's alone: $(ls "$T/p1")"
	READY_SIZE=$(stat -c %s "$OUT")
	dump "$PID" "$T/d2" --prev-images-dir ../p1
	expect_killed "$PID"
	expect_parent_entries "$T/d2"
	restore_and_pass "$T/d2" 1
}
add incr-late-tree-exit case_incr_late_tree_exit

# A chain of three: pre-dump, pre-dump on it, dump on that.
case_incr_three() {
	start_prog t-incr "$INCR_MB" "$INCR_STRIDE"
	pre_dump "$T/p1"
	incr_step
	pre_dump "$T/p2" --prev-images-dir ../p1
	pages_between "$T/p2" $(( INCR_WRITTEN + 1 )) $(( INCR_WRITTEN + 64 ))
	expect_parent_entries "$T/p2"
	incr_step
	dump "$PID" "$T/d3" --prev-images-dir ../p2
	expect_killed "$PID"
	pages_between "$T/d3" $(( INCR_WRITTEN + 1 )) $(( INCR_WRITTEN + 64 ))
	md show show -D "$T/d3" || fail "show of the chain failed: $(cat "$MD_ERR")"
	restore_and_pass "$T/d3" 1
}
add incr-three case_incr_three

# dump --leave-running --track-mem keeps tracking: the next dump is incremental too.
case_incr_track_mem() {
	start_prog t-incr "$INCR_MB" "$INCR_STRIDE"
	pre_dump "$T/p1"
	incr_step
	dump "$PID" "$T/d2" --leave-running --track-mem --prev-images-dir ../p1
	expect_untraced "$PID"
	expect_tracked "$PID"
	incr_step
	dump "$PID" "$T/d3" --prev-images-dir ../d2
	expect_killed "$PID"
	pages_between "$T/d3" $(( INCR_WRITTEN + 1 )) $(( INCR_WRITTEN + 64 ))
	restore_and_pass "$T/d3" 1
}
add incr-track-mem case_incr_track_mem

# A final dump with --leave-running removes the tracker; so does track --stop.
# Either way the target is as before: no fd, no registration, same mappings.
# A record left by a tracked process that exited is removed by the next one
# memdump writes.
case_incr_untrack() {
	local how=$1 gone
	start_prog t-incr "$INCR_MB" "$INCR_STRIDE"
	grep -v '^VmFlags' "/proc/$PID/smaps" | grep -E '^[0-9a-f]+-' > "$T/maps.before"
	grep '^VmFlags' "/proc/$PID/smaps" > "$T/vmflags.before"
	sleep 0 & gone=$!; wait "$gone"
	mkdir -p /run/memdump
	echo "$gone 1 7 -1 12345 0" > "/run/memdump/track-$gone"
	pre_dump "$T/p1"
	[[ ! -e /run/memdump/track-$gone ]] || { rm -f "/run/memdump/track-$gone"; fail "the record of exited process $gone is left"; }
	expect_tracked "$PID"
	incr_step
	if [[ $how == stop ]]; then
		md track track --stop -t "$PID" || fail "track --stop failed: $(tail -n1 "$MD_ERR")"
		grep -q "memory tracking removed" "$MD_OUT" || fail "track --stop did not say it removed it"
	else
		dump "$PID" "$T/d2" --leave-running --prev-images-dir ../p1
		pages_between "$T/d2" $(( INCR_WRITTEN + 1 )) $(( INCR_WRITTEN + 64 ))
	fi
	expect_untraced "$PID"
	expect_untracked "$PID"
	grep -v '^VmFlags' "/proc/$PID/smaps" | grep -E '^[0-9a-f]+-' > "$T/maps.after"
	grep '^VmFlags' "/proc/$PID/smaps" > "$T/vmflags.after"
	diff "$T/maps.before" "$T/maps.after" > "$T/maps.diff" || fail "the mappings changed: $(head -n3 "$T/maps.diff")"
	diff "$T/vmflags.before" "$T/vmflags.after" > "$T/vmflags.diff" ||
		fail "VmFlags changed: $(head -n3 "$T/vmflags.diff")"
	# without tracking a dump against the old set writes every page
	dump "$PID" "$T/d3" --leave-running --prev-images-dir ../p1
	grep -q "no memory tracking of process $PID" "$MD_ERR" || fail "no warning that tracking is gone"
	pages_between "$T/d3" $(( INCR_PAGES - INCR_WRITTEN )) $(( INCR_PAGES + 256 ))	# less the dropped ones
	[[ ! -e $T/d3/parent ]] || fail "a full dump got a parent link"
	check_child_pass
}
add incr-untrack-stop case_incr_untrack stop
add incr-untrack-dump case_incr_untrack dump

# SIGKILL of the worker of a dump or pre-dump while the parasite serves (a
# pre-dump in splice mode), or while a pre-dump reads its pages after the thaw
# (late: its default read mode): the target runs on, tracked; a later track
# --stop (or final dump) removes it.
case_incr_worker_killed() {
	local cmd=$1 then=$2 point=parasite-running args=()
	start_prog t-incr "$INCR_MB" "$INCR_STRIDE"
	if [[ $cmd == dump ]]; then
		pre_dump "$T/p1"
		incr_step
		args=(--prev-images-dir ../p1)
	elif [[ ${3:-} == late ]]; then
		point=pages-half
	else
		args=(--mode splice)
	fi
	mkdir -p "$T/d"
	MD_ERR=$T/md.killed.err
	MEMDUMP_FAULT=$point MEMDUMP_FAULT_SECS=$(( OP_TIMEOUT * 2 )) \
		"$MEMDUMP" "$cmd" -t "$PID" -D "$T/d" "${args[@]}" 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point $point" "$OP_TIMEOUT" || fail "the $cmd never reached $point"
	if [[ $point == pages-half ]]; then
		# its pages are read from the running process: not traced, answers a step
		expect_untraced "$PID"
		incr_step
	fi
	kill_worker "$mdpid"
	expect_untraced "$PID"
	no_inventory "$T/d"
	[[ -n $(tracker_fd "$PID") ]] || fail "the tracker is gone: nothing left to test"
	if [[ $then == stop ]]; then
		md track track --stop -t "$PID" || fail "track --stop failed: $(tail -n1 "$MD_ERR")"
	else
		dump "$PID" "$T/d2" --leave-running
	fi
	expect_untraced "$PID"
	expect_untracked "$PID"
	check_child_pass
}
add incr-worker-killed-pre-dump-stop case_incr_worker_killed pre-dump stop
add incr-worker-killed-pre-dump-dump case_incr_worker_killed pre-dump dump
add incr-worker-killed-late-stop case_incr_worker_killed pre-dump stop late
add incr-worker-killed-dump-stop case_incr_worker_killed dump stop

# SIGKILL of memdump itself while a pre-dump writes 1 GiB (held half way: on a
# loaded machine the pre-dump could end before the kill): its worker fails the
# pre-dump at once and takes back the tracker it had created.
case_incr_md_killed() {
	start_prog t-incr 1024 "$INCR_STRIDE"
	mkdir -p "$T/d"
	MD_ERR=$T/md.killed.err
	MEMDUMP_FAULT=pages-half MEMDUMP_FAULT_SECS=$(( OP_TIMEOUT * 2 )) \
		"$MEMDUMP" pre-dump -t "$PID" -D "$T/d" --mode read 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point pages-half" "$OP_TIMEOUT" ||
		fail "the pre-dump never got half way: $(tail -n1 "$MD_ERR")"
	[[ -n $(tracker_fd "$PID") ]] || fail "no tracker in $PID half way through the pre-dump"
	kill -9 "$mdpid"
	wait "$mdpid" 2> /dev/null
	note "killed memdump $mdpid with the tracker in place"
	expect_untraced "$PID"
	wait_until 10 eval '[[ -z $(tracker_fd '"$PID"') ]]' || fail "the tracker was left in $PID"
	expect_untracked "$PID"
	no_inventory "$T/d"
	check_child_pass
}
add incr-memdump-killed case_incr_md_killed

# A userfaultfd of the process's own is still refused by name, before and
# while it is tracked.
case_incr_foreign_uffd() {
	start_prog t-incr "$INCR_MB" "$INCR_STRIDE" uffd
	mkdir -p "$T/p1"
	md pre-dump pre-dump -t "$PID" -D "$T/p1"
	expect_md_error
	grep -q 'a userfaultfd' "$MD_ERR" || fail "the refusal does not name the userfaultfd"
	expect_untraced "$PID"
	[[ $(tracker_fd "$PID") == 3 ]] || fail "the process's own userfaultfd is not all it holds"
	[[ ! -e /run/memdump/track-$PID ]] || fail "a tracking record for $PID"
	no_inventory "$T/p1"
	check_child_pass
}
add incr-foreign-uffd case_incr_foreign_uffd

# One it creates while tracked: the dump is refused naming it, and the
# target keeps memdump's tracker, as it was, for the next try or track --stop.
case_incr_foreign_uffd_late() {
	start_prog t-incr "$INCR_MB" "$INCR_STRIDE" uffd-late
	pre_dump "$T/p1"
	local fd; fd=$(tracker_fd "$PID")
	incr_step
	mkdir -p "$T/d2"
	md dump dump -t "$PID" -D "$T/d2" --prev-images-dir ../p1
	expect_md_error
	# its WP ranges are not counted: memdump's tracker holds WP ranges too
	grep -q "fd 3 (anon_inode:\[userfaultfd\]: a userfaultfd (features 0, O_CLOEXEC; the ranges are the process's but WP ones, memdump's tracker's too)" "$MD_ERR" ||
		fail "the refusal does not name the process's userfaultfd"
	grep -q "fd $fd " "$MD_ERR" && fail "memdump's own tracker was refused"
	expect_untraced "$PID"
	expect_tracked "$PID"
	no_inventory "$T/d2"
	md track track --stop -t "$PID" || fail "track --stop failed: $(tail -n1 "$MD_ERR")"
	[[ -z $(tracker_fd "$PID" | grep -vx 3) ]] || fail "memdump's tracker is left"
	! grep -q '^VmFlags:.* uw' "/proc/$PID/smaps" || fail "registrations are left"
	check_child_pass
}
add incr-foreign-uffd-late case_incr_foreign_uffd_late

# A broken chain is one line and starts nothing: the parent gone, another
# set in its place, a damaged parent; put back, the chain restores.
case_incr_broken_chain() {
	start_prog t-incr "$INCR_MB" "$INCR_STRIDE"
	pre_dump "$T/p0"
	pre_dump "$T/p1"
	incr_step
	dump "$PID" "$T/d2" --prev-images-dir ../p1
	expect_killed "$PID"
	ln -sfn ../p0 "$T/d2/parent"	# a valid set of the same process, not the one
	md restore restore -D "$T/d2"
	expect_md_error
	grep -q 'parent set 1 is not the set this one was dumped against' "$MD_ERR" ||
		fail "another parent set not refused"
	ln -sfn ../p1 "$T/d2/parent"
	mv "$T/p1" "$T/p1.real"
	md restore restore -D "$T/d2"
	expect_md_error
	grep -q 'broken image chain: parent set 1 cannot be opened' "$MD_ERR" || fail "missing parent not named"
	alive "$PID" && fail "a restore started without its parent set"
	cp -a "$T/p1.real" "$T/p1"
	printf '\x55' | dd of="$T/p1/pages-1.img" bs=1 seek=$(( 4096 * 100 + 7 )) conv=notrunc status=none
	md restore restore -D "$T/d2"
	expect_md_error
	grep -q 'pages-1.img is corrupt' "$MD_ERR" || fail "damaged parent pages not named"
	rm -rf "$T/p1"
	mkdir "$T/p1"
	cp -a "$T/p1.real/." "$T/p1/"
	md show show -D "$T/p1"
	expect_md_error
	grep -q 'pre-dump' "$MD_ERR" || fail "a pre-dump set is not said to be one"
	restore_and_pass "$T/d2" 1
}
add incr-broken-chain case_incr_broken_chain

# A tree: t-incr (the root, exec'd by the shell) and its child, another t-incr.
# pre-dump tracks both; each does a step; a second pre-dump on the first and the
# dump on that write each one's written pages only (its proc-PID set linked to
# its set in the previous one); the restored tree has every byte of both (each
# checks itself on SIGUSR1).
# start_incr_tree: the tree of case_incr_tree; PID the root (output OUT), CHILD the
# child (output COUT)
start_incr_tree() {
	COUT=$T/child.out
	OUT=$T/root.out
	sh -c "\"$TESTBIN/t-incr\" \"$T\" $INCR_MB $INCR_STRIDE > \"$COUT\" 2>&1 & exec \"$TESTBIN/t-incr\" \"$T\" $INCR_MB $INCR_STRIDE" \
		> "$OUT" 2> "$T/root.err" < /dev/null &
	PID=$!; track "$PID"
	wait_line "$OUT" "^READY " "$OP_TIMEOUT" || fail "the root did not become READY"
	wait_line "$COUT" "^READY " "$OP_TIMEOUT" || fail "the child did not become READY"
	CHILD=$(awk '/^READY /{print $2; exit}' "$COUT"); track "$CHILD"
	[[ $(proc_field "$CHILD" PPid) == "$PID" ]] || fail "$CHILD is not the child of $PID"
}

# incr_tree_step N: both processes of start_incr_tree do their step N
incr_tree_step() {
	kill -USR2 "$PID" "$CHILD"
	wait_line "$OUT" "^STEP $1\$" "$OP_TIMEOUT" || fail "the root did not do its step $1"
	wait_line "$COUT" "^STEP $1\$" "$OP_TIMEOUT" || fail "the child did not do its step $1"
}

# incr_tree_rewind: the outputs of start_incr_tree's processes as they were after step 2
incr_tree_rewind() {
	local csize; csize=$(grep -m1 -b '^STEP 2$' "$COUT" | cut -d: -f1)
	truncate -s "$READY_SIZE" "$OUT"
	truncate -s $(( csize + 7 )) "$COUT"
}

# restore_incr_tree DIR ARGS...: the tree restored from DIR (after its step 2), both pass
restore_incr_tree() {
	local dir=$1; shift
	incr_tree_rewind
	restore_bg "$dir" 1 "$@"
	incr_tree_pass
}

# incr_tree_pass: the restore started (RPID), both processes pass, the restore exits 0
incr_tree_pass() {
	wait_restored "$PID"
	wait_until 5 alive "$CHILD" || fail "the child is not restored"
	kill -USR1 "$CHILD"
	wait_line "$COUT" "^PASS" "$OP_TIMEOUT" || fail "the restored child: $(tail -n2 "$COUT")"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}

case_incr_tree() {
	local child cout
	start_incr_tree
	child=$CHILD cout=$COUT
	mkdir -p "$T/p1"
	md pre-dump pre-dump -t "$PID" -D "$T/p1" || fail "pre-dump of the tree failed: $(tail -n1 "$MD_ERR")"
	grep -q "pre-dumped process tree of $PID: 2 processes" "$MD_OUT" || fail "no tree summary: $(cat "$MD_OUT")"
	expect_untraced "$PID"; expect_untraced "$child"
	expect_tracked "$PID"; expect_tracked "$child"
	pages_between "$T/p1" "$INCR_PAGES" $(( INCR_PAGES + 256 ))
	pages_between "$T/p1/proc-$child" "$INCR_PAGES" $(( INCR_PAGES + 256 ))
	incr_tree_step 1
	mkdir -p "$T/p2"
	md pre-dump2 pre-dump -t "$PID" -D "$T/p2" --prev-images-dir ../p1 ||
		fail "the second pre-dump of the tree failed: $(tail -n1 "$MD_ERR")"
	pages_between "$T/p2" $(( INCR_WRITTEN + 1 )) $(( INCR_WRITTEN + 64 ))
	pages_between "$T/p2/proc-$child" $(( INCR_WRITTEN + 1 )) $(( INCR_WRITTEN + 64 ))
	incr_tree_step 2
	READY_SIZE=$(stat -c %s "$OUT")
	dump "$PID" "$T/d3" --prev-images-dir ../p2
	expect_killed "$PID"
	wait_until 5 eval '[[ ! -d /proc/'"$child"' ]]' || fail "the child outlived the dump"
	pages_between "$T/d3" $(( INCR_WRITTEN + 1 )) $(( INCR_WRITTEN + 64 ))
	pages_between "$T/d3/proc-$child" $(( INCR_WRITTEN + 1 )) $(( INCR_WRITTEN + 64 ))
	[[ $(readlink "$T/d3/proc-$child/parent") == "../../p2/proc-$child" ]] ||
		fail "the child's parent link is $(readlink "$T/d3/proc-$child/parent")"
	expect_parent_entries "$T/d3"
	[[ ! -e /run/memdump/track-$PID && ! -e /run/memdump/track-$child ]] ||
		fail "a tracking record is left after the killing dump"
	md verify verify -D "$T/d3" || fail "verify of the tree's chain failed: $(cat "$MD_ERR")"
	restore_incr_tree "$T/d3"
}
add incr-tree case_incr_tree
