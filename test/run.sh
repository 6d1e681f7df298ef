#!/bin/bash
# memdump test runner.
#
#   test/run.sh [-l] [PATTERN]
#
# Runs every case whose name matches the extended regex PATTERN (all cases
# without it; -l only lists the names). Prints "ok NAME" or
# "not ok NAME: reason" (followed by "# " diagnostic lines) per case and
# ends with exactly one line "N passed, N failed"; exits 1 if any failed.
#
# Environment:
#   MEMDUMP       memdump binary             (build/memdump of this checkout)
#   TESTBIN       compiled test programs     (build/test of this checkout)
#   TMPDIR        where the per-run temp dir goes (/tmp)
#   OP_TIMEOUT    seconds allowed for one memdump invocation / wait (30)
#   CASE_TIMEOUT  seconds allowed for a whole case (120)
#   MD_DUMP_OPTS  extra options for every successful-path dump, e.g. "-v 4"
#   KEEP=1        keep all case dirs (failed cases' dirs are always kept)
#   PATH          the system directories are put first (Debian's python3)

set -u
# The system's programs first: the cases use Debian's python3 and its modules
# (scripts/install-deps), not a python3 a user's PATH puts earlier (pyenv).
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}
TESTSRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MEMDUMP=${MEMDUMP:-$(dirname "$TESTSRC")/build/memdump}
TESTBIN=${TESTBIN:-$(dirname "$TESTSRC")/build/test}
OP_TIMEOUT=${OP_TIMEOUT:-30}
CASE_TIMEOUT=${CASE_TIMEOUT:-120}
MD_DUMP_OPTS=${MD_DUMP_OPTS:-}
KEEP=${KEEP:-0}
MODES=(splice read mem)
PROGS=(t-pattern t-threads t-filemap t-protnone t-hugepage t-sparse t-shared
       t-sleeper t-piperead t-spinner t-writer t-fds t-sigpending t-seccomp t-sigact)

LIST_ONLY=0
if [[ ${1:-} == -l ]]; then LIST_ONLY=1; shift; fi
PATTERN=${1:-}

# ---------------------------------------------------------------- helpers
# All of these run inside a case subshell; $T is the case's temp dir.

now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((t / 1000)); }

# fail REASON: end the current case as failed
fail() { printf '%s\n' "$*" > "$T/reason"; exit 1; }

note() { printf '# %s\n' "$*"; }

