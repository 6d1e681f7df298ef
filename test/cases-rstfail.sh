# A restore that fails or is stopped leaves nothing behind (src/restore/abort.c).
# Its commit point is the moment memdump lets the parked threads go: stopped
# before it (a failure, SIGTERM, SIGKILL) no process of the set stays and the
# deleted files it recreated are gone; after it they run. Every restore step
# has a fault point (MEMDUMP_FAULT=<point>): it stalls there, or with
# MEMDUMP_FAULT_FAIL=1 the step fails there.

RSTFAIL_POINTS=(rst-mounts rst-ghosts rst-prepared rst-forked rst-child-files rst-fill rst-commit)

# rstfail_gone PID...: none of them exists (PID 1 reaps the orphans in 1-2 s)
rstfail_gone() {
	local p
	for p in "$@"; do
		wait_until 5 eval '[[ ! -d /proc/'"$p"' ]]' ||
			fail "process $p is left (State: $(proc_field "$p" State), parent $(proc_field "$p" PPid))"
	done
}

# rstfail_no_ghosts: no deleted file of t-ghost recreated and left behind
rstfail_no_ghosts() {
	ls "$T"/ghost-* 2> /dev/null && fail "a recreated deleted file is left in $T"
	ls "$T" | grep -q memdump-ghost && fail "a ghost made beside its name is left in $T"
	ls /dev/shm | grep -q "t-ghost-$PID" && fail "the shm ghost is left in /dev/shm"
	return 0
}

# rstfail_wait_exit: the restore_bg memdump's (timeout's) exit status in MD_RC
rstfail_wait_exit() {
	wait_until "$OP_TIMEOUT" eval '! kill -0 '"$RPID"' 2> /dev/null' || fail "the restore did not exit"
	wait "$RPID"; MD_RC=$?
	note "restore exited with $MD_RC"
	sed 's/^/#   restore stderr: /' "$MD_ERR"
}

# rstfail_one_error: the failure's one line, last (a tree's restore may warn before)
rstfail_one_error() {
	(( MD_RC != 0 && MD_RC < 128 )) || fail "memdump exited $MD_RC, want a failure"
	(( $(grep -c '^memdump: ' "$MD_ERR") == 1 )) || fail "not one 'memdump: ' line on stderr"
	[[ $(tail -n1 "$MD_ERR") == "memdump: restore failed: "* ]] || fail "the last line is not the failure"
}

# rstfail_fail_at POINT PID...: the restore of $T/d fails at POINT in one line, naming
# it, and leaves none of the PIDs
rstfail_fail_at() {
	local point=$1; shift
	MEMDUMP_FAULT=$point MEMDUMP_FAULT_FAIL=1 md "fail.$point" restore -D "$T/d"
	rstfail_one_error
	grep -q "^memdump: restore failed: .*fault injected at $point" "$MD_ERR" ||
		fail "$point: the error does not name the fault point: $(cat "$MD_ERR")"
	rstfail_gone "$@"
}

# t-ghost (deleted files, shared memory) failed at every point, then restored
case_rstfail_points() {
	start_prog t-ghost
	dump "$PID" "$T/d"
	expect_killed "$PID"
	local point
	for point in "${RSTFAIL_POINTS[@]}"; do
		rstfail_fail_at "$point" "$PID"
		rstfail_no_ghosts
	done
	truncate -s "$READY_SIZE" "$OUT"
	restore_and_pass "$T/d" 1
	rstfail_no_ghosts
}

# rstfail_tree: t-tree P A B G dumped (killed) into $T/d; sets A B G
rstfail_tree() {
	start_prog t-tree
	A=${READY[2]} B=${READY[3]} G=${READY[4]}
	track "$A"; track "$B"; track "$G"
	dump "$PID" "$T/d"
	rstfail_gone "$PID" "$A" "$B" "$G"
}

# the tree of 4 restored after everything before: as dumped, to its PASS
rstfail_tree_pass() {
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" "$1"
	wait_restored "$PID"
	tree_shape_ok "$PID" "$A" "$B" "$G"
	tree_pass
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC, want 0"
}

