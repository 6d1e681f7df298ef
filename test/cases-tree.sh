# Process trees (src/dump/tree.c): today refused, every descendant named in
# the one error line (grandchildren, zombies and traced ones included), and
# every process of the tree left running and untraced.

# tree_children PID: the PIDs of PID's children, one a line
tree_children() { cat /proc/"$1"/task/*/children 2>/dev/null | tr ' ' '\n' | grep .; }
# tree_has N PID: PID has N descendants (children and theirs)
tree_count() {
	local n=0 c
	for c in $(tree_children "$1"); do n=$((n + 1 + $(tree_count "$c"))); done
	echo "$n"
}
tree_has() { [[ $(tree_count "$2") == "$1" ]]; }


# tree_untouched PID...: each one still running, untraced
tree_untouched() {
	local p
	for p in "$@"; do expect_untraced "$p"; done
}

case_tree_refuse_jobs() {
	bash -c 'sleep 300 & bash -c "sleep 301 & sleep 302 & wait" & wait' \
		< /dev/null > /dev/null 2>&1 &
	PID=$!; track "$PID"
	wait_until 5 tree_has 4 "$PID" || fail "the job tree did not appear (4 processes below $PID)"
	local all=() c g
	for c in $(tree_children "$PID"); do
		all+=("$c"); track "$c"
		for g in $(tree_children "$c"); do all+=("$g"); track "$g"; done
	done
	local res=("process $PID holds state memdump cannot dump" \
		   "process trees are not supported yet \(4 live process\(es\) below $PID\)")
	for c in $(tree_children "$PID"); do
		res+=("child process $c \((sleep|bash)\) of $PID")
		for g in $(tree_children "$c"); do res+=("child process $g \(sleep\) of $c"); done
	done
	expect_dump_refused "$PID" "${res[@]}"
	tree_untouched "$PID" "${all[@]}"
}

# a zombie that left its parent's group cannot be made by the restored parent
case_tree_refuse_zombie() {
	python3 -c 'import os, time
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    os._exit(3)
time.sleep(300)' < /dev/null > /dev/null 2>&1 &
	PID=$!; track "$PID"
	wait_until 5 eval '[[ $(proc_state "$(tree_children '"$PID"')") == Z ]]' ||
		fail "no zombie child appeared"
	local z; z=$(tree_children "$PID")
	expect_dump_refused "$PID" "child process $z \(python3\) of $PID, a zombie in process group $z, session [0-9]+, not its parent's"
	grep -q "process trees are not supported" "$MD_ERR" && fail "a zombie is no live tree"
	tree_untouched "$PID"
	[[ $(proc_state "$z") == Z ]] || fail "the zombie $z was reaped or changed"
}

# zombies restored as zombies: t-zombie checks them and their status
case_tree_zombie_rst() {
	start_prog t-zombie
	local a=${READY[2]} b=${READY[3]}
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	wait_until 5 eval '[[ ! -d /proc/'"$a"' && ! -d /proc/'"$b"' ]]' ||
		fail "zombies $a $b outlived their killed parent"
	crit show "$T/d/pstree.img" > "$T/pstree.json" 2> /dev/null ||
		{ command -v crit > /dev/null && fail "crit cannot decode pstree.img"; }
	if [[ -s $T/pstree.json ]]; then
		grep -q "\"pid\": $b" "$T/pstree.json" || fail "pstree.img has no entry for $b"
		crit show "$T/d/core-$a.img" | grep -q '"exit_code": 768' ||
			fail "core-$a.img does not hold exit code 768 (3 << 8)"
	fi
	md show show -D "$T/d" || fail "show failed"
	grep -q "^zombie     $a \"zexit3\"  exit status 3$" "$MD_OUT" || fail "show does not list zombie $a"
	grep -q "^zombie     $b \"zterm\"  killed by signal 15$" "$MD_OUT" || fail "show does not list zombie $b"
	md verify verify -D "$T/d" || fail "verify failed"
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}

case_tree_refuse_traced() {
	bash -c 'sleep 300 & wait' < /dev/null > /dev/null 2>&1 &
	PID=$!; track "$PID"
	wait_until 5 tree_has 1 "$PID" || fail "no child appeared"
	local c hpid; c=$(tree_children "$PID"); track "$c"
	"$TESTBIN/h-ptrace-hold" "$c" > /dev/null &
	hpid=$!; track "$hpid"
	wait_until 10 eval '[[ $(proc_field '"$c"' TracerPid) == '"$hpid"' ]]' ||
		fail "h-ptrace-hold did not attach to $c"
	expect_dump_refused "$PID" "child process $c \(sleep\) of $PID, traced by $hpid"
	tree_untouched "$PID"
	[[ $(proc_field "$c" TracerPid) == "$hpid" ]] || fail "the existing tracer lost $c"
	alive "$c" || fail "the traced child $c is gone"
}

# a zombie of another user than its parent: the restored parent could not make it
case_tree_refuse_zombie_creds() {
	python3 -c 'import os, time
pid = os.fork()
if pid == 0:
    os.setresuid(65534, 65534, 65534)
    os._exit(0)
time.sleep(300)' < /dev/null > /dev/null 2>&1 &
	PID=$!; track "$PID"
	wait_until 5 eval '[[ $(proc_state "$(tree_children '"$PID"')") == Z ]]' ||
		fail "no zombie child appeared"
	local z; z=$(tree_children "$PID")
	expect_dump_refused "$PID" "child process $z \(python3\) of $PID, a zombie whose credentials \(Uid\) are not its parent's"
	tree_untouched "$PID"
}

# a non-root parent's zombies come back with its credentials, not memdump's
case_tree_zombie_user() {
	START_WRAP="setpriv --reuid=65534 --regid=65534 --clear-groups" start_prog t-zombie
	local a=${READY[2]} b=${READY[3]}
	dump "$PID" "$T/d"
	expect_killed "$PID"
	wait_until 5 eval '[[ ! -d /proc/'"$a"' && ! -d /proc/'"$b"' ]]' ||
		fail "zombies $a $b outlived their killed parent"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	local z
	for z in "$a" "$b"; do
		[[ $(proc_state "$z") == Z ]] || fail "$z is no zombie after the restore"
		[[ $(proc_field "$z" Uid) == "$(proc_field "$PID" Uid)" &&
		   $(proc_field "$z" Gid) == "$(proc_field "$PID" Gid)" &&
		   $(proc_field "$z" CapEff) == "$(proc_field "$PID" CapEff)" ]] ||
			fail "zombie $z: Uid $(proc_field "$z" Uid), CapEff $(proc_field "$z" CapEff); parent's $(proc_field "$PID" Uid), $(proc_field "$PID" CapEff)"
	done
	[[ $(proc_field "$a" Uid) == 65534* ]] || fail "zombie $a is not nobody's"
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC, want 0"
}

# --leave-running: the zombies are left as they were, and the set restores them
case_tree_zombie_lr() {
	start_prog t-zombie
	local a=${READY[2]} b=${READY[3]}
	dump "$PID" "$T/d" --leave-running
	[[ $(proc_state "$a") == Z && $(proc_state "$b") == Z ]] || fail "a zombie changed"
	check_child_pass
	wait_until 5 eval '[[ ! -d /proc/'"$a"' && ! -d /proc/'"$b"' ]]' ||
		fail "zombies $a $b are still there"
	restore_and_pass "$T/d" 1
}

# a child whose main thread exited shows 'Z' in /proc but runs on: no zombie
case_tree_refuse_leader_exited() {
	bash -c "$TESTBIN/h-leaderexit & wait" < /dev/null > /dev/null 2>&1 &
	PID=$!; track "$PID"
	wait_until 5 tree_has 1 "$PID" || fail "no child appeared"
	local c; c=$(tree_children "$PID"); track "$c"
	# its cmdline and environ are gone with the leader: cleanup_case cannot tell it is ours
	trap 'kill -9 '"$c"' 2> /dev/null' EXIT
	wait_until 5 eval '[[ $(proc_state '"$c"') == Z ]]' || fail "the leader of $c did not exit"
	expect_dump_refused "$PID" "child process $c \(h-leaderexit\) of $PID" \
		"process trees are not supported yet \(1 live process\(es\) below $PID\)"
	grep -q "a zombie" "$MD_ERR" && fail "$c, alive, was taken for a zombie"
	tree_untouched "$PID"
	[[ $(ls /proc/"$c"/task | wc -l) == 2 ]] || fail "$c lost its live thread"
}

add tree-refuse-jobs case_tree_refuse_jobs
add tree-refuse-zombie case_tree_refuse_zombie
add tree-refuse-traced case_tree_refuse_traced
add tree-refuse-leader-exited case_tree_refuse_leader_exited
add tree-zombie-rst case_tree_zombie_rst
add tree-zombie-lr case_tree_zombie_lr
add tree-refuse-zombie-creds case_tree_refuse_zombie_creds
add tree-zombie-user case_tree_zombie_user
