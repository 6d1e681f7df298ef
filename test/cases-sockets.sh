# Sockets (issue 9): UNIX, TCP, UDP, UDP-lite, netlink; what cannot be dumped is refused
# by name, every such fd in one error line.

# sk_py NAME CODE: run python CODE in the background (it prints READY <pid>
# ... when set up and sleeps); sets PID, OUT, READY.
sk_py() {
	OUT=$T/$1.out ERR=$T/$1.err
	python3 -c "$2" > "$OUT" 2> "$ERR" < /dev/null &
	PID=$!; track "$PID"
	wait_line "$OUT" '^READY ' "$OP_TIMEOUT" || { show_file "$1 stderr" "$ERR"; fail "$1 did not become READY"; }
	read -r -a READY < <(grep -m1 '^READY ' "$OUT")
}

# Every socket fd memdump cannot dump is named, not only the first.
case_sk_refuse_all() {
	local peer
	python3 -c '
import socket, os, time
s = socket.socket(socket.AF_UNIX); s.bind("'"$T"'/outside.sock"); s.listen()
print("READY", os.getpid(), flush=True)
c, _ = s.accept(); time.sleep(120)' > "$T/peer.out" 2>&1 < /dev/null &
	peer=$!; track "$peer"
	wait_line "$T/peer.out" '^READY' "$OP_TIMEOUT" || fail "the outside peer did not start"
	sk_py refuse-all '
import socket, os, time
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
c = socket.create_connection(l.getsockname()); a, _ = l.accept()
p = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88b7))
p.setsockopt(263, 18, 6 << 16 | 4243)  # PACKET_FANOUT, mode CBPF: its program cannot be read
r = socket.socket(socket.AF_INET, socket.SOCK_RAW, 253)
r.sendto(b"queued", ("127.0.0.1", 0))  # a datagram queued on itself
u = socket.socket(socket.AF_UNIX); u.connect("'"$T"'/outside.sock")
import struct
n = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); n.bind((0, 0))
n.send(struct.pack("=LHHLLBxHiII", 32, 18, 1, 1, 0, 0, 0, 1, 0, 0))  # RTM_GETLINK lo: a reply queued
time.sleep(0.2)
nf = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)  # NETLINK_NETFILTER, unbound
print("READY", os.getpid(), c.fileno(), a.fileno(), p.fileno(), r.fileno(), u.fileno(), n.fileno(),
      nf.fileno(), flush=True)
time.sleep(120)'
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	local fd
	for fd in "${READY[@]:2}"; do
		grep -qE "fd $fd \(socket:" "$MD_ERR" || fail "the error does not name fd $fd"
	done
	grep -qE 'TCP socket 127.0.0.1:[0-9]+ -> 127.0.0.1:[0-9]+ ESTABLISHED' "$MD_ERR" ||
		fail "the established TCP socket is not described"
	grep -q 'a packet raw socket (protocol 0x88b7): its fanout group 4243 steers by a BPF program' \
		"$MD_ERR" || fail "the packet socket is not described"
	grep -qE 'an IPv4 raw socket \(protocol 253\)[^:]*: it has datagrams queued' "$MD_ERR" ||
		fail "the raw socket is not described"
	grep -qE 'a netlink route socket \(protocol 0\) port -?[0-9]+: [0-9]+ bytes of messages queued' "$MD_ERR" ||
		fail "the netlink socket with a queued reply is not described"
	grep -q 'a netlink netfilter socket (protocol 12) port 0: the kernel keeps state for its port id' "$MD_ERR" ||
		fail "the netfilter netlink socket is not described"
	grep -q 'outside.sock' "$MD_ERR" || fail "the UNIX socket with an outside peer is not described"
	no_inventory "$T/d"
	expect_untraced "$PID"
}
add sk-refuse-all case_sk_refuse_all

declare -A SK_SHOWS=([t-sockunix]='unix stream .*/l.sock LISTEN' [t-socket]='tcp 127.0.0.1:[0-9]+ -> 0.0.0.0:0 LISTEN'
		    [t-sockinet]='tcp6 ::1:[0-9]+ -> ::' [t-socknl]='netlink 0 port [0-9]+ groups 5,36$' )

# sk_rst PROG [est]: dump (killing), crit decodes, restore twice, the program
# checks itself; est: the program holds an established TCP connection, dumped
# with --tcp-established
case_sk_rst() {
	local prog=$1 est=${2:-} opts=()
	start_prog "$prog" $est
	[[ $est == est ]] && opts=(--tcp-established)
	state_snap "$PID"
	dump "$PID" "$T/d" "${opts[@]}"
	[[ $est != est ]] || ls "$T/d"/tcp-stream-*.img > /dev/null 2>&1 || fail "no tcp-stream image"
	expect_killed "$PID"
	crit_decodes "$T/d"
	md show show -D "$T/d" || fail "show failed: $(tail -n1 "$MD_ERR")"
	grep -qE "${SK_SHOWS[$prog]}" "$MD_OUT" || { show_file show "$MD_OUT"; fail "show does not list the sockets"; }
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}

# sk_lr PROG [est]: --leave-running leaves every socket as it was
case_sk_lr() {
	local prog=$1 est=${2:-} opts=()
	start_prog "$prog" $est
	[[ $est == est ]] && opts=(--tcp-established)
	dump "$PID" "$T/d" --leave-running "${opts[@]}"
	check_child_pass
}

add sk-unix case_sk_rst t-sockunix
add sk-unix-lr case_sk_lr t-sockunix
add sk-tcp-listen case_sk_rst t-socket
add sk-inet case_sk_rst t-sockinet
add sk-inet-lr case_sk_lr t-sockinet

# a UDP socket holding a corked datagram (UDP_CORK, zdtm socket_udp-corked): refused by
# name, and the program's datagram goes out whole once it pulls the cork (the restored
# cork itself: t-sockinet's check in sk-inet)
case_sk_udp_corked() {
	start_prog t-sockinet corked
	expect_dump_refused "$PID" "UDP socket.*datagrams not sent yet \\(corked by UDP_CORK"
	expect_untraced "$PID"
	check_child_pass
}
add sk-udp-corked-refused case_sk_udp_corked