case_rstfail_points_tree() {
	rstfail_tree
	local point
	for point in "${RSTFAIL_POINTS[@]}"; do
		[[ $point == rst-ghosts ]] && continue	# t-tree has no deleted file
		rstfail_fail_at "$point" "$PID" "$A" "$B" "$G"
	done
	rstfail_tree_pass ok
}

# rstfail_stop_at POINT SIG: a restore of the tree stalled at POINT, its memdump
# sent SIG: nothing of the tree stays; SIGTERM fails it in one line
rstfail_stop_at() {
	local point=$1 sig=$2 md_pid
	MEMDUMP_FAULT=$point restore_bg "$T/d" "$point.$sig"
	wait_line "$MD_ERR" "fault point $point: " "$OP_TIMEOUT" ||
		fail "$point: the restore did not reach its fault point: $(cat "$MD_ERR")"
	case $point in
	rst-forked|rst-child-files|rst-fill)	# the tree is there, in memdump's code or the blob
		wait_until "$OP_TIMEOUT" eval '[[ -d /proc/'"$G"' ]]' || fail "$point: G was not created";;
	esac
	md_pid=$(pgrep -P "$RPID" -x memdump | head -n1)
	[[ -n $md_pid ]] || fail "no memdump below timeout $RPID"
	kill "-$sig" "$md_pid"
	note "$point: sent SIG$sig to memdump $md_pid"
	rstfail_wait_exit
	if [[ $sig == KILL ]]; then
		(( MD_RC == 137 )) || fail "$point: memdump exited $MD_RC, not killed"
	else
		rstfail_one_error
		grep -q "^memdump: restore failed: interrupted by SIGTERM" "$MD_ERR" ||
			fail "$point: the failure does not name SIGTERM: $(tail -n1 "$MD_ERR")"
	fi
	rstfail_gone "$PID" "$A" "$B" "$G"
}

# case_rstfail_kill SIG: memdump restore of a tree sent SIG at each point, then restored
case_rstfail_kill() {
	rstfail_tree
	local point
	for point in rst-mounts rst-prepared rst-forked rst-child-files rst-fill rst-commit; do
		rstfail_stop_at "$point" "$1"
	done
	rstfail_tree_pass again
}

# -d and the restored process alone: memdump SIGKILLed parked, SIGTERMed in the fill
case_rstfail_kill_single() {
	start_prog t-pattern
	dump "$PID" "$T/d"
	expect_killed "$PID"
	A=$PID B=$PID G=$PID
	rstfail_stop_at rst-commit KILL
	rstfail_stop_at rst-fill TERM
	MEMDUMP_FAULT=rst-fill restore_bg "$T/d" fill-d -d
	wait_line "$MD_ERR" "fault point rst-fill: " "$OP_TIMEOUT" || fail "no fault point with -d"
	wait_until "$OP_TIMEOUT" eval '[[ -d /proc/'"$PID"' ]]' || fail "$PID was not created"
	kill -KILL "$(pgrep -P "$RPID" -x memdump | head -n1)"
	rstfail_wait_exit
	rstfail_gone "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	restore_and_pass "$T/d" 1
}

# A deleted file that no longer fits where it was: the error says ENOSPC
case_rstfail_ghost_enospc() {
	local dir=$T/small
	mkdir -p "$dir"
	mount -t tmpfs -o size=64k "rstfail-$$" "$dir" || fail "cannot mount a tmpfs on $dir"
	OUT=$T/t-ghost.out
	"$TESTBIN/t-ghost" "$dir" > "$OUT" 2> "$T/t-ghost.err" < /dev/null &
	PID=$!
	track "$PID"
	wait_line "$OUT" "^READY " "$OP_TIMEOUT" || { umount "$dir"; fail "t-ghost did not become READY"; }
	dump "$PID" "$T/d"
	expect_killed "$PID"
	# all but 4 KiB taken: the 10000 bytes of ghost-rw do not fit
	dd if=/dev/zero of="$dir/filler" bs=4k count=16 status=none 2> /dev/null
	rm -f "$dir/filler"
	dd if=/dev/zero of="$dir/filler" bs=4k count=$(( $(stat -f -c %a "$dir") - 1 )) status=none
	md enospc restore -D "$T/d"
	local err; err=$(tail -n1 "$MD_ERR")
	umount "$dir"
	expect_md_error
	[[ $err == *"No space left on device"* ]] || fail "the error does not say ENOSPC: $err"
	rstfail_gone "$PID"
}

