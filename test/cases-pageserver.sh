# Page server and migration between two "hosts": two network namespaces the
# case makes (a veth pair, 10.77.0.1 and 10.77.0.2), host A running the
# target and the dump (nsenter: the target and memdump share A's network
# namespace), host B the page server or the receiver, in a mount namespace
# of its own (and a PID namespace for a migration's receiver: the restored
# process takes the source's PID there while the source still exists).
# Each host has its own image directory ($T/A, $T/B).

PS_PORT=7781

# ps_hosts: the two namespaces, removed when the case ends. Sets NSA, NSB, MDA.
ps_hosts() {
	local id=$(( BASHPID % 100000 ))
	NSA=mdps-a$id NSB=mdps-b$id
	ip netns add "$NSA" || fail "cannot make network namespace $NSA"
	trap 'ip netns del "$NSA" 2>/dev/null; ip netns del "$NSB" 2>/dev/null' EXIT
	ip netns add "$NSB" || fail "cannot make network namespace $NSB"
	ip link add "psa$id" netns "$NSA" type veth peer name "psb$id" netns "$NSB" ||
		fail "cannot make a veth pair"
	ip -n "$NSA" addr add 10.77.0.1/24 dev "psa$id"
	ip -n "$NSB" addr add 10.77.0.2/24 dev "psb$id"
	ip -n "$NSA" link set lo up; ip -n "$NSA" link set "psa$id" up
	ip -n "$NSB" link set lo up; ip -n "$NSB" link set "psb$id" up
	mkdir -p "$T/A" "$T/B"
	# memdump on host A, for md (which runs $MEMDUMP)
	MDA=$T/memdump-on-A
	printf '#!/bin/sh\nexec nsenter --net=/run/netns/%s %s "$@"\n' "$NSA" "$MEMDUMP" > "$MDA"
	chmod +x "$MDA"
}

# ps_target NAME ARGS...: the target on host A
ps_target() {
	START_WRAP="nsenter --net=/run/netns/$NSA" start_prog "$@"
}

# ps_server DIR [opts]: memdump page-server on host B into DIR, listening. Sets PSPID, PSERR.
ps_server() {
	local dir=$1; shift
	PSERR=$T/ps.$(basename "$dir").err
	rm -f "$T/ps.status"
	nsenter --net="/run/netns/$NSB" unshare -m "$MEMDUMP" page-server -D "$dir" \
		--address 10.77.0.2 --port "$PS_PORT" --status-fd 3 "$@" \
		3> "$T/ps.status" > /dev/null 2> "$PSERR" < /dev/null &
	PSPID=$!
	track "$PSPID"
	wait_until "$OP_TIMEOUT" test -s "$T/ps.status" ||
		{ show_file "page server" "$PSERR"; fail "the page server did not start listening"; }
}

# ps_server_exit: wait for it; sets PSRC
ps_server_exit() {
	timeout_wait "$PSPID" && PSRC=0 || PSRC=$?
	note "page server exited with $PSRC"
	show_file "page server stderr" "$PSERR"
}

# ps_dump LABEL DIR [opts]: a dump on host A to the page server (must succeed)
ps_dump() {
	local label=$1 dir=$2; shift 2
	mkdir -p "$dir"
	# shellcheck disable=SC2086
	MEMDUMP=$MDA md "$label" "$@" -t "$PID" -D "$dir" --page-server --address 10.77.0.2 \
		--port "$PS_PORT" $MD_DUMP_OPTS || fail "$label to the page server failed: $(tail -n1 "$MD_ERR")"
	ps_server_exit
	(( PSRC == 0 )) || fail "the page server failed: $(tail -n1 "$PSERR")"
	[[ ! -e $dir/pages-1.img ]] || fail "pages-1.img was written on host A"
	[[ -s ${PSDIR}/pages-1.img ]] || fail "the page server wrote no pages-1.img"
}

# ps_gather SRC DST: the images of host A beside the page server's (as rsync would)
ps_gather() {
	cp -an "$1"/. "$2"/ || fail "cannot copy $1 to $2"
}

# Round trip: the pages through the page server, the set verified and restored on B.
case_ps_roundtrip() {
	local mode=$1
	ps_hosts
	ps_target t-pattern
	PSDIR=$T/B; ps_server "$T/B"
	ps_dump dump "$T/A" dump --mode "$mode"
	expect_killed "$PID"
	[[ -e $T/B/pagemap-$PID.img ]] || fail "the page server wrote no pagemap"
	ps_gather "$T/A" "$T/B"
	md verify verify -D "$T/B" || fail "verify on host B failed: $(tail -n1 "$MD_ERR")"
	restore_and_pass "$T/B" 1
}
for m in "${MODES[@]}"; do add "ps-roundtrip-$m" case_ps_roundtrip "$m"; done

# ps_incr_chain: pre-dump, dump --leave-running --track-mem, then the killing dump of
# $PID, each to its own page server (B/1, B/2, B/3), the sets on A/1..3
ps_incr_chain() {
	PSDIR=$T/B/1; ps_server "$T/B/1"
	ps_dump pre1 "$T/A/1" pre-dump
	PSDIR=$T/B/2; ps_server "$T/B/2"
	ps_dump dump2 "$T/A/2" dump --leave-running --track-mem --prev-images-dir ../1
	expect_untraced "$PID"
	PSDIR=$T/B/3; ps_server "$T/B/3"
	ps_dump dump3 "$T/A/3" dump --prev-images-dir ../2
}

# Incremental through the page server: pre-dump, dump --leave-running --track-mem on it,
# then the killing dump; each set's pages on B, the chain restored there.
case_ps_incr() {
	ps_hosts
	ps_target t-heartbeat 64
	ps_incr_chain
	expect_killed "$PID"
	local full small
	full=$(stat -c %s "$T/B/1/pages-1.img") small=$(stat -c %s "$T/B/3/pages-1.img")
	note "pages: $full bytes in the pre-dump, $small in the last dump"
	(( small * 8 < full )) || fail "the last dump was not incremental ($small of $full bytes)"
	for s in 1 2 3; do ps_gather "$T/A/$s" "$T/B/$s"; done
	md verify verify -D "$T/B/3" || fail "verify of the chain on B failed: $(tail -n1 "$MD_ERR")"
	restore_and_pass "$T/B/3" 1
}
add ps-incr case_ps_incr

# ps_stalled_dump [N]: a dump on A to the page server, stalled halfway through the pages
# of its Nth process (default 1: the only one, or a tree's root)
ps_stalled_dump() {
	local n=${1:-1}
	MD_ERR=$T/md.dump.err
	mkdir -p "$T/A"
	MEMDUMP_FAULT=pages-half MEMDUMP_FAULT_SECS=3 timeout -k 5 "$OP_TIMEOUT" "$MDA" dump \
		-t "$PID" -D "$T/A" --page-server --address 10.77.0.2 --port "$PS_PORT" \
		2> "$MD_ERR" < /dev/null &
	MDPID=$!
	track "$MDPID"
	wait_until "$OP_TIMEOUT" eval \
		'(( $(grep -c "fault point pages-half: stalling" "$MD_ERR") >= '"$n"' ))' ||
		{ show_file "dump" "$MD_ERR"; fail "the dump never reached the pages of its process $n"; }
}