# proc_field PID FIELD  -> value of "FIELD:" in /proc/PID/status
proc_field() { sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" 2>/dev/null | head -n1; }

proc_state() { proc_field "$1" State | cut -c1; }

alive() { [[ -d /proc/$1 ]] && [[ $(proc_state "$1") != Z ]]; }

track() { echo "$1" >> "$T/pids"; }

# wait_line FILE ERE TIMEOUT_S -> 0 when a matching line appears
wait_line() {
	local end=$(( $(now_ms) + $3 * 1000 ))
	while (( $(now_ms) < end )); do
		grep -Eq -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# wait_until TIMEOUT_S CMD... -> 0 once CMD succeeds
wait_until() {
	local end=$(( $(now_ms) + $1 * 1000 )); shift
	while (( $(now_ms) < end )); do
		"$@" && return 0
		sleep 0.02
	done
	return 1
}

show_file() { # show_file LABEL FILE: copy a file into the log
	[[ -s $2 ]] || return 0
	note "--- $1:"
	head -c 4000 "$2" | sed 's/^/#   /'
}

# start_prog NAME ARGS... : start $TESTBIN/NAME $T ARGS..., wait for READY.
# Sets PID, OUT, ERR, READY (array of the READY line's fields), READY_SIZE.
start_prog() {
	local name=$1; shift
	[[ -x $TESTBIN/$name ]] || fail "test program $TESTBIN/$name missing (run make)"
	OUT=$T/$name.out ERR=$T/$name.err
	# START_WRAP: a command that execs the program (unshare ...), the PID unchanged
	${START_WRAP:+$START_WRAP} "$TESTBIN/$name" "$T" "$@" > "$OUT" 2> "$ERR" < /dev/null &
	PID=$!
	track "$PID"
	if ! wait_line "$OUT" "^READY " "$OP_TIMEOUT"; then
		show_file "$name stdout" "$OUT"; show_file "$name stderr" "$ERR"
		fail "$name did not become READY"
	fi
	read -r -a READY < <(grep -m1 '^READY ' "$OUT")
	[[ ${READY[1]} == "$PID" ]] || fail "$name READY pid ${READY[1]} != $PID"
	READY_SIZE=$(stat -c %s "$OUT")
	note "started $name pid $PID: ${READY[*]}"
}

# start_py NAME CODE [ARGS...]: python3 -c CODE ARGS in the background (a small
# target of a case's own), stdout and stderr in $T/NAME.out; waits for its
# "READY <pid> ..." line. Sets PID, OUT, READY_SIZE.
start_py() {
	local name=$1 code=$2; shift 2
	OUT=$T/$name.out
	python3 -c "$code" "$@" > "$OUT" 2>&1 < /dev/null &
	PID=$!
	track "$PID"
	wait_line "$OUT" '^READY ' 10 || { show_file "$name" "$OUT"; fail "$name did not start"; }
	READY_SIZE=$(stat -c %s "$OUT")
}

# descendants PID: PID and every process below it
descendants() {
	local p
	echo "$1"
	for p in $(ps -o pid= --ppid "$1" 2>/dev/null); do descendants "$p"; done
}

# hang_report PID: where PID and its descendants (threads too) are blocked,
# and how busy the disk and memory are; for a command about to time out
hang_report() {
	local p t
	echo "hang report at $(date +%T.%N), load $(cut -d' ' -f1-3 /proc/loadavg)"
	sed 's/^/io pressure: /' /proc/pressure/io 2>/dev/null
	grep -E '^(Dirty|Writeback|MemAvailable):' /proc/meminfo
	for p in $(descendants "$1"); do
		for t in /proc/"$p"/task/*; do
			[[ -d $t ]] || continue
			echo "task ${t##*/} of $p ($(cat "$t/comm" 2>/dev/null)): state $(cut -d' ' -f3 "$t/stat" 2>/dev/null), wchan $(cat "$t/wchan" 2>/dev/null), syscall $(cut -d' ' -f1-4 "$t/syscall" 2>/dev/null)"
			sed 's/^/    /' "$t/stack" 2>/dev/null
		done
	done
}

# md LABEL ARGS... : run memdump with a timeout; sets MD_RC, MD_ERR, MD_OUT.
# A memdump that times out leaves a hang report in the log first.
md() {
	local label=$1; shift
	MD_OUT=$T/md.$label.out MD_ERR=$T/md.$label.err
	local t0 tpid watch hang=$T/md.$label.hang; t0=$(now_ms)
	timeout -k 5 "$OP_TIMEOUT" "$MEMDUMP" "$@" > "$MD_OUT" 2> "$MD_ERR" < /dev/null &
	tpid=$!
	( sleep $(( OP_TIMEOUT - 1 )) && hang_report "$tpid" > "$hang" 2>&1 ) &
	watch=$!
	wait "$tpid"
	MD_RC=$?
	pkill -P "$watch" 2>/dev/null; kill "$watch" 2>/dev/null; wait "$watch" 2>/dev/null
	if (( MD_RC == 124 || MD_RC == 137 )) && [[ -s $hang ]]; then
		note "--- hang report:"
		head -c 20000 "$hang" | sed 's/^/#   /'
	fi
	note "memdump $* -> exit $MD_RC in $(( $(now_ms) - t0 )) ms"
	head -c 3000 "$MD_ERR" | sed 's/^/#   stderr: /'
	(( MD_RC == 124 || MD_RC == 137 )) && fail "memdump $1 timed out after ${OP_TIMEOUT}s (or was SIGKILLed)"
	return $MD_RC
}

# dump PID DIR [memdump options...]  (must succeed)
dump() {
	local pid=$1 dir=$2; shift 2
	mkdir -p "$dir"
	# shellcheck disable=SC2086
	md "dump.$(basename "$dir")" dump -t "$pid" -D "$dir" $MD_DUMP_OPTS "$@" ||
		fail "dump failed (exit $MD_RC): $(tail -n1 "$MD_ERR")"
	[[ -f $dir/inventory.img ]] || fail "dump succeeded but $dir/inventory.img missing"
}

# expect_md_error: last md call must have failed cleanly
expect_md_error() {
	(( MD_RC != 0 )) || fail "memdump exited 0, expected an error"
	(( MD_RC < 128 )) || fail "memdump died from signal $((MD_RC - 128))"
	local n; n=$(grep -c . "$MD_ERR")
	grep -q '^memdump: ' "$MD_ERR" || fail "no 'memdump: ' error line on stderr"
	(( n == 1 )) || fail "stderr has $n lines, expected one error line"
}

# restore_refused_pid_taken DIR PID: PID taken by another process (clone3 set_tid) when
# the restore of DIR comes: refused before anything starts, naming the PID; the dumped
# process not restored, the other one untouched (then killed).
restore_refused_pid_taken() {
	local gone=$2
	python3 -c '
import ctypes, os, signal, struct, sys
buf = bytearray(struct.pack("QQQQQQQQQQQ", 0, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0))
tid = ctypes.c_int(int(sys.argv[1]))
struct.pack_into("QQ", buf, 64, ctypes.addressof(tid), 1)	# set_tid, set_tid_size
b = ctypes.create_string_buffer(bytes(buf), len(buf))
pid = ctypes.CDLL(None, use_errno=True).syscall(435, b, len(buf))
if pid == 0:
    signal.pause()
    os._exit(0)
print("TOOK", pid, flush=True)
os.waitpid(pid, 0)' "$gone" > "$T/taker.out" 2>&1 &
	local taker=$!; track "$taker"
	wait_line "$T/taker.out" "^TOOK $gone" 10 || { show_file taker "$T/taker.out"; fail "cannot take PID $gone"; }
	track "$gone"
	md restore restore -D "$1" -d
	expect_md_error
	grep -qE "PID $gone is in use" "$MD_ERR" || fail "the error does not name PID $gone"
	alive "$PID" && fail "process $PID was restored"
	alive "$gone" || fail "the process with PID $gone is gone"
	kill -9 "$gone"
}
no_inventory() { [[ ! -e $1/inventory.img ]] || fail "$1/inventory.img exists after a failed dump"; }

# untraced PID: running (not stopped/traced), TracerPid 0
untraced() {
	alive "$1" && [[ $(proc_field "$1" TracerPid) == 0 ]] && [[ $(proc_state "$1") != [tT] ]]
}

expect_untraced() {
	wait_until 5 untraced "$1" ||
		fail "pid $1 not running untraced (State: $(proc_field "$1" State), TracerPid: $(proc_field "$1" TracerPid))"
}

# get_result OUT: wait for PASS/FAIL line, fail the case on FAIL/none
# sets RESULT to the line
get_result() {
	if ! wait_line "$1" '^(PASS|FAIL)' "$OP_TIMEOUT"; then
		show_file "program stdout" "$1"; show_file "program stderr" "${1%.out}.err"
		fail "no PASS/FAIL from the program within ${OP_TIMEOUT}s"
	fi
	RESULT=$(grep -m1 -E '^(PASS|FAIL)' "$1")
	[[ $RESULT == PASS* ]] || fail "program reported: $RESULT"
	note "program: $RESULT"
}

# check_child_pass: SIGUSR1 our child $PID, expect PASS and exit 0
check_child_pass() {
	expect_untraced "$PID"
	kill -USR1 "$PID" || fail "cannot signal pid $PID"
	get_result "$OUT"
	local rc=0
	timeout_wait "$PID" || rc=$?
	(( rc == 0 )) || fail "program exited with status $rc after PASS"
}

# timeout_wait PID: wait for our child with a deadline; returns its status
timeout_wait() {
	wait_until "$OP_TIMEOUT" eval '! alive '"$1" || fail "pid $1 did not exit"
	wait "$1"
}

# dead PID: after a killing dump the target must disappear; reaps it
expect_killed() {
	wait_until 5 eval '! alive '"$1" || fail "target $1 still alive after dump without --leave-running"
	wait "$1" 2>/dev/null
	wait_until 5 eval '[[ ! -d /proc/'"$1"' ]]' || fail "pid $1 not reaped"
}

# restore_bg DIR LABEL [opts]: start "memdump restore" in the background
# (it waits for the restored process). Sets RPID.
restore_bg() {
	local dir=$1 label=$2; shift 2
	RPIDFILE=$T/pidfile.$label MD_ERR=$T/md.restore.$label.err MD_OUT=$T/md.restore.$label.out
	rm -f "$RPIDFILE"
	note "memdump restore -D $dir --pidfile $RPIDFILE $*"
	timeout -k 5 $((OP_TIMEOUT * 3)) "$MEMDUMP" restore -D "$dir" --pidfile "$RPIDFILE" "$@" \
		> "$MD_OUT" 2> "$MD_ERR" < /dev/null &
	RPID=$!
	track "$RPID"
}

# restored PID: pidfile written, process alive, untraced, SIGUSR1 handled
restored_ok() {
	[[ -s $RPIDFILE ]] && [[ $(tr -dc 0-9 < "$RPIDFILE") == "$1" ]] && untraced "$1" &&
		(( 0x$(proc_field "$1" SigCgt) & (1 << 9) ))
}

wait_restored() {
	local pid=$1 end=$(( $(now_ms) + OP_TIMEOUT * 1000 ))
	while ! restored_ok "$pid"; do
		if ! kill -0 "$RPID" 2>/dev/null; then
			wait "$RPID"; MD_RC=$?
			show_file "restore stderr" "$MD_ERR"
			fail "restore exited ($MD_RC) before pid $pid was running: $(tail -n1 "$MD_ERR")"
		fi
		if (( $(now_ms) > end )); then
			show_file "restore stderr" "$MD_ERR"
			fail "restored pid $pid not running after ${OP_TIMEOUT}s (pidfile '$(cat "$RPIDFILE" 2>/dev/null)', State: $(proc_field "$pid" State), TracerPid: $(proc_field "$pid" TracerPid))"
		fi
		sleep 0.02
	done
	note "restored pid $pid is running"
}

# wait_restore_exit: wait for the restore command, sets MD_RC
wait_restore_exit() {
	wait "$RPID"; MD_RC=$?
	note "restore exited with $MD_RC"
	head -c 3000 "$MD_ERR" | sed 's/^/#   restore stderr: /'
	(( MD_RC == 124 || MD_RC == 137 )) && fail "restore did not exit in time"
	return 0
}

# state_snap PID: what the kernel shows about PID (test/statecmp), taken
# before a dump; restore_and_pass then compares the restored process with it.
# Sets STATE_BEFORE.
state_snap() {
	STATE_BEFORE=$T/state.before
	"$TESTSRC/statecmp" snap "$1" "$STATE_BEFORE" || fail "statecmp snap $1 failed"
}

# state_same PID LABEL: PID shows what STATE_BEFORE recorded, else the diff fails the case
state_same() {
	local after=$T/state.after.$2
	"$TESTSRC/statecmp" snap "$1" "$after" || fail "statecmp snap $1 failed"
	if ! "$TESTSRC/statecmp" diff "$STATE_BEFORE" "$after" > "$T/state.diff.$2"; then
		sed 's/^/#   /' "$T/state.diff.$2" | head -n 60
		fail "restored process state differs: $(grep -m1 '^[-+][^-+]' "$T/state.diff.$2")"
	fi
	note "statecmp: restored state is the dumped one"
}

# restore_and_pass DIR LABEL [OPTS...]: restore (with OPTS) the dump of $PID (stdout going to
# $OUT, truncated back to the READY line), SIGUSR1 it, expect PASS and
# restore exit status 0. After state_snap, the restored state must match.
restore_and_pass() {
	local dir=$1 label=$2; shift 2
	truncate -s "$READY_SIZE" "$OUT"
	alive "$PID" && fail "pid $PID is in use before restore"
	restore_bg "$dir" "$label" "$@"
	wait_restored "$PID"
	[[ -n ${STATE_BEFORE:-} ]] && state_same "$PID" "$label"
	RESTORED_MS=$(now_ms)
	pass_restored
}

# pass_restored: SIGUSR1 the restored $PID, expect PASS and the restore's exit status 0
pass_restored() {
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC, want 0 (the program's status)"
}

# judge a t-sleeper result: lateness must not exceed the time the process
# was stopped (from dump start until it ran again) plus SLEEP_SLACK_MS (3 s)
judge_sleeper() { # judge_sleeper DOWNTIME_MS
	local late=${RESULT#*late_ms=}
	late=${late%% *}
	note "sleeper late by $late ms, downtime $1 ms"
	(( late <= $1 + ${SLEEP_SLACK_MS:-3000} )) || fail "nanosleep completed $late ms late (downtime was $1 ms)"
}

mounted() { grep -q " $1 " /proc/mounts; }

# ------------------------------------------------------------------ cases

# lr MODE PROG: dump --leave-running, target must keep running and PASS
case_lr() {
	local mode=$1 prog=$2
	start_prog "$prog"
	local t0; t0=$(now_ms)
	dump "$PID" "$T/d" --mode "$mode" --leave-running
	local t1; t1=$(now_ms)
	expect_untraced "$PID"
	check_child_pass
	[[ $prog == t-sleeper ]] && judge_sleeper $(( t1 - t0 ))
	return 0
}

# rst MODE PROG [ARGS]: dump (kill), restore twice; each time statecmp, SIGUSR1 -> PASS
case_rst() {
	local mode=$1 prog=$2 opts=()
	shift 2
	[[ $mode == default ]] || opts=(--mode "$mode")
	start_prog "$prog" "$@"
	state_snap "$PID"
	local t0; t0=$(now_ms)
	dump "$PID" "$T/d" "${opts[@]}"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
	[[ $prog == t-sleeper ]] && judge_sleeper $(( RESTORED_MS - t0 ))
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
	[[ $prog == t-sleeper ]] && judge_sleeper $(( RESTORED_MS - t0 ))
	return 0
}

# restore -d: detaches, prints the PID
case_rst_detach() {
	start_prog t-pattern
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	md restore.d restore -D "$T/d" -d || fail "restore -d failed: $(tail -n1 "$MD_ERR")"
	track "$PID"
	[[ $(tr -dc 0-9 < "$MD_OUT") == "$PID" ]] || fail "restore -d printed '$(cat "$MD_OUT")', want $PID"
	wait_until 5 untraced "$PID" || fail "restored pid $PID not running"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_until "$OP_TIMEOUT" eval '[[ ! -d /proc/'"$PID"' ]] || [[ $(proc_state '"$PID"') == Z ]]' ||
		fail "detached process did not exit"
}

# restore's exit status follows the process: 128+sig when killed
case_rst_status() {
	start_prog t-pattern
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	kill -TERM "$PID"
	wait_restore_exit
	(( MD_RC == 143 )) || fail "restore exit status $MD_RC after SIGTERM, want 143"
	restore_bg "$T/d" 2
	wait_restored "$PID"
	kill -USR2 "$PID"     # default action: terminate
	wait_restore_exit
	(( MD_RC == 140 )) || fail "restore exit status $MD_RC after SIGUSR2, want 140"
}

# read-mem of the pattern region equals what the program wrote
case_img_pattern() {
	local mode=$1
	start_prog t-pattern
	local addr=${READY[2]} len=${READY[3]} seed=${READY[4]}
	dump "$PID" "$T/d" --mode "$mode" --leave-running
	expect_untraced "$PID"
	local -a ranges=("$addr $len" "$((addr + 4099)) 10000" "$((addr + len - 5)) 5" "$((addr + 8192)) 1")
	local r a l
	for r in "${ranges[@]}"; do
		read -r a l <<< "$r"
		md readmem read-mem -D "$T/d" "$(printf '%#x' "$a")" "$l" ||
			fail "read-mem $(printf '%#x' "$a") $l failed: $(tail -n1 "$MD_ERR")"
		"$TESTBIN/t-pattern" --gen "$a" "$l" "$seed" > "$T/expect"
		cmp "$MD_OUT" "$T/expect" > "$T/cmp" 2>&1 ||
			fail "read-mem $(printf '%#x' "$a") $l differs from the pattern: $(head -n1 "$T/cmp")"
	done
	# decimal address works as well
	md readmem read-mem -D "$T/d" "$((addr + 16))" 16 || fail "read-mem with a decimal address failed"
	"$TESTBIN/t-pattern" --gen "$((addr + 16))" 16 "$seed" | cmp -s - "$MD_OUT" || fail "read-mem decimal address: wrong bytes"
	# outside every VMA -> error
	md readmem-bad read-mem -D "$T/d" 0x10 16
	expect_md_error
	# show works
	md show show -D "$T/d" || fail "show failed: $(tail -n1 "$MD_ERR")"
	[[ -s $MD_OUT ]] || fail "show printed nothing"
	md showjson show -D "$T/d" --json || fail "show --json failed"
	python3 -m json.tool < "$MD_OUT" > /dev/null 2>&1 || fail "show --json output is not valid JSON"
	check_child_pass
}

# read-mem of the region named on the READY line (addr len seed) of PROG
# (t-hugepage: the THP region, t-protnone: the PROT_NONE region with data)
case_img_region() {
	local prog=$1
	start_prog "$prog"
	local addr=${READY[2]} len=${READY[3]} seed=${READY[4]}
	dump "$PID" "$T/d" --leave-running
	md readmem read-mem -D "$T/d" "$addr" "$len" || fail "read-mem $addr $len failed: $(tail -n1 "$MD_ERR")"
	"$TESTBIN/$prog" --gen "$addr" "$len" "$seed" > "$T/expect"
	cmp "$MD_OUT" "$T/expect" > "$T/cmp" 2>&1 || fail "read-mem $addr $len differs: $(head -n1 "$T/cmp")"
	check_child_pass
}

# sparse: untouched pages read as zeros and are not stored in the image
case_img_sparse() {
	start_prog t-sparse
	local addr=${READY[2]} seed=${READY[4]} stride=${READY[5]}
	dump "$PID" "$T/d" --leave-running
	local size; size=$(du -sk "$T/d" | cut -f1)
	note "image size ${size} kB"
	(( size < 16384 )) || fail "image of a 1 GB region with 64 touched pages is ${size} kB"
	local pg=$((addr + 5 * stride + 4096))
	md readmem read-mem -D "$T/d" "$pg" 4096 || fail "read-mem of a touched page failed"
	"$TESTBIN/t-sparse" --gen "$pg" 4096 "$seed" | cmp -s - "$MD_OUT" || fail "touched page content wrong"
	md readmem0 read-mem -D "$T/d" "$((addr + 5 * stride + 8192))" 65536 || fail "read-mem of untouched pages failed"
	cmp -s "$MD_OUT" <(head -c 65536 /dev/zero) || fail "untouched pages do not read as zeros"
	check_child_pass
}

# t-writer: the image must show one instant
case_img_writer() {
	local mode=$1 i
	start_prog t-writer
	local addr=${READY[2]} len=${READY[3]} nth=${READY[4]}
	for i in 1 2 3; do
		dump "$PID" "$T/d$i" --mode "$mode" --leave-running
		md readmem.$i read-mem -D "$T/d$i" "$addr" "$len" || fail "read-mem failed: $(tail -n1 "$MD_ERR")"
		"$TESTBIN/t-writer" --check "$MD_OUT" "$nth" > "$T/check.$i" 2>&1
		sed 's/^/#   check: /' "$T/check.$i"
		grep -q '^PASS' "$T/check.$i" || fail "dump $i: image is not one instant: $(grep -m1 FAIL "$T/check.$i")"
		expect_untraced "$PID"
	done
	check_child_pass
}

# the same for a killing dump
case_img_writer_kill() {
	start_prog t-writer
	local addr=${READY[2]} len=${READY[3]} nth=${READY[4]}
	dump "$PID" "$T/d"
	expect_killed "$PID"
	md readmem read-mem -D "$T/d" "$addr" "$len" || fail "read-mem failed: $(tail -n1 "$MD_ERR")"
	"$TESTBIN/t-writer" --check "$MD_OUT" "$nth" > "$T/check" 2>&1
	grep -q '^PASS' "$T/check" || fail "image is not one instant: $(grep -m1 FAIL "$T/check")"
}

# crit_decodes DIR: Debian's crit (CRIU's decoder) decodes every file of the image
# set DIR and of its processes' sets (proc-PID/; not `parent`: a set of its own);
# fails naming each file it cannot decode. The files go through crit's own decode
# (pycriu.cli.decode, what `crit decode -i FILE` runs) in one interpreter, crit's:
# a crit process per file took seconds each on a loaded machine.
crit_decodes() {
	local crit py f n files=() bad
	crit=$(command -v crit) || { note "crit not on PATH: not decoded"; return 0; }
	py=$(head -n1 "$crit"); py=${py#'#!'}
	while IFS= read -r -d '' f; do
		n=${f#"$1"/}
		# raw, as CRIU's are: pages; ifaddr, route, route6 (iproute2's dumps);
		# nftables, iptables, ip6tables (nft's and iptables-legacy-save's text);
		# *.log and descriptors.json: a runtime's files, not images
		[[ $(basename "$n") == @(pages|ifaddr|route|route6|nftables|iptables|ip6tables)-* ||
		   $n == *.log || $n == descriptors.json ]] && continue
		files+=("$f")
	done < <(find "$1" -type f -print0 | sort -z)
	(( ${#files[@]} > 0 )) || fail "no image in $1 for crit"
	timeout 120 $py - "${files[@]}" > "$T/crit.out" 2>&1 <<-'EOF'
	import sys
	import pycriu.cli
	for f in sys.argv[1:]:
	    try:
	        pycriu.cli.decode({'in': f, 'out': '/dev/null', 'pretty': False, 'nopl': False})
	        print("DECODED " + f)
	    except BaseException as e:  # crit exits 1 on a magic it does not know
	        print("BAD %s: %s" % (f, e))
	EOF
	bad=$(grep -c '^BAD ' "$T/crit.out")
	(( $(grep -c '^DECODED ' "$T/crit.out") + bad == ${#files[@]} )) ||
		{ show_file crit "$T/crit.out"; fail "crit did not go over the ${#files[@]} files of $1"; }
	(( bad == 0 )) || { grep -v '^DECODED ' "$T/crit.out" | sed 's/^/# /'; fail "crit cannot decode: $(grep '^BAD ' "$T/crit.out" | sed "s|^BAD $1/||; s|:.*||" | tr '\n' ' ')"; }
	CRIT_DECODED=${#files[@]}
}

# crit understands every image
case_crit() {
	start_prog "$1"
	dump "$PID" "$T/d" --leave-running
	crit_decodes "$T/d"
	check_child_pass
}

case_cli_check() {
	md check check || fail "memdump check failed: $(tail -n1 "$MD_ERR")"
	[[ -s $MD_OUT ]] || fail "memdump check printed nothing"
	md usage bogus-command
	(( MD_RC != 0 && MD_RC < 128 )) || fail "unknown command: exit $MD_RC"
	head -n1 "$MD_ERR" | grep -q '^memdump: ' || fail "unknown command: first stderr line lacks 'memdump: '"
}

# ---- bad input

case_err_nopid() {
	mkdir -p "$T/d"
	local max p; max=$(cat /proc/sys/kernel/pid_max)
	for ((p = max - 1; p > 1; p--)); do [[ -e /proc/$p ]] || break; done
	md dump dump -t "$p" -D "$T/d"
	expect_md_error
	no_inventory "$T/d"
}

case_err_self() {
	mkdir "$T/d"
	MD_ERR=$T/md.self.err
	timeout -k 5 "$OP_TIMEOUT" bash -c 'exec "$0" dump -t $$ -D "$1"' "$MEMDUMP" "$T/d" > /dev/null 2> "$MD_ERR"
	MD_RC=$?
	note "self dump -> $MD_RC"; sed 's/^/#   stderr: /' "$MD_ERR"
	expect_md_error
	no_inventory "$T/d"
}

case_err_parent() {
	mkdir "$T/d"
	MD_ERR=$T/md.parent.err
	timeout -k 5 "$OP_TIMEOUT" bash -c '"$0" dump -t $$ -D "$1" 2> "$2"; echo "rc=$?"' \
		"$MEMDUMP" "$T/d" "$MD_ERR" > "$T/parent.out" 2>&1
	sed 's/^/#   stderr: /' "$MD_ERR"
	grep -q '^rc=' "$T/parent.out" || fail "the parent shell did not survive its dump"
	MD_RC=$(sed -n 's/^rc=//p' "$T/parent.out")
	expect_md_error
	no_inventory "$T/d"
}

case_err_zombie() {
	mkdir -p "$T/d"
	local z parent
	# a parent that never reaps: sleep, whose child (sleep 0) exits
	bash -c 'sleep 0 & echo $!; exec sleep 60' > "$T/zpid" &
	parent=$!
	track "$parent"
	wait_until 5 eval '[[ -s $T/zpid ]]' || fail "no zombie pid"
	z=$(cat "$T/zpid")
	wait_until 5 eval '[[ $(proc_state '"$z"') == Z ]]' || fail "pid $z did not become a zombie"
	md dump dump -t "$z" -D "$T/d"
	expect_md_error
	no_inventory "$T/d"
	kill "$parent"
}

case_err_kthread() {
	mkdir -p "$T/d"
	md dump dump -t 2 -D "$T/d" --leave-running
	expect_md_error
	no_inventory "$T/d"
	[[ $(proc_field 2 TracerPid) == 0 ]] || fail "kthreadd left traced"
}

case_err_traced() {
	mkdir -p "$T/d"
	local how=$1 hpid
	start_prog t-pattern
	if [[ $how == strace ]]; then
		strace -q -p "$PID" -o /dev/null &
	else
		"$TESTBIN/h-ptrace-hold" "$PID" > /dev/null &
	fi
	hpid=$!
	track "$hpid"
	wait_until 10 eval '[[ $(proc_field '"$PID"' TracerPid) == '"$hpid"' ]]' ||
		fail "$how did not attach"
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	no_inventory "$T/d"
	[[ $(proc_field "$PID" TracerPid) == "$hpid" ]] || fail "the existing tracer lost the target"
	kill "$hpid"; wait "$hpid" 2>/dev/null
	check_child_pass
}

case_err_dir_ro() {
	start_prog t-pattern
	mkdir -p "$T/ro"
	mount -t tmpfs -o ro,size=1M memdump-test "$T/ro" || fail "cannot mount a read-only tmpfs"
	md dump dump -t "$PID" -D "$T/ro"
	expect_md_error
	no_inventory "$T/ro"
	check_child_pass
}

case_err_dir_file() {
	start_prog t-pattern
	echo x > "$T/file"
	md dump dump -t "$PID" -D "$T/file"
	expect_md_error
	check_child_pass
}

case_err_dir_has_dump() {
	start_prog t-pattern
	dump "$PID" "$T/d" --leave-running
	local sum; sum=$(cat "$T"/d/*.img | md5sum)
	md dump2 dump -t "$PID" -D "$T/d" --leave-running
	expect_md_error
	[[ $(cat "$T"/d/*.img | md5sum) == "$sum" ]] || fail "the existing dump was modified"
	check_child_pass
}

# --overwrite (and every dump over the RPC, as CRIU): a second --leave-running
# dump into the same directory replaces the first; a runtime's file and a log
# there stay; the new set verifies and restores.
case_dump_overwrite() {
	start_prog t-pattern
	dump "$PID" "$T/d" --leave-running
	echo '{"runtime": 1}' > "$T/d/descriptors.json"
	echo old > "$T/d/dump.log"
	local first; first=$(cat "$T/d/inventory.img" | md5sum)
	dump "$PID" "$T/d" --leave-running --overwrite
	[[ $(cat "$T/d/inventory.img" | md5sum) != "$first" ]] || fail "the inventory was not replaced"
	[[ $(cat "$T/d/descriptors.json") == '{"runtime": 1}' ]] || fail "the runtime's file was touched"
	[[ $(cat "$T/d/dump.log") == old ]] || fail "the log was touched"
	md verify verify -D "$T/d" || fail "the replaced set does not verify: $(tail -n1 "$MD_ERR")"
	kill -9 "$PID"; timeout_wait "$PID"
	restore_and_pass "$T/d" 1
}

# refused PROG WHAT: a target holding something memdump cannot dump yet (a pty
# pair, a socket) is refused with an error that names it, and left unharmed
case_err_refused() {
	start_prog "$1"
	md dump dump -t "$PID" -D "$T/d" --leave-running
	expect_md_error
	grep -q "$2" "$MD_ERR" || fail "the error does not say '$2'"
	no_inventory "$T/d"
	expect_untraced "$PID"
	check_child_pass
}

case_err_enospc() {
	start_prog t-pattern
	mkdir -p "$T/small"
	mount -t tmpfs -o size=1M memdump-test "$T/small" || fail "cannot mount a tmpfs"
	md dump dump -t "$PID" -D "$T/small"
	expect_md_error
	no_inventory "$T/small"
	check_child_pass
}

# corrupt a killing dump of t-pattern in one way, restore must fail
# cleanly, then a pristine copy must still restore
case_err_corrupt() {
	local how=$1
	start_prog t-pattern
	dump "$PID" "$T/d"
	expect_killed "$PID"
	cp -a "$T/d" "$T/good"
	local core=$T/d/core-$PID.img
	[[ -f $core ]] || core=$(ls "$T"/d/core-*.img 2>/dev/null | head -n1)
	case $how in
	pages-trunc)
		local s; s=$(stat -c %s "$T/d/pages-1.img")
		truncate -s $((s / 2)) "$T/d/pages-1.img" ;;
	pages-missing) rm -f "$T/d/pages-1.img" ;;
	core-magic)  printf '\xde\xad' | dd of="$core" bs=1 seek=0 conv=notrunc status=none ;;
	core-size)   printf '\xf0\xff\xff\x7f' | dd of="$core" bs=1 seek=8 conv=notrunc status=none ;;
	core-trunc)  truncate -s 10 "$core" ;;
	mm-garbage)  head -c 300 /dev/urandom | dd of="$T/d/mm-$PID.img" bs=1 seek=12 conv=notrunc status=none ;;
	no-inventory) rm -f "$T/d/inventory.img" ;;
	esac
	md restore restore -D "$T/d"
	expect_md_error
	sleep 0.2
	alive "$PID" && fail "a process with pid $PID is left after the failed restore"
	note "pristine copy must still restore"
	restore_and_pass "$T/good" good
}

case_err_pid_taken() {
	start_prog t-pattern
	dump "$PID" "$T/d" --leave-running
	md restore restore -D "$T/d"
	expect_md_error
	check_child_pass
}

# large target, started once per case
start_big() { start_prog t-pattern "${BIG_MB:-512}"; }

# wait until the dump has seized the target (or finished)
wait_seized() { # PID MDPID
	wait_until "$OP_TIMEOUT" eval '[[ $(proc_field '"$1"' TracerPid) != 0 || $(proc_state '"$1"') == [tT] ]] || ! kill -0 '"$2"' 2>/dev/null'
}

case_err_target_killed() {
	mkdir -p "$T/d"
	local mode=$1
	start_big
	MD_ERR=$T/md.dump.err
	# stalled halfway through the pages (a warmed image copies 512 MiB faster
	# than a test can kill), the target is killed there
	MEMDUMP_FAULT=pages-half MEMDUMP_FAULT_SECS=3 timeout -k 5 "$OP_TIMEOUT" "$MEMDUMP" dump \
		-t "$PID" -D "$T/d" --mode "$mode" --leave-running --no-snapshot 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" 'fault point pages-half' "$OP_TIMEOUT" ||
		fail "the dump never reached half of the pages"
	kill -9 "$PID"
	note "killed target $PID during the dump"
	wait "$mdpid"; MD_RC=$?
	sed 's/^/#   stderr: /' "$MD_ERR"
	sed -i '/fault point pages-half: stalling/d' "$MD_ERR"
	(( MD_RC == 124 )) && fail "dump hung after the target was killed"
	expect_md_error
	no_inventory "$T/d"
}

case_err_memdump_killed() {
	mkdir -p "$T/d"
	local sig=$1
	start_big
	MD_ERR=$T/md.dump.err
	# held half way through the pages: on a loaded machine the dump could end first
	MEMDUMP_FAULT=pages-half MEMDUMP_FAULT_SECS=$(( OP_TIMEOUT * 2 )) \
		"$MEMDUMP" dump -t "$PID" -D "$T/d" 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point pages-half" "$OP_TIMEOUT" ||
		fail "the dump never got half way: $(tail -n1 "$MD_ERR")"
	kill -0 "$mdpid" 2>/dev/null || fail "dump finished before memdump could be killed"
	kill "-$sig" "$mdpid"
	note "sent SIG$sig to memdump $mdpid during the dump"
	# the worker stops writing pages at once: the target runs again within seconds
	# (4 s: on a machine loaded 10 deep the worker, the guard and the supervisor's
	# undo have taken over 2 s; a dump that ran to its end would take longer)
	wait_until 4 untraced "$PID" || fail "target still frozen 4 s after SIG$sig to memdump"
	wait_until "$OP_TIMEOUT" eval '! kill -0 '"$mdpid"' 2>/dev/null' || fail "memdump did not exit after SIG$sig"
	wait "$mdpid"; MD_RC=$?
	sed 's/^/#   stderr: /' "$MD_ERR"
	(( MD_RC != 0 )) || fail "memdump exited 0 after SIG$sig"
	alive "$PID" || fail "target died"
	expect_untraced "$PID"
	no_inventory "$T/d"
	check_child_pass
}

# ---- real programs

# restore_to_completion NAME STDERR_FILE: restore $T/d, wait until the
# restored real program finishes by itself, and require a clean exit
restore_to_completion() {
	restore_bg "$T/d" 1
	wait_until $((OP_TIMEOUT * 2)) eval '! kill -0 '"$RPID"' 2>/dev/null' || fail "restored $1 did not finish"
	wait_restore_exit
	show_file "$1 stderr" "$2"
	(( MD_RC == 0 )) || fail "restore exited $MD_RC"
}

case_real_python() {
	local py; py=$(python3 -c 'import sys; print(sys.executable)')
	local steps=80
	"$py" "$TESTSRC/seq.py" "$T/ref.txt" "$steps" 0 > /dev/null || fail "reference run failed"
	"$py" "$TESTSRC/seq.py" "$T/run.txt" "$steps" 0.05 > "$T/py.out" 2> "$T/py.err" < /dev/null &
	PID=$!
	track "$PID"
	wait_until 20 eval '(( $(wc -l 2>/dev/null < $T/run.txt || echo 0) >= 20 ))' || fail "python did not start"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	local n; n=$(wc -l < "$T/run.txt")
	note "dumped after $n of $steps lines"
	(( n < steps )) || fail "python finished before the dump"
	restore_to_completion "python" "$T/py.err"
	cmp -s "$T/ref.txt" "$T/run.txt" || { diff "$T/ref.txt" "$T/run.txt" | head -n 10 | sed 's/^/#   /'; fail "output differs from an uninterrupted run"; }
	grep -q '^DONE' "$T/py.out" || fail "python did not print DONE"
}

case_real_mtseq() {
	local steps=60 i
	mkdir "$T/ref" "$T/run"
	"$TESTBIN/t-mtseq" "$T/ref" "$steps" 0 > "$T/ref.out" || fail "reference run failed"
	"$TESTBIN/t-mtseq" "$T/run" "$steps" 50 > "$T/run.out" 2> "$T/run.err" < /dev/null &
	PID=$!
	track "$PID"
	wait_until 20 eval '(( $(cat $T/run/mtseq.* 2>/dev/null | wc -l) >= 60 ))' || fail "t-mtseq did not start"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	note "dumped after $(cat "$T"/run/mtseq.* | wc -l) of $((4 * steps)) lines"
	restore_to_completion "t-mtseq" "$T/run.err"
	for i in 0 1 2 3; do
		cmp -s "$T/ref/mtseq.$i" "$T/run/mtseq.$i" || fail "thread $i output differs from an uninterrupted run"
	done
	[[ $(grep DONE "$T/ref.out") == "$(grep DONE "$T/run.out")" ]] || fail "final checksum differs"
}

case_real_perl() {
	local steps=60 i
	"$TESTSRC/mtseq.pl" "$T/ref" "$steps" 0 > "$T/ref.out" || fail "reference run failed"
	"$TESTSRC/mtseq.pl" "$T/run" "$steps" 0.05 > "$T/run.out" 2> "$T/run.err" < /dev/null &
	PID=$!
	track "$PID"
	wait_until 20 eval '(( $(cat $T/run.[012] 2>/dev/null | wc -l) >= 45 ))' || fail "mtseq.pl did not start"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	note "dumped after $(cat "$T"/run.[012] | wc -l) of $((3 * steps)) lines"
	restore_to_completion "perl" "$T/run.err"
	for i in 0 1 2; do
		cmp -s "$T/ref.$i" "$T/run.$i" || fail "thread $i output differs from an uninterrupted run"
	done
	[[ $(grep DONE "$T/ref.out") == "$(grep DONE "$T/run.out")" ]] || fail "final result differs"
}

# ------------------------------------------------------------ registration

CASES=()
declare -A CASE_CMD CASE_LIMIT
add() { CASES+=("$1"); shift; CASE_CMD[${CASES[-1]}]="$*"; }
# case_limit NAME SECONDS: a case whose work is a fixed count that a loaded machine only
# makes slower (a fuzzer's runs) gets more than CASE_TIMEOUT
case_limit() { CASE_LIMIT[$1]=$2; }

add cli-check case_cli_check
for m in "${MODES[@]}"; do
	for p in "${PROGS[@]}"; do add "lr-$m-$p" case_lr "$m" "$p"; done
done
for m in "${MODES[@]}"; do add "img-pattern-$m" case_img_pattern "$m"; done
add img-sparse case_img_sparse
add img-hugepage case_img_region t-hugepage
add img-protnone case_img_region t-protnone
for m in "${MODES[@]}"; do add "img-writer-instant-$m" case_img_writer "$m"; done
add img-writer-instant-kill case_img_writer_kill
for p in "${PROGS[@]}"; do add "rst-$p" case_rst default "$p"; done
for m in "${MODES[@]}"; do
	for p in t-pattern t-threads t-writer; do add "rst-$m-$p" case_rst "$m" "$p"; done
done
add rst-detach case_rst_detach
add rst-exit-status case_rst_status
add err-nopid case_err_nopid
add err-self case_err_self
add err-parent case_err_parent
add err-zombie case_err_zombie
add err-kthread case_err_kthread
add err-traced-strace case_err_traced strace
add err-traced-ptrace case_err_traced ptrace
add err-dir-readonly case_err_dir_ro
add err-dir-is-file case_err_dir_file
add err-dir-has-dump case_err_dir_has_dump
add dump-overwrite case_dump_overwrite
add err-enospc case_err_enospc
for c in pages-trunc pages-missing core-magic core-size core-trunc mm-garbage no-inventory; do
	add "err-restore-$c" case_err_corrupt "$c"
done
add err-restore-pid-taken case_err_pid_taken
for m in "${MODES[@]}"; do add "err-target-killed-$m" case_err_target_killed "$m"; done
add err-memdump-killed-TERM case_err_memdump_killed TERM
add err-memdump-killed-INT case_err_memdump_killed INT
add err-memdump-killed-KILL case_err_memdump_killed KILL
if command -v crit > /dev/null; then
	for p in t-pattern t-threads t-fds t-shared t-filemap; do add "crit-$p" case_crit "$p"; done
else
	echo "# crit not on PATH: crit-* cases skipped"
fi
add real-python case_real_python
add real-mtseq case_real_mtseq
perl -Mthreads -e 1 2> /dev/null && add real-perl case_real_perl

# More cases, one file per topic: test/cases-TOPIC.sh defines case_* functions
# with the helpers above and registers them with add.
for f in "$TESTSRC"/cases-*.sh; do
	[[ -e $f ]] && source "$f"
done

# ------------------------------------------------------------------ driver

if (( LIST_ONLY )); then
	for c in "${CASES[@]}"; do [[ -z $PATTERN || $c =~ $PATTERN ]] && echo "$c"; done
	exit 0
fi

ROOT=$(mktemp -d "${TMPDIR:-/tmp}/memdump-test.XXXXXX") || exit 2

# kill every process a case started: tracked pids (if still ours) and
# anything carrying the case's environment marker
cleanup_case() {
	local T=$1 p f
	for f in $(grep -lzxF "MDTEST_CASE=$T" /proc/[0-9]*/environ 2>/dev/null); do
		p=${f#/proc/}; p=${p%/environ}
		[[ $p == "$$" ]] || kill -9 "$p" 2>/dev/null
	done
	if [[ -f $T/pids ]]; then
		while read -r p; do
			[[ -d /proc/$p ]] || continue
			if tr '\0' ' ' 2>/dev/null < "/proc/$p/cmdline" |
				grep -qF -e "$TESTBIN" -e "$MEMDUMP" -e "$T" -e seq.py; then
				kill -9 "$p" 2>/dev/null
			fi
		done < "$T/pids"
	fi
	for p in $(awk -v t="$T/" 'index($2, t) == 1 { print $2 }' /proc/mounts); do
		umount -l "$p" 2>/dev/null
	done
}

# The host's network-lock tables (src/lib/netlock.c): "inet memdump-lock-PID".
lock_tables() {
	command -v nft > /dev/null || return 0
	nft list tables 2> /dev/null | awk '$3 ~ /^memdump-lock-/ { print $2 " " $3 }' | sort
}

# memdump's crashes the kernel logged (a case that expects memdump to fail
# would take a crash for the failure it wants): their count so far
kernel_crashes() {
	dmesg 2> /dev/null | grep -cE '(\] |traps: )memdump[^ []*\[[0-9]+\]:? (segfault|general protection|trap)'
}

# after_case T BEFORE CRASHES: what a case must not leave behind, named in its
# reason: a network-lock table in the host's namespace whose process is gone
# (it drops that connection's traffic for every later case; removed here),
# a report of UndefinedBehaviorSanitizer, which recovers and goes on, one of
# AddressSanitizer (memdump's exit status alone would pass for an expected
# error), and a crash of memdump in the kernel's log.
after_case() {
	local T=$1 before=$2 crashes=$3 fam name pid ub
	while read -r fam name; do
		[[ -n $name ]] || continue
		pid=${name#memdump-lock-}
		[[ -d /proc/$pid ]] && continue
		nft delete table "$fam" "$name" 2> /dev/null
		[[ -e $T/reason ]] || echo "left the network lock table $fam $name in the host's namespace" > "$T/reason"
	done < <(comm -13 <(printf '%s\n' "$before") <(lock_tables))
	ub=$(grep -rIh -m1 "runtime error: " "$T" 2> /dev/null | head -n1)
	if [[ -n $ub ]] && [[ ! -e $T/reason ]]; then
		echo "UBSan: $ub" > "$T/reason"
	fi
	ub=$(grep -rIh -m1 "ERROR: AddressSanitizer" "$T" 2> /dev/null | head -n1)
	if [[ -n $ub ]] && [[ ! -e $T/reason ]]; then
		echo "ASan: $ub" > "$T/reason"
	fi
	if [[ -n $crashes ]] && (( $(kernel_crashes) > crashes )) && [[ ! -e $T/reason ]]; then
		echo "memdump crashed: $(dmesg | grep -E 'memdump[^ []*\[[0-9]+\]:? (segfault|general protection|trap)' | tail -n1)" > "$T/reason"
	fi
}

PASSED=0 FAILED=0 RECAP=()
for c in "${CASES[@]}"; do
	[[ -z $PATTERN || $c =~ $PATTERN ]] || continue
	T=$ROOT/$c
	mkdir -p "$T"
	tables_before=$(lock_tables)
	crashes_before=$(kernel_crashes)
	(
		export MDTEST_CASE=$T
		cd "$T" || exit 1
		# shellcheck disable=SC2086
		${CASE_CMD[$c]}
	) > "$T/log" 2>&1 < /dev/null &
	cpid=$!
	limit=${CASE_LIMIT[$c]:-$CASE_TIMEOUT}
	end=$(( $(now_ms) + limit * 1000 ))
	timed_out=0
	while kill -0 "$cpid" 2>/dev/null; do
		if (( $(now_ms) > end )); then
			timed_out=1
			kill -9 "$cpid" 2>/dev/null
			break
		fi
		sleep 0.05
	done
	wait "$cpid" 2>/dev/null
	rc=$?
	cleanup_case "$T"
	if (( timed_out )); then
		echo "case timed out after ${limit}s" > "$T/reason"
		rc=1
	fi
	after_case "$T" "$tables_before" "$crashes_before"
	if (( rc == 0 )) && [[ ! -e $T/reason ]]; then
		echo "ok $c"
		PASSED=$((PASSED + 1))
		(( KEEP )) || rm -rf "$T"
	else
		reason=$(head -n1 "$T/reason" 2>/dev/null)
		echo "not ok $c: ${reason:-case exited with status $rc}"
		grep -v -E "^[^ ]*run.sh: line [0-9]+: +[0-9]+ Killed " "$T/log" | tail -n 40 | sed 's/^#*/#/; s/^#\([^ ]\)/# \1/'
		echo "# (files in $T)"
		FAILED=$((FAILED + 1))
		RECAP+=("not ok $c: ${reason:-case exited with status $rc}")
	fi
done

if (( FAILED == 0 && KEEP == 0 )); then
	rm -rf "$ROOT"
fi
# A recap, so that a log's tail names what failed however long the run.
for r in "${RECAP[@]}"; do
	echo "$r"
done
echo "$PASSED passed, $FAILED failed"
(( FAILED == 0 ))