# memdump restore SIGKILLed while t-ghost's deleted files are recreated
# (rst-ghosts, and once its process is forked): nothing of memdump runs
# after, and still no recreated file is left (src/restore/sweep.c)
case_rstfail_kill_ghosts() {
	start_prog t-ghost
	dump "$PID" "$T/d"
	expect_killed "$PID"
	local point md_pid
	for point in rst-ghosts rst-prepared rst-forked; do
		MEMDUMP_FAULT=$point restore_bg "$T/d" "$point.KILL"
		wait_line "$MD_ERR" "fault point $point: " "$OP_TIMEOUT" ||
			fail "$point: the restore did not reach its fault point: $(cat "$MD_ERR")"
		[[ $point != rst-ghosts ]] || ls "$T" | grep -q '^ghost-' ||
			fail "rst-ghosts: no deleted file recreated to leave behind: $(ls "$T")"
		md_pid=$(pgrep -P "$RPID" -x memdump | head -n1)
		[[ -n $md_pid ]] || fail "no memdump below timeout $RPID"
		kill -KILL "$md_pid"
		rstfail_wait_exit
		(( MD_RC == 137 )) || fail "$point: memdump exited $MD_RC, not killed"
		rstfail_gone "$PID"
		wait_until 5 eval '! ls "$T" | grep -q -e "^ghost-" -e memdump-ghost' ||
			fail "$point: recreated deleted files are left: $(ls "$T" | grep ghost)"
		rstfail_no_ghosts
	done
	truncate -s "$READY_SIZE" "$OUT"
	restore_and_pass "$T/d" 1
	rstfail_no_ghosts
}

# The same while a ghost of a read-only bind (t-ghostro) is recreated: the sweeper
# removes it through a writable clone of that mount (ghost_ro_mount: cases-ghost.sh)
case_rstfail_kill_ghost_ro() {
	ghost_ro_mount
	start_prog t-ghostro ro
	mount -o remount,ro,bind "$T/ro" || fail "cannot remount $T/ro read-only"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	MEMDUMP_FAULT=rst-ghosts restore_bg "$T/d" ro.KILL
	wait_line "$MD_ERR" "fault point rst-ghosts: " "$OP_TIMEOUT" ||
		fail "the restore did not reach its fault point: $(cat "$MD_ERR")"
	[[ -e $T/ro/ghost-ro ]] || fail "no deleted file recreated to leave behind: $(ls -A "$T/ro")"
	local md_pid; md_pid=$(pgrep -P "$RPID" -x memdump | head -n1)
	[[ -n $md_pid ]] || fail "no memdump below timeout $RPID"
	kill -KILL "$md_pid"
	rstfail_wait_exit
	(( MD_RC == 137 )) || fail "memdump exited $MD_RC, not killed"
	rstfail_gone "$PID"
	wait_until 5 eval '[[ -z $(ls -A "'"$T/ro"'") ]]' ||
		fail "the recreated deleted file is left on the read-only mount: $(ls -A "$T/ro")"
	truncate -s "$READY_SIZE" "$OUT"
	restore_and_pass "$T/d" 1
}

add rstfail-points case_rstfail_points
add rstfail-kill-ghosts case_rstfail_kill_ghosts
add rstfail-kill-ghost-ro case_rstfail_kill_ghost_ro
add rstfail-points-tree case_rstfail_points_tree
add rstfail-kill-tree case_rstfail_kill KILL
add rstfail-term-tree case_rstfail_kill TERM
add rstfail-kill-single case_rstfail_kill_single
add rstfail-ghost-enospc case_rstfail_ghost_enospc

