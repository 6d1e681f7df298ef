# UTS and IPC namespaces of a process's own (issue 10): t-ipcns runs under
# `unshare --uts --ipc`, with a host name and System V objects it checks
# itself after restore.

# start_ns_prog PROG ARGS...: PROG in new UTS and IPC namespaces
start_ns_prog() {
	command -v unshare > /dev/null || fail "unshare (util-linux) is not installed"
	START_WRAP="unshare --uts --ipc" start_prog "$@"
}

# same_ns PID KIND OTHER: PID's KIND namespace is OTHER's (a pid or "self")
same_ns() { [[ $(stat -Lc %i "/proc/$1/ns/$2") == $(stat -Lc %i "/proc/$3/ns/$2") ]]; }

# images_decoded DIR NAME...: DIR holds NAME.img for each, and crit decodes the set
images_decoded() {
	local d=$1 f; shift
	for f in "$@"; do
		[[ -f $d/$f.img ]] || fail "$f.img missing from the dump"
	done
	crit_decodes "$d"
}

case_ns_ipc_rst() {
	local host; host=$(hostname)
	start_ns_prog t-ipcns
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	images_decoded "$T/d" utsns-1 ipcns-var-1 ipcns-shm-1 ipcns-sem-1 ipcns-msg-1
	if command -v crit > /dev/null; then
		crit show "$T/d/utsns-1.img" | grep -q '"nodename": "ipcns-host"' ||
			fail "crit does not show the host name in utsns-1.img"
		crit show "$T/d/ipcns-msg-1.img" | grep -q '"qnum": 3' ||
			fail "crit does not show 3 queued messages in ipcns-msg-1.img"
	fi
	shows "$T/d" 'uts namespace: host ipcns-host' 'ipc namespace: 3 shm segments, 1 semaphore set, 1 message queue'
	restore_bg "$T/d" 1
	wait_restored "$PID"
	same_ns "$PID" uts self && fail "restored pid $PID is in memdump's UTS namespace"
	same_ns "$PID" ipc self && fail "restored pid $PID is in memdump's IPC namespace"
	[[ $(hostname) == "$host" ]] || fail "the host's name changed to $(hostname)"
	state_same "$PID" 1
	truncate -s "$READY_SIZE" "$OUT"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
	STATE_BEFORE=
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}

# --leave-running: reading the objects (shmat, MSG_COPY) leaves them as they were
case_ns_ipc_lr() {
	start_ns_prog t-ipcns
	dump "$PID" "$T/d" --leave-running
	check_child_pass
}

# A namespace another process outside the dump is in: refused, target untouched
case_ns_refuse_shared() {
	command -v nsenter > /dev/null || fail "nsenter (util-linux) is not installed"
	start_ns_prog t-ipcns
	nsenter -t "$PID" -u -i sleep 60 < /dev/null > /dev/null 2>&1 &
	local other=$!
	track "$other"
	wait_until 5 same_ns "$other" uts "$PID" || fail "nsenter did not enter"
	md refuse dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "its uts namespace, shared with process $other (sleep) outside the dump" "$MD_ERR" ||
		fail "the refusal does not name the shared uts namespace"
	grep -q "its ipc namespace, shared with process $other" "$MD_ERR" ||
		fail "the refusal does not name the shared ipc namespace"
	no_inventory "$T/d"
	kill "$other"
	check_child_pass
}

# --join-ns uts:PATH: the restored process shares an existing UTS namespace
case_ns_join() {
	start_ns_prog t-ipcns
	dump "$PID" "$T/d"
	expect_killed "$PID"
	unshare --uts sh -c 'hostname ipcns-host; domainname ipcns.dom; exec sleep 60' \
		< /dev/null > /dev/null 2>&1 &
	local holder=$!
	track "$holder"
	wait_until 5 eval '[[ $(readlink /proc/'"$holder"'/exe) == */sleep ]]' || fail "holder did not start"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1 --join-ns "uts:/proc/$holder/ns/uts"
	wait_restored "$PID"
	same_ns "$PID" uts "$holder" || fail "restored pid $PID is not in the joined UTS namespace"
	same_ns "$PID" ipc self && fail "restored pid $PID is in memdump's IPC namespace"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	kill "$holder"
}

case_ns_join_bad() {
	start_ns_prog t-ipcns
	dump "$PID" "$T/d" --leave-running
	md badkind restore -D "$T/d" --join-ns time:/proc/self/ns/time
	expect_md_error
	grep -q -- "--join-ns time: memdump joins uts, ipc, net and mnt namespaces only" "$MD_ERR" ||
		fail "no clear error for a kind memdump does not join"
	md badpath restore -D "$T/d" --join-ns uts
	expect_md_error
	grep -q -- "--join-ns" "$MD_ERR" || fail "no clear error for --join-ns without a path"
	check_child_pass
}

# System V attaches split by mprotect and munmap of a part (zdtm shm-mp): each
# piece where it was, with its protection, still one attach of its segment
case_ns_shm_pieces() {
	start_ns_prog t-shmpart
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit_decodes "$T/d"
	restore_and_pass "$T/d" 1
}

add ns-ipc-rst case_ns_ipc_rst
add ns-shm-pieces case_ns_shm_pieces
add ns-ipc-lr case_ns_ipc_lr
add ns-refuse-shared case_ns_refuse_shared
add ns-join case_ns_join
add ns-join-bad case_ns_join_bad

# A cgroup namespace of its own, rooted at a cgroup the case makes (on the
# cgroup2 mount), the process one level below: restored with the same root,
# so it sees the same path from inside.
cg2_mount() { awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts; }