# --ext-unix-sk: datagram sockets connected to sockets of a process outside the
# dump (one bound to a path, one abstract, as /dev/log and systemd's are) are
# connected to those names again: what the restored process sends on them
# reaches the outside process. Without the option: refused by name.
SK_EXT_PEER='
import os, socket, sys
d = sys.argv[1]
socks = []
for name in (d + "/ext.sock", "\0md-ext-%d" % os.getpid()):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(name)
    socks.append(s)
print("READY", os.getpid(), flush=True)
for s in socks:
    print("GOT", s.recv(64).decode(), flush=True)
'
SK_EXT_TARGET='
import os, signal, socket, sys
d, peer = sys.argv[1], sys.argv[2]
socks = []
for name in (d + "/ext.sock", "\0md-ext-" + peer):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.connect(name)
    socks.append(s)
def check(*a):
    try:
        for i, s in enumerate(socks):
            s.send(b"after-%d" % i)
        print("PASS", flush=True)
    except OSError as e:
        print("FAIL", e, flush=True)
    os._exit(0)
signal.signal(signal.SIGUSR1, check)
print("READY", os.getpid(), flush=True)
while True:
    signal.pause()
'
case_sk_ext_unix() {
	python3 -c "$SK_EXT_PEER" "$T" > "$T/peer.out" 2>&1 < /dev/null &
	local peer=$!
	track "$peer"
	wait_line "$T/peer.out" '^READY ' 10 || fail "the outside peer did not start"
	start_py target "$SK_EXT_TARGET" "$T" "$peer"
	md refused dump -t "$PID" -D "$T/r"
	expect_md_error
	grep -q "is outside the process" "$MD_ERR" || fail "the outside peer is not named"
	no_inventory "$T/r"
	alive "$PID" || fail "the refused dump harmed the target"
	dump "$PID" "$T/d" --ext-unix-sk
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
	wait_until 10 eval '[[ $(grep -c "^GOT after-" "$T/peer.out") == 2 ]]' ||
		fail "the outside peer did not get both datagrams: $(cat "$T/peer.out")"
}
add sk-ext-unix case_sk_ext_unix

# An established connection is refused without --tcp-established.
case_sk_tcp_refused() {
	start_prog t-sockinet est
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q 'dumped only with --tcp-established' "$MD_ERR" || fail "the connection is not named"
	no_inventory "$T/d"
	check_child_pass
}
add sk-tcp-refused case_sk_tcp_refused

