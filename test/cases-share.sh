# Tables two processes of a tree share (src/dump/share.c, src/restore/share.c):
# an fd table (CLONE_FILES) and fs information (CLONE_FS) come back shared,
# which test/t-share checks by changing them in one process and looking in
# the other after the restore; what restore cannot give is refused by name.

# case_share_rst MODE: t-share MODE dumped (killed) and restored, then dumped
# with --leave-running, both runs checked
case_share_rst() {
	start_prog t-share "$1"
	local c=${READY[2]}
	track "$c"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	wait_until 5 eval '[[ ! -d /proc/'"$c"' ]]' || fail "child $c outlived the killing dump"
	restore_and_pass "$T/d" 1
	[[ $RESULT == "PASS $1" ]] || fail "program said $RESULT"
}

case_share_lr() {
	start_prog t-share "$1"
	local c=${READY[2]}
	track "$c"
	dump "$PID" "$T/d" --leave-running
	tree_untouched "$PID" "$c"
	check_child_pass
	restore_and_pass "$T/d" 1
	[[ $RESULT == "PASS $1" ]] || fail "program said $RESULT"
}

# the ids-PID.img memdump writes are CRIU's: crit decodes them, the shared id the same
case_share_ids() {
	start_prog t-share files
	local c=${READY[2]}
	track "$c"
	dump "$PID" "$T/d" --leave-running
	local a b
	a=$(crit decode -i "$T/d/ids-$PID.img" | python3 -c 'import json,sys; e=json.load(sys.stdin)["entries"][0]; print(e["files_id"], e["fs_id"], e["vm_id"])') ||
		fail "crit cannot decode ids-$PID.img"
	b=$(crit decode -i "$T/d/proc-$c/ids-$c.img" | python3 -c 'import json,sys; e=json.load(sys.stdin)["entries"][0]; print(e["files_id"], e["fs_id"], e["vm_id"])') ||
		fail "crit cannot decode ids-$c.img"
	note "ids: P $a, C $b"
	[[ ${a%% *} == "${b%% *}" ]] || fail "the fd table ids differ: $a / $b"
	[[ ${a##* } != "${b##* }" ]] || fail "the vm ids are the same: $a / $b"
	read -r _ fa _ <<< "$a"; read -r _ fb _ <<< "$b"
	[[ $fa != "$fb" ]] || fail "the fs ids are the same though fs is not shared: $a / $b"
	check_child_pass
}

case_share_refuse() {
	start_prog t-share "$1"
	local c=${READY[2]} o=${READY[3]}
	track "$c"; [[ $o == 0 ]] || track "$o"
	expect_dump_refused "$PID" "$2"
	tree_untouched "$PID" "$c"
	check_child_pass
}

# the child alone: its fd table is its parent's, outside the dump
case_share_outside() {
	start_prog t-share files
	local c=${READY[2]}
	track "$c"
	expect_dump_refused "$c" "^memdump: .*process $c holds state memdump cannot dump: its fd table \(CLONE_FILES\), shared with process $PID \(t-share\) outside the dump"
	tree_untouched "$PID" "$c"
	check_child_pass
}

# C shares P's table, G shares C's, D (C's fork) has a copy of its own
case_share_deep() {
	start_prog t-share deep
	local c=${READY[2]} g=${READY[3]} d=${READY[4]} p
	track "$c"; track "$g"; track "$d"
	[[ $(tree_pids "$PID" | wc -l) == 4 ]] || fail "t-share deep is not 4 processes"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	for p in "$c" "$g" "$d"; do
		wait_until 5 eval '[[ ! -d /proc/'"$p"' ]]' || fail "process $p outlived the dump"
	done
	[[ ! -s $T/d/proc-$g/fdinfo-1.img || $(crit decode -i "$T/d/proc-$g/fdinfo-1.img" | grep -c '"fd"') == 0 ]] ||
		fail "G, sharing its parent's fd table, has fds of its own in its set"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	for p in "$c" "$g" "$d"; do wait_until 5 untraced "$p" || fail "process $p not restored"; done
	[[ $(readlink /proc/$c/fd/0) == "$(readlink /proc/$PID/fd/0)" ]] || fail "C has another stdin"
	kill -USR1 "$PID" || fail "cannot signal $PID"
	get_result "$OUT"
	[[ $RESULT == "PASS deep" ]] || fail "program said $RESULT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}

add tree-share-deep case_share_deep
add tree-share-files case_share_rst files
add tree-share-fs case_share_rst fs
add tree-share-both case_share_rst both
add tree-share-files-lr case_share_lr files
add tree-share-fs-lr case_share_lr fs
add tree-share-ids case_share_ids
# a process in vfork() cannot be stopped until its child execs or exits: the dump
# refuses it at once, naming the memory they share (it waited forever before: zdtm vfork00)
add tree-share-refuse-vfork case_share_refuse vfork "process [0-9]+ \(t-share\): its memory and signal handlers \(CLONE_VM without CLONE_THREAD\), shared with process [0-9]+ of the tree"
add tree-share-refuse-vm case_share_refuse vm "its memory and signal handlers \(CLONE_VM without CLONE_THREAD\), shared with process [0-9]+ of the tree"
add tree-share-refuse-sib case_share_refuse sib "its fd table \(CLONE_FILES\), shared with process [0-9]+ of the tree but not with its parent [0-9]+"
add tree-share-refuse-outside case_share_outside
