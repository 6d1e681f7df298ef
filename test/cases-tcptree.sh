# TCP connections with both ends in the dump (issue 24; zdtm socket-tcp-local,
# socket-tcpbuf-local): t-tcptree's connection over the loopback of the
# case's network namespace (case_sk_netns), data queued both ways up to full
# send buffers, between a parent and its child (the listener's port shared
# by the parent's listener and the child's accepted end) or in one process.
# Every process locks its own connections; both ends come back in repair
# mode with their queues and sequence numbers, and every byte arrives.

# tcptree MODE FAMILY: dumped (killing) and restored twice from the same images
case_tcptree() {
	start_prog t-tcptree "$1" "$2"
	dump "$PID" "$T/d" --tcp-established
	expect_killed "$PID"
	(( $(ls "$T/d"/tcp-stream-*.img "$T/d"/*/tcp-stream-*.img 2> /dev/null | wc -l) == 2 )) ||
		fail "not two tcp-stream images: $(find "$T/d" -name 'tcp-stream-*')"
	crit_decodes "$T/d"
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}

# --leave-running: both processes' locks and repair mode taken off, the tree runs on
case_tcptree_lr() {
	start_prog t-tcptree tree v4
	dump "$PID" "$T/d" --tcp-established --leave-running
	check_child_pass
}

# Every memdump process killed at POINT (ARGS: the dump's options) while the
# connections of both processes of the tree are locked and in repair mode
# (images-written), or the child's released and the parent's not yet
# (net-unlocked): the guard takes every lock and repair mode off, the tree
# runs on and its connection carries every byte.
case_tcptree_killed() {
	local point=$1 w mdpid; shift
	start_prog t-tcptree tree v4
	MD_ERR=$T/md.dump.err
	mkdir -p "$T/d"
	MEMDUMP_FAULT=$point "$MEMDUMP" dump -t "$PID" -D "$T/d" --tcp-established "$@" -v 3 \
		2> "$MD_ERR" &
	mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point $point" "$OP_TIMEOUT" || fail "the dump never reached $point"
	nsenter -t "$SK_NETNS" -n nft list tables | grep -q "memdump-lock-$PID" ||
		fail "no network lock of the parent at $point"
	w=$(pgrep -P "$mdpid")
	[[ -n $w ]] || fail "memdump $mdpid has no worker process"
	kill -STOP "$mdpid" $w
	kill -9 "$mdpid" $w
	note "killed memdump $mdpid and its worker $w at $point"
	wait "$mdpid" 2> /dev/null
	wait_until 10 eval '! nsenter -t '"$SK_NETNS"' -n nft list tables | grep -q memdump-lock' ||
		{ sed 's/^/#   stderr: /' "$MD_ERR"; fail "a network lock is left after memdump was killed"; }
	wait_line "$MD_ERR" "its guard [0-9]+ undoes" 10 || fail "no guard took over"
	sed 's/^/#   stderr: /' "$MD_ERR"
	expect_untraced "$PID"
	expect_untraced "${READY[2]}"
	check_child_pass
}

# Every memdump process but the guard killed at the first target-killed of a
# killing dump of the tree (the child's lock kept for the restore). Both
# processes were sent SIGKILL before any lock was kept: none runs on while a
# lock kept for its dead peer cuts its connection (the stale tables
# memdump-lock-PID of a dead PID once found on the host: the child killed,
# its lock plain, memdump killed before the parent was; the guard gave the
# parent its network back, not its peer). The images are whole: the restore
# takes every lock off (case_sk_netns: no table left) and the connection
# carries every byte.
case_tcptree_killed_after_kill() {
	local w mdpid
	start_prog t-tcptree tree v4
	local child=${READY[2]}
	track "$child"
	MD_ERR=$T/md.dump.err
	mkdir -p "$T/d"
	MEMDUMP_FAULT=target-killed "$MEMDUMP" dump -t "$PID" -D "$T/d" --tcp-established -v 3 \
		2> "$MD_ERR" &
	mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point target-killed" "$OP_TIMEOUT" ||
		{ sed 's/^/#   stderr: /' "$MD_ERR"; fail "the dump never reached target-killed"; }
	w=$(pgrep -P "$mdpid")
	[[ -n $w ]] || fail "memdump $mdpid has no worker process"
	kill -STOP "$mdpid" $w
	kill -9 "$mdpid" $w
	note "killed memdump $mdpid and its worker $w at the first target-killed"
	wait "$mdpid" 2> /dev/null
	sed 's/^/#   stderr: /' "$MD_ERR"
	wait_until 5 eval '! alive '"$child" || fail "the child $child was not killed"
	wait_until 5 eval '! alive '"$PID" ||
		fail "the parent $PID runs on, its peer killed: $(nsenter -t "$SK_NETNS" -n nft list tables)"
	wait "$PID" 2> /dev/null
	wait_until 5 eval '[[ ! -d /proc/'"$PID"' && ! -d /proc/'"$child"' ]]' || fail "not reaped"
	nsenter -t "$SK_NETNS" -n nft list tables | grep -q "memdump-lock-$child" ||
		fail "the child's lock was not kept for the restore"
	restore_and_pass "$T/d" 1
}

# Both ends' locks off before either sends its window probe: the parent's
# acknowledgment of bytes the child had read was lost before the dump (t-tcptree
# lostack: its own nft table, deleted once the tree is dumped and killed).
# Restored, the parent must have that acknowledgment as soon as it runs: its
# probe reaches the child, which answers with it. A probe sent while the
# child's lock was still on was dropped, and the parent held the bytes as
# unacknowledged until its retransmission timer, backed off while the restore
# ran (zdtm socket-tcpbuf-local's stalls after a restore under load). The
# restore is held at rst-prepared (every socket rebuilt, nothing forked) for
# 4 s, as a loaded machine would hold it: the timer backs off meanwhile.
case_tcptree_lostack() {
	start_prog t-tcptree lostack v4
	dump "$PID" "$T/d" --tcp-established
	expect_killed "$PID"
	nsenter -t "$SK_NETNS" -n nft delete table inet t-lostack || fail "cannot delete t-lostack"
	MEMDUMP_FAULT=rst-prepared MEMDUMP_FAULT_SECS=4 restore_and_pass "$T/d" 1
}

# A listener with a connection not yet accepted (zdtm socket-tcp-skip-in-flight),
# its client end in the same process: refused by name (the target unharmed:
# it accepts the pending connection, then a new one), or with
# --skip-in-flight (CRIU's; RPC: tcp_skip_in_flight) dumped without it: the
# restored listener accepts a new connection first.
tcptree_inflight_py() {
	OUT=$T/inflight.out
	nsenter -t "$SK_NETNS" -n python3 -c '
import socket, os, signal, sys, time
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
c = socket.create_connection(l.getsockname())
time.sleep(0.1)
print("READY", os.getpid(), l.fileno(), c.fileno(), flush=True)
while not got: time.sleep(0.05)
n = socket.create_connection(l.getsockname())
for skipped in range(3):
	a, addr = l.accept()
	if addr == n.getsockname(): break
else:
	print("FAIL the new connection was not accepted", flush=True); sys.exit(1)
n.sendall(b"after"); a.shutdown(socket.SHUT_WR)
if a.recv(5) != b"after" or n.recv(1) != b"":
	print("FAIL the new connection does not carry data", flush=True); sys.exit(1)
print("PASS skipped=%d" % skipped, flush=True)' > "$OUT" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$OUT" '^READY ' 20 || { show_file inflight "$OUT"; fail "the target did not become READY"; }
	read -r -a READY < <(grep -m1 '^READY ' "$OUT")
	READY_SIZE=$(stat -c %s "$OUT")
}

case_tcptree_inflight_refused() {
	tcptree_inflight_py
	md dump dump -t "$PID" -D "$T/d" --tcp-established
	expect_md_error
	grep -q "fd ${READY[2]} (socket:\[[0-9]*\]: .*LISTEN: 1 connection(s) not yet accepted (--skip-in-flight" \
		"$MD_ERR" || fail "the listener is not named: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	check_child_pass
	[[ $RESULT == "PASS skipped=1" ]] || fail "the pending connection was not accepted first: $RESULT"
}

# how: cli (memdump dump --skip-in-flight) | rpc (tcp_skip_in_flight)
case_tcptree_inflight_skip() {
	tcptree_inflight_py
	mkdir -p "$T/d"
	case $1 in
	cli) dump "$PID" "$T/d" --tcp-established --skip-in-flight ;;
	rpc) "$TESTSRC/rpc-client.py" "$MEMDUMP" DUMP images_dir="$T/d" pid="$PID" \
		tcp_established=true tcp_skip_in_flight=true > "$T/rpc.out" 2> "$T/rpc.err" < /dev/null ||
		{ sed 's/^/#   /' "$T/rpc.out" "$T/rpc.err"; fail "the RPC dump failed"; } ;;
	esac
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
	[[ $RESULT == "PASS skipped=0" ]] || fail "the restored listener had a pending connection: $RESULT"
}

# An accepted connection restored before its listener (a lower fd), which
# holds the same port: repair mode binds it anyway, the listener binds and
# listens after it; both carry data.
case_tcptree_port_order() {
	OUT=$T/order.out
	nsenter -t "$SK_NETNS" -n python3 -c '
import socket, os, signal, sys, time
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", 0)); l.listen()
c = socket.create_connection(l.getsockname()); a, _ = l.accept()
os.dup2(a.fileno(), 50); os.dup2(l.fileno(), 60); os.dup2(c.fileno(), 61)
for s in (a, l, c): s.close()
a = socket.socket(fileno=50); l = socket.socket(fileno=60); c = socket.socket(fileno=61)
c.sendall(b"q1"); a.sendall(b"r1")
print("READY", os.getpid(), flush=True)
while not got: time.sleep(0.05)
if a.recv(2) != b"q1" or c.recv(2) != b"r1":
	print("FAIL the queued bytes", flush=True); sys.exit(1)
n = socket.create_connection(l.getsockname()); b, _ = l.accept()
n.sendall(b"z")
if b.recv(1) != b"z" or a.getsockname() != l.getsockname():
	print("FAIL the listener", flush=True); sys.exit(1)
print("PASS", flush=True)' > "$OUT" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$OUT" '^READY ' 20 || { show_file order "$OUT"; fail "the target did not become READY"; }
	READY_SIZE=$(stat -c %s "$OUT")
	dump "$PID" "$T/d" --tcp-established
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}

if command -v unshare > /dev/null && command -v nsenter > /dev/null; then
	add tcptree-tree-v4 case_sk_netns case_tcptree tree v4
	add tcptree-tree-v6 case_sk_netns case_tcptree tree v6
	add tcptree-one-v4 case_sk_netns case_tcptree one v4
	add tcptree-lr case_sk_netns case_tcptree_lr
	add tcptree-killed-images case_sk_netns case_tcptree_killed images-written
	add tcptree-killed-lr-unlocked case_sk_netns case_tcptree_killed net-unlocked \
		--leave-running --no-snapshot
	add tcptree-killed-after-kill case_sk_netns case_tcptree_killed_after_kill
	add tcptree-lostack case_sk_netns case_tcptree_lostack
	add tcptree-port-order case_sk_netns case_tcptree_port_order
	add tcptree-inflight-refused case_sk_netns case_tcptree_inflight_refused
	add tcptree-inflight-skip case_sk_netns case_tcptree_inflight_skip cli
	add tcptree-inflight-skip-rpc case_sk_netns case_tcptree_inflight_skip rpc
fi
