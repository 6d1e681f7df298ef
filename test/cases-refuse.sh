# Refused before the target is touched: PID 1, a PID namespace's init, child
# processes, namespaces of its own; one error line naming every reason, and
# every process left running untraced.

# start_shell CMD...: start CMD in the background; sets PID
start_shell() {
	"$@" > "$T/shell.out" 2>&1 < /dev/null &
	PID=$!
	track "$PID"
}

# child_of PID -> its first child's PID, once it has one
first_child() { sed 's/ .*//' "/proc/$1/task/$1/children" 2>/dev/null | grep .; }

expect_refusal() { # expect_refusal PID ERE...: dump PID fails naming each ERE
	local pid=$1; shift
	md dump dump -t "$pid" -D "$T/d" --leave-running
	expect_md_error
	for re in "$@"; do
		grep -Eq -- "$re" "$MD_ERR" || fail "the error does not say '$re'"
	done
	no_inventory "$T/d"
}

case_refuse_child() {
	start_shell sh -c 'sleep 300 & wait'
	local child
	wait_until 5 first_child "$PID" > /dev/null || fail "sh started no child"
	child=$(first_child "$PID")
	expect_refusal "$PID" "child process $child \\(sleep\\)"
	expect_untraced "$PID"
	expect_untraced "$child"
}

case_refuse_pid1() {
	md dump dump -t 1 -D "$T/d" --leave-running
	expect_md_error
	grep -q "PID 1" "$MD_ERR" || fail "the error does not name PID 1"
	expect_untraced 1
}

# unshare's child is the init of a new PID (and UTS) namespace with a child of its own
case_refuse_namespaces() {
	command -v unshare > /dev/null || fail "unshare missing"
	start_shell unshare --pid --uts --fork sh -c 'sleep 300 & wait'
	local init
	wait_until 5 first_child "$PID" > /dev/null || fail "unshare started nothing"
	init=$(first_child "$PID")
	wait_until 5 first_child "$init" > /dev/null || fail "the namespace init has no child"
	expect_refusal "$init" "init \\(PID 1\\) of its PID namespace" \
		"namespaces of its own \\(pid, uts\\)" "child process [0-9]+ \\(sleep\\)"
	expect_untraced "$init"
}

add err-refuse-child case_refuse_child
add err-refuse-pid1 case_refuse_pid1
add err-refuse-namespaces case_refuse_namespaces

# A SIGSTOPped target stays stopped with --leave-running and comes back stopped.
case_rst_stopped() {
	start_prog t-pattern
	kill -STOP "$PID"
	wait_until 5 eval '[[ $(proc_state '"$PID"') == T ]]' || fail "target did not stop"
	dump "$PID" "$T/lr" --leave-running
	[[ $(proc_state "$PID") == T ]] || fail "stopped target is $(proc_field "$PID" State) after --leave-running"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	# not through md: timeout's own process group would be left orphaned
	# with a stopped member, which the kernel sends SIGHUP
	timeout --foreground -k 5 "$OP_TIMEOUT" "$MEMDUMP" restore -D "$T/d" -d > "$T/r.out" 2>&1 ||
		fail "restore -d failed: $(tail -n1 "$T/r.out")"
	track "$PID"
	wait_until 5 eval '[[ $(proc_state '"$PID"') == T ]]' ||
		fail "restored process is $(proc_field "$PID" State), not stopped"
	[[ $(proc_field "$PID" TracerPid) == 0 ]] || fail "restored process is still traced"
	kill -CONT "$PID"
	kill -USR1 "$PID"
	get_result "$OUT"
}

add rst-stopped case_rst_stopped