# sk_netns CASE ARGS: the case in a network namespace of its own, so the
# network lock touches only it: memdump and the test programs are started
# through wrappers that enter it (nsenter execs them: their PIDs stay).
case_sk_netns() {
	command -v nft > /dev/null || { note "nft not installed: skipped"; return 0; }
	unshare -n sleep 600 < /dev/null > /dev/null 2>&1 &
	local holder=$! p
	track "$holder"
	# the right side quoted: unquoted, net:[N] is a pattern matching no namespace's
	# name, so the wait ended at once and lo could be set up in ours, before unshare
	wait_until 5 eval '[[ $(readlink /proc/'"$holder"'/ns/net) != "$(readlink /proc/self/ns/net)" ]]' ||
		fail "no network namespace"
	nsenter -t "$holder" -n ip link set lo up || fail "cannot bring lo up in the namespace"
	mkdir -p "$T/bin"
	for p in "$TESTBIN"/t-* "$MEMDUMP"; do
		printf '#!/bin/sh\nexec nsenter -t %s -n %s "$@"\n' "$holder" "$p" > "$T/bin/${p##*/}"
		chmod +x "$T/bin/${p##*/}"
	done
	SK_NETNS=$holder TESTBIN=$T/bin MEMDUMP=$T/bin/${MEMDUMP##*/} "$@"
	nft_tables=$(nsenter -t "$holder" -n nft list tables 2>&1)
	[[ $nft_tables != *memdump-lock* ]] || fail "a network lock is left: $nft_tables"
}

# Netlink sockets (t-socknl, in a network namespace of the case's own: it adds
# an address on lo): port ids, groups, destinations, options after a restore
# and after --leave-running; a socket with a reply queued is refused by name.
case_sk_nl_queued() {
	start_prog t-socknl queued
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qE "fd ${READY[5]} \(socket:\[[0-9]+\]: a netlink route socket \(protocol 0\) port -?[0-9]+: [0-9]+ bytes of messages queued" \
		"$MD_ERR" || fail "the queued netlink socket is not named"
	(( $(grep -o 'fd [0-9]* (socket:' "$MD_ERR" | wc -l) == 1 )) || fail "other sockets are refused too"
	no_inventory "$T/d"
	check_child_pass
}

# A notification reaching a netlink socket after the dump looked at it (an
# address added while a killing dump is stalled with its images written): the
# dump fails naming the socket, and the target runs on with the message.
case_sk_nl_arrived() {
	start_prog t-socknl
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=images-written MEMDUMP_FAULT_SECS=3 "$MEMDUMP" dump -t "$PID" -D "$T/d" \
		2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" 'fault point images-written' "$OP_TIMEOUT" || fail "the dump never reached images-written"
	nsenter -t "$SK_NETNS" -n ip addr add 127.0.0.78/8 dev lo || fail "cannot add an address"
	wait "$mdpid"; MD_RC=$?
	nsenter -t "$SK_NETNS" -n ip addr del 127.0.0.78/8 dev lo
	sed 's/^/#   stderr: /' "$MD_ERR"
	(( MD_RC != 0 )) || fail "the dump succeeded"
	tail -n1 "$MD_ERR" | grep -qE "^memdump: dump failed: process $PID: socket:\[[0-9]+\] \(a netlink route socket \(protocol 0\) port $PID\) received [0-9]+ bytes during the dump" ||
		fail "the socket is not named"
	no_inventory "$T/d"
	check_child_pass
}

# The worker killed while the connections are in repair mode behind the
# network lock (--leave-running): memdump's parent takes both off.
case_sk_worker_killed() {
	start_prog t-sockinet est
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=infected "$MEMDUMP" dump -t "$PID" -D "$T/d" --tcp-established --leave-running --no-snapshot \
		-v 3 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" 'fault point infected' "$OP_TIMEOUT" || fail "the dump never reached the parasite"
	nsenter -t "$SK_NETNS" -n nft list tables | grep -q memdump-lock || fail "no network lock during the dump"
	kill_worker "$mdpid"
	grep -q "the network lock of process $PID is off" "$MD_ERR" || fail "the lock was not removed"
	grep -q "out of repair mode" "$MD_ERR" || fail "no socket was taken out of repair mode"
	expect_untraced "$PID"
	check_child_pass
}

# Every memdump process killed at POINT of a --tcp-established dump (ARGS:
# --leave-running, or a killing dump): the supervisor and its worker are
# stopped first, so that neither undoes anything, then SIGKILLed. The guard
# takes the network lock and repair mode off: the connection carries data
# both ways (t-sockinet), and no lock is left (case_sk_netns).
# sk_killed_all POINT REPAIRED(yes|no) ARGS...
# sk_dump_stalled POINT ARGS...: t-sockinet's connection dumped with
# --tcp-established ARGS, stalled at fault POINT with its lock on (but at
# net-unlocked); mdpid and w: memdump and its worker
sk_dump_stalled() {
	local point=$1; shift
	start_prog t-sockinet est
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=$point "$MEMDUMP" dump -t "$PID" -D "$T/d" --tcp-established "$@" -v 3 2> "$MD_ERR" &
	mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point $point" "$OP_TIMEOUT" || fail "the dump never reached $point"
	[[ $point == net-unlocked ]] || nsenter -t "$SK_NETNS" -n nft list tables | grep -q memdump-lock ||
		fail "no network lock at $point"
	w=$(pgrep -P "$mdpid")
	[[ -n $w ]] || fail "memdump $mdpid has no worker process"
}

case_sk_killed_all() {
	local point=$1 repaired=$2 w mdpid; shift 2
	sk_dump_stalled "$point" "$@"
	kill -STOP "$mdpid" $w
	kill -9 "$mdpid" $w
	note "killed memdump $mdpid and its worker $w at $point"
	wait "$mdpid" 2> /dev/null
	wait_until 10 eval '! nsenter -t '"$SK_NETNS"' -n nft list tables | grep -q memdump-lock' ||
		{ sed 's/^/#   stderr: /' "$MD_ERR"; fail "the network lock is left after memdump was killed"; }
	wait_line "$MD_ERR" "its guard [0-9]+ undoes" 10 || { sed 's/^/#   stderr: /' "$MD_ERR"; fail "no guard took over"; }
	if [[ $repaired == yes ]]; then
		wait_line "$MD_ERR" "out of repair mode" 10 || fail "no socket was taken out of repair mode"
	fi
	sed 's/^/#   stderr: /' "$MD_ERR"
	expect_untraced "$PID"
	check_child_pass
}

# Every memdump process killed once a killing dump has killed the target:
# the network lock it made plain for the restore stays (not owned by a
# socket of memdump's: nft lists no owner), the restore takes it off; the
# restored connection carries data both ways.
case_sk_killed_all_after() {
	local w table
	start_prog t-sockinet est
	MD_ERR=$T/md.dump.err
	mkdir -p "$T/d"
	MEMDUMP_FAULT=target-killed "$MEMDUMP" dump -t "$PID" -D "$T/d" --tcp-established -v 3 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point target-killed" "$OP_TIMEOUT" || fail "the dump never reached target-killed"
	w=$(pgrep -P "$mdpid")
	[[ -n $w ]] || fail "memdump $mdpid has no worker process"
	kill -STOP "$mdpid" $w
	kill -9 "$mdpid" $w
	wait "$mdpid" 2> /dev/null
	expect_killed "$PID"
	sed 's/^/#   stderr: /' "$MD_ERR"
	table=$(nsenter -t "$SK_NETNS" -n nft list table inet "memdump-lock-$PID" 2>&1) ||
		fail "the network lock was taken off: $table"
	[[ $table != *owner* ]] || fail "the lock left for the restore is owned: $table"
	restore_and_pass "$T/d" 1
}

# memdump-guard processes whose stderr is FILE (the guard keeps memdump's):
# the guard of this case's dump, not another case's.
guards_of() {
	local g
	for g in $(pgrep -x memdump-guard); do
		[[ $(readlink "/proc/$g/fd/2" 2> /dev/null) == "$1" ]] && echo "$g"
	done
}

# Every memdump process killed at POINT of a --tcp-established dump (ARGS),
# the guard too, so that nothing of memdump's undoes anything: the kernel
# removes the network lock with memdump's netlink socket, and the
# connections are in repair mode only while memdump reads them (tcp-repaired,
# the one moment left). The target runs on untraced, its connection carries
# data both ways (t-sockinet), no memdump table is left (case_sk_netns).
# sk_killed_everything POINT ARGS...
case_sk_killed_everything() {
	local point=$1 w g mdpid; shift
	sk_dump_stalled "$point" "$@"
	g=$(guards_of "$(readlink -f "$MD_ERR")")
	[[ -n $g ]] || fail "memdump $mdpid has no guard process"
	kill -STOP "$mdpid" $w $g
	kill -9 "$mdpid" $w $g
	note "killed memdump $mdpid, its worker $w and its guard $g at $point"
	wait "$mdpid" 2> /dev/null
	wait_until 10 eval '! alive '"$g" || fail "the guard $g lives on"
	sed 's/^/#   stderr: /' "$MD_ERR"
	! grep -qE "its guard [0-9]+ undoes" "$MD_ERR" || fail "the guard ran"
	wait_until 10 eval '! nsenter -t '"$SK_NETNS"' -n nft list tables | grep -q memdump' ||
		fail "a network lock is left: $(nsenter -t "$SK_NETNS" -n nft list tables)"
	expect_untraced "$PID"
	check_child_pass
}

# The same through RPC (memdump swrk, as runc drives it): the service and its
# worker killed while a connection is in repair mode; the guard undoes it.
case_sk_rpc_killed_all() {
	local client server w
	start_prog t-sockinet est
	mkdir -p "$T/d"
	MEMDUMP_FAULT=tcp-repaired "$TESTSRC/rpc-client.py" "$MEMDUMP" DUMP images_dir="$T/d" \
		pid="$PID" tcp_established=true leave_running=true > "$T/rpc.out" 2> "$T/rpc.err" < /dev/null &
	client=$!
	track "$client"
	wait_line "$T/rpc.err" "fault point tcp-repaired" "$OP_TIMEOUT" ||
		{ sed 's/^/#   stderr: /' "$T/rpc.err"; fail "the dump never reached tcp-repaired"; }
	server=$(pgrep -P "$client")
	w=$(pgrep -P "$server")
	[[ -n $server && -n $w ]] || fail "no memdump service ($server) or worker ($w)"
	kill -STOP "$server" $w
	kill -9 "$server" $w
	note "killed the service $server and its worker $w"
	wait "$client" 2> /dev/null
	wait_until 10 eval '! nsenter -t '"$SK_NETNS"' -n nft list tables | grep -q memdump-lock' ||
		{ sed 's/^/#   stderr: /' "$T/rpc.err"; fail "the network lock is left after memdump was killed"; }
	wait_line "$T/rpc.err" "its guard [0-9]+ undoes" 10 || fail "no guard took over"
	sed 's/^/#   stderr: /' "$T/rpc.err"
	expect_untraced "$PID"
	check_child_pass
}

if command -v unshare > /dev/null && command -v nsenter > /dev/null; then
	add sk-killed-all-rpc case_sk_netns case_sk_rpc_killed_all
	add sk-killed-all-after-kill case_sk_netns case_sk_killed_all_after
	add sk-killed-all-locked case_sk_netns case_sk_killed_all net-locked no --leave-running --no-snapshot
	add sk-killed-all-repaired case_sk_netns case_sk_killed_all tcp-repaired yes --leave-running --no-snapshot
	add sk-killed-all-parasite case_sk_netns case_sk_killed_all parasite-running yes --leave-running --no-snapshot
	add sk-killed-all-unlocked case_sk_netns case_sk_killed_all net-unlocked yes --leave-running --no-snapshot
	add sk-killed-all-kill-repaired case_sk_netns case_sk_killed_all tcp-repaired yes
	add sk-killed-all-kill-images case_sk_netns case_sk_killed_all images-written yes
	add sk-tcp-worker-killed case_sk_netns case_sk_worker_killed
	add sk-killed-everything-locked case_sk_netns case_sk_killed_everything net-locked \
		--leave-running --no-snapshot
	add sk-killed-everything-read case_sk_netns case_sk_killed_everything tcp-read \
		--leave-running --no-snapshot
	add sk-killed-everything-parasite case_sk_netns case_sk_killed_everything parasite-running
	add sk-killed-everything-unlocked case_sk_netns case_sk_killed_everything net-unlocked \
		--leave-running --no-snapshot
	add sk-killed-everything-kill-read case_sk_netns case_sk_killed_everything tcp-read
	add sk-killed-everything-kill-images case_sk_netns case_sk_killed_everything images-written
	add sk-tcp-established case_sk_netns case_sk_rst t-sockinet est
	add sk-tcp-established-lr case_sk_netns case_sk_lr t-sockinet est
	add sk-netlink case_sk_netns case_sk_rst t-socknl
	add sk-netlink-lr case_sk_netns case_sk_lr t-socknl
	add sk-netlink-queued case_sk_netns case_sk_nl_queued
	add sk-netlink-arrived case_sk_netns case_sk_nl_arrived
fi

# Real servers in the case's network namespace ($SK_NETNS), a client sending a
# request every 5 ms on one connection through dump and restore (or
# --leave-running): it must see every reply in order.
# sk_real KIND PORT kill|lr|snap CMD...   (snap: --leave-running --snapshot)
case_sk_real() {
	local kind=$1 port=$2 how=$3; shift 3
	nsenter -t "$SK_NETNS" -n "$@" > "$T/server.out" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_until 30 eval 'nsenter -t '"$SK_NETNS"' -n bash -c "echo > /dev/tcp/127.0.0.1/'"$port"'" 2> /dev/null' ||
		{ show_file server "$T/server.out"; fail "$kind did not start listening on $port"; }
	[[ $kind == memcached ]] && { nsenter -t "$SK_NETNS" -n bash -c \
		'exec 3<>/dev/tcp/127.0.0.1/'"$port"'; printf "set k 0 0 1\r\n0\r\n" >&3; head -n1 <&3' > /dev/null; }
	nsenter -t "$SK_NETNS" -n python3 "$TESTSRC/sk-client.py" "$kind" "$port" 4 > "$T/client.out" 2>&1 &
	local client=$!; track "$client"
	sleep 1
	if [[ $how == lr ]]; then
		dump "$PID" "$T/d" --tcp-established --leave-running
	elif [[ $how == snap ]]; then
		# a garbage collector (node's) may discard memory the snapshot has not saved
		# yet: that dump is refused by name and the server runs on; try again
		local try
		for try in 1 2 3; do
			mkdir -p "$T/d$try"
			md "snap$try" dump -t "$PID" -D "$T/d$try" --tcp-established --leave-running \
				--snapshot && break
			grep -q "discarded its memory .* before the snapshot had saved it" "$MD_ERR" ||
				fail "dump failed (exit $MD_RC): $(tail -n1 "$MD_ERR")"
			no_inventory "$T/d$try"
		done
		(( MD_RC == 0 )) || fail "the snapshot was refused 3 times: $(tail -n1 "$MD_ERR")"
		! grep -q "no snapshot" "$MD_ERR" || fail "the dump fell back: $(grep "no snapshot" "$MD_ERR")"
	else
		dump "$PID" "$T/d" --tcp-established
		expect_killed "$PID"
		md restore restore -D "$T/d" -d || fail "restore failed: $(tail -n1 "$MD_ERR")"
		track "$PID"
	fi
	wait "$client"
	show_file client "$T/client.out"
	grep -q '^PASS' "$T/client.out" || fail "the client saw: $(head -n1 "$T/client.out")"
	kill "$PID" 2> /dev/null
	return 0
}

if command -v redis-server > /dev/null; then
	for how in kill lr snap; do
		add "sk-real-redis-$how" case_sk_netns case_sk_real redis 16379 "$how" \
			redis-server --port 16379 --bind 127.0.0.1 --save "" --appendonly no
	done
else
	echo "# redis-server not installed: sk-real-redis-* skipped"
fi
if command -v memcached > /dev/null; then
	for how in kill lr snap; do
		add "sk-real-memcached-$how" case_sk_netns case_sk_real memcached 11311 "$how" \
			memcached -u root -l 127.0.0.1 -p 11311 -U 0 -t 1
	done
else
	echo "# memcached not installed: sk-real-memcached-* skipped"
fi
if command -v node > /dev/null; then
	for how in kill lr snap; do
		add "sk-real-node-$how" case_sk_netns case_sk_real http 18081 "$how" \
			node "$TESTSRC/sk-http.js" 18081
	done
else
	echo "# node not installed: sk-real-node-* skipped"
fi
for how in kill lr snap; do
	add "sk-real-http-$how" case_sk_netns case_sk_real http 18080 "$how" \
		python3 "$TESTSRC/sk-http.py" 18080
done

# An IPv6 listener's connection from an IPv4 peer (v4-mapped, as busybox nc or
# any dual-stack server): the network lock must match it as IPv4 on the wire,
# on input and output; the connection works after a --leave-running dump.
case_sk_v4mapped_lock() {
	OUT=$T/v4m.out
	nsenter -t "$SK_NETNS" -n python3 -c '
import socket, os, sys, signal
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
l = socket.socket(socket.AF_INET6); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("::", 0)); l.listen()
c = socket.create_connection(("127.0.0.1", l.getsockname()[1])); a, peer = l.accept()
print("READY", os.getpid(), peer[0], flush=True)
signal.sigwait([signal.SIGUSR1])
c.sendall(b"ping"); got = a.recv(4); a.sendall(b"pong"); back = c.recv(4)
print("PASS" if (got, back) == (b"ping", b"pong") else "FAIL %r %r" % (got, back), flush=True)' \
		> "$OUT" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$OUT" '^READY ' 10 || { show_file v4m "$OUT"; fail "the dual-stack server did not start"; }
	grep -q '^READY [0-9]* ::ffff:127.0.0.1' "$OUT" || fail "the accepted peer is not v4-mapped: $(cat "$OUT")"
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=infected MEMDUMP_FAULT_SECS=2 "$MEMDUMP" dump -t "$PID" -D "$T/d" \
		--tcp-established --leave-running 2> "$MD_ERR" &
	local mdpid=$! table
	track "$mdpid"
	wait_line "$MD_ERR" 'fault point infected' "$OP_TIMEOUT" || fail "the dump never reached the parasite"
	table=$(nsenter -t "$SK_NETNS" -n nft list table inet "memdump-lock-$PID" 2>&1)
	note "$table"
	[[ $table == *"ip saddr 127.0.0.1 tcp sport"* ]] || fail "no IPv4 rule for the v4-mapped connection"
	[[ $table != *"::ffff:"* ]] || fail "a v4-mapped address in an ip6 rule: it never matches"
	[[ $table == *"hook output"* ]] || fail "the lock does not cover the output direction"
	wait "$mdpid" || fail "the dump failed: $(tail -n1 "$MD_ERR")"
	kill -USR1 "$PID"
	wait_line "$OUT" '^(PASS|FAIL)' 10 || fail "no answer after the dump"
	grep -q '^PASS' "$OUT" || fail "the connection broke: $(tail -n1 "$OUT")"
}
if command -v unshare > /dev/null && command -v nsenter > /dev/null; then
	add sk-tcp-v4mapped-lock case_sk_netns case_sk_v4mapped_lock
