# Process attributes beside memory (issue 7): scheduling, affinity, timer
# slack, pdeath signal, seccomp filters, itimers, oom_score_adj, loginuid,
# subreaper, personality, membarrier, cgroup. Each restored exactly (the
# target checks itself, test/statecmp compares /proc before and after) or
# refused by name.

# the same as case_rst, and a --leave-running dump must change nothing either
case_state_lr() {
	start_prog t-state "$@"
	state_snap "$PID"
	dump "$PID" "$T/d" --leave-running
	expect_untraced "$PID"
	state_same "$PID" lr
	check_child_pass
}

# per-thread filters: two in seccomp.img, the thread's own one on top of the
# shared one (prev 0), and only that thread's core names it
case_state_crit_perthread() {
	start_prog t-state perthread
	dump "$PID" "$T/d" --leave-running
	crit show "$T/d/seccomp.img" > "$T/seccomp.json" || fail "crit cannot decode seccomp.img"
	local f tops=()
	for f in $(ls "$T"/d/core-*.img | sort -V); do
		tops+=("$(crit show "$f" | python3 -c 'import json,sys; print(json.load(sys.stdin)["entries"][0]["thread_core"].get("seccomp_filter"))')")
	done
	note "seccomp_filter of each thread: ${tops[*]}"
	[[ ${tops[*]} == "0 0 0 1" ]] || fail "threads name filters ${tops[*]}, want 0 0 0 1"
	python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["entries"][0]["seccomp_filters"]; sys.exit(not (len(f) == 2 and "prev" not in f[0] and f[1]["prev"] == 0))' \
		"$T/seccomp.json" || fail "seccomp.img does not hold the shared filter then the thread's own"
	check_child_pass
}

# crit decodes the new fields, with the values the target set
case_state_crit() {
	start_prog t-state
	dump "$PID" "$T/d" --leave-running
	crit show "$T/d/core-$PID.img" > "$T/core.json" || fail "crit cannot decode core-$PID.img"
	crit show "$T/d/seccomp.img" > "$T/seccomp.json" || fail "crit cannot decode seccomp.img"
	python3 - "$T/core.json" "$T/seccomp.json" > "$T/crit.check" 2>&1 <<'PY' || { show_file crit "$T/crit.check"; fail "crit shows other values: $(tail -n1 "$T/crit.check")"; }
import json, sys
core = json.load(open(sys.argv[1]))["entries"][0]
tc, th = core["tc"], core["thread_core"]
sc = json.load(open(sys.argv[2]))["entries"][0]
assert tc["oom_score_adj"] == 345, tc.get("oom_score_adj")
assert tc["loginuid"] == 4242, tc.get("loginuid")
assert tc["child_subreaper"] is True
assert tc["timers"]["virt"]["isec"] == 7200 and tc["timers"]["prof"]["isec"] == 9000
assert tc["timers"]["real"]["isec"] == 0 and 0 < tc["timers"]["real"]["vsec"] * 10**6 + tc["timers"]["real"]["vusec"] <= 4 * 10**6
assert th["sched_nice"] == 3 and th["sched_policy"] == 0
assert th["seccomp_mode"] == "filter" and th["seccomp_filter"] == 0
assert len(sc["seccomp_filters"]) == 1
print("crit: ok")
PY
	check_child_pass
}

# a cgroup memdump is not in is joined again on restore; once gone, the
# restore makes it again (cgroup.img, cases-cgroups.sh)
case_state_cgroup() {
	local cg=/sys/fs/cgroup/pids/memdump-test.$$.$RANDOM
	[[ -d /sys/fs/cgroup/pids ]] || fail "no pids cgroup hierarchy mounted"
	mkdir "$cg" || fail "cannot create $cg"
	trap 'kill -9 $PID 2> /dev/null; sleep 0.2; rmdir "'"$cg"'" 2> /dev/null' EXIT
	start_prog t-pattern
	echo "$PID" > "$cg/cgroup.procs" || fail "cannot move $PID into $cg"
	state_snap "$PID"
	grep -q "pids:/${cg##*/}\$" "$STATE_BEFORE" || fail "target not in ${cg##*/}"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
	rmdir "$cg" || fail "cannot remove $cg"
	restore_and_pass "$T/d" 2
	[[ -d $cg ]] || fail "the removed cgroup $cg was not made again"
}