case_ns_cgroup_rst() {
	local m; m=$(cg2_mount)
	[[ -n $m ]] || { note "no cgroup2 mount: skipped"; return 0; }
	local root=$m/memdump-test-$$-$RANDOM
	mkdir -p "$root/sub" || fail "cannot make cgroup $root/sub"
	START_WRAP="$TESTSRC/cgns-wrap $root sub" start_prog t-eventfd
	local inside; inside=$(nsenter -t "$PID" -C cat "/proc/$PID/cgroup")
	grep -qx '0::/sub' <<< "$inside" || fail "the target does not see 0::/sub inside: $inside"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	same_ns "$PID" cgroup self && fail "restored pid $PID is in memdump's cgroup namespace"
	[[ $(nsenter -t "$PID" -C cat "/proc/$PID/cgroup") == "$inside" ]] ||
		fail "inside its namespace the process sees $(nsenter -t "$PID" -C cat /proc/$PID/cgroup | grep ^0::), want 0::/sub"
	grep -qx "0::${root#$m}/sub" "/proc/$PID/cgroup" || fail "restored pid $PID is not in $root/sub"
	truncate -s "$READY_SIZE" "$OUT"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	rmdir "$root/sub" "$root"
}

add ns-cgroup-rst case_ns_cgroup_rst

# A network namespace of its own with lo only: sockets (TCP listeners, UDP,
# UDP-lite, v4 and v6) come back in a new namespace whose lo is up.
# est: with an established connection to itself (--tcp-established)
case_ns_net_rst() {
	local est=${1:-}
	command -v ip > /dev/null || fail "ip (iproute2) is not installed"
	START_WRAP="$TESTSRC/netns-wrap" start_prog t-sockinet $est
	same_ns "$PID" net self && fail "the target is in memdump's network namespace"
	dump "$PID" "$T/d" ${est:+--tcp-established}
	expect_killed "$PID"
	[[ -f $T/d/netdev-1.img ]] || fail "netdev-1.img missing"
	crit_decodes "$T/d"
	shows "$T/d" 'net namespace: lo up'
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1 ${est:+--tcp-established}
	wait_restored "$PID"
	same_ns "$PID" net self && fail "restored pid $PID is in memdump's network namespace"
	nsenter -t "$PID" -n ip link show lo | grep -q 'state UNKNOWN\|,UP' ||
		fail "lo is not up in the restored namespace"
	if [[ -n $est ]] && command -v nft > /dev/null; then
		nsenter -t "$PID" -n nft list tables | grep -q memdump-lock &&
			fail "the restore left its lock in the namespace"
	fi
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
}

# What memdump does not save in a network namespace is refused by name, all at once.
case_ns_net_refuse() {
	command -v ip > /dev/null || fail "ip (iproute2) is not installed"
	local setup='ip link add md-br0 type bridge && ip link add md-ifb0 type ifb'
	setup+=' && ip link set md-ifb0 master md-br0 && ip link add md-br1 type bridge'
	setup+=' && ip link set md-br1 up'
	setup+=' && ip rule add pref 100 table 100 && ip route add 10.9.0.0/16 dev lo table 100'
	command -v tc > /dev/null && setup+=' && tc qdisc add dev lo root handle 1: pfifo'
	setup+=' && ip neigh add 127.0.0.9 lladdr 02:00:00:00:00:09 dev md-br0 nud permanent'
	NETNS_SETUP=$setup START_WRAP="$TESTSRC/netns-wrap" start_prog t-sockinet est
	md refuse dump -t "$PID" -D "$T/d" --tcp-established
	expect_md_error
	local want
	for want in "bridge md-br1 with its carrier on and no port" \
		    "network interface md-ifb0 (ifb) in its network namespace" \
		    "IPv4 policy routing rule 100 (table 100)" \
		    "route 10.9.0.0/16 in routing table 100" \
		    "permanent neighbour entry 127.0.0.9/32 on md-br0"; do
		grep -qF -- "$want" "$MD_ERR" || fail "the refusal does not name: $want"
	done
	if command -v tc > /dev/null; then
		grep -qF "traffic control qdisc pfifo on lo" "$MD_ERR" || fail "the refusal does not name the qdisc"
	fi
	no_inventory "$T/d"
	check_child_pass
}

# veth pairs (issue 10). The case's names and subnet are its own: N from its
# PID. The inside end is made from inside the target's namespace with its
# other end in the case's (the host's), so both die with the namespace, that
# is with the target: nothing is left behind whatever happens to the case.
veth_names() {
	VN=$(( $$ % 200 + 20 ))
	VIN=mdvi$$ VOUT=mdvo$$ VBR=mdbr$$
	VIN=${VIN:0:15} VOUT=${VOUT:0:15} VBR=${VBR:0:15}
	V4=10.231.$VN V6=fd00:231:$VN
}

veth_cleanup() { ip link del "$VBR" 2> /dev/null; ip link del "$VOUT" 2> /dev/null; return 0; }

# veth_start: t-vethsrv on port 7000 in a namespace with $VIN (addresses,
# MTU 1400, a MAC, a route each way, an extra lo address), $VOUT outside;
# $VETH_EXTRA: more shell for the setup inside.
veth_setup() {
	local s="ip link add $VIN type veth peer name $VOUT netns $$"
	s+=" && ip addr add 127.0.0.77/8 dev lo"
	s+=" && ip link set $VIN mtu 1400 address 02:00:00:e7:$(printf %02x "$VN"):02 up"
	s+=" && ip addr add $V4.2/24 dev $VIN && ip addr add $V6::2/64 dev $VIN"
	s+=" && ip route add 10.232.0.0/16 via $V4.1 && ip -6 route add fd99:$VN::/64 via $V6::1 dev $VIN"
	echo "$s${VETH_EXTRA:-}"
}

veth_start() {
	NETNS_SETUP=$(veth_setup) START_WRAP="$TESTSRC/netns-wrap" start_prog t-vethsrv 7000
	veth_outside
}

# veth_outside: the outer end's addresses, up, the inner end's IPv6 ready
veth_outside() {
	ip addr add "$V4.1/24" dev "$VOUT" && ip addr add "$V6::1/64" dev "$VOUT" nodad &&
		ip link set "$VOUT" up || fail "cannot set up $VOUT"
	wait_until 5 eval '! nsenter -t $PID -n ip -6 addr show dev $VIN | grep -q tentative' ||
		fail "IPv6 on $VIN still tentative"
}

