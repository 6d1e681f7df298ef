# restore --copies N (src/restore/fanout.c, docs/fanout.md): one set restored N
# times, each copy in a PID namespace of its own with the dumped PID, the
# memory filled once and shared copy-on-write between the copies.

# fanout_start PROG ARGS...: PROG leading a session and group of its own (a copy's PID
# namespace holds no other process: a copy of a process that does not lead them is
# refused, fanout-refuse-session)
fanout_start() { START_WRAP=setsid start_prog "$@"; }

# fanout_copies: the host PIDs memdump printed (MD_OUT) into COPIES, each tracked
fanout_copies() {
	local want=$1 p
	mapfile -t COPIES < "$MD_OUT"
	(( ${#COPIES[@]} == want )) || fail "memdump printed ${#COPIES[@]} PIDs, want $want: $(cat "$MD_OUT")"
	for p in "${COPIES[@]}"; do
		[[ $p =~ ^[0-9]+$ ]] || fail "not a PID: '$p'"
		track "$p"
	done
}

# fanout_result PID: SIGUSR1 to copy PID; its line (PASS/FAIL) in RESULT, the copy gone,
# the output file back to its size at the dump (each copy writes at the dumped offset)
fanout_result() {
	local p=$1
	expect_untraced "$p"
	kill -USR1 "$p" || fail "cannot signal copy $p"
	wait_until "$OP_TIMEOUT" eval 'tail -c +$((READY_SIZE + 1)) "$OUT" | grep -Eq "^(PASS|FAIL)"' ||
		fail "copy $p wrote no result"
	RESULT=$(tail -c +$((READY_SIZE + 1)) "$OUT")
	wait_until "$OP_TIMEOUT" eval '[[ ! -d /proc/'"$p"' ]]' || fail "copy $p did not exit"
	truncate -s "$READY_SIZE" "$OUT"
	note "copy $p: $RESULT"
}

# bytes of the VMA at ADDR of PID that another process maps too (smaps Shared_*), in kB
fanout_shared_kb() {
	awk -v a="$(printf '%x' "$2")" '
		$1 ~ /^[0-9a-f]+-[0-9a-f]+$/ { split($1, r, "-"); on = (r[1] == a) }
		on && /^Shared_(Clean|Dirty):/ { kb += $2 }
		END { print kb + 0 }' "/proc/$1/smaps"
}

# 4 copies of t-pattern: each in its own PID namespace with the dumped PID, the
# child of that namespace's init alone, the patterned memory shared; one copy's memory written, only that copy sees it;
# the source, left running, untouched
case_fanout_copies() {
	fanout_start t-pattern 4
	local src=$PID addr=${READY[2]} len=${READY[3]} p pp ns kb
	dump "$src" "$T/d" --leave-running
	md copies restore -D "$T/d" --copies 4 || fail "restore --copies failed: $(tail -n1 "$MD_ERR")"
	fanout_copies 4
	declare -A seen=()
	for p in "${COPIES[@]}"; do
		[[ $(proc_field "$p" NSpid) =~ ^$p[[:space:]]+$src$ ]] ||
			fail "copy $p: NSpid '$(proc_field "$p" NSpid)', want '$p $src'"
		ns=$(readlink "/proc/$p/ns/pid")
		[[ $ns != "$(readlink /proc/self/ns/pid)" && -z ${seen[$ns]:-} ]] ||
			fail "copy $p: its PID namespace $ns is not its own"
		seen[$ns]=1
		# forked by a helper that went at once: its parent is its namespace's init
		pp=$(proc_field "$p" PPid)
		[[ $(proc_field "$pp" NSpid) =~ [[:space:]]1$ && $(readlink "/proc/$pp/ns/pid") == "$ns" ]] ||
			fail "copy $p: its parent $pp (NSpid '$(proc_field "$pp" NSpid)') is not its namespace's init"
		[[ $(cat "/proc/$pp/task/$pp/children") == "$p " ]] ||
			fail "copy $p: its init has other children: $(cat "/proc/$pp/task/$pp/children")"
		kb=$(fanout_shared_kb "$p" "$addr")
		(( kb * 1024 >= len / 2 )) ||
			fail "copy $p: only $kb kB of the ${len}-byte region are shared"
	done
	# copy 0's memory written from outside: it fails its check, the others do not see it
	python3 -c 'import sys; f = open("/proc/%s/mem" % sys.argv[1], "r+b", 0)
f.seek(int(sys.argv[2], 0) + 4096); f.write(b"fan-out!")' "${COPIES[0]}" "$addr" ||
		fail "cannot write the memory of copy ${COPIES[0]}"
	fanout_result "${COPIES[0]}"
	[[ $RESULT == FAIL* ]] || fail "copy ${COPIES[0]} did not see its own write: $RESULT"
	for p in "${COPIES[@]:1}"; do
		fanout_result "$p"
		[[ $RESULT == PASS* ]] || fail "copy $p: $RESULT"
	done
	PID=$src
	check_child_pass
}

# 2 copies of t-threads: every thread with its TID in the copy's namespace, each
# copy's threads check their registers, stacks and TLS; the source passes too
case_fanout_threads() {
	fanout_start t-threads
	local src=$PID tids p want got
	tids=("${READY[@]:1}")
	dump "$src" "$T/d" --leave-running
	md threads restore -D "$T/d" --copies 2 || fail "restore --copies failed: $(tail -n1 "$MD_ERR")"
	fanout_copies 2
	want=$(printf '%s\n' "${tids[@]}" | sort -n | tr '\n' ' ')
	for p in "${COPIES[@]}"; do
		got=$(sed -n 's/^NSpid:[[:space:]]*[0-9]*[[:space:]]*//p' /proc/"$p"/task/*/status | sort -n | tr '\n' ' ')
		[[ $got == "$want" ]] || fail "copy $p: its threads are '$got' in its namespace, want '$want'"
		fanout_result "$p"
		[[ $RESULT == PASS* ]] || fail "copy $p: $RESULT"
	done
	PID=$src
	check_child_pass
}

# fanout_refused PROG WHAT: a dump of PROG refused for --copies by name, nothing made
fanout_refused() {
	local prog=$1 what=$2
	start_prog "$prog"
	dump "$PID" "$T/d" --leave-running
	md refused restore -D "$T/d" --copies 2
	expect_md_error
	grep -Eq -- "^memdump: restore failed: --copies: process $PID has .*$what.*, which fan-out does not restore$" "$MD_ERR" ||
		fail "not refused by name ($what): $(cat "$MD_ERR")"
	[[ ! -s $MD_OUT ]] || fail "a copy was made: $(cat "$MD_OUT")"
	fanout_none "$PID"
	check_child_pass
}

# fanout_none PID: no process but PID has PID's PID in a namespace (no copy left)
fanout_none() {
	local f left=()
	for f in /proc/[0-9]*/status; do
		grep -Eq "^NSpid:.*[[:space:]]$1\$" "$f" 2> /dev/null && [[ $f != /proc/$1/status ]] &&
			left+=("${f//[^0-9]/}")
	done
	(( ${#left[@]} == 0 )) || fail "processes with PID $1 in a namespace are left: ${left[*]}"
}

# memdump SIGKILLed mid fan-out: at copy 0's fill (nothing runs, its init and
# itself gone), then between copies (copy 0 runs on, no other is left)
case_fanout_kill() {
	fanout_start t-pattern 4
	local src=$PID pids
	dump "$src" "$T/d" --leave-running
	MEMDUMP_FAULT=rst-fill "$MEMDUMP" restore -D "$T/d" --copies 3 -v 3 \
		> "$T/kill.fill.out" 2> "$T/kill.fill.err" < /dev/null &
	local md=$!
	track "$md"
	wait_line "$T/kill.fill.err" "here, its PID namespace" "$OP_TIMEOUT" || fail "copy 0 was not forked"
	sleep 0.5	# its blob stalls at rst-fill
	pids=$(sed -n 's/.*copy of [0-9]*: \([0-9]*\) here, its PID namespace.s init \([0-9]*\)$/\1 \2/p' "$T/kill.fill.err")
	[[ -n $pids ]] || fail "no copy logged"
	kill -KILL "$md"; wait "$md" 2> /dev/null
	rstfail_gone $pids
	fanout_none "$src"

	MEMDUMP_FAULT=rst-copy "$MEMDUMP" restore -D "$T/d" --copies 3 -v 3 \
		> "$T/kill.copy.out" 2> "$T/kill.copy.err" < /dev/null &
	md=$!
	track "$md"
	wait_line "$T/kill.copy.err" "fault point rst-copy: stalling" "$OP_TIMEOUT" ||
		fail "memdump did not reach rst-copy"
	kill -KILL "$md"; wait "$md" 2> /dev/null
	mapfile -t COPIES < <(sed -n 's/.*copy of [0-9]*: \([0-9]*\) here.*/\1/p' "$T/kill.copy.err")
	(( ${#COPIES[@]} == 1 )) || fail "want one copy made before rst-copy, got ${COPIES[*]}"
	track "${COPIES[0]}"
	sleep 0.3
	fanout_result "${COPIES[0]}"
	[[ $RESULT == PASS* ]] || fail "copy ${COPIES[0]}: $RESULT"
	fanout_none "$src"
	check_child_pass
}

# A damaged page in the memory the copies share (memdump fills it, in pieces on
# its threads) fails the fan-out naming its run (the sums it took, compared by
# the first copy's check): no PID printed, no copy left, the source untouched
# (flip_byte, run_at_offset: cases-pagesums.sh)
case_fanout_damaged() {
	fanout_start t-pattern 40
	local src=$PID pages off addr
	dump "$src" "$T/d" --leave-running
	pages=$(stat -c %s "$T/d/pages-1.img")
	off=$(( pages * 3 / 4 + 123 ))	# past the first pieces
	addr=$(run_at_offset "$T/d/pagemap-$src.img" "$off")
	[[ -n $addr ]] || fail "no run holds offset $off of pages-1.img"
	flip_byte "$T/d/pages-1.img" "$off"
	md damaged restore -D "$T/d" --copies 3
	expect_run_named "restore --copies" pages-1.img "$addr"
	[[ ! -s $MD_OUT ]] || fail "a copy was made: $(cat "$MD_OUT")"
	fanout_none "$src"
	check_child_pass
}

# A MADV_HUGEPAGE region (THP madvise mode) is huge in every copy, as dumped:
# the template's huge pages shared, the VMA's flags kept (t-hugepage checks
# VmFlags hg and its data; anon_huge_kb: cases-lazy.sh)
case_fanout_thp() {
	fanout_start t-hugepage
	local src=$PID addr=${READY[2]} p kb
	dump "$src" "$T/d" --leave-running
	md copies restore -D "$T/d" --copies 2 || fail "restore --copies failed: $(tail -n1 "$MD_ERR")"
	fanout_copies 2
	for p in "${COPIES[@]}"; do
		kb=$(anon_huge_kb "$p" "$addr")
		note "copy $p: AnonHugePages at $addr: $kb kB"
		(( ${kb:-0} > 0 )) || fail "copy $p: no huge page in its MADV_HUGEPAGE region"
		fanout_result "$p"
		[[ $RESULT == PASS* ]] || fail "copy $p: $RESULT"
	done
	check_child_pass
}

# The options that make one process each time are refused with --copies
case_fanout_opts() {
	mkdir -p "$T/d"
	md opt restore -D "$T/d" --copies 2 --pidfile "$T/p"
	expect_md_error
	grep -q -- "--copies: not with --pidfile" "$MD_ERR" || fail "wrong error: $(cat "$MD_ERR")"
	md zero restore -D "$T/d" --copies 0
	(( MD_RC != 0 )) || fail "--copies 0 accepted"
}

add fanout-copies case_fanout_copies
add fanout-kill case_fanout_kill
add fanout-threads case_fanout_threads
add fanout-refuse-sockets fanout_refused t-sockunix "a socket \\(fd [0-9]+\\)"
add fanout-refuse-shared fanout_refused t-shared "shared anonymous memory at 0x[0-9a-f]+"
add fanout-refuse-session fanout_refused t-pattern "a session \\([0-9]+\\) or process group \\([0-9]+\\) it does not lead"
add fanout-opts case_fanout_opts
add fanout-damaged case_fanout_damaged
add fanout-thp case_fanout_thp
