# UNIX listeners with connections not accepted yet, datagrams queued from
# senders gone since (issue 24; zdtm sk-unix-listen0*, sockets00,
# socket_close_data*): t-sockunixq. Restored exactly, or refused by name.

# A killing dump, crit decodes it, restored twice: accept() returns the
# pending connections in order, both ways, the closed twin and the exited
# sender's datagrams are there.
case_unixq_rst() {
	start_prog t-sockunixq
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit_decodes "$T/d"
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add unixq-rst case_unixq_rst

# --leave-running: the pending connections and the queues stay as they were.
case_unixq_lr() {
	start_prog t-sockunixq
	dump "$PID" "$T/d" --leave-running
	check_child_pass
}
add unixq-lr case_unixq_lr

# What the dump of each refused mode of t-sockunixq must say.
declare -A UNIXQ_WHY=(
	[data]='l.sock LISTEN: a connection it has not accepted yet holds data its client socket:\[[0-9]+\] sent'
	[closed]='l.sock LISTEN: a connection it has not accepted yet was closed by its client'
	[tree]='comes from socket:\[[0-9]+\] outside the process \(another process of the tree\)'
	[outside]='l.sock LISTEN: a connection it has not accepted yet comes from socket:\[[0-9]+\] outside the process\)'
	[named]='a datagram queued from a socket outside the process: its sender has a name'
	[namedpeer]='UNIX socket [0-9]+ is connected to a socket closed since, which had a name'
)

# unixq_refused MODE: the dump fails in one line saying UNIXQ_WHY[MODE],
# before the target is harmed: it runs on, and its checks (of the refused
# state too) pass.
case_unixq_refused() {
	start_prog t-sockunixq "$1"
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qE "${UNIXQ_WHY[$1]}" "$MD_ERR" || fail "the error does not say: ${UNIXQ_WHY[$1]}"
	no_inventory "$T/d"
	expect_untraced "$PID"
	check_child_pass
}
for m in data closed tree outside named namedpeer; do
	add "unixq-refused-$m" case_unixq_refused "$m"
done

# A killing dump SIGKILLed (memdump and its worker) once its images are
# written: the target runs on unharmed, its pending connections and queues
# as they were.
case_unixq_killed_dump() {
	local w mdpid
	start_prog t-sockunixq
	MD_ERR=$T/md.dump.err
	mkdir -p "$T/d"
	MEMDUMP_FAULT=images-written "$MEMDUMP" dump -t "$PID" -D "$T/d" -v 3 2> "$MD_ERR" &
	mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point images-written" "$OP_TIMEOUT" ||
		fail "the dump never reached images-written: $(tail -n1 "$MD_ERR")"
	w=$(pgrep -P "$mdpid")
	kill -STOP "$mdpid" $w
	kill -9 "$mdpid" $w
	wait "$mdpid" 2> /dev/null
	note "killed memdump $mdpid and its worker $w at images-written"
	no_inventory "$T/d"
	expect_untraced "$PID"
	check_child_pass
}
add unixq-killed-dump case_unixq_killed_dump

# A restore SIGKILLed in the forked process once its fds are in (the
# pending clients connected by then): nothing is left, and the next restore
# of the same images works (the listener's file left behind is taken again).
case_unixq_killed_restore() {
	local md_pid
	start_prog t-sockunixq
	dump "$PID" "$T/d"
	expect_killed "$PID"
	MEMDUMP_FAULT=rst-child-files restore_bg "$T/d" killed
	wait_line "$MD_ERR" "fault point rst-child-files: " "$OP_TIMEOUT" ||
		fail "the restore did not reach rst-child-files: $(cat "$MD_ERR")"
	md_pid=$(pgrep -P "$RPID" -x memdump | head -n1)
	[[ -n $md_pid ]] || fail "no memdump below timeout $RPID"
	kill -KILL "$md_pid"
	wait "$RPID" 2> /dev/null
	wait_until 5 eval '[[ ! -d /proc/'"$PID"' ]]' || fail "the half-restored $PID is left"
	restore_and_pass "$T/d" 1
}
add unixq-killed-restore case_unixq_killed_restore
