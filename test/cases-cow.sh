# Memory shared copy-on-write between a parent and its child (issue 31;
# src/mem/cowpages.c, premap_restore.c): a page both map since fork() is
# written once, in the parent's set (the child's pagemap lists it with
# in_tree_parent), and comes back as one physical page in both; the pages
# either wrote after fork come back as their own. t-cow: 32 MiB filled, the
# child writes 1/8 of the first quarter, the parent 1/8 of the second.

COW_MB=32

# cow_pfns PARENT CHILD ADDR PAGES: "same=N diff=N absent=N" for the pages
# untouched since fork, then for those the child wrote, then the parent wrote
cow_pfns() {
	python3 - "$@" <<'EOF'
import struct, sys
pp, cp, addr, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3], 16), int(sys.argv[4])
def pfns(pid):
    with open("/proc/%d/pagemap" % pid, "rb") as f:
        f.seek((addr >> 12) * 8)
        b = f.read(n * 8)
    return [e & ((1 << 55) - 1) if e >> 63 else 0 for e in struct.unpack("<%dQ" % n, b)]
a, b = pfns(pp), pfns(cp)
kinds = {"untouched": [0, 0, 0], "child": [0, 0, 0], "parent": [0, 0, 0]}
for i in range(n):
    k = "child" if i < n // 4 and i % 8 == 3 else \
        "parent" if n // 4 <= i < n // 2 and i % 8 == 5 else "untouched"
    if not a[i] or not b[i]:
        kinds[k][2] += 1
    elif a[i] == b[i]:
        kinds[k][0] += 1
    else:
        kinds[k][1] += 1
print(" ".join("%s:same=%d,diff=%d,absent=%d" % (k, *v) for k, v in kinds.items()))
EOF
}

# cow_expect_shared PARENT CHILD LABEL: untouched pages one PFN, written ones two
cow_expect_shared() {
	local r
	r=$(cow_pfns "$1" "$2" "${READY[3]}" "${READY[4]}") || fail "cannot read the pagemaps"
	note "$3: $r"
	[[ $r =~ untouched:same=([0-9]+),diff=0,absent=0 ]] && (( BASH_REMATCH[1] > 0 )) ||
		fail "$3: pages untouched since fork are not one page in both: $r"
	[[ $r =~ child:same=0,diff=([0-9]+),absent=0 ]] && (( BASH_REMATCH[1] > 0 )) ||
		fail "$3: pages the child wrote are shared: $r"
	[[ $r =~ parent:same=0,diff=([0-9]+),absent=0 ]] && (( BASH_REMATCH[1] > 0 )) ||
		fail "$3: pages the parent wrote are shared: $r"
}

# cow_pages_bytes DIR: the bytes of every pages image of a tree's sets
cow_pages_bytes() { cat "$1"/pages-*.img "$1"/proc-*/pages-*.img | wc -c; }

# cow_start: t-cow started, its child known, the memory shared as expected
cow_start() {
	start_prog t-cow "$COW_MB"
	CPID=${READY[2]}
	track "$CPID"
	cow_expect_shared "$PID" "$CPID" "before the dump"
}

# cow_restore_shared DIR: restored, the pages shared again, contents exact
cow_restore_shared() {
	local dir=$1
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$dir" cow
	wait_restored "$PID"
	wait_until "$OP_TIMEOUT" untraced "$CPID" || fail "child $CPID not restored"
	cow_expect_shared "$PID" "$CPID" "after the restore"
	[[ -z ${GPID:-} ]] || cow_expect_all_shared "$CPID" "$GPID" "after the restore"
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}

# cow_dump_restore DIR [dump options]: killing dump, images smaller than two
# copies, restore, sharing back, contents exact
cow_dump_restore() {
	local dir=$1 bytes; shift
	dump "$PID" "$dir" "$@"
	expect_killed "$PID"
	bytes=$(cow_pages_bytes "$dir")
	note "pages images: $bytes bytes for two processes of $COW_MB MiB"
	(( bytes < COW_MB * 1024 * 1024 * 5 / 4 )) ||
		fail "the pages images hold $bytes bytes: the shared pages twice"
	cow_restore_shared "$dir"
}

# a killing dump of the tree and its restore: shared pages once in the
# images and one page again in both processes; every byte as dumped
case_cow_tree() {
	cow_start
	cow_dump_restore "$T/d" "$@"
}

# --leave-running in read mode: the tree still shares its pages after the dump
# (a read that pins a shared page would give the target a copy of its own)
case_cow_tree_lr() {
	cow_start
	dump "$PID" "$T/d" --leave-running "$@"
	cow_expect_shared "$PID" "$CPID" "after the dump"
	check_child_pass
}

# a grandchild that wrote nothing: one page with its parent (the child) for
# every page, after the restore too (the slot inherited twice)
case_cow_deep() {
	start_prog t-cow "$COW_MB" deep
	CPID=${READY[2]} GPID=${READY[5]}
	track "$CPID"; track "$GPID"
	cow_expect_shared "$PID" "$CPID" "before the dump"
	cow_expect_all_shared "$CPID" "$GPID" "before the dump"
	cow_dump_restore "$T/d"
}

# the parent's VMA grew after the fork (a page it mapped below merged into it): the
# child's VMA is a part of the parent's, its pages still shared after the restore
case_cow_grown() {
	start_prog t-cow "$COW_MB" grown
	CPID=${READY[2]}
	track "$CPID"
	cow_expect_shared "$PID" "$CPID" "before the dump"
	cow_dump_restore "$T/d"
}

# cow_expect_all_shared CHILD GRANDCHILD LABEL: every page one PFN in both
cow_expect_all_shared() {
	local r
	r=$(cow_pfns "$1" "$2" "${READY[3]}" "${READY[4]}") || fail "cannot read the pagemaps"
	note "$3 (grandchild): $r"
	[[ $r != *diff=[1-9]* && $r != *absent=[1-9]* ]] ||
		fail "$3: the grandchild's pages are not its parent's: $r"
}

# crit decodes the child's pagemap: the shared run is listed with field 51
case_cow_crit() {
	command -v crit > /dev/null || fail "crit missing"
	cow_start
	dump "$PID" "$T/d" --leave-running
	crit decode -i "$T/d/proc-$CPID/pagemap-$CPID.img" > "$T/pm.json" 2> "$T/crit.err" ||
		fail "crit cannot decode the child's pagemap: $(head -c 300 "$T/crit.err")"
	md verify verify -D "$T/d" || fail "verify failed: $(cat "$MD_ERR")"
	md verify-child verify -D "$T/d/proc-$CPID" || fail "verify of the child's set alone failed: $(cat "$MD_ERR")"
	kill -USR1 "$PID"
	get_result "$OUT"
}

# an incremental dump after a pre-dump of the tree: still exact and shared
case_cow_incr() {
	cow_start
	mkdir -p "$T/pre"
	md pre-dump.pre pre-dump -t "$PID" -D "$T/pre" || fail "pre-dump failed: $(tail -n1 "$MD_ERR")"
	dump "$PID" "$T/d" --prev-images-dir ../pre
	expect_killed "$PID"
	cow_restore_shared "$T/d"
}


add cow-crit case_cow_crit
add cow-incr case_cow_incr
add cow-tree case_cow_tree
add cow-tree-read case_cow_tree --mode read
add cow-tree-mem case_cow_tree --mode mem
add cow-tree-lr-read case_cow_tree_lr --mode read --no-snapshot
add cow-tree-lr-snap case_cow_tree_lr --mode read
add cow-deep case_cow_deep
add cow-grown case_cow_grown
