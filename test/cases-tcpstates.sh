# TCP connections in opening and closing states (issue 24), dumped with
# --tcp-established and restored through TCP_REPAIR: an outside peer
# (test/tcpstate.py peer) in the case's network namespace sees the restored
# end behave as the original would have. What must not arrive before the
# restore (the target's FIN, its SYN) is dropped by an nft rule of the case's
# own, taken off after the restore.

# tcpst_rule FLAG PORT: drop the target's packets to PORT with FLAG (fin, syn)
tcpst_rule() {
	nsenter -t "$SK_NETNS" -n nft -f - <<-NFT || fail "cannot add the drop rule"
	table inet tcpst-drop {
		chain out {
			type filter hook output priority 0; policy accept;
			tcp dport $2 tcp flags & $1 == $1 drop
		}
	}
	NFT
}

# tcpst STATE FAMILY: the target brought to STATE, dumped (killing), restored;
# both ends say PASS
case_tcpst() {
	local state=$1 fam=$2 peer port flag=
	mkdir -p "$T/x"
	nsenter -t "$SK_NETNS" -n python3 "$TESTSRC/tcpstate.py" peer "$state" "$fam" "$T/x" \
		> "$T/peer.out" 2>&1 < /dev/null &
	peer=$!; track "$peer"
	wait_line "$T/peer.out" '^PORT ' 10 || { show_file peer "$T/peer.out"; fail "the peer did not listen"; }
	port=$(awk '/^PORT /{print $2; exit}' "$T/peer.out")
	case $state in
	FIN_WAIT1|CLOSING|LAST_ACK) flag=fin ;;
	SYN_SENT) flag=syn ;;
	esac
	[[ -z $flag ]] || tcpst_rule "$flag" "$port"
	OUT=$T/target.out
	nsenter -t "$SK_NETNS" -n python3 "$TESTSRC/tcpstate.py" target "$state" "$fam" "$T/x" "$port" \
		> "$OUT" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$OUT" '^(READY|FAIL)' 20 || { show_file target "$OUT"; fail "the target did not become READY"; }
	grep -q '^READY' "$OUT" || fail "the target: $(cat "$OUT")"
	READY_SIZE=$(stat -c %s "$OUT")
	dump "$PID" "$T/d" --tcp-established
	expect_killed "$PID"
	ls "$T/d"/tcp-stream-*.img > /dev/null 2>&1 || fail "no tcp-stream image"
	crit_decodes "$T/d"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	[[ -z $flag ]] || nsenter -t "$SK_NETNS" -n nft delete table inet tcpst-drop ||
		fail "cannot take the drop rule off"
	touch "$T/x/go"
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	note "$(nsenter -t "$SK_NETNS" -n ss -tnie)"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC, want 0 (the program's status)"
	wait_line "$T/peer.out" '^(PASS|FAIL)' "$OP_TIMEOUT" || { show_file peer "$T/peer.out"; fail "no result from the peer"; }
	grep -q '^PASS' "$T/peer.out" || { note "$(nsenter -t "$SK_NETNS" -n ss -tnie)"
		fail "the peer: $(grep -m1 '^FAIL' "$T/peer.out")"; }
}

if command -v unshare > /dev/null && command -v nsenter > /dev/null; then
	for st in FIN_WAIT1 FIN_WAIT2 CLOSE_WAIT CLOSING LAST_ACK SYN_SENT; do
		for fam in v4 v6 v4mapped; do
			name=${st,,}; name=${name//_/-}
			add "tcpst-$name-$fam" case_sk_netns case_tcpst "$st" "$fam"
		done
	done
	unset st fam name
fi

# A connection closed both ways from this end first (TCP_CLOSE, as zdtm
# socket-tcp-closed): its address pair is in TIME_WAIT, where the restore
# could not connect it again. Refused by name, the target unharmed. (The
# other end, closed last, has no TIME_WAIT: tcpreset-fin-*.)
case_tcpst_closed_refused() {
	sk_py closed '
import socket, os, time
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
c = socket.create_connection(l.getsockname()); a, _ = l.accept(); l.close()
c.shutdown(socket.SHUT_WR); a.shutdown(socket.SHUT_WR)
time.sleep(0.5)
print("READY", os.getpid(), c.fileno(), a.fileno(), c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0], flush=True)
time.sleep(120)'
	[[ ${READY[4]} == 7 ]] || fail "the connection is in state ${READY[4]}, not CLOSE"
	md dump dump -t "$PID" -D "$T/d" --tcp-established
	expect_md_error
	grep -q "fd ${READY[2]} (socket:\[[0-9]*\]: .*a connection over whose address pair is held (TIME_WAIT" "$MD_ERR" ||
		fail "the closed connection is not named"
	no_inventory "$T/d"
	expect_untraced "$PID"
}
add tcpst-closed-refused case_tcpst_closed_refused

