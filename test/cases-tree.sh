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

# tree_refused PID REGEX...: a dump of PID fails in one line naming every REGEX
tree_refused() {
	local pid=$1; shift
	md dump dump -t "$pid" -D "$T/d" --leave-running
	expect_md_error
	for re in "$@"; do
		grep -qE "$re" "$MD_ERR" || fail "the error does not say '$re'"
	done
	no_inventory "$T/d"
}

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
		   "process trees are not supported yet \(4 process\(es\) below $PID\)")
	for c in $(tree_children "$PID"); do
		res+=("child process $c \((sleep|bash)\) of $PID")
		for g in $(tree_children "$c"); do res+=("child process $g \(sleep\) of $c"); done
	done
	tree_refused "$PID" "${res[@]}"
	tree_untouched "$PID" "${all[@]}"
}

case_tree_refuse_zombie() {
	python3 -c 'import os, time
pid = os.fork()
if pid == 0:
    os._exit(3)
time.sleep(300)' < /dev/null > /dev/null 2>&1 &
	PID=$!; track "$PID"
	wait_until 5 eval '[[ $(proc_state "$(tree_children '"$PID"')") == Z ]]' ||
		fail "no zombie child appeared"
	local z; z=$(tree_children "$PID")
	tree_refused "$PID" "child process $z \(python3\) of $PID, a zombie"
	tree_untouched "$PID"
	[[ $(proc_state "$z") == Z ]] || fail "the zombie $z was reaped or changed"
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
	tree_refused "$PID" "child process $c \(sleep\) of $PID, traced by $hpid"
	tree_untouched "$PID"
	[[ $(proc_field "$c" TracerPid) == "$hpid" ]] || fail "the existing tracer lost $c"
	alive "$c" || fail "the traced child $c is gone"
}

add tree-refuse-jobs case_tree_refuse_jobs
add tree-refuse-zombie case_tree_refuse_zombie
add tree-refuse-traced case_tree_refuse_traced