# veth_state PID: what ip shows of its namespace, without what may differ
# (lifetimes, the other end's index)
veth_state() {
	nsenter -t "$1" -n sh -c 'ip -o addr show; ip route show; ip -6 route show; ip -o link show' |
		sed -E 's/\\ +valid_lft.*//; s/@if[0-9]+//; s/ link-netnsid [0-9]+//; s/ (state|qlen) [A-Z0-9]+//g'
}

# veth_ping HOST: the server answers over the veth, TCP and UDP
veth_ping() {
	local line
	line=$(timeout 5 bash -c "exec 3<>/dev/tcp/$1/7000 && head -n1 <&3") ||
		fail "no answer from $1 port 7000 over $VOUT"
	[[ $line == "pong $PID "* ]] || fail "answer from $1: '$line', want pong $PID"
	line=$(timeout 5 bash -c "exec 3<>/dev/udp/$1/7000 && echo udp$$ >&3 && head -n1 <&3") ||
		fail "no UDP answer from $1 port 7000 over $VOUT"
	[[ $line == "pong udp$$" ]] || fail "UDP answer from $1: '$line', want pong udp$$"
	note "$1 answers over TCP and UDP: $line"
}

case_ns_net_veth() {
	command -v ip > /dev/null || fail "ip (iproute2) is not installed"
	veth_names
	trap veth_cleanup EXIT
	veth_start
	veth_ping "$V4.2"
	veth_ping "$V6::2"
	local before; before=$(veth_state "$PID")
	local mac; mac=$(ip -o link show "$VOUT" | grep -o 'link/ether [0-9a-f:]*')
	dump "$PID" "$T/d"
	expect_killed "$PID"
	wait_until 5 eval '! ip link show $VOUT > /dev/null 2>&1' || fail "$VOUT outlived the namespace"
	images_decoded "$T/d" netdev-1 ifaddr-1 route-1 route6-1
	if command -v crit > /dev/null; then
		crit show "$T/d/netdev-1.img" | grep -q "\"name\": \"$VIN\"" ||
			fail "crit does not show $VIN in netdev-1.img"
	fi
	ip addr showdump < "$T/d/ifaddr-1.img" | grep -q "inet $V4.2/24" ||
		fail "ip addr showdump does not read $V4.2 from ifaddr-1.img"
	ip addr showdump < "$T/d/ifaddr-1.img" | grep -q "inet 127.0.0.77/8" ||
		fail "ip addr showdump does not read lo's 127.0.0.77 from ifaddr-1.img"
	ip route showdump < "$T/d/route-1.img" | grep -q "10.232.0.0/16 via $V4.1" ||
		fail "ip route showdump does not read the route from route-1.img"
	shows "$T/d" "net namespace: lo up, mtu 65536; $VIN \\(veth, other end $VOUT\\) up, mtu 1400"
	note "refused: a device of the other end's name in the way, bad --external"
	ip link add "$VOUT" type bridge || fail "cannot make bridge $VOUT"
	md exists restore -D "$T/d"
	expect_md_error
	grep -qF "a device $VOUT exists in memdump's network namespace" "$MD_ERR" ||
		fail "no clear error for $VOUT in the way"
	ip link del "$VOUT"
	alive "$PID" && fail "pid $PID runs after a failed restore"
	md ext-join restore -D "$T/d" --external "veth[$VIN]:x" --join-ns net:/proc/self/ns/net
	expect_md_error
	grep -qF -- "--external veth[$VIN] with --join-ns net" "$MD_ERR" || fail "no clear error for --external with --join-ns"
	md ext-none restore -D "$T/d" --external "veth[nosuch]:x"
	expect_md_error
	grep -qF "the dump has no veth nosuch" "$MD_ERR" || fail "no clear error for --external of an unknown veth"
	md ext-syntax restore -D "$T/d" --external "veth[$VIN]"
	(( MD_RC == 2 )) || fail "--external without :OUT exited with $MD_RC, want 2 (usage)"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	same_ns "$PID" net self && fail "restored pid $PID is in memdump's network namespace"
	# the kernel's link-local address ends its duplicate address detection by itself
	wait_until 5 eval '! nsenter -t $PID -n ip -6 addr show dev $VIN | grep -q tentative' ||
		fail "IPv6 on $VIN still tentative 5 s after the restore"
	local after; after=$(veth_state "$PID")
	if [[ $after != "$before" ]]; then
		diff <(echo "$before") <(echo "$after") | sed 's/^/#   /'
		fail "the restored namespace differs from the dumped one"
	fi
	note "ip shows the same addresses, routes, MACs and MTUs"
	ip -o link show "$VOUT" | grep -qF "$mac" || fail "$VOUT came back without its MAC ($mac)"
	ip -o addr show dev "$VOUT" | grep -q "inet $V4.1/24" || fail "$VOUT came back without $V4.1"
	veth_ping "$V4.2"
	veth_ping "$V6::2"
	truncate -s "$READY_SIZE" "$OUT"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
	wait_until 5 eval '! ip link show $VOUT > /dev/null 2>&1' || fail "$VOUT outlived the restored namespace"

	note "again, the other end named and attached to a bridge (--external)"
	ip link add "$VBR" type bridge && ip addr add "$V4.1/24" dev "$VBR" && ip link set "$VBR" up ||
		fail "cannot make bridge $VBR"
	local other=${VOUT:0:13}x
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 2 --external "veth[$VIN]:$other@$VBR"
	wait_restored "$PID"
	ip -o link show "$other" | grep -q "master $VBR" || fail "$other is not attached to $VBR"
	ip -o addr show dev "$other" | grep -q "inet $V4" && fail "$other got $V4.1 while in a bridge"
	veth_ping "$V4.2"

	note "dumped as a bridge port, the other end comes back in its bridge"
	dump "$PID" "$T/d2"
	wait "$RPID"	# the restore that waited for it: the status of a SIGKILLed process
	MD_RC=$?
	(( MD_RC == 128 + 9 )) || fail "restore exited with $MD_RC, want 137 (its process killed by the dump)"
	wait_until 5 eval '! ip link show $other > /dev/null 2>&1' || fail "$other outlived the namespace"
	restore_bg "$T/d2" 3
	wait_restored "$PID"
	ip -o link show "$other" | grep -q "master $VBR" || fail "$other did not come back in $VBR"
	veth_ping "$V4.2"
	truncate -s "$READY_SIZE" "$OUT"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"

	note "the first dump again, its other end renamed, no bridge: it gets the addresses"
	ip link del "$VBR"
	wait_until 5 eval '! ip link show $other > /dev/null 2>&1' || fail "$other outlived the namespace"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 4 --external "veth[$VIN]:$other"
	wait_restored "$PID"
	ip -o addr show dev "$other" | grep -q "inet $V4.1/24 .*$other" || fail "$other did not get $V4.1"
	veth_ping "$V4.2"
	truncate -s "$READY_SIZE" "$OUT"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}