# (the fault point stalls the dump: the target's size does not matter)

# ps_kill_server_mid_dump: the page server of a stalled dump killed: the dump fails
# with one line naming it, without hanging, and leaves no inventory on A
ps_kill_server_mid_dump() {
	kill -9 "$PSPID"
	note "killed the page server during the dump"
	wait "$MDPID"; MD_RC=$?
	sed -i '/fault point pages-half: stalling/d' "$MD_ERR"
	sed 's/^/#   stderr: /' "$MD_ERR"
	(( MD_RC == 124 )) && fail "the dump hung after the page server was killed"
	expect_md_error
	grep -q 'page server 10.77.0.2' "$MD_ERR" || fail "the error does not name the page server"
	no_inventory "$T/A"
}

# The page server killed mid-dump: the dump fails with one line naming it, the target
# runs on unharmed, no inventory on A.
case_ps_server_killed() {
	ps_hosts
	ps_target t-pattern 64
	PSDIR=$T/B; ps_server "$T/B"
	ps_stalled_dump
	ps_kill_server_mid_dump
	check_child_pass
}
add ps-server-killed case_ps_server_killed

# ps_kill_dump_mid_transfer: memdump of a stalled dump SIGKILLed: the page server
# fails with one line and leaves nothing behind, no inventory on A
ps_kill_dump_mid_transfer() {
	local md; md=$(pgrep -P "$MDPID")	# memdump, below timeout
	[[ -n $md ]] || fail "no memdump below timeout $MDPID"
	kill -9 "$md"
	note "killed memdump $md during the dump"
	ps_server_exit
	(( PSRC != 0 )) || fail "the page server exited 0 after the dump was killed"
	grep -q '^memdump: page-server failed: ' "$PSERR" || fail "no error line from the page server"
	[[ -z $(ls -A "$T/B") ]] || fail "the page server left files: $(ls -R "$T/B")"
	no_inventory "$T/A"
}

# The dump killed mid-transfer: the page server fails and leaves nothing behind.
case_ps_dump_killed() {
	ps_hosts
	ps_target t-pattern 64
	PSDIR=$T/B; ps_server "$T/B"
	ps_stalled_dump
	ps_kill_dump_mid_transfer
	expect_untraced "$PID"
	check_child_pass
}
add ps-dump-killed case_ps_dump_killed

# ps_tree_members: the processes of t-tree below its root (READY P A B G)
ps_tree_members() { echo "${READY[@]:2}"; }

# ps_tree_pages DIR_A DIR_B: every process's pages and pagemap on B, in the set's layout
# (the root's in DIR_B, each other's in DIR_B/proc-PID), no pages image on A
ps_tree_pages() {
	local a=$1 b=$2 p
	[[ -s $b/pages-1.img && -s $b/pagemap-$PID.img ]] || fail "no pages of the root $PID on B"
	for p in $(ps_tree_members); do
		[[ -s $b/proc-$p/pages-1.img ]] || fail "no pages-1.img of process $p in $b/proc-$p"
		[[ -s $b/proc-$p/pagemap-$p.img ]] || fail "no pagemap of process $p in $b/proc-$p"
		[[ ! -e $a/proc-$p/pages-1.img ]] || fail "pages-1.img of process $p was written on A"
		[[ -s $a/proc-$p/pagemap-$p.img ]] || fail "no copy of process $p's pagemap on A"
	done
}

# ps_tree_gone: every process of the tree killed by the dump
ps_tree_gone() {
	local p
	expect_killed "$PID"
	for p in $(ps_tree_members); do
		wait_until 5 eval '! alive '"$p" || fail "process $p of the tree runs after the dump"
	done
}

# A tree (t-tree: a pipe between two of its processes, each its own memory) through the
# page server: every process's pages on B, where the set has them; verified, restored there.
case_ps_tree() {
	ps_hosts
	ps_target t-tree
	PSDIR=$T/B; ps_server "$T/B"
	ps_dump dump "$T/A" dump
	ps_tree_gone
	ps_tree_pages "$T/A" "$T/B"
	ps_gather "$T/A" "$T/B"
	md verify verify -D "$T/B" || fail "verify on host B failed: $(tail -n1 "$MD_ERR")"
	restore_and_pass "$T/B" 1
}
add ps-tree case_ps_tree

# Memory a parent shares copy-on-write with its child (t-cow, cases-cow.sh) through the
# page server: the dump leaves it shared (its checksums read the frozen memory without
# pinning it), writes it once, and the restore on B shares it again.
case_ps_tree_cow() {
	ps_hosts
	START_WRAP="nsenter --net=/run/netns/$NSA" cow_start
	PSDIR=$T/B; ps_server "$T/B"
	ps_dump dump "$T/A" dump
	expect_killed "$PID"
	local bytes
	bytes=$(cow_pages_bytes "$T/B")
	note "pages images on B: $bytes bytes for two processes of $COW_MB MiB"
	(( bytes < COW_MB * 1024 * 1024 * 5 / 4 )) ||
		fail "the pages images hold $bytes bytes: the shared pages twice"
	ps_gather "$T/A" "$T/B"
	cow_restore_shared "$T/B"
}
add ps-tree-cow case_ps_tree_cow

# A tree's incremental chain through page servers: pre-dump, dump --leave-running
# --track-mem, the killing dump; each process's later sets incremental, the chain
# restored on B.
case_ps_tree_incr() {
	ps_hosts
	ps_target t-tree
	local s p full small
	ps_incr_chain
	ps_tree_gone
	for s in 1 2 3; do ps_tree_pages "$T/A/$s" "$T/B/$s"; done
	for p in $(ps_tree_members); do
		full=$(stat -c %s "$T/B/1/proc-$p/pages-1.img")
		small=$(stat -c %s "$T/B/3/proc-$p/pages-1.img")
		note "process $p: $full bytes in the pre-dump, $small in the last dump"
		(( small * 8 < full )) || fail "process $p's last dump was not incremental"
	done
	for s in 1 2 3; do ps_gather "$T/A/$s" "$T/B/$s"; done
	md verify verify -D "$T/B/3" || fail "verify of the chain on B failed: $(tail -n1 "$MD_ERR")"
	restore_and_pass "$T/B/3" 1
}
add ps-tree-incr case_ps_tree_incr
case_limit ps-tree-incr 300