# What a restore makes for a moment and must not leave: the listener standing
# in for a closed one, bound through an alias of its removed path (t-peercred
# closed: parent and child), and a stand-in process with the PID of a process
# that exited (t-procgone, its /proc files). The restore failed at every point
# and SIGKILLed at each point once forked: no process of the set, no stand-in,
# no socket file left; then restored to its PASS.
case_rstfail_standins() {
	start_prog "$@"
	local kid= gone= point
	case $1 in
	t-peercred)	kid=${READY[2]}; A=$PID B=$kid G=$PID;;
	t-procgone)	gone=${READY[2]}; A=$PID B=$PID G=$PID;;
	esac
	[[ -n $kid ]] && track "$kid"
	dump "$PID" "$T/d"
	rstfail_gone "$PID" $kid
	for point in rst-prepared rst-forked rst-child-files rst-fill rst-commit; do
		rstfail_fail_at "$point" "$PID" $kid
		rstfail_stop_at "$point" KILL
		[[ -z $gone ]] || ! kill -0 "$gone" 2> /dev/null ||
			fail "$point: the stand-in with PID $gone is left"
		wait_until 5 eval '[[ -z $(find "'"$T"'" -maxdepth 2 -type s) ]]' ||
			fail "$point: socket files are left: $(find "$T" -maxdepth 2 -type s)"
	done
	truncate -s "$READY_SIZE" "$OUT"
	restore_and_pass "$T/d" 1
}
add rstfail-standin-listener case_rstfail_standins t-peercred closed
add rstfail-standin-pid case_rstfail_standins t-procgone

# memdump's messages from a forked process once its fds are the restored ones
# (the fault point rst-child-files logs there) go to memdump's stderr and log,
# never to the restored program's fd 2 nor to a file that took the log's fd number.
case_rstfail_child_log() {
	start_prog t-fds
	dump "$PID" "$T/d"
	expect_killed "$PID"
	MEMDUMP_FAULT=rst-child-files MEMDUMP_FAULT_SECS=1 restore_and_pass "$T/d" 1
	grep -q "fault point rst-child-files: stalling" "$MD_ERR" ||
		fail "the forked process's message is not on memdump's stderr: $(cat "$MD_ERR")"
	grep -q "fault point" "$OUT" "$ERR" && fail "memdump's message went to the restored program's output"
	return 0
}
add rstfail-child-log case_rstfail_child_log

# ---- TCP connections go live only after the commit point (src/restore/golive.c)
# t-tcpcommit's connection to a peer outside the dump (a python listener in the
# case's network namespace): a restore failed or killed at a point before the
# commit kills a process whose socket is still in repair mode and locked, so
# the peer hears nothing (no FIN, no RST), the lock stays, and the next restore
# of the same set gets the connection back: the peer then reads every byte, in
# order, and EOF.
RSTFAIL_TCP_PEER='
import os, socket, sys
n = int(sys.argv[1])
want = bytes((i * 31 + 7) % 251 for i in range(2 * n))
l = socket.socket()
l.bind(("127.0.0.1", 0))
l.listen(1)
print("READY", os.getpid(), l.getsockname()[1], flush=True)
c, _ = l.accept()
c.sendall(bytes((i * 31 + 3) % 251 for i in range(n)))
got = b""
try:
    while True:
        b = c.recv(65536)
        if not b:
            break
        got += b
except OSError as e:
    print("PEER LOST", len(got), e, flush=True)
    sys.exit(1)
print("PEER EOF", len(got), "ok" if got == want else "differs", flush=True)
'

# rstfail_tcp_peer: the peer started in the case's namespace, its port in PEER_PORT
rstfail_tcp_peer() {
	PEER_OUT=$T/peer.out
	nsenter -t "$SK_NETNS" -n python3 -c "$RSTFAIL_TCP_PEER" 32768 > "$PEER_OUT" 2>&1 < /dev/null &
	PEER_PID=$!
	track "$PEER_PID"
	wait_line "$PEER_OUT" '^READY ' 10 || { show_file peer "$PEER_OUT"; fail "the peer did not start"; }
	PEER_PORT=$(awk '/^READY/ { print $3; exit }' "$PEER_OUT")
}

# rstfail_tcp_count LPORT: an nft table of the case's own counts the FIN and RST
# segments sent from LPORT, seen before the lock (priority -300) drops them
rstfail_tcp_count() {
	nsenter -t "$SK_NETNS" -n nft -f - <<-NFT || fail "cannot add the counting table"
	table inet t-tcpcommit {
		chain out {
			type filter hook output priority -350;
			tcp sport $1 tcp flags & (fin | rst) != 0 counter
		}
	}
	NFT
}