# A veth with both ends inside (with a random link-local address, which a
# new namespace would not give it again), and one whose other end is in a
# third namespace (neither the target's nor memdump's): refused by name.
case_ns_net_veth_refuse() {
	command -v ip > /dev/null || fail "ip (iproute2) is not installed"
	veth_names
	unshare --net sleep 60 < /dev/null > /dev/null 2>&1 &
	local third=$!
	track "$third"
	wait_until 5 eval '! same_ns $third net self' || fail "no third namespace"
	local s="ip link add $VIN type veth peer name $VOUT"
	s+=" && ip link set $VIN addrgenmode random && ip link set $VIN up && ip link set $VOUT up"
	s+=" && ip link add ${VIN:0:13}t type veth peer name ${VOUT:0:13}t netns $third"
	NETNS_SETUP=$s START_WRAP="$TESTSRC/netns-wrap" start_prog t-vethsrv 7001
	md refuse dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qF "veth $VIN whose other end is in its network namespace too" "$MD_ERR" ||
		fail "the refusal does not name $VIN (both ends inside)"
	grep -qF "veth ${VIN:0:13}t whose other end is in another network namespace than memdump's" \
		"$MD_ERR" || fail "the refusal does not name ${VIN:0:13}t (other end in a third namespace)"
	grep -qE "IPv6 link-local address fe80:[0-9a-f:]*/64 on $VIN, not the one its MAC gives" "$MD_ERR" ||
		fail "the refusal does not name the random link-local address of $VIN"
	no_inventory "$T/d"
	check_child_pass
	kill "$third"
}

# CRIU's RPC: RESTORE with veths (if_in, if_out@bridge, as runtimes send them)
case_ns_net_veth_rpc() {
	command -v ip > /dev/null || fail "ip (iproute2) is not installed"
	/usr/bin/python3 -c 'import pycriu' 2> /dev/null || { note "no pycriu (Debian's criu package): skipped"; return 0; }
	veth_names
	trap veth_cleanup EXIT
	veth_start
	dump "$PID" "$T/d"
	expect_killed "$PID"
	wait_until 5 eval '! ip link show $VOUT > /dev/null 2>&1' || fail "$VOUT outlived the namespace"
	ip link add "$VBR" type bridge && ip addr add "$V4.1/24" dev "$VBR" && ip link set "$VBR" up ||
		fail "cannot make bridge $VBR"
	local other=${VOUT:0:13}r
	truncate -s "$READY_SIZE" "$OUT"
	rpc r "$MEMDUMP" RESTORE images_dir="$T/d" veths="$VIN:$other@$VBR"
	rpc_ok
	track "$PID"
	expect_untraced "$PID"
	ip -o link show "$other" | grep -q "master $VBR" || fail "$other is not attached to $VBR"
	veth_ping "$V4.2"
	kill -USR1 "$PID"
	get_result "$OUT"
}

# A process tree in the namespace (the server and a child): dumped and
# restored whole, the veth made once.
case_ns_net_veth_tree() {
	command -v ip > /dev/null || fail "ip (iproute2) is not installed"
	veth_names
	trap veth_cleanup EXIT
	VETH_EXTRA=' && { sleep 1000 & }' veth_start
	local child; child=$(pgrep -P "$PID" -x sleep) || fail "no child of $PID"
	veth_ping "$V4.2"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	wait_until 5 eval '! ip link show $VOUT > /dev/null 2>&1' || fail "$VOUT outlived the namespace"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	[[ $(pgrep -P "$PID" -x sleep) == "$child" ]] || fail "child $child of $PID did not come back"
	same_ns "$child" net "$PID" || fail "child $child is not in its parent's network namespace"
	veth_ping "$V4.2"
	kill -9 "$child"
	kill -USR1 "$PID"
	get_result "$OUT"
}

add ns-net-rst case_ns_net_rst

# br_state NAME (in PID's namespace): its MAC, MTU, flags, options and addresses
br_state() {
	nsenter -t "$PID" -n ip -d link show "$1" |
		grep -oE 'mtu [0-9]+|<[A-Z_,]*>|link/ether [0-9a-f:]+|(forward_delay|hello_time|max_age|ageing_time|stp_state|priority|group_fwd_mask|mcast_snooping|mcast_router|nf_call_iptables|mcast_hash_max|multicast_hash_max) [0-9]+'
	nsenter -t "$PID" -n ip addr show dev "$1" | awk '/inet/ { print $1, $2 }' | sort
}