fi

# UDP and UDP-lite sockets shut down both ways, connected and unconnected (on
# an unconnected one shutdown() says ENOTCONN but sets the flags all the same,
# and the dump sees it CLOSE, shut down): restored shut down, not refused.
case_sk_udp_shutdown() {
	start_py udpsh '
import os, signal, socket, errno
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
socks = []
for proto in (socket.IPPROTO_UDP, 136):	# UDP, UDP-lite
    a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, proto); a.bind(("127.0.0.1", 0))
    b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, proto); b.bind(("127.0.0.1", 0))
    b.connect(a.getsockname())
    b.shutdown(socket.SHUT_RDWR)
    try:
        a.shutdown(socket.SHUT_RDWR)
    except OSError as e:
        assert e.errno == errno.ENOTCONN
    socks += [a, b]
print("READY", os.getpid(), flush=True)
while not got:
    signal.pause()
bad = []
for s in socks:
    try:
        s.sendto(b"x", ("127.0.0.1", 9)); bad.append("fd %d sends after SHUT_WR" % s.fileno())
    except OSError as e:
        if e.errno != errno.EPIPE: bad.append("fd %d send: %s" % (s.fileno(), e))
print("PASS" if not bad else "FAIL " + "; ".join(bad), flush=True)' 
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add sk-udp-shutdown case_sk_udp_shutdown