# ps_tree_stalled_dump: a tree's dump on A to the page server, stalled halfway through the
# pages of its second process (the first below the root: its proc-PID made on B)
ps_tree_stalled_dump() {
	ps_stalled_dump 2
	# the page server makes it once it reads what the dump sent before its stall
	wait_until 2 eval '[[ -d $T/B/proc-${READY[2]} ]]' ||
		fail "no proc-${READY[2]} on B during its pages"
}

# The page server killed mid-dump of a tree: the dump fails naming it, every process runs
# on untraced, no inventory on A; the tree passes.
case_ps_tree_server_killed() {
	ps_hosts
	ps_target t-tree
	PSDIR=$T/B; ps_server "$T/B"
	ps_tree_stalled_dump
	ps_kill_server_mid_dump
	local p
	for p in $(ps_tree_members); do expect_untraced "$p"; done
	check_child_pass
}
add ps-tree-server-killed case_ps_tree_server_killed

# The dump of a tree killed mid-transfer: the page server fails and removes everything,
# the proc-PID directories too; the tree runs on and passes.
case_ps_tree_dump_killed() {
	ps_hosts
	ps_target t-tree
	PSDIR=$T/B; ps_server "$T/B"
	ps_tree_stalled_dump
	ps_kill_dump_mid_transfer
	local p
	for p in "$PID" $(ps_tree_members); do expect_untraced "$p"; done
	check_child_pass
}
add ps-tree-dump-killed case_ps_tree_dump_killed

# ms_receiver [OPTS]: memdump migrate-receive on host B (a mount and a PID namespace of its
# own, whose init stays for the restored process). Sets RXPID (the unshare), RXERR.
ms_receiver() {
	RXERR=$T/rx.err
	rm -f "$T/rx.status"
	nsenter --net="/run/netns/$NSB" unshare -m -p -f --mount-proc sh -c \
		"'$MEMDUMP' migrate-receive -D '$T/B' --address 10.77.0.2 --port $PS_PORT \
		 --status-fd 3 $* 2> '$RXERR'; echo \$? > '$T/rx.rc'; exec sleep 600" \
		3> "$T/rx.status" > /dev/null < /dev/null &
	RXPID=$!
	track "$RXPID"
	wait_until "$OP_TIMEOUT" test -s "$T/rx.status" ||
		{ show_file "receiver" "$RXERR"; fail "the receiver did not start listening"; }
}

# ms_dest_passes: the process migrated to B runs there and passes its checks (SIGUSR1)
ms_dest_passes() {
	local dest
	dest=$(ms_dest_pid "$PID")
	[[ -n $dest ]] || fail "no process $PID runs on host B"
	kill -USR1 "$dest" || fail "cannot signal the migrated process"
	get_result "$OUT"
}

# ms_dest_pid PID: the host's PID of the process that is PID in B's PID namespace
ms_dest_pid() {
	grep -l -P "^NSpid:\t[0-9]+\t$1\$" /proc/[0-9]*/status 2>/dev/null | head -n1 |
		sed 's|/proc/\([0-9]*\)/status|\1|'
}