# refused by name before the seize, target unharmed
case_state_refused() {
	local what=$1
	case $what in
	deadline)
		start_prog t-pattern
		chrt -d --sched-runtime 1000000 --sched-deadline 10000000 --sched-period 10000000 \
			-p 0 "$PID" || fail "cannot make $PID SCHED_DEADLINE"
		local want="thread $PID runs SCHED_DEADLINE" ;;
	notify)
		start_prog t-seccomp notify
		local want="thread $PID has a seccomp filter that notifies a supervisor (SECCOMP_RET_USER_NOTIF)" ;;
	nocap-deny)
		start_prog t-seccomp nocap-deny
		local want="thread $PID has seccomp filters, neither no_new_privs nor CAP_SYS_ADMIN, and a filter that does not allow capset" ;;
	esac
	md dump dump -t "$PID" -D "$T/d" --leave-running
	expect_md_error
	grep -qF "$want" "$MD_ERR" || fail "the error does not say '$want'"
	no_inventory "$T/d"
	expect_untraced "$PID"
	[[ $what == deadline ]] && chrt -o -p 0 "$PID"
	check_child_pass
}

# restored by a memdump whose own oom_score_adj (500) is above the target's
# (345): lowering is allowed down to the floor memdump inherited, so it is done
case_state_oom_lower() {
	start_prog t-state noseccomp
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	printf '#!/bin/sh\necho 500 > /proc/self/oom_score_adj && exec %s "$@"\n' "$MEMDUMP" > "$T/md-oom"
	chmod +x "$T/md-oom"
	MEMDUMP=$T/md-oom restore_and_pass "$T/d" 1
}

add rst-t-state case_rst default t-state
add rst-t-state-perthread case_rst default t-state perthread

# t-rseq: a thread stopped inside an rseq critical section is moved to the
# section's abort handler, as the kernel would, before memdump runs code in
# it: the section is never finished unprotected (zdtm transition/rseq01).
# Three --leave-running dumps (each stops it in a section, nearly surely),
# then a killing dump and its restore.
case_rseq() {
	start_prog t-rseq
	local i
	for i in 1 2 3; do
		dump "$PID" "$T/lr$i" --leave-running
	done
	expect_untraced "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add rst-rseq-section case_rseq

# t-sigevthread: a glibc SIGEV_THREAD timer firing every millisecond while the
# restored process is parked: its signal 32 (glibc's own, which glibc's
# sigfillset leaves out) must find every thread of the restore blocking it
# (it killed the process during the restore, ~1 in 5 under load)
# (no state comparison: each expiry starts a thread and maps its stack)
case_sigev_thread() {
	start_prog t-sigevthread
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
	restore_and_pass "$T/d" 2
}
add rst-sigev-thread case_sigev_thread
add rst-state-oom-lower case_state_oom_lower
# a process in seccomp strict mode: suspended while traced, entered again last
add rst-seccomp-strict case_rst default t-seccomp strict
add err-seccomp-notify case_state_refused notify
add err-seccomp-nocap-deny case_state_refused nocap-deny
# a runtime's default profile: filters without no_new_privs, no capability left
add rst-seccomp-nocap case_rst default t-seccomp nocap
add rst-t-state-noseccomp case_rst default t-state noseccomp
add rst-read-t-state case_rst read t-state
add lr-t-state case_state_lr
add crit-t-state case_state_crit
add crit-t-state-perthread case_state_crit_perthread
add rst-state-cgroup case_state_cgroup
add err-state-deadline case_state_refused deadline