# An empty bridge in the namespace: made again with its index, MAC, MTU,
# flags (no carrier), options and addresses (one with its carrier on is
# refused: ns-net-refuse)
case_ns_net_bridge() {
	command -v ip > /dev/null || fail "ip (iproute2) is not installed"
	local s='ip link add md-br0 type bridge forward_delay 700 ageing_time 12300 priority 7'
	s+=' mcast_snooping 0 group_fwd_mask 0x8 && ip link set md-br0 address 02:11:22:33:44:55 mtu 1400'
	s+=' && ip addr add 10.0.55.55/32 dev md-br0 && ip addr add fe80:4567::1/64 nodad dev md-br0'
	s+=' && ip link set md-br0 up'
	NETNS_SETUP=$s START_WRAP="$TESTSRC/netns-wrap" start_prog t-sockinet
	local before idx
	before=$(br_state md-br0)
	idx=$(nsenter -t "$PID" -n cat /sys/class/net/md-br0/ifindex)
	grep -q "forward_delay 700" <<< "$before" || fail "the bridge's options were not set: $before"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit_decodes "$T/d"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	[[ $(br_state md-br0) == "$before" ]] ||
		fail "the bridge differs: before [$(tr '\n' ';' <<< "$before")] after [$(br_state md-br0 | tr '\n' ';')]"
	[[ $(nsenter -t "$PID" -n cat /sys/class/net/md-br0/ifindex) == "$idx" ]] ||
		fail "the bridge's index is not $idx"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
}
add ns-net-bridge case_ns_net_bridge

# mv_state NAME (in PID's namespace): a macvlan's MAC, MTU, flags, mode and addresses
mv_state() {
	nsenter -t "$PID" -n ip -d link show "$1" |
		grep -oE 'mtu [0-9]+|<[A-Z_,-]*>|link/ether [0-9a-f:]+|macvlan mode [a-z]+|bcqueuelen [0-9]+'
	nsenter -t "$PID" -n ip -o link show dev "$1" | cut -d: -f1
	nsenter -t "$PID" -n ip addr show dev "$1" | awk '/inet/ { print $1, $2 }' | sort
}

# A macvlan whose lower device is in memdump's namespace (zdtm macvlan): made
# again on it (its dumped name; with --external macvlan[IN]:DEV on DEV) and
# moved into the restored namespace, with its index, MAC, MTU, mode and
# addresses; a restore SIGKILLed before leaves no device behind
case_ns_net_macvlan() {
	command -v ip > /dev/null || fail "ip (iproute2) is not installed"
	local lo=mdml$$ lo2=mdmm$$ mv=mdmv$$ before
	lo=${lo:0:15} lo2=${lo2:0:15} mv=${mv:0:15}
	trap "ip link del $lo 2> /dev/null; ip link del $lo2 2> /dev/null; true" EXIT
	ip link add "$lo" type bridge && ip link set "$lo" up || fail "cannot make bridge $lo"
	ip link add "$lo2" type bridge && ip link set "$lo2" up || fail "cannot make bridge $lo2"
	START_WRAP="$TESTSRC/netns-wrap" start_prog t-sockinet
	ip link add "$mv" link "$lo" address 02:22:33:44:55:66 mtu 1400 type macvlan mode private &&
		ip link set "$mv" netns "$PID" || fail "cannot put macvlan $mv into the target's namespace"
	nsenter -t "$PID" -n sh -c "ip addr add 10.0.56.2/32 dev $mv && ip link set $mv up" ||
		fail "cannot set up $mv"
	before=$(mv_state "$mv")
	grep -q "macvlan mode private" <<< "$before" || fail "$mv is not in private mode: $before"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit_decodes "$T/d"
	truncate -s "$READY_SIZE" "$OUT"
	# first a restore whose memdump is SIGKILLed once the namespace is made: the
	# macvlan, made from memdump's namespace, goes with the new one
	local md links; links=$(ip -o link | wc -l)
	MEMDUMP_FAULT=rst-forked restore_bg "$T/d" killed --external "macvlan[$mv]:$lo2"
	wait_line "$MD_ERR" "fault point rst-forked: " "$OP_TIMEOUT" ||
		fail "the restore did not reach rst-forked: $(cat "$MD_ERR")"
	md=$(pgrep -P "$RPID" -x memdump | head -n1)
	[[ -n $md ]] || fail "no memdump below timeout $RPID"
	kill -9 "$md"
	rstfail_wait_exit
	rstfail_gone "$PID"
	wait_until 5 eval '[[ $(ip -o link | wc -l) == '"$links"' ]]' ||
		fail "memdump's namespace has other devices: $(ip -o link | cut -d: -f2)"
	ip -o link | grep -q "$mv" && fail "the macvlan $mv is in memdump's namespace"
	restore_bg "$T/d" 1 --external "macvlan[$mv]:$lo2"
	wait_restored "$PID"
	[[ $(mv_state "$mv") == "$before" ]] ||
		fail "$mv differs: before [$(tr '\n' ';' <<< "$before")] after [$(mv_state "$mv" | tr '\n' ';')]"
	nsenter -t "$PID" -n ip -o link show dev "$mv" | grep -q "@if$(cat "/sys/class/net/$lo2/ifindex"):" ||
		fail "$mv is not on $lo2 (--external): $(nsenter -t "$PID" -n ip -o link show dev "$mv")"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
}
add ns-net-macvlan case_ns_net_macvlan
add ns-net-rst-tcp case_ns_net_rst est
add ns-net-refuse case_ns_net_refuse

# fw_state PID: the namespace's nftables ruleset (memdump's lock left out) and
# its legacy iptables tables with their counters
fw_state() {
	nsenter -t "$1" -n nft list ruleset
	if command -v iptables-legacy-save > /dev/null; then
		nsenter -t "$1" -n iptables-legacy-save -c | grep -v '^#'
		nsenter -t "$1" -n ip6tables-legacy-save -c | grep -v '^#'
	fi
}

