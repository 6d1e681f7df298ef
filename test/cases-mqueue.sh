# POSIX message queues in an IPC namespace of the process's own (src/ns/mqueue.c,
# src/ns/mqueue_restore.c): every queue with its attributes, owner, mode and queued
# messages, the fds on them with their flags; t-mqueue ns checks them all.

# mq_start [MOUNT]: t-mqueue ns under unshare --ipc (MOUNT: with a mount namespace
# of its own and the namespace's mqueue mounted on $T/mq)
mq_start() {
	if [[ ${1:-} == mount ]]; then
		mkdir -p "$T/mq"
		printf '#!/bin/sh\nmount -t mqueue none %s || exit 9\nexec "$@"\n' "$T/mq" > "$T/mq-setup"
		chmod +x "$T/mq-setup"
		START_WRAP="unshare --ipc --mount --propagation private $T/mq-setup" start_prog t-mqueue ns
		[[ $(ls "/proc/$PID/root$T/mq" | tr '\n' ' ') == "md-a md-b md-c " ]] ||
			fail "the queues are not in the namespace's mqueue mount"
	else
		START_WRAP="unshare --ipc" start_prog t-mqueue ns
	fi
}

# dumped (killed) and restored: the queues come back in a new IPC namespace
case_mqueue_rst() {
	mq_start "${1:-}"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	md show show -D "$T/d" || fail "show failed: $(tail -n1 "$MD_ERR")"
	grep -q ', 3 POSIX message queues' "$MD_OUT" ||
		{ show_file show "$MD_OUT"; fail "ipcns-var-1.img does not hold the 3 queues"; }
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	if [[ ${1:-} == mount ]]; then	# the mount is the new namespace's
		[[ $(ls "/proc/$PID/root$T/mq" | tr '\n' ' ') == "md-a md-b md-c " ]] ||
			fail "the restored mqueue mount shows $(ls "/proc/$PID/root$T/mq" | tr '\n' ' ')"
	fi
	[[ $(readlink "/proc/$PID/ns/ipc") != "$(readlink /proc/self/ns/ipc)" ]] ||
		fail "the restored process is in memdump's IPC namespace"
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
	[[ $RESULT == "PASS ns" ]] || fail "program said $RESULT"
}

# --leave-running: the queues keep every message in its order (read and put back
# while frozen); the image restores too; crit decodes files.img with the queue fds
case_mqueue_lr() {
	mq_start
	dump "$PID" "$T/d" --leave-running
	crit decode -i "$T/d/files.img" > "$T/files.json" || fail "crit cannot decode files.img"
	[[ $(grep -o '"type": "UND"' "$T/files.json" | wc -l) == 2 ]] ||
		fail "files.img does not hold the two queue fds as UND: $(cat "$T/files.json")"
	crit_decodes "$T/d"	# the queues are in ipcns-var-1.img (field 50, which crit skips)
	md show show -D "$T/d" || fail "show failed"
	grep -q '3 POSIX message queues' "$MD_OUT" || fail "show does not count 3 POSIX message queues"
	grep -qE ' rdwr,nonblock,cloexec +- +/md-a \(POSIX message queue\)' "$MD_OUT" &&
		grep -qE ' rdonly,cloexec +- +/md-b \(POSIX message queue\)' "$MD_OUT" ||
		{ show_file show "$MD_OUT"; fail "show does not list the queue fds with their flags"; }
	check_child_pass
	[[ $RESULT == "PASS ns" ]] || fail "program said $RESULT"
	restore_and_pass "$T/d" 1
	[[ $RESULT == "PASS ns" ]] || fail "program said $RESULT"
}

# an mq_notify registration: refused by name, the registration still there after
case_mqueue_notify() {
	START_WRAP="unshare --ipc" start_prog t-mqueue notify
	expect_dump_refused "$PID" "POSIX message queue /md-n with an mq_notify registration \\(process $PID\\)"
	check_child_pass
}

# an unlinked queue held open in a namespace of its own: refused by name
case_mqueue_unlinked() {
	START_WRAP="unshare --ipc" start_prog t-mqueue
	expect_dump_refused "$PID" "fd ${READY[2]} \\(/memdump-t$PID \\(deleted\\): an unlinked POSIX message queue"
	check_child_pass
}

# a parent and its child in the namespace, one description of a queue held by both
case_mqueue_tree() {
	START_WRAP="unshare --ipc" start_prog t-mqueue tree
	local c=${READY[3]}
	track "$c"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	md show show -D "$T/d/proc-$c" || fail "show of proc-$c failed: $(tail -n1 "$MD_ERR")"
	grep -qE "^ *${READY[2]} .*/md-a \(POSIX message queue\) \(shared with fd ${READY[2]} of process $PID\)\$" "$MD_OUT" ||
		{ show_file show "$MD_OUT"; fail "the child's queue fd is not its parent's description"; }
	crit_decodes "$T/d"
	restore_and_pass "$T/d" 1
	[[ $RESULT == "PASS tree" ]] || fail "program said $RESULT"
}

add mqueue-ns-rst case_mqueue_rst
add mqueue-ns-tree case_mqueue_tree
add mqueue-ns-mount-rst case_mqueue_rst mount
add mqueue-ns-lr case_mqueue_lr
add mqueue-ns-notify-refuse case_mqueue_notify
add mqueue-ns-unlinked-refuse case_mqueue_unlinked