# rstfail_tcp_sent: segments with FIN or RST the restored end sent
rstfail_tcp_sent() {
	nsenter -t "$SK_NETNS" -n nft list table inet t-tcpcommit |
		sed -n 's/.*counter packets \([0-9]*\).*/\1/p'
}

# rstfail_tcp_silent WHAT: nothing sent, the peer heard nothing, its end still established
rstfail_tcp_silent() {
	sleep 1		# what a killed process sends reaches the peer at once
	[[ $(rstfail_tcp_sent) == 0 ]] || fail "$1: the restored end sent $(rstfail_tcp_sent) FIN or RST"
	grep -q '^PEER' "$PEER_OUT" && fail "$1: the peer lost its connection: $(grep '^PEER' "$PEER_OUT")"
	nsenter -t "$SK_NETNS" -n ss -Htn state established "( sport = :$PEER_PORT )" | grep -q . ||
		fail "$1: the peer's end is no longer established: $(nsenter -t "$SK_NETNS" -n ss -tan)"
	nsenter -t "$SK_NETNS" -n nft list tables | grep -q "memdump-lock-$PID" ||
		fail "$1: the network lock kept for the restore is gone"
}

# tcpcommit MODE (fail|kill): failed, or memdump SIGKILLed, at each point
# around the commit, then restored: the peer gets all its data
case_rstfail_tcp() {
	local mode=$1 point
	rstfail_tcp_peer
	start_prog t-tcpcommit "$PEER_PORT"
	dump "$PID" "$T/d" --tcp-established
	expect_killed "$PID"
	rstfail_tcp_count "${READY[2]}"
	rstfail_tcp_silent dump
	for point in rst-child-files rst-fill rst-commit; do
		if [[ $mode == fail ]]; then
			rstfail_fail_at "$point" "$PID"
		else
			A=$PID B=$PID G=$PID rstfail_stop_at "$point" KILL
		fi
		rstfail_tcp_silent "$point"
	done
	restore_and_pass "$T/d" 1
	wait_line "$PEER_OUT" '^PEER' "$OP_TIMEOUT" || fail "the peer did not read EOF"
	grep -q "^PEER EOF 65536 ok$" "$PEER_OUT" ||
		fail "the peer did not get every byte: $(grep '^PEER' "$PEER_OUT")"
	(( $(rstfail_tcp_sent) > 0 )) || fail "the counting table did not count the restored end's FIN"
}
add rstfail-tcp-points case_sk_netns case_rstfail_tcp fail
add rstfail-tcp-kill case_sk_netns case_rstfail_tcp kill

# memdump SIGKILLed after the go, its connection not yet live: the guard it
# forked makes it live; the program reads its peer's bytes, the peer all of its
case_rstfail_tcp_golive() {
	local md_pid
	rstfail_tcp_peer
	start_prog t-tcpcommit "$PEER_PORT"
	dump "$PID" "$T/d" --tcp-established
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	MEMDUMP_FAULT=rst-golive restore_bg "$T/d" golive
	wait_line "$MD_ERR" "fault point rst-golive: " "$OP_TIMEOUT" ||
		fail "the restore did not reach rst-golive: $(cat "$MD_ERR")"
	md_pid=$(pgrep -P "$RPID" -x memdump | head -n1)
	[[ -n $md_pid ]] || fail "no memdump below timeout $RPID"
	kill -KILL "$md_pid"
	wait "$RPID"
	wait_until 10 eval '! nsenter -t "$SK_NETNS" -n nft list tables | grep -q "memdump-lock-$PID"' ||
		fail "the network lock is still on after memdump was killed"
	wait_until 10 untraced "$PID" || fail "restored pid $PID is gone or still traced"
	grep -q "its guard [0-9]* makes them live" "$MD_ERR" ||
		fail "the guard did not say it took over: $(tail -n2 "$MD_ERR")"
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	wait_line "$PEER_OUT" '^PEER' "$OP_TIMEOUT" || fail "the peer did not read EOF"
	grep -q "^PEER EOF 65536 ok$" "$PEER_OUT" ||
		fail "the peer did not get every byte: $(grep '^PEER' "$PEER_OUT")"
}
add rstfail-tcp-golive-kill case_sk_netns case_rstfail_tcp_golive