# The firewall of a network namespace the dump saves: an nftables table with a
# counter that has counted, and legacy iptables rules (IPv4 and IPv6, with
# counters) come back as they were, before the restored process runs.
case_ns_net_fw() {
	command -v ip > /dev/null && command -v nft > /dev/null || fail "ip or nft is not installed"
	local setup='nft add table inet mdfw && nft add chain inet mdfw input "{ type filter hook input priority 0; policy accept; }"'
	setup+=' && nft add rule inet mdfw input tcp dport 9 counter drop'
	setup+=' && nft add set inet mdfw deny "{ type ipv4_addr; }" && nft add element inet mdfw deny "{ 10.9.9.9 }"'
	if command -v iptables-legacy > /dev/null; then
		setup+=' && iptables-legacy -A INPUT -p udp --dport 9 -j DROP'
		setup+=' && ip6tables-legacy -A OUTPUT -p udp --dport 9 -j DROP'
	fi
	NETNS_SETUP=$setup START_WRAP="$TESTSRC/netns-wrap" start_prog t-sockinet
	# packets for the counters: a TCP SYN to port 9 dropped, UDP to 9 dropped
	nsenter -t "$PID" -n bash -c 'exec 3<>/dev/tcp/127.0.0.1/9' 2> /dev/null &
	sleep 0.5
	kill $! 2> /dev/null
	nsenter -t "$PID" -n bash -c 'echo x > /dev/udp/127.0.0.1/9; echo x > /dev/udp/::1/9' 2> /dev/null
	local before; before=$(fw_state "$PID")
	[[ $before == *"counter packets 0 "* ]] && fail "the nft counter counted nothing"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	[[ -f $T/d/nftables-1.img ]] || fail "nftables-1.img missing"
	grep -q "memdump-lock" "$T/d/nftables-1.img" && fail "memdump's lock is in the image"
	if command -v iptables-legacy > /dev/null; then
		[[ -f $T/d/iptables-1.img && -f $T/d/ip6tables-1.img ]] || fail "no iptables images"
	fi
	crit_decodes "$T/d"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	local after; after=$(fw_state "$PID")
	if [[ $after != "$before" ]]; then
		diff <(echo "$before") <(echo "$after") | sed 's/^/#   /'
		fail "the restored firewall differs from the dumped one"
	fi
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
}
add ns-net-fw case_ns_net_fw
add ns-net-veth case_ns_net_veth

# --tcp-established in a network namespace the dump saves: a host client keeps
# a connection over the veth to each of an IPv4 and an IPv6 listener (v4-mapped)
# of h-echosrv inside, across a killing dump and the restore, which cuts the new
# namespace off but for lo until the connections are rebuilt; data both ways after.
case_ns_net_veth_tcp() {
	command -v ip > /dev/null && command -v nft > /dev/null || fail "ip or nft is not installed"
	veth_names
	local cp=
	trap 'veth_cleanup; [[ -n $cp ]] && kill $cp 2> /dev/null' EXIT
	NETNS_SETUP=$(veth_setup) "$TESTSRC/netns-wrap" "$TESTBIN/h-echosrv" 7001 7002 \
		> "$T/srv.out" 2>&1 < /dev/null &
	PID=$!
	track "$PID"
	wait_line "$T/srv.out" '^LISTENING' 10 || fail "h-echosrv does not listen: $(cat "$T/srv.out")"
	veth_outside
	python3 -c "$ENG_TCP_CLIENT" "$V4.2" "$T/go" > "$T/client.out" 2>&1 &
	cp=$!
	wait_line "$T/client.out" '^(CONNECTED|FAIL)' 20 && grep -q CONNECTED "$T/client.out" ||
		fail "the client did not connect: $(cat "$T/client.out")"
	dump "$PID" "$T/d" --tcp-established
	expect_killed "$PID"
	ls "$T"/d/tcp-stream-*.img > /dev/null 2>&1 || fail "no tcp-stream image: the connections were not dumped"
	restore_bg "$T/d" 1 --tcp-established
	wait_until 20 eval 'nsenter -t $PID -n true 2> /dev/null && [[ -s $RPIDFILE ]]' ||
		fail "restored pid $PID not running: $(tail -n1 "$MD_ERR")"
	touch "$T/go"
	wait "$cp" || true
	cp=
	grep -q '^PASS' "$T/client.out" || fail "the client: $(cat "$T/client.out")"
	nsenter -t "$PID" -n nft list tables | grep -q memdump-lock &&
		fail "the restore left its lock in the namespace: $(nsenter -t "$PID" -n nft list tables)"
	return 0
}
add ns-net-veth-tcp case_ns_net_veth_tcp

# The sysctls of a network namespace the dump saves (issue 24), one of each
# kind: net.ipv4.conf and net.ipv6.conf of all, default, lo and a veth,
# net.unix and net.ipv4.ping_group_range. all.forwarding gets the other value
# than a new namespace has (it may inherit the host's), and accept_redirects
# the same one after it, which writing forwarding alone would not give.
NS_SYSCTLS="ipv4/conf/all/forwarding ipv4/conf/all/accept_redirects ipv4/conf/all/accept_local
ipv4/conf/default/arp_ignore ipv6/conf/all/hop_limit ipv6/conf/default/dad_transmits
ipv4/conf/lo/tag ipv6/conf/lo/mtu ipv6/conf/lo/stable_secret unix/max_dgram_qlen
ipv4/ping_group_range"
ns_sysctl_setup() {
	local fwd; fwd=$(( 1 - $(unshare --net cat /proc/sys/net/ipv4/conf/all/forwarding) ))
	local v=("$fwd" "$fwd" 1 2 33 3 77 9000 fd00:1:2:3:4:5:6:7 77 "100 200") s i=0 out=
	for s in $NS_SYSCTLS; do
		out+=" && echo '${v[i++]}' > /proc/sys/net/$s"
	done
	echo "$out && echo 9 > /proc/sys/net/ipv4/conf/$VIN/tag && echo 0 > /proc/sys/net/ipv6/conf/$VIN/autoconf"
}

# sysctl_state PID|new: the values of NS_SYSCTLS and $VIN's (new: a new namespace's)
sysctl_state() {
	local s run=(nsenter -t "$1" -n)
	[[ $1 == new ]] && run=(unshare --net)
	for s in $NS_SYSCTLS; do
		printf '%s=%s\n' "$s" "$("${run[@]}" cat "/proc/sys/net/$s" 2>&1)"
	done
	[[ $1 == new ]] && return 0
	"${run[@]}" cat "/proc/sys/net/ipv4/conf/$VIN/tag" "/proc/sys/net/ipv6/conf/$VIN/autoconf"
}