# Connections closed both ways, refused without --tcp-established, each named
# with its own family: an IPv6 pair on ::1, and an IPv4 client of an IPv6
# listener (v4-mapped accepted end), as zdtm socket-tcp6-closed is built
# (ZDTM_IPV4V6 wins over ZDTM_IPV6 there: its client is IPv4).
case_tcpst_closed_family() {
	sk_py closedfam '
import socket, os, time
def pair(fam, dst):
    l = socket.socket(socket.AF_INET6); l.bind(("::", 0)); l.listen()
    c = socket.socket(fam); c.connect((dst, l.getsockname()[1])); a, _ = l.accept(); l.close()
    c.shutdown(socket.SHUT_WR); a.shutdown(socket.SHUT_WR)
    return c, a
c6, a6 = pair(socket.AF_INET6, "::1")
c4, a4 = pair(socket.AF_INET, "127.0.0.1")
time.sleep(0.5)
print("READY", os.getpid(), c6.fileno(), a6.fileno(), c4.fileno(), a4.fileno(), flush=True)
time.sleep(120)'
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	local fd fam i=2
	for fam in IPv6 IPv6 IPv4 IPv6; do
		fd=${READY[i]}; i=$((i + 1))
		grep -q "fd $fd (socket:\[[0-9]*\]: an $fam stream socket (protocol 6): a connection over .*dumped only with --tcp-established" "$MD_ERR" ||
			fail "fd $fd is not named an $fam connection over"
	done
	no_inventory "$T/d"
	expect_untraced "$PID"
}
add tcpst-closed-family case_tcpst_closed_family

# A TCP connection over (TCP_CLOSE, its peer named) with bytes left in its
# receive queue (test/t-tcpreset.c; zdtm socket-tcp-reseted): reset
# (ECONNRESET pending), reset after the peer's FIN (EPIPE), its error taken
# already, the connecting end (an ephemeral port), closed both ways. A run
# never dumped gives the kernel's sequence of answers (poll, SIOCINQ,
# SIOCOUTQ, state, recv, send, SO_ERROR); the restored process gives the same.
tcpreset_control() { # tcpreset_control MODE FAM -> CONTROL
	start_prog t-tcpreset "$1" "$2"
	kill -USR1 "$PID" || fail "cannot signal pid $PID"
	get_result "$OUT"
	timeout_wait "$PID" || fail "the control run exited with $?"
	CONTROL=$(grep -m1 '^SEQ ' "$OUT")
	note "never dumped: $CONTROL"
	rm -f "$OUT"	# the next start_prog must not find this run's READY
}

tcpreset_same() { # tcpreset_same: the program's SEQ line is CONTROL
	local seq; seq=$(grep -m1 '^SEQ ' "$OUT")
	[[ $seq == "$CONTROL" ]] || fail "answers differ: '$seq', never dumped: '$CONTROL'"
}

# tcpreset_roundtrip: $PID dumped killing with --tcp-established, restored, and
# answering as the control run did
tcpreset_roundtrip() {
	dump "$PID" "$T/d" --tcp-established
	expect_killed "$PID"
	ls "$T/d"/tcp-stream-*.img > /dev/null 2>&1 || fail "no tcp-stream image"
	crit_decodes "$T/d"
	restore_and_pass "$T/d" 1
	tcpreset_same
}

case_tcpreset() {
	local mode=$1 fam=$2
	tcpreset_control "$mode" "$fam"
	start_prog t-tcpreset "$mode" "$fam"
	tcpreset_roundtrip
}

# --leave-running: the dump reads the pending error without taking it
case_tcpreset_lr() {
	local mode=$1
	tcpreset_control "$mode" v4
	start_prog t-tcpreset "$mode" v4
	dump "$PID" "$T/d" --tcp-established --leave-running
	check_child_pass
	tcpreset_same
}

# Without --tcp-established: refused by name, the target unharmed
case_tcpreset_noest() {
	tcpreset_control rst v4
	start_prog t-tcpreset rst v4
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "fd 10 (socket:\[[0-9]*\]: .*a connection over .*dumped only with --tcp-established" \
		"$MD_ERR" || fail "the connection over is not named"
	no_inventory "$T/d"
	check_child_pass
	tcpreset_same
}

for mode in rst epipe taken clt fin; do
	for fam in v4 v6; do
		add "tcpreset-$mode-$fam" case_tcpreset "$mode" "$fam"
	done
done
unset mode fam
# The connecting end closed both ways first (its pair in TIME_WAIT), in a
# network namespace the dump saves (zdtm socket-tcp-closed in the ns
# flavour): the namespace made anew has no TIME_WAIT, the connection is
# rebuilt there and answers as a run never dumped. (In memdump's own
# namespace it is refused: tcpst-closed-refused.)
case_tcpreset_tw_ns() {
	START_WRAP="$TESTSRC/netns-wrap" tcpreset_control tw "$1"
	START_WRAP="$TESTSRC/netns-wrap" start_prog t-tcpreset tw "$1"
	same_ns "$PID" net self && fail "the target is in memdump's network namespace"
	tcpreset_roundtrip
}
add tcpreset-tw-ns-v4 case_tcpreset_tw_ns v4
add tcpreset-tw-ns-v6 case_tcpreset_tw_ns v6
add tcpreset-rst-lr case_tcpreset_lr rst
add tcpreset-epipe-lr case_tcpreset_lr epipe
add tcpreset-noest case_tcpreset_noest