# A UNIX datagram socket bound to a name and connected to that name (itself):
# the restore took it for one end of a socketpair and bound it twice.
case_sk_unix_dgram_self() {
	start_py self '
import os, signal, socket, sys
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1]); s.connect(sys.argv[1])
s.send(b"queued before")
print("READY", os.getpid(), flush=True)
while not got:
    signal.pause()
s.send(b"sent after")
a, b = s.recv(100), s.recv(100)
ok = (a, b) == (b"queued before", b"sent after") and s.getpeername() == sys.argv[1]
print("PASS" if ok else "FAIL %r %r %r" % (a, b, s.getpeername()), flush=True)' "$T/self.sock"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add sk-unix-dgram-self case_sk_unix_dgram_self

# UNIX sockets whose name's file is gone or was never absolute: a listener
# bound to a relative name (in its own directory, not the cwd at restore), a
# listener whose file was removed with a client connected to it, a datagram
# socket whose file was replaced by a regular file, with a connected sender.
# After the restore: the same names, the connections work, the removed file
# is still gone and the replacing file is there with its content.
case_sk_unix_gone() {
	mkdir -p "$T/rel" "$T/gone"
	start_py gone '
import os, signal, socket, sys
d = sys.argv[1]
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
os.chdir(d + "/rel")
rl = socket.socket(socket.AF_UNIX); rl.bind("rel.sock"); rl.listen()
gl = socket.socket(socket.AF_UNIX); gl.bind(d + "/gone/l.sock"); gl.listen()
os.unlink(d + "/gone/l.sock")
dg = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); dg.bind(d + "/gone/d.sock")
ds = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); ds.connect(d + "/gone/d.sock")
os.unlink(d + "/gone/d.sock")
open(d + "/gone/d.sock", "w").write("not a socket")
ds.send(b"queued")
os.chdir("/")
print("READY", os.getpid(), flush=True)
while not got:
    signal.pause()