# A process with a heartbeat migrated: the source is gone only once the destination
# runs, the beats go on there with none lost or doubled, its memory is the source's.
case_ms_heartbeat() {
	ps_hosts
	ps_target t-heartbeat 64
	ms_receiver
	# when the source dies, does the destination exist already?
	( while alive "$PID"; do sleep 0.005; done
	  [[ -n $(ms_dest_pid "$PID") ]] && echo dest-first || echo source-first ) > "$T/order" &
	# three dumps and a restore: three times one command's time
	MEMDUMP=$MDA OP_TIMEOUT=$(( OP_TIMEOUT * 3 )) md migrate migrate -t "$PID" \
		--to "10.77.0.2:$PS_PORT" --no-lazy-pages ||
		fail "migrate failed: $(tail -n1 "$MD_ERR")"
	expect_killed "$PID"
	wait_until "$OP_TIMEOUT" test -s "$T/order" || fail "the watcher did not see the source go"
	[[ $(cat "$T/order") == dest-first ]] || fail "the source was gone before the destination ran"
	wait_until "$OP_TIMEOUT" test -s "$T/rx.rc" || fail "the receiver did not exit"
	[[ $(cat "$T/rx.rc") == 0 ]] || fail "the receiver failed: $(tail -n1 "$RXERR")"
	local dest ns0 beats
	dest=$(ms_dest_pid "$PID")
	[[ -n $dest ]] || fail "no process $PID runs on host B"
	ns0=$(head -n1 "$T/beat" | cut -d' ' -f2)
	wait_until "$OP_TIMEOUT" eval '[[ $(tail -n1 "$T/beat" | cut -d" " -f2) != "$ns0" ]]' ||
		fail "no heartbeat from host B"
	beats=$(awk 'NR > 1 && $1 != prev + 1 { print "beat " $1 " after " prev; exit }
		     { prev = $1 }' "$T/beat")
	[[ -z $beats ]] || fail "the heartbeats are not one sequence: $beats"
	note "beats: $(grep -c " $ns0\$" "$T/beat") on A, $(grep -vc " $ns0\$" "$T/beat") on B so far"
	kill -USR1 "$dest" || fail "cannot signal the migrated process"
	get_result "$OUT"
}
add ms-heartbeat case_ms_heartbeat
case_limit ms-heartbeat 300

# The receiver killed mid-migration: migrate fails with one line, the source runs on,
# tracked no more, and nothing runs on host B.
case_ms_receiver_killed() {
	ps_hosts
	ps_target t-heartbeat 64
	ms_receiver
	MD_ERR=$T/md.migrate.err
	MEMDUMP_FAULT=pages-half MEMDUMP_FAULT_SECS=3 timeout -k 5 $(( OP_TIMEOUT * 3 )) "$MDA" migrate \
		-t "$PID" --to "10.77.0.2:$PS_PORT" --no-lazy-pages 2> "$MD_ERR" < /dev/null &
	MDPID=$!
	track "$MDPID"
	wait_line "$MD_ERR" 'fault point pages-half' "$OP_TIMEOUT" ||
		{ show_file "migrate" "$MD_ERR"; fail "the migration never reached half of the pages"; }
	pkill -9 -f "migrate-receive -D $T/B" || fail "no receiver to kill"
	note "killed the receiver during the migration"
	wait "$MDPID"; MD_RC=$?
	sed -i '/fault point pages-half: stalling/d' "$MD_ERR"
	sed 's/^/#   stderr: /' "$MD_ERR"
	expect_md_error
	grep -q 'receiver 10.77.0.2' "$MD_ERR" || fail "the error does not name the receiver"
	expect_untraced "$PID"
	expect_untracked "$PID"
	[[ -z $(ms_dest_pid "$PID") ]] || fail "a process $PID runs on host B"
	check_child_pass
}
add ms-receiver-killed case_ms_receiver_killed

# The receiver killed during the final dump, its pages written (fault point
# images-written): the killing dump leaves the tracker in place until the
# source is gone (dump.c, track_drop_late), so a failure there must remove it:
# the source runs on untracked, nothing runs on host B.
case_ms_final_receiver_killed() {
	ps_hosts
	ps_target t-heartbeat 64
	ms_receiver
	MD_ERR=$T/md.migrate.err
	MEMDUMP_FAULT=images-written MEMDUMP_FAULT_SECS=3 timeout -k 5 $(( OP_TIMEOUT * 3 )) "$MDA" migrate \
		-t "$PID" --to "10.77.0.2:$PS_PORT" --no-lazy-pages -v 3 2> "$MD_ERR" < /dev/null &
	MDPID=$!
	track "$MDPID"
	wait_line "$MD_ERR" 'fault point images-written' "$OP_TIMEOUT" ||
		{ show_file "migrate" "$MD_ERR"; fail "the final dump never wrote its images"; }
	pkill -9 -f "migrate-receive -D $T/B" || fail "no receiver to kill"
	note "killed the receiver during the final dump"
	wait "$MDPID"; MD_RC=$?
	sed -i '/fault point images-written: stalling/d' "$MD_ERR"
	(( MD_RC != 0 )) || fail "migrate succeeded without its receiver"
	grep -q "process $PID: memory tracking removed" "$MD_ERR" ||
		{ show_file "migrate" "$MD_ERR"; fail "the failed final dump did not remove the tracker"; }
	expect_untraced "$PID"
	expect_untracked "$PID"
	[[ -z $(ms_dest_pid "$PID") ]] || fail "a process $PID runs on host B"
	check_child_pass
}
add ms-final-receiver-killed case_ms_final_receiver_killed

# A tree migrated (t-tree in a session of its own: a pipe between two processes, each its
# own memory): two pre-dumps and the final dump, every process's set in its proc-PID on B; the source's
# root is gone only once B's runs; every process passes its checks there. With
# --no-lazy-pages, and the default (restored there with --lazy-pages from B's sets).
case_ms_tree() {
	ps_hosts
	# its own session, as a container's init: B's PID namespace has no other leader
	START_WRAP="nsenter --net=/run/netns/$NSA setsid" start_prog t-tree
	ms_receiver
	( while alive "$PID"; do sleep 0.005; done
	  [[ -n $(ms_dest_pid "$PID") ]] && echo dest-first || echo source-first ) > "$T/order" &
	MEMDUMP=$MDA OP_TIMEOUT=$(( OP_TIMEOUT * 3 )) md migrate migrate -t "$PID" \
		--to "10.77.0.2:$PS_PORT" "$@" ||
		fail "migrate failed: $(tail -n1 "$MD_ERR")"
	ps_tree_gone
	wait_until "$OP_TIMEOUT" test -s "$T/order" || fail "the watcher did not see the source go"
	[[ $(cat "$T/order") == dest-first ]] || fail "the source was gone before the destination ran"
	wait_until "$OP_TIMEOUT" test -s "$T/rx.rc" || fail "the receiver did not exit"
	[[ $(cat "$T/rx.rc") == 0 ]] || fail "the receiver failed: $(tail -n1 "$RXERR")"
	local dest p s
	for s in 1 2 3; do
		for p in $(ps_tree_members); do
			[[ -s $T/B/$s/proc-$p/pages-1.img && -s $T/B/$s/proc-$p/inventory.img ]] ||
				fail "no set of process $p in $T/B/$s/proc-$p"
		done
	done
	for p in "$PID" $(ps_tree_members); do
		[[ -n $(ms_dest_pid "$p") ]] || fail "no process $p runs on host B"
	done
	dest=$(ms_dest_pid "$PID")
	truncate -s "$READY_SIZE" "$OUT"
	kill -USR1 "$dest" || fail "cannot signal the migrated tree's root"
	get_result "$OUT"
	(( $(grep -c '^ok ' "$OUT") == 3 )) || fail "not every child passed: $(grep -c '^ok ' "$OUT") ok lines"
}
add ms-tree case_ms_tree --no-lazy-pages
add ms-tree-default case_ms_tree
case_limit ms-tree 300

# The receiver killed while a tree's migration sends the pages of its second process:
# migrate fails naming it, every process of the tree runs on, untracked; nothing on B.
case_ms_tree_receiver_killed() {
	ps_hosts
	ps_target t-tree
	ms_receiver
	MD_ERR=$T/md.migrate.err
	MEMDUMP_FAULT=pages-half MEMDUMP_FAULT_SECS=3 timeout -k 5 $(( OP_TIMEOUT * 3 )) "$MDA" migrate \
		-t "$PID" --to "10.77.0.2:$PS_PORT" --no-lazy-pages 2> "$MD_ERR" < /dev/null &
	MDPID=$!
	track "$MDPID"
	wait_until "$OP_TIMEOUT" eval \
		'(( $(grep -c "fault point pages-half: stalling" "$MD_ERR") >= 2 ))' ||
		{ show_file "migrate" "$MD_ERR"; fail "the migration never reached its second process's pages"; }
	local sh rx p
	sh=$(pgrep -P "$RXPID") && rx=$(pgrep -P "$sh") || fail "no receiver below $RXPID"
	kill -9 "$rx"
	note "killed the receiver $rx during the migration"
	wait "$MDPID"; MD_RC=$?
	sed -i '/fault point pages-half: stalling/d' "$MD_ERR"
	sed 's/^/#   stderr: /' "$MD_ERR"
	expect_md_error
	grep -q 'receiver 10.77.0.2' "$MD_ERR" || fail "the error does not name the receiver"
	for p in "$PID" $(ps_tree_members); do
		expect_untraced "$p"
		expect_untracked "$p"
		[[ -z $(ms_dest_pid "$p") ]] || fail "a process $p runs on host B"
	done
	check_child_pass
}
add ms-tree-receiver-killed case_ms_tree_receiver_killed

# migrate --lazy-pages: the final freeze sends no pages (the receiver's count for the
# last set), the process runs on B at once, its page handler fetches the final set's
# pages-1.img from the source (faults first, then the rest), the source exits once
# every page is in and removes what it kept; the beats are one sequence, the memory
# the source's, and B's pages-1.img the source's whole (verify).
case_ms_lazy_heartbeat() {
	ps_hosts
	ps_target t-heartbeat 64
	ms_receiver -v 3
	( while alive "$PID"; do sleep 0.005; done
	  [[ -n $(ms_dest_pid "$PID") ]] && echo dest-first || echo source-first ) > "$T/order" &
	MEMDUMP=$MDA OP_TIMEOUT=$(( OP_TIMEOUT * 3 )) md migrate migrate -t "$PID" \
		--to "10.77.0.2:$PS_PORT" --lazy-pages -D "$T/A" -v 3 ||
		fail "migrate failed: $(tail -n1 "$MD_ERR")"
	expect_killed "$PID"
	wait_until "$OP_TIMEOUT" test -s "$T/order" || fail "the watcher did not see the source go"
	[[ $(cat "$T/order") == dest-first ]] || fail "the source was gone before the destination ran"
	wait_until "$OP_TIMEOUT" test -s "$T/rx.rc" || fail "the receiver did not exit"
	show_file "receiver stderr" "$RXERR"
	[[ $(cat "$T/rx.rc") == 0 ]] || fail "the receiver failed: $(tail -n1 "$RXERR")"
	grep -q 'set 3: 0 bytes of pages received before the restore, pages-1.img left on the source' \
		"$RXERR" || fail "the final set's pages went with the freeze"
	grep -q 'set 1: [1-9][0-9]* bytes of pages received' "$RXERR" ||
		fail "the receiver's count of the pre-dump's pages is wrong"
	# the pre-copied sets checked as they came, before the freeze (the restore leaves them late)
	grep -q 'set 1 verified as it arrived' "$RXERR" && grep -q 'set 2 verified as it arrived' "$RXERR" ||
		fail "the receiver did not verify the pre-copied sets as they arrived"
	local size
	size=$(sed -n 's/.*pages-1.img of set 3 (\([0-9]*\) bytes) stays here.*/\1/p' "$MD_ERR")
	[[ -n $size ]] && (( size > 0 )) || fail "the final set held no pages"
	grep -q "served $size bytes of pages-1.img to the receiver" "$MD_ERR" ||
		fail "the source did not serve its final $size bytes once"
	grep -q "every page of $T/B/3 is here" "$RXERR" ||
		fail "the receiver's page handler did not say every page is in"
	grep -q "lazy-pages: [0-9]*: [1-9][0-9]* hot pages first" "$RXERR" ||
		fail "the page handler on B did not take the final set's pages (the hot ones) first"
	[[ ! -e $T/A/3/pages-1.img ]] || fail "the source kept its final pages-1.img"
	local dest ns0 beats
	dest=$(ms_dest_pid "$PID")
	[[ -n $dest ]] || fail "no process $PID runs on host B"
	ns0=$(head -n1 "$T/beat" | cut -d' ' -f2)
	wait_until "$OP_TIMEOUT" eval '[[ $(tail -n1 "$T/beat" | cut -d" " -f2) != "$ns0" ]]' ||
		fail "no heartbeat from host B"
	beats=$(awk 'NR > 1 && $1 != prev + 1 { print "beat " $1 " after " prev; exit }
		     { prev = $1 }' "$T/beat")
	[[ -z $beats ]] || fail "the heartbeats are not one sequence: $beats"
	note "beats: $(grep -c " $ns0\$" "$T/beat") on A, $(grep -vc " $ns0\$" "$T/beat") on B so far"
	md verify verify -D "$T/B/3" || fail "B's final set is not complete: $(tail -n1 "$MD_ERR")"
	kill -USR1 "$dest" || fail "cannot signal the migrated process"
	get_result "$OUT"
}
add ms-lazy-heartbeat case_ms_lazy_heartbeat
case_limit ms-lazy-heartbeat 300

# migrate's default, a process that writes while it is migrated (t-heartbeat
# rewriting its 256 MiB at 256 MiB/s, the same bytes): pre-dumps go on while each
# sends less than half of the one before, 2 to 8 of them; the final freeze sends what
# the last one left; B restores with --lazy-pages from its own sets (the source's
# memdump gone, its page handler fills every page) and the process runs there with
# the source's memory.
case_ms_converge() {
	ps_hosts
	ps_target t-heartbeat 256 256
	ms_receiver -v 3
	MEMDUMP=$MDA OP_TIMEOUT=$(( OP_TIMEOUT * 3 )) md migrate migrate -t "$PID" \
		--to "10.77.0.2:$PS_PORT" -D "$T/A" -v 3 ||
		fail "migrate failed: $(tail -n1 "$MD_ERR")"
	expect_killed "$PID"
	local n final sizes
	n=$(grep -c 'pre-dumped process' "$MD_ERR")
	sizes=$(sed -n 's/.*pre-dumped process [0-9]*: .* pages (\([0-9.]*\) MB).*/\1/p' "$MD_ERR" | tr '\n' ' ')
	note "$n pre-dumps: $sizes MB"
	(( n >= 2 && n <= 8 )) || fail "$n pre-dumps, expected 2 to 8"
	final=$(( n + 1 ))
	[[ -f $T/B/$final/inventory.img && ! -e $T/B/$(( final + 1 )) ]] ||
		fail "B does not hold $final sets after $n pre-dumps: $(ls "$T/B")"
	wait_until "$OP_TIMEOUT" test -s "$T/rx.rc" || fail "the receiver did not exit"
	[[ $(cat "$T/rx.rc") == 0 ]] || fail "the receiver failed: $(tail -n1 "$RXERR")"
	md verify verify -D "$T/B/$final" || fail "B's final set is not complete: $(tail -n1 "$MD_ERR")"
	grep -q "set $final: restored with --lazy-pages, its memory filled from the sets here" \
		"$RXERR" || fail "B did not restore lazily from its own sets: $(tail -n3 "$RXERR")"
	grep -q "pages-1.img of set .* stays here" "$MD_ERR" && fail "the source kept pages to serve"
	wait_until "$OP_TIMEOUT" grep -q 'lazy-pages: done' "$RXERR" ||
		fail "B's page handler did not fill every page: $(tail -n2 "$RXERR")"
	ms_dest_passes
}
add ms-converge case_ms_converge
case_limit ms-converge 300

# migrate --lazy-pages with no pre-dump: the final set is the whole memory, and the
# freeze sends none of it (the receiver's count); the restore on B fetches only what
# no lazy VMA takes, the page handler the rest; the source serves every byte of its
# pages-1.img once; B's set verifies whole and the process passes there.
case_ms_lazy_freeze_no_pages() {
	ps_hosts
	ps_target t-heartbeat 64
	ms_receiver -v 3
	MEMDUMP=$MDA OP_TIMEOUT=$(( OP_TIMEOUT * 2 )) md migrate migrate -t "$PID" \
		--to "10.77.0.2:$PS_PORT" --lazy-pages --pre-dumps 0 -D "$T/A" -v 3 ||
		fail "migrate failed: $(tail -n1 "$MD_ERR")"
	expect_killed "$PID"
	wait_until "$OP_TIMEOUT" test -s "$T/rx.rc" || fail "the receiver did not exit"
	show_file "receiver stderr" "$RXERR"
	[[ $(cat "$T/rx.rc") == 0 ]] || fail "the receiver failed: $(tail -n1 "$RXERR")"
	grep -q 'set 1: 0 bytes of pages received before the restore, pages-1.img left on the source' \
		"$RXERR" || fail "the final freeze sent pages"
	local size
	size=$(sed -n 's/.*pages-1.img of set 1 (\([0-9]*\) bytes) stays here.*/\1/p' "$MD_ERR")
	(( size > 64 << 20 )) || fail "the final set holds $size bytes, not the whole memory"
	grep -q "served $size bytes of pages-1.img to the receiver" "$MD_ERR" ||
		fail "the source did not serve its $size bytes once"
	[[ ! -e $T/A/1/pages-1.img ]] || fail "the source kept its pages-1.img"
	[[ $(stat -c %s "$T/B/1/pages-1.img") == "$size" ]] || fail "B's pages-1.img has another size"
	md verify verify -D "$T/B/1" || fail "B's set is not complete: $(tail -n1 "$MD_ERR")"
	ms_dest_passes
}
add ms-lazy-freeze-no-pages case_ms_lazy_freeze_no_pages
case_limit ms-lazy-freeze-no-pages 300

# The source's memdump SIGKILLed after the switch, mid background fill (paced): the
# page handler on B cannot complete the memory, so it kills the restored process with
# one line in the receiver's log; nothing hangs, the receiver fails, nothing runs,
# and nothing of the process's memory stays in /tmp (migrate removed its working
# directory at the switch; its pages are served from the open files).
case_ms_lazy_source_killed() {
	local work_before; work_before=$(ls -d /tmp/memdump-migrate-* 2> /dev/null)
	ms_lazy_switched
	local dest=$DEST md=$MDW
	kill -9 "$md"
	note "killed the source's memdump worker $md after the switch"
	wait "$MDPID" 2>/dev/null
	wait_until "$OP_TIMEOUT" eval '! alive '"$dest" ||
		fail "the restored process $dest still runs without its source"
	wait_until "$OP_TIMEOUT" test -s "$T/rx.rc" || fail "the receiver hung"
	show_file "receiver stderr" "$RXERR"
	[[ $(cat "$T/rx.rc") != 0 ]] || fail "the receiver exited 0 without every page"
	[[ $(grep -c 'killed the restored processes' "$RXERR") == 1 ]] ||
		fail "not one line saying the restored process was killed"
	grep -q "lazy-pages: lost the migration's source of pages-1.img.*killed the restored processes $PID " \
		"$RXERR" || fail "the line does not say the source was lost"
	grep -q '^PASS' "$OUT" && fail "the killed process passed"
	dest=$(ms_dest_pid "$PID")	# a zombie of B's PID namespace (its init is sleep) is gone
	[[ -z $dest ]] || ! alive "$dest" || fail "a process $PID runs on host B"
	# its working directory (the process's pre-copied memory) went at the switch
	[[ $(ls -d /tmp/memdump-migrate-* 2> /dev/null) == "$work_before" ]] ||
		fail "the killed migrate left its working directory: $(ls -d /tmp/memdump-migrate-*)"
}
add ms-lazy-source-killed case_ms_lazy_source_killed
case_limit ms-lazy-source-killed 300

# The receiver SIGKILLed after the switch, mid background fill (paced): the page
# handler, whose channel to it broke, kills the restored process with one line in the
# log it shares with the receiver; the source's migrate fails naming the receiver.
case_ms_lazy_receiver_killed() {
	ms_lazy_switched
	local dest=$DEST rx
	rx=$(pgrep -f "migrate-receive -D $T/B")
	[[ -n $rx ]] || fail "no receiver to kill"
	kill -9 $rx
	note "killed the receiver $rx after the switch"
	wait_until "$OP_TIMEOUT" eval '! alive '"$dest" ||
		fail "the restored process $dest still runs without its receiver"
	wait "$MDPID"; MD_RC=$?
	(( MD_RC != 0 && MD_RC < 128 )) || fail "migrate exited $MD_RC, expected an error"
	grep -q '^memdump: migrate failed: .*receiver 10.77.0.2' "$MD_ERR" ||
		fail "no error line naming the receiver: $(tail -n1 "$MD_ERR")"
	wait_until "$OP_TIMEOUT" eval 'grep -q "killed the restored processes" "$RXERR"' ||
		{ show_file "receiver stderr" "$RXERR"; fail "no line saying the process was killed"; }
	show_file "receiver stderr" "$RXERR"
	[[ $(grep -c 'killed the restored processes' "$RXERR") == 1 ]] ||
		fail "not one line saying the restored process was killed"
	grep -q "lazy-pages: lost the migration's source of pages-1.img (memdump migrate-receive gone" \
		"$RXERR" || fail "the line does not say the receiver was lost"
	grep -q '^PASS' "$OUT" && fail "the killed process passed"
	dest=$(ms_dest_pid "$PID")	# a zombie of B's PID namespace (its init is sleep) is gone
	[[ -z $dest ]] || ! alive "$dest" || fail "a process $PID runs on host B"
}
add ms-lazy-receiver-killed case_ms_lazy_receiver_killed
case_limit ms-lazy-receiver-killed 300

# ms_lazy_switched: t-heartbeat migrated with --lazy-pages --pre-dumps 0, the fill paced
# (receiver options $*): MD_ERR, MDPID (migrate), DEST (the process on B), MDW (the
# source's memdump worker, which serves the pages) once the process runs on B.
ms_lazy_switched() {
	ps_hosts
	ps_target t-heartbeat 64
	MEMDUMP_LAZY_PACE_MS=300 ms_receiver -v 3 "$@"
	MD_ERR=$T/md.migrate.err
	timeout -k 5 $(( OP_TIMEOUT * 4 )) "$MDA" migrate -t "$PID" --to "10.77.0.2:$PS_PORT" \
		--lazy-pages --pre-dumps 0 -v 3 2> "$MD_ERR" < /dev/null &
	MDPID=$!
	track "$MDPID"
	wait_line "$MD_ERR" 'dumped process' "$(( OP_TIMEOUT * 2 ))" ||
		{ show_file "migrate" "$MD_ERR"; fail "the migration never got to the switch"; }
	expect_killed "$PID"
	DEST=$(ms_dest_pid "$PID")
	[[ -n $DEST ]] || fail "no process $PID runs on host B after the switch"
	grep -q 'served' "$MD_ERR" && fail "every page was fetched before the stop (pace too fast?)"
	MDW=$(sed -n 's/.*Info *\([0-9]*\): dumped process.*/\1/p' "$MD_ERR")
	[[ -n $MDW ]] && alive "$MDW" || fail "no memdump worker serving the pages"
}

# ms_lazy_one_kill_line REGEX: the restored process was killed, with one line matching
ms_lazy_one_kill_line() {
	wait_until "$OP_TIMEOUT" eval 'grep -q "killed the restored processes" "$RXERR"' ||
		{ show_file "receiver stderr" "$RXERR"; fail "no line saying the process was killed"; }
	show_file "receiver stderr" "$RXERR"
	wait_until "$OP_TIMEOUT" eval '! alive '"$DEST" ||
		fail "the restored process $DEST still runs without its pages"
	[[ $(grep -c 'killed the restored processes' "$RXERR") == 1 ]] ||
		fail "not one line saying the restored process was killed"
	grep -q -E "$1" "$RXERR" || fail "the line does not match '$1'"
	grep -q '^PASS' "$OUT" && fail "the killed process passed"
}

# The source's memdump alive but stopped after the switch (it keeps its connection
# open: no FIN, no keepalive failure): the receiver's bounded wait (--lazy-timeout)
# ends the fetch, and the handler kills the restored process naming the page.
case_ms_lazy_source_stopped() {
	ms_lazy_switched --lazy-timeout 3
	kill -STOP "$MDW"
	note "stopped the source's memdump worker $MDW after the switch"
	ms_lazy_one_kill_line "lazy-pages: lost the migration's source of pages-1.img: the client 10\.77\.0\.1:[0-9]+ did not answer in 3 s for bytes 0x[0-9a-f]+-0x[0-9a-f]+ of .*pages-1\.img \(stopped\?\), for the pages? at 0x[0-9a-f]+.*: killed the restored processes $PID "
	wait_until "$OP_TIMEOUT" test -s "$T/rx.rc" || fail "the receiver hung"
	[[ $(cat "$T/rx.rc") != 0 ]] || fail "the receiver exited 0 without every page"
	kill -CONT "$MDW"
	wait "$MDPID"; MD_RC=$?
	(( MD_RC != 0 && MD_RC < 124 )) || fail "migrate exited $MD_RC, expected an error (not a hang)"
}
add ms-lazy-source-stopped case_ms_lazy_source_stopped
case_limit ms-lazy-source-stopped 300

# The receiver stopped after the switch: the handler's own bounded wait on it
# (--lazy-timeout plus 5 s) kills the restored process naming the page.
case_ms_lazy_receiver_stopped() {
	ms_lazy_switched --lazy-timeout 2
	local rx; rx=$(pgrep -f "migrate-receive -D $T/B")
	[[ -n $rx ]] || fail "no receiver to stop"
	kill -STOP $rx
	note "stopped the receiver $rx after the switch"
	ms_lazy_one_kill_line "lazy-pages: no answer in 7 s for bytes 0x[0-9a-f]+-0x[0-9a-f]+ of pages-1\.img from the migration's source \(memdump migrate-receive stopped\?\), for the pages? at 0x[0-9a-f]+.*: killed the restored processes $PID "
	kill -CONT $rx
	wait_until "$OP_TIMEOUT" test -s "$T/rx.rc" || fail "the receiver hung once continued"
	[[ $(cat "$T/rx.rc") != 0 ]] || fail "the receiver exited 0 without every page"
}
add ms-lazy-receiver-stopped case_ms_lazy_receiver_stopped
case_limit ms-lazy-receiver-stopped 300

# ms_lazy_beats_on ID...: each beat file DIR/beat-ID goes on on host B, one sequence
ms_lazy_beats_on() {
	local id f ns0 gap
	for id in "$@"; do
		f=$T/beat-$id
		ns0=$(head -n1 "$f" | cut -d' ' -f2)
		wait_until "$OP_TIMEOUT" eval '[[ $(tail -n1 "'"$f"'" | cut -d" " -f2) != "'"$ns0"'" ]]' ||
			fail "no heartbeat of $id from host B"
		gap=$(awk 'NR > 1 && $1 != prev + 1 { print "beat " $1 " after " prev; exit }
			   { prev = $1 }' "$f")
		[[ -z $gap ]] || fail "the heartbeats of $id are not one sequence: $gap"
		note "beats of $id: $(grep -c " $ns0\$" "$f") on A, $(grep -vc " $ns0\$" "$f") on B so far"
	done
}

# ms_lazy_tree_target: t-lazytree (a parent, two children sharing its memory copy-on-write,
# one child with a second thread) on host A, in a session of its own (as a container's init)
ms_lazy_tree_target() {
	START_WRAP="nsenter --net=/run/netns/$NSA setsid" start_prog t-lazytree "${1:-16}" ${2:+"$2"}
}

# migrate --lazy-pages of a tree: the final freeze sends no pages, each process's final
# pages-1.img stays on the source, the tree runs on B at once (the source's gone only
# then), each process's page channel fetches its own set's file through the one
# connection; every set's pages come in (the receiver says so per set), the source
# serves its bytes once and removes them; every heartbeat (each process's, the
# thread's) goes on there as one sequence, B's sets verify whole, and every process
# passes its checks there with the memory checksum it had on A. "split": the parent's
# VMA of the shared memory split by an mprotect after the forks (the children's VMAs are
# no longer one of its, nor a part of one), so they read their 384 pieces of it from the
# parent's image instead of sharing its pages (each piece's run was hashed whole once
# per piece: 6 GiB, the restore never got to run).
case_ms_lazy_tree() {
	ps_hosts
	ms_lazy_tree_target 16 "${1:-}"
	ms_receiver -v 3
	( while alive "$PID"; do sleep 0.005; done
	  [[ -n $(ms_dest_pid "$PID") ]] && echo dest-first || echo source-first ) > "$T/order" &
	MEMDUMP=$MDA OP_TIMEOUT=$(( OP_TIMEOUT * 3 )) md migrate migrate -t "$PID" \
		--to "10.77.0.2:$PS_PORT" --lazy-pages -D "$T/A" -v 3 ||
		fail "migrate failed: $(tail -n1 "$MD_ERR")"
	ps_tree_gone
	wait_until "$OP_TIMEOUT" test -s "$T/order" || fail "the watcher did not see the source go"
	[[ $(cat "$T/order") == dest-first ]] || fail "the source was gone before the destination ran"
	wait_until "$OP_TIMEOUT" test -s "$T/rx.rc" || fail "the receiver did not exit"
	show_file "receiver stderr" "$RXERR"
	[[ $(cat "$T/rx.rc") == 0 ]] || fail "the receiver failed: $(tail -n1 "$RXERR")"
	grep -q 'set 3: 0 bytes of pages received before the restore, pages-1.img left on the source' \
		"$RXERR" || fail "the final set's pages went with the freeze"
	local p size total=0
	grep -q "every page of $T/B/3 is here" "$RXERR" || fail "the root's pages did not all come in"
	for p in $(ps_tree_members); do
		grep -q "every page of $T/B/3/proc-$p is here" "$RXERR" ||
			fail "the pages of process $p did not all come in"
		[[ ! -e $T/A/3/proc-$p/pages-1.img ]] || fail "the source kept process $p's pages-1.img"
	done
	[[ ! -e $T/A/3/pages-1.img ]] || fail "the source kept the root's pages-1.img"
	for p in "$PID" $(ps_tree_members); do	# its lazy memory through the page handler
		grep -q "lazy-pages: $p: [1-9][0-9]* hot pages first" "$RXERR" ||
			fail "the page handler on B did not fill process $p's final pages"
	done
	for size in $(sed -n 's/.*pages-1.img of set 3 (\([0-9]*\) bytes) stays here.*/\1/p' "$MD_ERR"); do
		total=$(( total + size ))
	done
	[[ $(grep -c 'pages-1.img of set 3 (.*) stays here' "$MD_ERR") == 3 ]] ||
		fail "the final dump did not leave one pages-1.img per process"
	grep -q "served $total bytes of pages-1.img to the receiver" "$MD_ERR" ||
		fail "the source did not serve its final $total bytes once"
	ms_lazy_beats_on p a b t
	md verify verify -D "$T/B/3" || fail "B's final set is not complete: $(tail -n1 "$MD_ERR")"
	for p in "$PID" $(ps_tree_members); do
		[[ -n $(ms_dest_pid "$p") ]] || fail "no process $p runs on host B"
	done
	truncate -s "$READY_SIZE" "$OUT"
	kill -USR1 "$(ms_dest_pid "$PID")" || fail "cannot signal the migrated tree's root"
	get_result "$OUT"
	local id
	for id in p a b; do
		grep -q "^ok $id $(cat "$T/sum-$id") " "$OUT" ||
			fail "process $id's memory checksum on B is not its checksum on A"
	done
}
add ms-lazy-tree case_ms_lazy_tree
case_limit ms-lazy-tree 300
add ms-lazy-tree-split case_ms_lazy_tree split
case_limit ms-lazy-tree-split 300

# The source's memdump SIGKILLed after a tree's switch, mid background fill (paced): the
# one page handler on B kills every process of the tree with one line naming them all in
# the receiver's log; nothing hangs, the receiver fails, nothing of the tree runs on B.
case_ms_lazy_tree_source_killed() {
	ps_hosts
	ms_lazy_tree_target 64
	MEMDUMP_LAZY_PACE_MS=1000 ms_receiver -v 3
	MD_ERR=$T/md.migrate.err
	timeout -k 5 $(( OP_TIMEOUT * 4 )) "$MDA" migrate -t "$PID" --to "10.77.0.2:$PS_PORT" \
		--lazy-pages --pre-dumps 0 -v 3 2> "$MD_ERR" < /dev/null &
	MDPID=$!
	track "$MDPID"
	wait_line "$MD_ERR" 'dumped process' "$(( OP_TIMEOUT * 2 ))" ||
		{ hang_report "$RXPID" | sed 's/^/#   receiver: /'; hang_report "$MDPID" | sed 's/^/#   source: /'
		  show_file "migrate" "$MD_ERR"; fail "the migration never got to the switch"; }
	ps_tree_gone
	local p dests=() md
	for p in "$PID" $(ps_tree_members); do
		dests+=("$(ms_dest_pid "$p")")
		[[ -n ${dests[-1]} ]] || fail "no process $p runs on host B after the switch"
	done
	grep -q 'served' "$MD_ERR" && fail "every page was fetched before the stop (pace too fast?)"
	md=$(sed -n 's/.*Info *\([0-9]*\): dumped process.*/\1/p' "$MD_ERR" | head -n1)
	[[ -n $md ]] && alive "$md" || fail "no memdump worker serving the pages"
	kill -9 "$md"
	note "killed the source's memdump worker $md after the switch"
	wait "$MDPID" 2>/dev/null
	for p in "${dests[@]}"; do
		wait_until "$OP_TIMEOUT" eval '! alive '"$p" ||
			fail "the restored process $p still runs without its source"
	done
	wait_until "$OP_TIMEOUT" test -s "$T/rx.rc" || fail "the receiver hung"
	show_file "receiver stderr" "$RXERR"
	[[ $(cat "$T/rx.rc") != 0 ]] || fail "the receiver exited 0 without every page"
	[[ $(grep -c 'killed the restored processes' "$RXERR") == 1 ]] ||
		fail "not one line saying the restored tree was killed"
	grep -q "lazy-pages: lost the migration's source of pages-1.img.*killed the restored processes" \
		"$RXERR" || fail "the line does not say the source was lost"
	grep -q '^PASS' "$OUT" && fail "the killed tree passed"
	for p in "$PID" $(ps_tree_members); do
		grep "killed the restored processes" "$RXERR" | grep -q -w "$p" ||
			fail "the line does not name process $p"
		p=$(ms_dest_pid "$p")	# a zombie of B's PID namespace (its init is sleep) is gone
		[[ -z $p ]] || ! alive "$p" || fail "a process of the tree runs on host B"
	done
}
add ms-lazy-tree-source-killed case_ms_lazy_tree_source_killed
case_limit ms-lazy-tree-source-killed 300

# A receiver asking for pages of a set the final dump did not leave on the source
# (a GET naming proc-9, protocol 5) fails the migration before the switch, naming
# it: the source process is untracked, runs on and passes its checks.
case_ms_lazy_get_other_set() {
	ps_hosts
	ps_target t-pattern 16
	PYTHONPATH=$TESTSRC nsenter --net="/run/netns/$NSB" "$(command -p -v python3)" - \
		10.77.0.2 "$PS_PORT" > "$T/fake.out" 2>&1 <<'PY' &
import socket, struct, sys
from xfer_wire import HELLO, COMMIT, RESTORE, REPLY, SYNC, GET, recv, send
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], int(sys.argv[2])))
l.listen(1)
print('LISTENING', flush=True)
l.settimeout(60)
s, _ = l.accept()
s.settimeout(60)
while True:
    cmd, body = recv(s)
    if cmd is None or body is None:
        break
    if cmd in (HELLO, COMMIT, SYNC):
        send(s, REPLY, struct.pack('<i', 0))
    elif cmd == RESTORE:
        send(s, GET, struct.pack('<QQ', 0, 4096) + b'proc-9')
        print('ASKED', flush=True)
print('EOF', flush=True)
PY
	track $!
	wait_until "$OP_TIMEOUT" grep -q LISTENING "$T/fake.out" ||
		{ show_file "fake receiver" "$T/fake.out"; fail "the fake receiver does not listen"; }
	MEMDUMP=$MDA md migrate migrate -t "$PID" --to "10.77.0.2:$PS_PORT" --lazy-pages \
		--pre-dumps 0
	sed 's/^/#   stderr: /' "$MD_ERR"
	expect_md_error
	grep -q "asked for pages of proc-9, which the final set does not leave here" "$MD_ERR" ||
		fail "the GET of another set is not refused by name"
	grep -q ASKED "$T/fake.out" || fail "the source never asked for the restore"
	expect_untracked "$PID"
	check_child_pass
}
add ms-lazy-get-other-set case_ms_lazy_get_other_set
case_limit ms-lazy-get-other-set 300