case_ns_net_sysctl() {
	command -v ip > /dev/null || fail "ip (iproute2) is not installed"
	veth_names
	trap veth_cleanup EXIT
	VETH_EXTRA=$(ns_sysctl_setup) veth_start
	local before fresh; before=$(sysctl_state "$PID") fresh=$(sysctl_state new)
	[[ $before == *"ipv4/conf/lo/tag=77"* ]] || fail "the setup did not take: $before"
	[[ $(nsenter -t "$PID" -n cat /proc/sys/net/ipv4/conf/$VIN/tag) == 9 ]] || fail "no tag on $VIN"
	local s
	# each one the restore has to write (accept_redirects: once forwarding is)
	for s in ${NS_SYSCTLS/ipv4\/conf\/all\/accept_redirects}; do
		[[ $(grep "^$s=" <<< "$before") != $(grep "^$s=" <<< "$fresh") ]] ||
			fail "$s is a new namespace's already: $(grep "^$s=" <<< "$fresh")"
	done
	dump "$PID" "$T/d"
	expect_killed "$PID"
	[[ -f $T/d/netns-1.img ]] || fail "netns-1.img missing"
	crit_decodes "$T/d"
	shows "$T/d" 'unix max_dgram_qlen 77'
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	local after; after=$(sysctl_state "$PID")
	if [[ $after != "$before" ]]; then
		diff <(echo "$before") <(echo "$after") | sed 's/^/#   /'
		fail "the restored namespace's sysctls differ from the dumped ones"
	fi
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
}

# A sysctl the restore could not write into a new namespace (here the write
# fails by MEMDUMP_FAULT, as one read only in a namespace would) is refused by
# name by the dump's dry run, the target untouched.
case_ns_net_sysctl_refuse() {
	command -v ip > /dev/null || fail "ip (iproute2) is not installed"
	NETNS_SETUP='echo 55 > /proc/sys/net/unix/max_dgram_qlen' START_WRAP="$TESTSRC/netns-wrap" \
		start_prog t-sockinet
	MEMDUMP_FAULT=netns-sysctl-write MEMDUMP_FAULT_FAIL=1 md refuse dump -t "$PID" -D "$T/d"
	expect_md_error
	local want="sysctl net.unix.max_dgram_qlen = 55 of its network namespace"
	want+=" (a new one does not take it: Permission denied)"
	grep -qF "$want" "$MD_ERR" || fail "the refusal does not name net.unix.max_dgram_qlen: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	[[ $(nsenter -t "$PID" -n cat /proc/sys/net/unix/max_dgram_qlen) == 55 ]] ||
		fail "the target's namespace changed"
	check_child_pass
}
add ns-net-sysctl case_ns_net_sysctl
add ns-net-sysctl-refuse case_ns_net_sysctl_refuse