bad = []
os.chdir(d + "/rel")
c = socket.socket(socket.AF_UNIX); c.connect("rel.sock"); a, _ = rl.accept()
c.send(b"x"); bad += [] if a.recv(1) == b"x" else ["relative listener"]
if rl.getsockname() != "rel.sock": bad.append("rel name %r" % rl.getsockname())
if gl.getsockname() != d + "/gone/l.sock": bad.append("gone name %r" % gl.getsockname())
if os.path.exists(d + "/gone/l.sock"): bad.append("the removed file is back")
if open(d + "/gone/d.sock").read() != "not a socket": bad.append("the replacing file changed")
ds.send(b"after")
r = [dg.recv(10), dg.recv(10)]
if r != [b"queued", b"after"]: bad.append("datagrams %r" % r)
print("PASS" if not bad else "FAIL " + "; ".join(bad), flush=True)' "$T"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
	[[ -e $T/gone/l.sock ]] && fail "the restore left the removed name $T/gone/l.sock"
	[[ $(cat "$T/gone/d.sock") == "not a socket" ]] || fail "the replacing file changed"
	ls "$T/gone" | grep -q memdump && fail "the restore left a moved file: $(ls "$T/gone")"
	return 0
}
add sk-unix-gone case_sk_unix_gone

# A connection accepted from a listener closed since, in one process and across
# a tree (zdtm deleted_unix_sock): its peer credentials cannot be made again
# (no listener to listen() under them, docs/refused.md): refused by name, the
# tree unharmed.
SK_LCLOSED='
import os, signal, socket, sys
d = sys.argv[1]
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
L = socket.socket(socket.AF_UNIX); L.bind(d + "/one.sock"); L.listen()
c = socket.socket(socket.AF_UNIX); c.connect(d + "/one.sock"); a, _ = L.accept(); L.close()
L = socket.socket(socket.AF_UNIX); L.bind(d + "/two.sock"); L.listen()
c2 = socket.socket(socket.AF_UNIX); c2.connect(d + "/two.sock"); a2, _ = L.accept(); L.close()
os.unlink(d + "/two.sock")
k = os.fork()
if k == 0:
    a.close(); a2.close()
    signal.pause(); os._exit(0)
c.close(); c2.close()
print("READY", os.getpid(), k, flush=True)
while not got:
    signal.pause()
bad = []
if a.getsockname() != d + "/one.sock": bad.append("name %r" % a.getsockname())
if a2.getsockname() != d + "/two.sock": bad.append("removed name %r" % a2.getsockname())
if os.path.exists(d + "/two.sock"): bad.append("the removed name is back")
print("PASS" if not bad else "FAIL " + "; ".join(bad), flush=True)
os.kill(k, signal.SIGKILL)'

case_sk_unix_listener_closed() {
	start_py lclosed "$SK_LCLOSED" "$T"
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qE 'a UNIX stream socket whose peer credentials \(pid [0-9]+, uid 0\) memdump cannot make again' "$MD_ERR" ||
		{ show_file err "$MD_ERR"; fail "the refusal does not name the connection"; }
	no_inventory "$T/d"
	expect_untraced "$PID"
	check_child_pass
}
add sk-unix-listener-closed case_sk_unix_listener_closed

# A restore SIGKILLed while the alias of a removed name exists (a datagram
# socket bound to a name removed since, another connected to it, made by the
# root; its child's ghosts' fault point): the sweeper removes the alias, and the next restore works.
SK_DGONE='
import os, signal, socket, sys
d = sys.argv[1]
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
dg = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); dg.bind(d + "/two.sock")
ds = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); ds.connect(d + "/two.sock")
os.unlink(d + "/two.sock")
ds.send(b"queued")
k = os.fork()
if k == 0:
    signal.pause(); os._exit(0)
print("READY", os.getpid(), k, flush=True)
while not got:
    signal.pause()
os.kill(k, signal.SIGKILL)
bad = []
if dg.getsockname() != d + "/two.sock": bad.append("removed name %r" % dg.getsockname())
if os.path.exists(d + "/two.sock"): bad.append("the removed name is back")
ds.send(b"after")
r = [dg.recv(10), dg.recv(10)]
if r != [b"queued", b"after"]: bad.append("datagrams %r" % r)
print("PASS" if not bad else "FAIL " + "; ".join(bad), flush=True)'

