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

case_ns_ipc_rst() {
	local host; host=$(hostname)
	start_ns_prog t-ipcns
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	local f
	for f in utsns-1 ipcns-var-1 ipcns-shm-1 ipcns-sem-1 ipcns-msg-1; do
		[[ -f $T/d/$f.img ]] || fail "$f.img missing from the dump"
	done
	crit_decodes "$T/d"
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
	md badkind restore -D "$T/d" --join-ns pid:/proc/self/ns/pid
	expect_md_error
	grep -q -- "--join-ns pid: memdump joins uts, ipc and net namespaces only" "$MD_ERR" ||
		fail "no clear error for a kind memdump does not join"
	md badpath restore -D "$T/d" --join-ns uts
	expect_md_error
	grep -q -- "--join-ns" "$MD_ERR" || fail "no clear error for --join-ns without a path"
	check_child_pass
}

add ns-ipc-rst case_ns_ipc_rst
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
case_ns_net_rst() {
	command -v ip > /dev/null || fail "ip (iproute2) is not installed"
	START_WRAP="$TESTSRC/netns-wrap" start_prog t-sockinet
	same_ns "$PID" net self && fail "the target is in memdump's network namespace"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	[[ -f $T/d/netdev-1.img ]] || fail "netdev-1.img missing"
	crit_decodes "$T/d"
	shows "$T/d" 'net namespace: lo up'
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	same_ns "$PID" net self && fail "restored pid $PID is in memdump's network namespace"
	nsenter -t "$PID" -n ip link show lo | grep -q 'state UNKNOWN\|,UP' ||
		fail "lo is not up in the restored namespace"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
}

# What a network namespace holds besides lo is refused by name, all at once.
case_ns_net_refuse() {
	command -v ip > /dev/null || fail "ip (iproute2) is not installed"
	NETNS_SETUP='ip link add md-br0 type bridge && ip addr add 127.0.0.77/8 dev lo' \
		START_WRAP="$TESTSRC/netns-wrap" start_prog t-sockinet
	md refuse dump -t "$PID" -D "$T/d" --tcp-established
	expect_md_error
	local want
	for want in "network interface md-br0 in its network namespace" \
		    "address 127.0.0.77 on lo in its network namespace" \
		    "--tcp-established in a network namespace of its own"; do
		grep -qF -- "$want" "$MD_ERR" || fail "the refusal does not name: $want"
	done
	no_inventory "$T/d"
	check_child_pass
}

add ns-net-rst case_ns_net_rst
add ns-net-refuse case_ns_net_refuse
