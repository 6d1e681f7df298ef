# --freeze-cgroup (CRIU's, runc's freeze_cgroup) without a runtime: a v1 freezer
# cgroup the case makes, the target put into it by a wrapper before it starts.

# freezer_setup: $CG, a new freezer cgroup, and $T/cgwrap, which execs a program in it
freezer_setup() {
	CG=/sys/fs/cgroup/freezer/memdump-f$$-$RANDOM
	mkdir "$CG" || fail "cannot make the freezer cgroup $CG"
	printf '#!/bin/sh\necho $$ > %s/cgroup.procs\nexec "$@"\n' "$CG" > "$T/cgwrap"
	chmod +x "$T/cgwrap"
	trap 'echo THAWED > '"$CG"'/freezer.state; for p in $(cat '"$CG"'/cgroup.procs); do kill -9 $p; done; sleep 0.2; rmdir '"$CG" EXIT
}

freezer_state() { cat "$CG/freezer.state"; }

# A tree frozen by its cgroup while it is seized, left running: thawed after, every
# process untraced; a cgroup frozen before (a paused container) stays frozen; the
# tree finishes as it would have.
case_freezer_tree() {
	[[ -d /sys/fs/cgroup/freezer ]] || { note "no v1 freezer hierarchy: skipped"; return 0; }
	freezer_setup
	START_WRAP=$T/cgwrap start_prog t-tree
	local a=${READY[2]} b=${READY[3]} g=${READY[4]} p
	track "$a"; track "$b"; track "$g"
	dump "$PID" "$T/d" --leave-running --freeze-cgroup "$CG" -v 4
	grep -q "cgroup $CG frozen" "$MD_ERR" || fail "the dump did not freeze $CG"
	grep -q "thread $g frozen (under its cgroup's freeze)" "$MD_ERR" ||
		fail "the grandchild was not seized under the freeze"
	[[ $(freezer_state) == THAWED ]] || fail "the cgroup is left $(freezer_state)"
	for p in "$PID" "$a" "$b" "$g"; do expect_untraced "$p"; done
	md verify verify -D "$T/d" || fail "verify failed"
	echo FROZEN > "$CG/freezer.state"
	wait_until 5 eval '[[ $(freezer_state) == FROZEN ]]' || fail "the cgroup does not freeze"
	dump "$PID" "$T/d2" --leave-running --freeze-cgroup "$CG"
	[[ $(freezer_state) == FROZEN ]] || fail "the paused cgroup is $(freezer_state) after the dump"
	[[ $(proc_field "$PID" TracerPid) == 0 ]] || fail "the paused tree is still traced"
	echo THAWED > "$CG/freezer.state"
	for p in "$PID" "$a" "$b" "$g"; do expect_untraced "$p"; done
	kill -USR1 "$PID"
	get_result "$OUT"
}
add freezer-tree case_freezer_tree

# The worker killed while the cgroup is frozen: memdump's parent thaws it, the target
# runs on untraced, no image set is left.
case_freezer_worker_killed() {
	[[ -d /sys/fs/cgroup/freezer ]] || { note "no v1 freezer hierarchy: skipped"; return 0; }
	freezer_setup
	START_WRAP=$T/cgwrap start_prog t-pattern
	mkdir -p "$T/d"
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=cgroup-frozen "$MEMDUMP" dump -t "$PID" -D "$T/d" --leave-running --no-snapshot \
		--freeze-cgroup "$CG" 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point cgroup-frozen" "$OP_TIMEOUT" || fail "the dump never froze the cgroup"
	[[ $(freezer_state) == FROZEN ]] || fail "the cgroup is $(freezer_state) at the fault point"
	kill_worker "$mdpid"
	[[ $(freezer_state) == THAWED ]] || fail "the killed dump left the cgroup $(freezer_state)"
	no_inventory "$T/d"
	check_child_pass
}
add err-worker-killed-freezer case_freezer_worker_killed
