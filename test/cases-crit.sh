# Debian's crit (CRIU's image decoder, package criu) decodes every image file
# memdump writes (crit_decodes, run.sh): each set below holds state that once
# went into images of memdump's own, or sets within sets. memdump's additions
# are fields >= 50 of CRIU's messages, which crit skips; `memdump show` reads
# them back.

# crit_needed: the case is meaningless without crit
crit_needed() {
	command -v crit > /dev/null || fail "crit not installed (scripts/install-deps installs criu)"
}

# a tree in an IPC namespace of its own: the child's fds share the parent's
# descriptions (a queue's among them: fdinfo-1.img's share_pid, share_fd) and
# the namespace's POSIX queues (ipcns-var-1.img's mqueues); every file of the
# root's set and of proc-CHILD decodes, the sharing and the queues are kept
# (crit's decoding is a fixed amount of work that a loaded machine slows: case_limit)
case_crit_tree_mqueue() {
	crit_needed
	START_WRAP="unshare --ipc" start_prog t-mqueue tree
	local c=${READY[3]}
	track "$c"
	dump "$PID" "$T/d" --leave-running
	[[ -d $T/d/proc-$c ]] || fail "no set proc-$c for the child"
	crit_decodes "$T/d"
	(( CRIT_DECODED >= 30 )) || fail "crit decoded only $CRIT_DECODED files of a tree's sets"
	[[ -z $(find "$T/d" -name 'fd-share.img' -o -name 'mqueues-*.img') ]] ||
		fail "the set holds an image of memdump's own magic: $(find "$T/d" -name '*share*' -o -name 'mqueues*')"
	md show show -D "$T/d" || fail "show failed: $(tail -n1 "$MD_ERR")"
	grep -q ', 1 POSIX message queue$' "$MD_OUT" ||
		{ show_file show "$MD_OUT"; fail "ipcns-var-1.img does not hold the queue"; }
	md show show -D "$T/d/proc-$c" --json || fail "show of proc-$c failed: $(tail -n1 "$MD_ERR")"
	grep -qE "\"fd\": ${READY[2]}, .*\"shared_with\": \\{\"pid\": $PID, \"fd\": ${READY[2]}\\}" "$MD_OUT" ||
		{ show_file show "$MD_OUT"; fail "show --json does not give the queue fd's sharing"; }
	tree_untouched "$PID" "$c"
	check_child_pass	# mqueue-ns-tree restores such a set
	[[ $RESULT == "PASS tree" ]] || fail "program said $RESULT"
}
add crit-tree-mqueue case_crit_tree_mqueue
case_limit crit-tree-mqueue 300

# UNIX sockets of a tree (t-peercred shared: a pair, one end held by the parent
# and its child, one description): two sets, the sockets' images in each
case_crit_tree_sk() {
	crit_needed
	start_prog t-peercred shared
	local c=${READY[3]}
	track "$c"
	dump "$PID" "$T/d" --leave-running
	[[ -d $T/d/proc-$c ]] || fail "no set proc-$c for the child"
	crit_decodes "$T/d"
	grep -q '"shared_with"' < <("$MEMDUMP" show -D "$T/d/proc-$c" --json) ||
		fail "no fd of $c shares a description with its parent"
	tree_untouched "$PID" "$c"
	check_child_pass
}
add crit-tree-sk case_crit_tree_sk
case_limit crit-tree-sk 300

# an incremental chain: a pre-dump and a dump on it, each set decoded
case_crit_incr() {
	crit_needed
	start_prog t-incr 8 4
	pre_dump "$T/p1"
	crit_decodes "$T/p1"
	incr_step
	dump "$PID" "$T/d2" --leave-running --prev-images-dir ../p1
	[[ -L $T/d2/parent ]] || fail "$T/d2/parent is not a symlink"
	crit_decodes "$T/d2"
	check_child_pass
}
add crit-incr case_crit_incr
case_limit crit-incr 300