case_sk_unix_gone_killed() {
	start_py dgone "$SK_DGONE" "$T"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	MEMDUMP_FAULT=rst-ghosts MEMDUMP_FAULT_SECS=2 restore_bg "$T/d" kill
	wait_until "$OP_TIMEOUT" eval '(( $(grep -c "fault point rst-ghosts: stalling" "$MD_ERR") >= 2 ))' ||
		fail "the restore did not reach the child's fault point: $(cat "$MD_ERR")"
	ls -a "$T" | grep -q '^\.md' || fail "no alias to leave behind: $(ls -a "$T" | tr '\n' ' ')"
	local md_pid; md_pid=$(pgrep -P "$RPID" -x memdump | head -n1)
	[[ -n $md_pid ]] || fail "no memdump below timeout $RPID"
	kill -KILL "$md_pid"
	rstfail_wait_exit
	wait_until 5 eval '! ls -a "$T" | grep -q -e "^two.sock" -e "^\.md"' || fail "left behind: $(ls -a "$T" | tr '\n' ' ')"
	restore_and_pass "$T/d" 1
}
add sk-unix-gone-killed case_sk_unix_gone_killed

# --tcp-close (CRIU's): connections come back closed, as if the peer had gone:
# both ends read the end, writes fail EPIPE, the listener is untouched.
#   rst:  dumped with --tcp-established, restored with --tcp-close;
#   dump: dumped with --tcp-close (no repair, no lock), restored plainly (the
#         inventory says so), with a connection closed both ways before the
#         dump (TCP_CLOSE, zdtm socket-tcp-close2) too.
# A dump refuses --tcp-close with --tcp-established.
case_sk_tcp_close() {
	local mode=$1
	start_py tc '
import errno, os, signal, socket, time
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
signal.signal(signal.SIGPIPE, signal.SIG_IGN)
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
c = socket.create_connection(l.getsockname()); a, _ = l.accept()
c.send(b"lost")
socks = [a, c]
if "'"$mode"'" == "dump":
    d = socket.create_connection(l.getsockname()); b, _ = l.accept()
    d.shutdown(socket.SHUT_WR); b.shutdown(socket.SHUT_WR); time.sleep(0.3)
    socks += [b, d]
print("READY", os.getpid(), flush=True)
while not got:
    signal.pause()
bad = []
for s in socks:
    if s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0] != 7: bad.append("fd %d not CLOSE" % s.fileno())
    if s.recv(10, socket.MSG_DONTWAIT) != b"": bad.append("fd %d reads data" % s.fileno())
    try:
        s.send(b"x"); bad.append("fd %d sends" % s.fileno())
    except OSError as e:
        if e.errno != errno.EPIPE: bad.append("fd %d: %s" % (s.fileno(), e))
n = socket.create_connection(l.getsockname()); m, _ = l.accept(); n.send(b"y")
if m.recv(1) != b"y": bad.append("the listener")
print("PASS" if not bad else "FAIL " + "; ".join(bad), flush=True)'
	md refuse dump -t "$PID" -D "$T/d0" --tcp-close --tcp-established
	expect_md_error
	grep -q -- "--tcp-close and --tcp-established" "$MD_ERR" ||
		fail "the refusal does not say why: $(cat "$MD_ERR")"
	alive "$PID" || fail "the refused dump harmed the target"
	if [[ $mode == dump ]]; then
		dump "$PID" "$T/d" --tcp-close
		ls "$T/d"/tcp-stream-*.img > /dev/null 2>&1 && fail "a tcp-stream image with --tcp-close"
		crit_decodes "$T/d"
		! command -v crit > /dev/null ||
			crit decode -i "$T/d/inventory.img" | grep -q '"tcp_close": true' ||
			fail "the inventory does not say tcp_close"
	else
		dump "$PID" "$T/d" --tcp-established
	fi
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	if [[ $mode == dump ]]; then restore_bg "$T/d" 1; else restore_bg "$T/d" 1 --tcp-close; fi
	wait_restored "$PID"
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
	! nft list tables 2> /dev/null | grep -q "memdump-lock-$PID\$" ||
		fail "the dump's network lock is still on after the restore"
}
add sk-tcp-close-rst case_sk_tcp_close rst
add sk-tcp-close-dump case_sk_tcp_close dump

# A socket bound with IP_FREEBIND to an address the host does not have, the
# option turned off since: restored bound there, with IP_FREEBIND off.
case_sk_freebind_off() {
	start_py fb '
import os, signal, socket
IP_FREEBIND = 15
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_IP, IP_FREEBIND, 1)
s.bind(("2001:db8::42", 0))
s.setsockopt(socket.SOL_IP, IP_FREEBIND, 0)
name = s.getsockname()[:2]
print("READY", os.getpid(), flush=True)
while not got:
    signal.pause()
fb = s.getsockopt(socket.SOL_IP, IP_FREEBIND)
now = s.getsockname()[:2]
print("PASS" if (now, fb) == (name, 0) else "FAIL %r %r freebind %d" % (name, now, fb), flush=True)'
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add sk-freebind-off case_sk_freebind_off

# Two listeners sharing a port through SO_REUSEPORT, the first with the option
# turned off since: both listen on the port again, options as they were.
case_sk_reuseport_off() {
	start_py rp '
import os, signal, socket
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
a = socket.socket(); a.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
a.bind(("127.0.0.1", 0)); a.listen(); port = a.getsockname()[1]
b = socket.socket(); b.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
b.bind(("127.0.0.1", port)); b.listen()
a.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 0)
print("READY", os.getpid(), flush=True)
while not got:
    signal.pause()
ra = a.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT)
rb = b.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT)
ok = (a.getsockname()[1], b.getsockname()[1], ra, rb) == (port, port, 0, 1)
c = socket.create_connection(("127.0.0.1", port))
print("PASS" if ok else "FAIL ports %d %d reuseport %d %d" % (a.getsockname()[1], b.getsockname()[1], ra, rb), flush=True)'
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add sk-reuseport-off case_sk_reuseport_off