# Both ends of a closing TCP connection in a network namespace the dump saves
# (issue 24; zdtm socket-tcp-closing, socket-tcp-last-ack in the ns flavour):
# t-tcpclose's parent CLOSING or LAST_ACK with its FIN behind bytes it could
# not send, its child FIN_WAIT2 with a full receive queue. The restore rebuilds
# one end, then the other, in a namespace where nothing of theirs may pass
# before both exist; each comes back in its state, the child reads every byte
# and the FIN, the parent's FIN is acknowledged, and no lock is left.
case_ns_net_tcp_close() {
	command -v ip > /dev/null && command -v nft > /dev/null || fail "ip or nft is not installed"
	START_WRAP="$TESTSRC/netns-wrap" start_prog t-tcpclose "$1" "$2"
	same_ns "$PID" net self && fail "the target is in memdump's network namespace"
	dump "$PID" "$T/d" --tcp-established
	expect_killed "$PID"
	(( $(ls "$T"/d/tcp-stream-*.img "$T"/d/*/tcp-stream-*.img 2> /dev/null | wc -l) == 2 )) ||
		fail "not two tcp-stream images: $(find "$T/d" -name 'tcp-stream-*')"
	crit_decodes "$T/d"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	nsenter -t "$PID" -n nft list tables | grep -q memdump-lock &&
		fail "the restore left its lock in the namespace: $(nsenter -t "$PID" -n nft list tables)"
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC, want 0 (the program's status)"
	[[ $RESULT == "PASS $1" ]] || fail "program said $RESULT"
}
for mode in closing lastack; do
	for fam in v4 v6 v4mapped; do
		add "ns-net-tcp-$mode-$fam" case_ns_net_tcp_close "$mode" "$fam"
	done
done
unset mode fam

# zdtm socket-tcp-closed-last-ack in the ns flavour: in a network namespace
# the dump saves, the accepting end LAST_ACK (its FIN unacknowledged: a rule
# of the namespace's firewall drops what comes to its port), the connecting
# end closed both ways first (its pair in TIME_WAIT, which the namespace made
# anew has not). The LAST_ACK end's rebuild replays the peer's FIN to that
# port: the rule must not be there yet. After the restore the rule is
# (deleting it fails otherwise), both ends read EOF, cannot write, and keep
# their names.
case_ns_net_tcp_lastack_fw() {
	command -v nft > /dev/null || fail "nft is not installed"
	OUT=$T/lastack.out
	"$TESTSRC/netns-wrap" python3 -c '
import socket, os, signal, subprocess, sys, time
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
def state(s): return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0]
def names(): return [(s.getsockname(), s.getsockopt(socket.SOL_SOCKET, 28, 16)) for s in (a, c)]  # SO_PEERNAME, IPv4
def wait(s, st):
	for i in range(500):
		if state(s) == st: return
		time.sleep(0.01)
	print("FAIL state", state(s), "not", st, flush=True); sys.exit(1)
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
port = l.getsockname()[1]
c = socket.create_connection(("127.0.0.1", port)); a, _ = l.accept(); l.close()
c.shutdown(socket.SHUT_WR); wait(a, 8)
subprocess.check_call(["nft", "add table ip t; add chain ip t in { type filter hook input priority 0; }; add rule ip t in tcp dport %d drop" % port])
a.shutdown(socket.SHUT_WR); wait(a, 9); wait(c, 7)
before = names()
print("READY", os.getpid(), c.fileno(), a.fileno(), flush=True)
while not got: time.sleep(0.05)
if state(a) != 9 or state(c) != 7:
	print("FAIL states", state(a), state(c), flush=True); sys.exit(1)
if subprocess.call(["nft", "delete table ip t"]):
	print("FAIL the firewall rule is not there", flush=True); sys.exit(1)
if names() != before:
	print("FAIL names", flush=True); sys.exit(1)
for s in (a, c):
	if s.recv(1) != b"":
		print("FAIL no EOF", flush=True); sys.exit(1)
	try:
		s.send(b"x"); print("FAIL a write passed", flush=True); sys.exit(1)
	except OSError: pass
print("PASS", flush=True)' > "$OUT" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$OUT" '^(READY|FAIL)' 20 || { show_file lastack "$OUT"; fail "the target did not become READY"; }
	grep -q '^READY' "$OUT" || fail "the target: $(cat "$OUT")"
	READY_SIZE=$(stat -c %s "$OUT")
	dump "$PID" "$T/d" --tcp-established
	expect_killed "$PID"
	crit_decodes "$T/d"
	restore_and_pass "$T/d" 1
}
add ns-net-tcp-lastack-fw case_ns_net_tcp_lastack_fw

# A connection (and its listener) on an address its namespace no longer has
# (added to lo, connected, removed): the namespace made again would not have
# it and the restore could not bind them. The killing dump's dry run refuses
# it by name; the target runs on and, the address back, its connection
# carries data both ways.
case_ns_net_tcp_addr_gone() {
	command -v ip > /dev/null || fail "ip (iproute2) is not installed"
	OUT=$T/gone.out
	NETNS_SETUP='ip addr add 10.77.0.1/32 dev lo' "$TESTSRC/netns-wrap" python3 -c '
import socket, os, signal, subprocess, sys, time
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
l = socket.socket(); l.bind(("10.77.0.1", 0)); l.listen()
c = socket.create_connection(l.getsockname()); a, _ = l.accept()
subprocess.check_call(["ip", "addr", "del", "10.77.0.1/32", "dev", "lo"])
print("READY", os.getpid(), c.fileno(), l.getsockname()[1], flush=True)
while not got: time.sleep(0.05)
subprocess.check_call(["ip", "addr", "add", "10.77.0.1/32", "dev", "lo"])
c.sendall(b"still"); a.sendall(b"here")
if a.recv(5) != b"still" or c.recv(4) != b"here":
	print("FAIL no data after the dump", flush=True); sys.exit(1)
print("PASS", flush=True)' > "$OUT" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$OUT" '^READY ' 20 || { show_file gone "$OUT"; fail "the target did not become READY"; }
	read -r -a READY < <(grep -m1 '^READY ' "$OUT")
	READY_SIZE=$(stat -c %s "$OUT")
	md refuse dump -t "$PID" -D "$T/d" --tcp-established
	expect_md_error
	grep -qE "a restore here would fail: process $PID: TCP socket [0-9]+ bound to 10\.77\.0\.1 port [0-9]+, an address its network namespace no longer has" \
		"$MD_ERR" || fail "the refusal does not name the socket on 10.77.0.1"
	no_inventory "$T/d"
	check_child_pass
}
add ns-net-tcp-addr-gone case_ns_net_tcp_addr_gone
add ns-net-veth-refuse case_ns_net_veth_refuse
add ns-net-veth-rpc case_ns_net_veth_rpc
add ns-net-veth-tree case_ns_net_veth_tree

# A time namespace of its own (zdtm's ns flavour puts every test in one): the
# restore makes a new one whose clocks go on from their values at the dump
# (t-timens checks the namespace, its children's, both clocks and the
# offsets); `tree`: a child in it too, forked into it by the restored parent
case_ns_time_rst() {
	[[ -e /proc/self/timens_offsets ]] || { note "no time namespaces here: skipped"; return 0; }
	start_prog t-timens "$@"
	[[ ${1:-} == tree ]] && track "${READY[2]}"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	md show show -D "$T/d" || fail "show failed"
	grep -q "^time namespace: at the dump monotonic " "$MD_OUT" ||
		fail "show does not list the time namespace"
	crit_decodes "$T/d"
	restore_and_pass "$T/d" 1
	[[ $RESULT == "PASS ${1:-}" ]] || fail "program said $RESULT"
}
add ns-time-rst case_ns_time_rst
add ns-time-tree case_ns_time_rst tree

# A time namespace made for its children only (unshare, no setns, no fork):
# refused by name, the target left running
case_ns_time_refuse() {
	[[ -e /proc/self/timens_offsets ]] || { note "no time namespaces here: skipped"; return 0; }
	start_prog t-timens forkids
	md refuse dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "a time namespace for its children it is not in itself" "$MD_ERR" ||
		fail "the refusal does not name the time namespace: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	check_child_pass
}
add ns-time-refuse case_ns_time_refuse

# A memdump without CAP_SYS_TIME could not set a new time namespace's clocks:
# the killing dump refuses it in its dry run, the target runs on
case_ns_time_nocap() {
	[[ -e /proc/self/timens_offsets ]] || { note "no time namespaces here: skipped"; return 0; }
	command -v capsh > /dev/null || fail "capsh (libcap2-bin) is not installed"
	start_prog t-timens
	# shellcheck disable=SC2016
	printf '#!/bin/sh\nexec capsh --drop=cap_sys_time -- -c '\''exec "$0" "$@"'\'' %s "$@"\n' \
		"$MEMDUMP" > "$T/md-nocap"
	chmod +x "$T/md-nocap"
	MEMDUMP=$T/md-nocap md nocap dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "its own time namespace: setting the clocks of a new one needs CAP_SYS_ADMIN and CAP_SYS_TIME" \
		"$MD_ERR" || fail "the refusal does not name the capability: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	check_child_pass
}
add ns-time-nocap case_ns_time_nocap
