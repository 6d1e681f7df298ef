# ICMP (ping), raw and packet sockets (issue 24): t-rawsk checks its sockets after
# the restore (options, names, memberships, fanout) and that they still work: the
# ping socket gets its echo reply with its id, the raw socket and the packet socket
# receive what is sent after the restore. What is not restored is refused by name.

# rawsk_rst MODE WRAP SHOW_REGEX...: dump (killing), crit, show, restore twice
rawsk_rst() {
	local mode=$1 wrap=$2; shift 2
	START_WRAP=$wrap start_prog t-rawsk "$mode"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit_decodes "$T/d"
	shows "$T/d" "$@"
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}

# In memdump's namespace: ping and raw sockets (the ping socket needs memdump's
# group in net.ipv4.ping_group_range, as the target's needed its own). A fresh
# machine's range ("1 0") leaves out every group: group 0 is let in for the case
# and the range put back after it.
case_rawsk_inet() {
	local f=/proc/sys/net/ipv4/ping_group_range range; range=$(cat "$f")
	read -r lo hi <<< "$range"
	if ! (( lo <= 0 && 0 <= hi )); then
		note "ping_group_range was $range: 0 0 for this case"
		trap 'printf "%s\n" "'"$range"'" > '"$f" EXIT
		echo "0 0" > "$f" || fail "cannot let group 0 into $f"
	fi
	rawsk_rst inet "" 'icmp 0\.0\.0\.0:[1-9][0-9]* -> 0\.0\.0\.0:0 CLOSE tos 0 ttl 33' \
		'raw 127\.0\.0\.1:253 -> 0\.0\.0\.0:0 CLOSE tos 16 ttl 40' 'raw6 :::58 '
}
add rawsk-inet case_rawsk_inet

# In a network namespace of its own whose ping_group_range lets group 0 in: the
# range comes back with the namespace (netns-1.img) before memdump makes the ping
# socket again there (a new namespace's "1 0" would leave it out).
case_rawsk_inet_ns() {
	command -v ip > /dev/null || fail "ip (iproute2) is not installed"
	NETNS_SETUP='sysctl -qw net.ipv4.ping_group_range="0 0"' rawsk_rst inet "$TESTSRC/netns-wrap" \
		'icmp 0\.0\.0\.0:[1-9][0-9]* -> 0\.0\.0\.0:0 CLOSE tos 0 ttl 33' 'ipv4 ping_group_range "0	0"'
}
add rawsk-inet-ns case_rawsk_inet_ns

case_rawsk_packet() {
	command -v ip > /dev/null || fail "ip (iproute2) is not installed"
	rawsk_rst packet "$TESTSRC/netns-wrap" \
		'packet raw proto 0x0003 ifindex 1 v2 fanout 77 mode 0 rx-ring 2x4096 memberships 2' \
		'packet dgram proto 0x88b5 ifindex 1 v1 tx-ring 2x4096 memberships 1' \
		'packet spkt proto 0x0003 ifindex 1' 'packet spkt proto 0x0003 ifindex 0'
}
add rawsk-packet case_rawsk_packet

# rawsk_refused MODE WRAP TEXT: the dump fails naming TEXT, the target runs on intact
rawsk_refused() {
	START_WRAP=$2 start_prog t-rawsk "$1"
	md refuse dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qF -- "$3" "$MD_ERR" || fail "the error does not name: $3"
	no_inventory "$T/d"
	check_child_pass
}

case_rawsk_err_ring() {
	rawsk_refused ringfull "$TESTSRC/netns-wrap" \
		"1 frame(s) received in its RX ring not yet read, 0 queued in its TX ring not yet sent"
}
add rawsk-err-ring case_rawsk_err_ring

case_rawsk_err_queued() {
	rawsk_refused queued "$TESTSRC/netns-wrap" "bytes of frames queued, which memdump does not dump"
}
add rawsk-err-queued case_rawsk_err_queued

case_rawsk_err_mapped() {
	rawsk_refused mapped "$TESTSRC/netns-wrap" "a socket's ring mapped (a packet socket's RX/TX ring"
}
add rawsk-err-mapped case_rawsk_err_mapped

# A fanout group a process outside the dump is in, and a ping socket of a
# namespace of its own whose ping_group_range (restored with it) leaves out
# memdump's group, which the restore would make it as.
case_rawsk_err_outside() {
	local peer
	python3 -c '
import os, socket, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88b6))
s.bind(("lo", 0x88b6))
s.setsockopt(263, 18, 4242)  # SOL_PACKET, PACKET_FANOUT: group 4242, hash
print("READY", os.getpid(), flush=True)
time.sleep(120)' > "$T/peer.out" 2>&1 < /dev/null &
	peer=$!; track "$peer"
	wait_line "$T/peer.out" '^READY' "$OP_TIMEOUT" || { show_file peer "$T/peer.out"; fail "the outside socket did not start"; }
	OUT=$T/inside.out
	python3 -c '
import os, socket, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88b6))
s.bind(("lo", 0x88b6))
s.setsockopt(263, 18, 4242)
print("READY", os.getpid(), s.fileno(), flush=True)
time.sleep(120)' > "$OUT" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$OUT" '^READY' "$OP_TIMEOUT" || { show_file inside "$OUT"; fail "the inside socket did not start"; }
	md refuse dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qE "its fanout group 4242 is shared with socket:\[[0-9]+\] outside the dump" "$MD_ERR" ||
		fail "the error does not name the shared fanout group"
	no_inventory "$T/d"
	expect_untraced "$PID"
	command -v ip > /dev/null || return 0
	START_WRAP="$TESTSRC/netns-wrap" NETNS_SETUP='sysctl -qw net.ipv4.ping_group_range="0 0"' \
		start_prog t-rawsk inet
	nsenter -t "$PID" -n sysctl -qw net.ipv4.ping_group_range="1 0" || fail "cannot change the range"
	md refuse2 dump -t "$PID" -D "$T/d2"
	expect_md_error
	grep -qF "memdump cannot make an ICMP socket in the process's network namespace to restore it" \
		"$MD_ERR" || fail "the error does not name the ICMP socket of the namespace"
	no_inventory "$T/d2"
	check_child_pass
}
add rawsk-err-outside case_rawsk_err_outside

# Every memdump process killed while the parasite runs in a process with packet
# sockets (rings, memberships, fanout): it runs on untraced, its sockets as they
# were (t-rawsk's own check), no parasite left, no image set.
case_rawsk_worker_killed() {
	START_WRAP="$TESTSRC/netns-wrap" case_fk_worker_killed t-rawsk packet
}
add rawsk-packet-worker-killed case_rawsk_worker_killed