# IP-level options (zdtm sock_ip_opts00/01, issue 24): turned on, turned off
# again, or never touched, v4 and v6 UDP and a TCP listener; `show` lists them.
case_sk_ipopts() {
	start_prog t-sockipopts
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit_decodes "$T/d"
	md show show -D "$T/d" || fail "show failed: $(tail -n1 "$MD_ERR")"
	grep -qE 'udp 0\.0\.0\.0:0 -> 0\.0\.0\.0:0 CLOSE tos 8 ttl 32 pmtudisc 2 freebind pktinfo recverr transparent' \
		"$MD_OUT" || { show_file show "$MD_OUT"; fail "show does not list the v4 options"; }
	grep -qE 'udp6 :::0 -> :::0 CLOSE tos 32 ttl 17 pmtudisc 3 freebind pktinfo recverr transparent' \
		"$MD_OUT" || { show_file show "$MD_OUT"; fail "show does not list the v6 options"; }
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add sk-ipopts case_sk_ipopts
add sk-ipopts-lr case_sk_lr t-sockipopts

# A connected UDP socket with an error pending (an ICMP port unreachable the
# process has not read yet): the dump looks at its queue through sock_diag, so
# a --leave-running dump leaves the error for the process to get.
case_sk_udp_error_kept() {
	python3 -c '
import os, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
free = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); free.bind(("127.0.0.1", 0))
port = free.getsockname()[1]; free.close()
s.connect(("127.0.0.1", port)); s.send(b"x"); time.sleep(0.3)
print("READY", os.getpid(), flush=True)
while not os.path.exists(sys.argv[1]): time.sleep(0.05)
s.setblocking(False)
try:
    s.recv(10); print("NOERROR", flush=True)
except ConnectionRefusedError:
    print("PASS", flush=True)
except BlockingIOError:
    print("FAIL error lost", flush=True)
' "$T/go" > "$T/u.out" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$T/u.out" '^READY' "$OP_TIMEOUT" || fail "the UDP program did not start"
	dump "$PID" "$T/d" --leave-running
	touch "$T/go"
	wait_line "$T/u.out" '^(PASS|FAIL|NOERROR)' "$OP_TIMEOUT" || fail "the UDP program did not answer"
	grep -q '^PASS' "$T/u.out" || fail "after the dump: $(tail -n1 "$T/u.out")"
}
add sk-udp-error-kept case_sk_udp_error_kept

# SO_PEERCRED: the peer credentials the kernel fixed when the pair or the
# connection was made. The process's own pairs (stream, datagram) and its
# connection to its own listener come back with them: pid, uid, gid, groups;
# made under other effective ids (euid); in a child of the tree (child).
case_sk_peercred() {
	start_prog t-peercred "$1"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add sk-peercred-self case_sk_peercred self
add sk-peercred-euid case_sk_peercred euid
add sk-peercred-child case_sk_peercred child
# listeners alone: listen()ed again by the restored process under the dumped ids
add sk-peercred-listen case_sk_peercred listen
# a pair whose end the parent and its child both hold (one description): made
# again before the fork, the child inherits the new one (nginx's channels)
add sk-peercred-shared case_sk_peercred shared
# a pair made by the parent whose other end its child holds with a grandchild (one
# description), and the same for a connection to the parent's listener (zdtm
# seccomp_filter_inheritance): made again before the fork, the grandchild's copy too
add sk-peercred-below case_sk_peercred below
# a pair made by the parent, one end in each process after its fork (tree)
add sk-peercred-tree case_sk_peercred tree
# connections to the parent's listener made by it, one end of each kept by its child
add sk-peercred-tree-conn case_sk_peercred tree-conn
# a connection its child made after the fork to the parent's listener (a server
# forking workers): the parent listens again before the fork, the child connects
# with its ids, the parent accepts; a byte queued each way
add sk-peercred-forkconn case_sk_peercred forkconn
# the same whose listeners the parent closed once it accepted (a path since removed, an
# abstract name: zdtm deleted_unix_sock): a listener with the name stands in, listened to
# again before the fork, the child connects to it, the parent accepts and closes it
add sk-peercred-closed case_sk_peercred closed
# python multiprocessing's Manager's shape: a child listens after its fork, its
# earlier sibling, its parent and its later sibling (twice, the second under
# other ids) connect: it listens again once forked, each connects with its ids
# once it did, it accepts each on the fd of its connector's (by connect order for
# two of one process); a byte queued each way on each
add sk-peercred-mgr case_sk_peercred mgr
# named after they were made (zdtm sk-unix01): a datagram pair's ends bound (a
# path since removed, an abstract name), bound again by the process once it
# made the pair again; a connection accepted from a listener whose file was
# removed, made again through the listener's alias (kept until it is parked)
add sk-peercred-named case_sk_peercred named

# A pair made by a process gone since names a pid no restored process has:
# refused by name, the target unharmed.
case_sk_peercred_gone() {
	start_prog t-peercred gone
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qE 'peer credentials .*pid [0-9]+ uid [0-9]+ gid [0-9]+' "$MD_ERR" ||
		{ show_file err "$MD_ERR"; fail "the refusal does not name the peer credentials"; }
	no_inventory "$T/d"
	expect_untraced "$PID"
	check_child_pass
}
add sk-peercred-gone case_sk_peercred_gone

# Shapes whose peer credentials the restore cannot make again: refused by name
# (the socket, its credentials, the shape), no inventory, the tree unharmed.
# shared2: a socketpair end two siblings hold (one description).
case_sk_peercred_refused() {
	local shape='a socket held by two processes of the tree \(one description\), one not forked by the other'

	start_prog t-peercred "$1"
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qE "process [0-9]+: fd [0-9]+ \(socket:\[[0-9]+\]: a UNIX stream socket whose peer credentials \(pid [0-9]+, uid 0\) memdump cannot make again: $shape" "$MD_ERR" ||
		{ show_file err "$MD_ERR"; fail "the refusal does not name the socket and its shape"; }
	no_inventory "$T/d"
	expect_untraced "$PID"
	check_child_pass
}
add sk-peercred-shared2-refused case_sk_peercred_refused shared2
