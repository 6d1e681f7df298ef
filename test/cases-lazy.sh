# restore --lazy-pages (src/mem/lazy_restore.c, lazy_handler.c): the process
# runs before its private anonymous memory is filled; a page handler serves
# each fault from the images and fills the rest behind it. Each target gets
# SIGUSR1 right after the restore returns, while its memory is still coming,
# and checks every byte.

# lazy_restore DIR LABEL: restore -d --lazy-pages of $PID (its stdout back to
# the READY line); the handler's log in LZ_LOG, its pid in LZ_HANDLER
lazy_restore() {
	local dir=$1 label=$2
	shift 2
	LZ_LOG=$T/lazy.$label.log
	truncate -s "$READY_SIZE" "$OUT"
	alive "$PID" && fail "pid $PID is in use before restore"
	md "lazy.$label" restore -D "$dir" -d --lazy-pages -v 3 --log-file "$LZ_LOG" "$@" ||
		fail "restore --lazy-pages failed: $(tail -n1 "$MD_ERR")"
	track "$PID"
	[[ $(tr -dc 0-9 < "$MD_OUT") == "$PID" ]] || fail "restore -d printed '$(cat "$MD_OUT")', want $PID"
	LZ_HANDLER=$(sed -n 's/.*lazy-pages: page handler \([0-9]*\)$/\1/p' "$LZ_LOG" | head -n1)
	[[ -n $LZ_HANDLER ]] || { show_file "log" "$LZ_LOG"; fail "no page handler in the log"; }
	track "$LZ_HANDLER"
}

# lazy_done MINPAGES [WHAT...]: the handler finished, having filled at least
# MINPAGES pages; each WHAT (e.g. "fork", "remove", "faults") counted 1 or more
lazy_done() {
	wait_until "$OP_TIMEOUT" eval '[[ ! -d /proc/'"$LZ_HANDLER"' ]] || [[ $(proc_state '"$LZ_HANDLER"') == Z ]]' ||
		fail "the page handler $LZ_HANDLER did not exit"
	local line; line=$(grep -m1 'lazy-pages: done: ' "$LZ_LOG") ||
		{ show_file "log" "$LZ_LOG"; fail "no 'done' line from the page handler"; }
	note "${line#*: lazy-pages: }"
	local n; n=$(sed 's/.*done: \([0-9]*\) pages.*/\1/' <<< "$line")
	(( n >= $1 )) || fail "the handler filled $n pages, want at least $1"
	shift
	local what c
	for what in "$@"; do
		if [[ $what == faults ]]; then
			c=$(sed 's/.* (\([0-9]*\) from the images.*/\1/' <<< "$line")
		else
			c=$(sed "s/.* \([0-9]*\) $what[,]*.*/\1/" <<< "$line")
		fi
		(( c >= 1 )) || fail "the handler met no $what ($line)"
	done
}

# lazy_pass: SIGUSR1 at once, the program's PASS, its exit
lazy_pass() {
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	wait_until "$OP_TIMEOUT" eval '[[ ! -d /proc/'"$PID"' ]] || [[ $(proc_state '"$PID"') == Z ]]' ||
		fail "pid $PID did not exit after PASS"
}

# a 256 MiB target: every byte exact though it runs before its memory is in;
# once the handler is done, the process shows what it showed before the dump
# (statecmp: no uffd flag left on its VMAs, no fd of the handler's)
case_lazy_big() {
	start_prog t-pattern 256
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	lazy_restore "$T/d" 1
	grep -q "restored $PID in .*memory: [0-9]\{1,4\} pages" "$LZ_LOG" ||
		fail "the blob filled the lazy memory itself: $(grep "restored $PID" "$LZ_LOG")"
	lazy_pass
	lazy_done 65536
	note "second lazy restore of the same images, compared once filled"
	lazy_restore "$T/d" 2
	lazy_done 65536
	state_same "$PID" 2
	lazy_pass
}

# 4 threads checking their own regions at once, concurrent faults
case_lazy_threads() {
	start_prog t-lazy threads 64
	dump "$PID" "$T/d"
	expect_killed "$PID"
	MEMDUMP_LAZY_PACE_MS=10 lazy_restore "$T/d" 1
	lazy_pass
	lazy_done 16384 faults
}

# a tree (a parent and a child, each with threads): one handler for both
case_lazy_tree() {
	start_prog t-lazy tree 32
	local kids; kids=$(cat /proc/"$PID"/task/*/children | tr -d " \n")
	[[ -n $kids ]] || fail "t-lazy tree has no child"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	MEMDUMP_LAZY_PACE_MS=10 lazy_restore "$T/d" 1
	alive "$kids" || fail "the child $kids was not restored"
	lazy_pass
	lazy_done 2048 faults	# memory the child shares copy-on-write is filled before the fork
}

# a fork right after the restore: the child's pages come through its own uffd
case_lazy_fork() {
	start_prog t-lazy fork 128
	dump "$PID" "$T/d"
	expect_killed "$PID"
	MEMDUMP_LAZY_PACE_MS=10 lazy_restore "$T/d" 1
	lazy_pass
	lazy_done 16384 fork faults
}

# madvise(DONTNEED), munmap + a new mapping, mremap of lazy memory at once
case_lazy_madv() {
	start_prog t-lazy madv 128
	dump "$PID" "$T/d"
	expect_killed "$PID"
	MEMDUMP_LAZY_PACE_MS=10 lazy_restore "$T/d" 1
	lazy_pass
	lazy_done 16384 remove unmap remap faults
}

# lazy_kill_mid_fill NAME SIG: the handler's process NAME (memdump-lazy, the
# handler; memdump-lazy-k, its keeper) gets SIG while the fill is paced
lazy_kill_mid_fill() {
	start_prog t-pattern 64
	dump "$PID" "$T/d"
	expect_killed "$PID"
	MEMDUMP_LAZY_PACE_MS=20 lazy_restore "$T/d" 1
	local victim=$LZ_HANDLER
	if [[ $1 == memdump-lazy-k ]]; then
		victim=$(pgrep -x -P "$LZ_HANDLER" memdump-lazy-k) || fail "no keeper below the handler"
	fi
	grep -q 'lazy-pages: done' "$LZ_LOG" && fail "the paced fill is done already"
	kill -"$2" "$victim" || fail "cannot signal $victim"
	note "sent SIG$2 to $1 $victim"
}

# the handler killed mid-fill: the restored process dies (no hang, no zero pages), one line says why
case_lazy_handler_killed() {
	lazy_kill_mid_fill memdump-lazy KILL
	wait_until "$OP_TIMEOUT" eval '! alive '"$PID" ||
		fail "pid $PID still alive after its page handler was killed (State: $(proc_field "$PID" State))"
	grep -q "lazy-pages: the page handler $LZ_HANDLER died with [0-9]* pages not filled: killed the restored processes $PID" "$LZ_LOG" ||
		{ show_file "log" "$LZ_LOG"; fail "no message naming the dead handler"; }
	grep -q '^PASS' "$OUT" && fail "the program ran on to PASS"
	return 0
}

# the keeper killed mid-fill: the handler starts another and completes
case_lazy_keeper_killed() {
	lazy_kill_mid_fill memdump-lazy-k KILL
	wait_until 10 grep -q 'keeper died: started' "$LZ_LOG" ||
		{ show_file "log" "$LZ_LOG"; fail "the handler did not start a new keeper"; }
	lazy_pass
	lazy_done 16384
}

# anon_huge_kb PID ADDR: AnonHugePages (kB) of the VMA of PID starting at ADDR
anon_huge_kb() {
	awk -v a="${2#0x}" '
		/^[0-9a-f]+-[0-9a-f]+ / { split($1, r, "-"); inv = (r[1] == a) }
		inv && /^AnonHugePages:/ { print $2; exit }' "/proc/$1/smaps"
}

# a MADV_HUGEPAGE region (THP madvise mode) is huge again once filled, as dumped
case_lazy_thp() {
	start_prog t-hugepage
	local addr=${READY[2]}
	note "AnonHugePages at $addr before the dump: $(anon_huge_kb "$PID" "$addr") kB"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	lazy_restore "$T/d" 1
	lazy_done 2048
	local kb; kb=$(anon_huge_kb "$PID" "$addr")
	note "AnonHugePages at $addr after the lazy fill: $kb kB"
	(( ${kb:-0} > 0 )) || fail "no huge page in the MADV_HUGEPAGE region after the fill"
	lazy_pass
}

# a lazy restore failed at each step after the handler started: no process
# and no handler left, and the next lazy restore succeeds
case_lazy_rstfail() {
	start_prog t-pattern 32
	dump "$PID" "$T/d"
	expect_killed "$PID"
	local point h log
	for point in rst-forked rst-child-files rst-fill rst-commit; do
		log=$T/lazy.fail.$point.log
		truncate -s "$READY_SIZE" "$OUT"
		MEMDUMP_FAULT=$point MEMDUMP_FAULT_FAIL=1 md "lazy.fail.$point" restore -D "$T/d" -d \
			--lazy-pages -v 3 --log-file "$log" && fail "the restore did not fail at $point"
		grep -q "fault injected at $point" "$MD_ERR" || fail "$point: not the injected failure: $(tail -n1 "$MD_ERR")"
		h=$(sed -n 's/.*lazy-pages: page handler \([0-9]*\)$/\1/p' "$log" | head -n1)
		[[ -n $h ]] || fail "$point: no page handler started"
		wait_until 10 eval '! alive '"$PID" || fail "$point: pid $PID left alive"
		wait_until 10 eval '[[ ! -d /proc/'"$h"' ]] || [[ $(proc_state '"$h"') == Z ]]' ||
			fail "$point: the page handler $h stays"
		grep -q 'died with' "$log" && fail "$point: the keeper took a clean exit for a death"
		note "$point: failed, nothing left"
	done
	lazy_restore "$T/d" ok
	lazy_pass
	lazy_done 8192
}

# lazy_damage IMG: one byte in the middle of the image flipped
lazy_damage() {
	local off b
	off=$(( $(stat -c %s "$1") / 2 + 123 ))
	b=$(od -An -tu1 -j "$off" -N1 "$1")
	printf "\\x$(printf %02x $(( (b ^ 0xa5) & 0xff )))" | dd of="$1" bs=1 seek="$off" conv=notrunc status=none
}

# MEMDUMP_LAZY_CHECK=late: the handler takes the checksums while the process
# runs; intact, all is filled; damaged, the process is killed with the run named
case_lazy_check_late() {
	start_prog t-pattern 64
	dump "$PID" "$T/d"
	expect_killed "$PID"
	MEMDUMP_LAZY_CHECK=late lazy_restore "$T/d" good
	lazy_pass
	lazy_done 16384
	lazy_damage "$T/d/pages-1.img"
	MEMDUMP_LAZY_CHECK=late MEMDUMP_LAZY_PACE_MS=5 lazy_restore "$T/d" bad
	wait_until "$OP_TIMEOUT" eval '! alive '"$PID" ||
		fail "pid $PID still alive with a damaged pages image"
	grep -q "lazy-pages: image pages-1.img is corrupt: the pages of the run at 0x[0-9a-f]* ([0-9]* pages) do not match their checksum: killed the restored processes $PID" "$LZ_LOG" ||
		{ show_file "log" "$LZ_LOG"; fail "no message naming the damaged run"; }
	return 0
}

# the pages image cut short mid-fill: the handler cannot serve the rest, the
# process is killed with a line naming the address (never zeros, never a hang)
case_lazy_image_gone() {
	start_prog t-pattern 64
	dump "$PID" "$T/d"
	expect_killed "$PID"
	MEMDUMP_LAZY_PACE_MS=20 lazy_restore "$T/d" 1
	grep -q 'lazy-pages: done' "$LZ_LOG" && fail "the paced fill is done already"
	truncate -s 4096 "$T/d/pages-1.img"
	wait_until "$OP_TIMEOUT" eval '! alive '"$PID" ||
		fail "pid $PID still alive after its pages image was cut short"
	grep -q "lazy-pages: the pages of 0x[0-9a-f]* are not in their image any more: killed the restored processes $PID" "$LZ_LOG" ||
		{ show_file "log" "$LZ_LOG"; fail "no message naming the pages the handler could not read"; }
	return 0
}

# without -d: memdump waits for the process, the handler fills beside it
case_lazy_wait() {
	start_prog t-pattern 64
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1 --lazy-pages
	wait_restored "$PID"
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC, want 0 (the program's status)"
}

# a damaged pages image, checked whole before anything runs: refused there,
# nothing run, with MEMDUMP_LAZY_CHECK=first, and by default for a set without
# block marks (as a memdump before them wrote it: lazy_oldset.py)
case_lazy_corrupt() {
	start_prog t-pattern 32
	dump "$PID" "$T/d"
	expect_killed "$PID"
	lazy_damage "$T/d/pages-1.img"
	truncate -s "$READY_SIZE" "$OUT"
	MEMDUMP_LAZY_CHECK=first md lazy.corrupt restore -D "$T/d" -d --lazy-pages &&
		fail "restore --lazy-pages (check first) of a damaged image succeeded"
	expect_md_error
	grep -q 'pages-1.img is corrupt' "$MD_ERR" || fail "not refused as corrupt: $(cat "$MD_ERR")"
	alive "$PID" && fail "pid $PID runs after a refused restore"
	python3 "$TESTSRC/lazy_oldset.py" "$T/d" || fail "lazy_oldset.py failed"
	md lazy.corrupt-old restore -D "$T/d" -d --lazy-pages &&
		fail "restore --lazy-pages of a damaged set without block marks succeeded"
	expect_md_error
	grep -q 'pages-1.img is corrupt' "$MD_ERR" || fail "not refused as corrupt: $(cat "$MD_ERR")"
	alive "$PID" && fail "pid $PID runs after a refused restore"
	return 0
}

# by default each block of a lazy run is checked as it is served: a damaged
# block kills the process with the block named before any byte of it is
# given. The background fill is slowed and the program reads every byte at
# once: had it been given the damaged page it would say FAIL; it says nothing
case_lazy_block_damaged() {
	start_prog t-pattern 64
	dump "$PID" "$T/d"
	expect_killed "$PID"
	lazy_damage "$T/d/pages-1.img"
	MEMDUMP_LAZY_PACE_MS=200 lazy_restore "$T/d" bad
	grep -q 'lazy-pages: done' "$LZ_LOG" && fail "the paced fill is done already"
	kill -USR1 "$PID" 2>/dev/null
	wait_until "$OP_TIMEOUT" eval '! alive '"$PID" ||
		fail "pid $PID still alive with a damaged block"
	grep -q "lazy-pages: image pages-1.img is corrupt: the pages at 0x[0-9a-f]* ([0-9]* pages, block [0-9]* of the run at 0x[0-9a-f]*, [0-9]* pages) do not match their checksum: killed the restored processes $PID" "$LZ_LOG" ||
		{ show_file "log" "$LZ_LOG"; fail "no message naming the damaged block"; }
	grep -qE '^(PASS|FAIL)' "$OUT" && fail "the program read its memory: $(grep -E '^(PASS|FAIL)' "$OUT")"
	return 0
}

# a compressed set (its raw bytes in a memfd at load): the block marks are
# those of the raw bytes, taken before the compression; every byte exact
case_lazy_compressed() {
	start_prog t-pattern 64
	dump "$PID" "$T/d" --compress
	expect_killed "$PID"
	lazy_restore "$T/d" z -v 4
	grep -q "runs checked block by block as served" "$LZ_LOG" ||
		{ show_file "log" "$LZ_LOG"; fail "the compressed set was not checked block by block"; }
	lazy_pass
	lazy_done 16384
}

# a set without block marks (lazy_oldset.py: as a memdump before them wrote
# it; crit still decodes it) restores lazily, its pages checked whole first
case_lazy_oldset() {
	start_prog t-pattern 64
	dump "$PID" "$T/d"
	expect_killed "$PID"
	python3 "$TESTSRC/lazy_oldset.py" "$T/d" || fail "lazy_oldset.py failed"
	crit_decodes "$T/d"
	md lazy.verify verify -D "$T/d" || fail "verify of the set without block marks: $(tail -n1 "$MD_ERR")"
	lazy_restore "$T/d" old -v 4
	grep -q "runs checked block by block as served" "$LZ_LOG" &&
		fail "a set without block marks was checked block by block"
	lazy_pass
	lazy_done 16384
}

# criu_one_line LABEL CMD...: CMD (memdump as criu) exits 1 with one line on stderr
# saying "not supported" (never an unknown option or command); the line in CRIU_ERR
criu_one_line() {
	local label=$1; shift
	CRIU_ERR=$T/criu.$label.err
	timeout -k 5 "$OP_TIMEOUT" "$@" > /dev/null 2> "$CRIU_ERR" < /dev/null
	local rc=$?
	(( rc == 1 )) || fail "$label: exited $rc, expected 1: $(head -c 300 "$CRIU_ERR")"
	[[ $(grep -c . "$CRIU_ERR") == 1 ]] || fail "$label: not one line: $(head -c 300 "$CRIU_ERR")"
	grep -q 'not supported' "$CRIU_ERR" || fail "$label: not refused by name: $(cat "$CRIU_ERR")"
	grep -qiE 'unknown|unrecognized' "$CRIU_ERR" && fail "$label: an unknown option or command: $(cat "$CRIU_ERR")"
	note "$label: $(cat "$CRIU_ERR")"
}

# criu_lazy_restore DIR: `criu restore -d --lazy-pages -D DIR` ($T/bin/criu), the
# restored PID and its page handler (LZ_HANDLER, its log LZ_LOG) tracked
criu_lazy_restore() {
	truncate -s "$READY_SIZE" "$OUT"
	timeout -k 5 "$OP_TIMEOUT" "$T/bin/criu" restore -d --lazy-pages -D "$1" -v4 -o lazy.log \
		> "$T/criu.rst.out" 2> "$T/criu.rst.err" < /dev/null ||
		{ show_file "log" "$1/lazy.log"; fail "criu restore --lazy-pages failed: $(tail -n1 "$T/criu.rst.err")"; }
	track "$PID"
	LZ_LOG=$1/lazy.log
	LZ_HANDLER=$(sed -n 's/.*lazy-pages: page handler \([0-9]*\)$/\1/p' "$LZ_LOG" | head -n1)
	[[ -n $LZ_HANDLER ]] || { show_file "log" "$LZ_LOG"; fail "no page handler in the log: not a lazy restore"; }
	track "$LZ_HANDLER"
}

# CRIU's lazy-pages flow on CRIU's command line: a pre-dump with --lazy-pages (only a
# dump serves its pages to a lazy restore) refused by name in one line, the target
# untouched; `criu restore --lazy-pages` of local images is memdump's lazy restore
# (its own page handler): the process runs, every byte exact.
case_lazy_criu_cli() {
	local criu=$T/bin/criu
	mkdir -p "$T/bin" && ln -s "$MEMDUMP" "$criu" || fail "cannot link criu"
	start_prog t-pattern 64
	criu_one_line criu-predump "$criu" pre-dump -t "$PID" -D "$T/e" --lazy-pages -o dump.log
	grep -q 'criu pre-dump --lazy-pages' "$CRIU_ERR" || fail "the line does not name pre-dump --lazy-pages"
	expect_untraced "$PID"
	no_inventory "$T/e"
	md lazy-pages dump -t "$PID" -D "$T/e" --lazy-pages
	expect_md_error
	grep -q 'dump --lazy-pages needs --port P' "$MD_ERR" || fail "memdump dump --lazy-pages without a port: $(cat "$MD_ERR")"
	no_inventory "$T/e"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	criu_lazy_restore "$T/d"
	lazy_pass
	lazy_done 16384
}
add lazy-criu-cli case_lazy_criu_cli

# lazyd_start DIR: `criu lazy-pages -D DIR` in the background (LZD_PID), its socket up
lazyd_start() {
	"$T/bin/criu" lazy-pages -D "$1" -v4 -o lazyd.log > "$T/lazyd.out" 2> "$T/lazyd.err" &
	LZD_PID=$!
	track "$LZD_PID"
	wait_until 10 test -S "$1/lazy-pages.socket" || fail "criu lazy-pages made no socket: $(cat "$T/lazyd.err")"
}

# exit_of PID WANT WHAT: the background PID exited with WANT
exit_of() {
	local rc=0
	wait_until "$OP_TIMEOUT" eval '! alive '"$1" || fail "$3 $1 did not exit"
	wait "$1" || rc=$?
	(( rc == $2 )) || fail "$3 exited $rc, want $2"
}

# lazyd_exit WANT D: the daemon of $T/D exited with WANT (0 or 1); its socket removed
lazyd_exit() {
	exit_of "$LZD_PID" "$1" "criu lazy-pages"
	[[ -e $T/$2/lazy-pages.socket ]] && fail "the daemon left its socket"
	return 0
}

# CRIU's lazy-pages daemon (as CRIU's test runner drives it: `criu lazy-pages -D DIR`
# started, then `criu restore --lazy-pages -D DIR`): the restore finds its socket
# and tells it who the page handler is and how the filling went; the daemon exits
# 0 once every page is in, 1 naming why when the handler is killed mid-fill. A
# socket nobody listens on, or one whose listener does not greet as memdump's does
# (a real CRIU's daemon, which waits for userfaultfds), fails the restore before
# anything runs.
case_lazy_daemon() {
	local criu=$T/bin/criu
	mkdir -p "$T/bin" && ln -s "$MEMDUMP" "$criu" || fail "cannot link criu"
	start_prog t-pattern 64
	dump "$PID" "$T/d"
	expect_killed "$PID"
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \
		"$T/d/lazy-pages.socket" || fail "cannot make a stale socket"
	timeout -k 5 "$OP_TIMEOUT" "$criu" restore -d --lazy-pages -D "$T/d" > /dev/null \
		2> "$T/stale.err" < /dev/null && fail "a restore to a stale daemon socket succeeded"
	[[ $(grep -c . "$T/stale.err") == 1 ]] || fail "not one line: $(cat "$T/stale.err")"
	grep -q 'cannot reach the lazy-pages daemon' "$T/stale.err" || fail "the line does not name the daemon: $(cat "$T/stale.err")"
	alive "$PID" && fail "a failed restore left pid $PID"
	rm "$T/d/lazy-pages.socket"
	python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); c = s.accept(); time.sleep(60)' \
		"$T/d/lazy-pages.socket" & local silent=$!
	track "$silent"
	wait_until 10 test -S "$T/d/lazy-pages.socket" || fail "no silent listener"
	timeout -k 5 "$OP_TIMEOUT" "$criu" restore -d --lazy-pages -D "$T/d" > /dev/null \
		2> "$T/silent.err" < /dev/null && fail "a restore to a daemon that is not memdump's succeeded"
	grep -q 'is not memdump.s' "$T/silent.err" || fail "the line does not say the daemon is not memdump's: $(cat "$T/silent.err")"
	alive "$PID" && fail "a failed restore left pid $PID"
	kill "$silent"
	lazyd_start "$T/d"
	wait_until 10 grep -q 'waiting on .*lazy-pages.socket' "$T/d/lazyd.log" ||
		fail "the daemon did not replace the stale socket"
	criu_lazy_restore "$T/d"
	lazy_pass
	lazy_done 16384
	lazyd_exit 0 d
	grep -q "the restore's page handler is process $LZ_HANDLER" "$T/d/lazyd.log" ||
		{ show_file "daemon log" "$T/d/lazyd.log"; fail "the daemon was not told the handler"; }
	grep -q 'every page is in' "$T/d/lazyd.log" || fail "the daemon's log does not say every page is in"

	start_prog t-pattern 64
	dump "$PID" "$T/d2"
	expect_killed "$PID"
	lazyd_start "$T/d2"
	truncate -s "$READY_SIZE" "$OUT"
	MEMDUMP_LAZY_PACE_MS=20 timeout -k 5 "$OP_TIMEOUT" "$criu" restore -d --lazy-pages -D "$T/d2" \
		-v4 -o lazy.log > "$T/criu.rst.out" 2> "$T/criu.rst.err" < /dev/null ||
		fail "criu restore --lazy-pages failed: $(tail -n1 "$T/criu.rst.err")"
	track "$PID"
	LZ_HANDLER=$(sed -n 's/.*lazy-pages: page handler \([0-9]*\)$/\1/p' "$T/d2/lazy.log" | head -n1)
	[[ -n $LZ_HANDLER ]] || fail "no page handler in the log"
	grep -q 'lazy-pages: done' "$T/d2/lazy.log" && fail "the paced fill is done already"
	kill -KILL "$LZ_HANDLER" || fail "cannot kill the handler"
	lazyd_exit 1 d2
	grep -q 'ended before every page was in' "$T/d2/lazyd.log" ||
		{ show_file "daemon log" "$T/d2/lazyd.log"; fail "the daemon's line does not say the handler ended early"; }
	wait_until "$OP_TIMEOUT" eval '! alive '"$PID" || fail "pid $PID outlived its killed page handler"
}
add lazy-daemon case_lazy_daemon

# The daemon SIGKILLed mid-fill (memdump's own page handler serves the pages): the
# restored process is filled and runs on to PASS; only the daemon's word is lost.
case_lazy_daemon_killed() {
	mkdir -p "$T/bin" && ln -s "$MEMDUMP" "$T/bin/criu" || fail "cannot link criu"
	start_prog t-pattern 64
	dump "$PID" "$T/d"
	expect_killed "$PID"
	lazyd_start "$T/d"
	MEMDUMP_LAZY_PACE_MS=20 criu_lazy_restore "$T/d"
	grep -q 'lazy-pages: done' "$LZ_LOG" && fail "the paced fill is done already"
	kill -KILL "$LZD_PID" || fail "cannot kill the daemon"
	lazy_pass
	lazy_done 16384
}
add lazy-daemon-killed case_lazy_daemon_killed

# lzps_dump DIR PORT: `dump --lazy-pages` of PID in the background (LZPS_PID), serving its pages
lzps_dump() {
	"$MEMDUMP" dump -t "$PID" -D "$1" --lazy-pages --address 127.0.0.1 --port "$2" -v 3 \
		> "$T/lzps.out" 2>&1 < /dev/null &
	LZPS_PID=$!
	track "$LZPS_PID"
	wait_until "$OP_TIMEOUT" grep -q 'listening on' "$T/lzps.out" ||
		{ show_file "dump" "$T/lzps.out"; fail "dump --lazy-pages does not listen"; }
	expect_killed "$PID"
}

# lzps_other DIR: DIR a copy of the set but for pages-1.img (another host's), its daemon up
lzps_other() {
	cp -a "$T/src" "$1" && rm "$1/pages-1.img" || fail "cannot copy the set"
	"$MEMDUMP" lazy-pages -D "$1" --page-server --address 127.0.0.1 --port "$2" -v 3 \
		> "$T/lzd.out" 2>&1 < /dev/null &
	LZD_PID=$!
	track "$LZD_PID"
	wait_until 10 test -S "$1/lazy-pages.socket" || fail "no daemon socket: $(cat "$T/lzd.out")"
}

# CRIU's lazy migration: `dump --lazy-pages --port P` leaves its set whole on disk and
# serves pages-1.img there; on the other side (a copy of the set without pages-1.img)
# `lazy-pages --page-server` fetches it for `restore --lazy-pages`: the process runs,
# every byte exact; the page server and the daemon exit 0 once every page is in, and the
# other side's pages-1.img is the source's.
case_lazy_page_server() {
	start_prog t-pattern 64
	lzps_dump "$T/src" 27411
	lzps_other "$T/dst" 27411
	grep -q 'pages-1.img ([0-9]* bytes) comes from the page server' "$T/lzd.out" ||
		fail "the daemon does not name the page server: $(cat "$T/lzd.out")"
	lazy_restore "$T/dst" 1 --lazy-socket "$T/dst/lazy-pages.socket"
	grep -q "pages-1.img comes from the daemon's page server" "$LZ_LOG" || fail "the restore did not take the page channel"
	lazy_pass
	lazy_done 16384
	exit_of "$LZD_PID" 0 "the lazy-pages daemon"
	exit_of "$LZPS_PID" 0 "dump --lazy-pages"
	grep -q 'the lazy restore is done: \([0-9]*\) of \1 bytes served' "$T/lzps.out" ||
		fail "the page server does not say every byte was served: $(tail -n1 "$T/lzps.out")"
	cmp -s "$T/src/pages-1.img" "$T/dst/pages-1.img" || fail "pages-1.img differs from the source's"
}
add lazy-page-server case_lazy_page_server

# The lazy dump's page server (memdump and its worker) killed mid-fill: the restored
# process dies (one line, no zero page), the daemon exits 1; the source's set, whole
# on disk, restores plainly.
case_lazy_page_server_killed() {
	start_prog t-pattern 64
	lzps_dump "$T/src" 27412
	lzps_other "$T/dst" 27412
	MEMDUMP_LAZY_PACE_MS=300 lazy_restore "$T/dst" 1 --lazy-socket "$T/dst/lazy-pages.socket"
	grep -q 'lazy-pages: done' "$LZ_LOG" && fail "the paced fill is done already"
	pkill -KILL -P "$LZPS_PID" || fail "no worker of the page server to kill"	# it serves
	kill -KILL "$LZPS_PID" 2> /dev/null	# and the memdump above it, if still there
	wait_until "$OP_TIMEOUT" eval '! alive '"$PID" || fail "pid $PID outlived its page server"
	exit_of "$LZD_PID" 1 "the lazy-pages daemon"
	grep -q '^PASS' "$OUT" && fail "the program ran on to PASS"
	wait_until 5 eval '! [[ -d /proc/'"$PID"' ]]' || true
	restore_and_pass "$T/src" 2
}
add lazy-page-server-killed case_lazy_page_server_killed

# A GET names the set it reads (protocol 5): the lazy dump's page server answers one
# naming "" (its own pages-1.img) with those bytes, and refuses one naming a tree's
# process's set (it serves its own only) with a line naming it; the set stays whole on
# disk and restores plainly.
case_lazy_page_server_get_set() {
	start_prog t-pattern 16
	lzps_dump "$T/src" 27414
	PYTHONPATH=$TESTSRC command -p python3 - 127.0.0.1 27414 "$T/src/pages-1.img" > "$T/py.out" 2>&1 <<'PY' ||
import socket, struct, sys
from xfer_wire import HELLO, DATA, REPLY, LAZY, GET
import xfer_wire
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=20)
def send(cmd, body):
    xfer_wire.send(s, cmd, body)
def recv():
    return xfer_wire.recv(s)
send(HELLO, struct.pack('<I', xfer_wire.VERSION))
cmd, body = recv()
assert cmd == REPLY and struct.unpack('<i', body[:4])[0] == 0, (cmd, body)
cmd, body = recv()
assert cmd == LAZY and len(body) == 8, cmd
want = open(sys.argv[3], 'rb').read(4096)
send(GET, struct.pack('<QQ', 0, 4096) + b'')
cmd, body = recv()
assert cmd == DATA and body == want, ('root set', cmd)
send(GET, struct.pack('<QQ', 0, 4096) + b'proc-1')
cmd, body = recv()
assert cmd is None, ('proc-1 answered', cmd)
print('DONE')
PY
		{ show_file "client" "$T/py.out"; fail "the GETs were not answered as named"; }
	grep -q '^DONE' "$T/py.out" || fail "the client did not print DONE"
	exit_of "$LZPS_PID" 1 "dump --lazy-pages"
	grep -q "asked for the pages of proc-1: only the dump's own pages-1.img is served here" \
		"$T/lzps.out" || fail "the refusal does not name the set: $(tail -n2 "$T/lzps.out")"
	restore_and_pass "$T/src" 2
}
add lazy-page-server-get-set case_lazy_page_server_get_set

# CRIU's lazy dump over the RPC: a DUMP with lazy_pages, ps and status_fd (the client's
# fd 3, reopened) and notify_scripts: the status-ready NOTIFY and a zero byte on fd 3
# once the page server listens, the set whole on disk; the other side (the CLI) fetches
# the pages; the DUMP is answered with success once every byte is served.
case_lazy_rpc_dump() {
	start_prog t-pattern 64
	mkdir "$T/src" || fail "no dir"
	"$TESTSRC/rpc-client.py" "$MEMDUMP" DUMP images_dir="$T/src" pid="$PID" lazy_pages=true \
		ps=address:127.0.0.1,port:27396 status_fd=3 notify_scripts=true log_file=dump.log \
		3> "$T/status" > "$T/rpc.out" 2> "$T/rpc.err" < /dev/null &
	LZPS_PID=$!
	track "$LZPS_PID"
	wait_until "$OP_TIMEOUT" test -s "$T/status" ||
		{ show_file rpc "$T/rpc.out"; show_file dump.log "$T/src/dump.log"; fail "no byte on status_fd"; }
	[[ $(od -An -tx1 "$T/status") == " 00" ]] || fail "the status byte is not one zero"
	wait_line "$T/rpc.out" '^NOTIFY status-ready pid=' 5 || fail "no status-ready NOTIFY: $(cat "$T/rpc.out")"
	grep -q '^RESP' "$T/rpc.out" && fail "the DUMP was answered before its pages were served"
	expect_killed "$PID"
	lzps_other "$T/dst" 27396
	lazy_restore "$T/dst" 1 --lazy-socket "$T/dst/lazy-pages.socket"
	lazy_pass
	lazy_done 16384
	exit_of "$LZD_PID" 0 "the lazy-pages daemon"
	exit_of "$LZPS_PID" 0 "rpc-client's DUMP"
	grep -q '^RESP type=DUMP success=True' "$T/rpc.out" || fail "the DUMP response: $(grep '^RESP' "$T/rpc.out")"
	grep -q '^EXIT 0' "$T/rpc.out" || fail "memdump swrk: $(grep '^EXIT' "$T/rpc.out")"
	cmp -s "$T/src/pages-1.img" "$T/dst/pages-1.img" || fail "pages-1.img differs from the source's"
}
add lazy-rpc-dump case_lazy_rpc_dump

# lrc_start B ID [SCRIPT]: a counting busybox container ID of bundle B (PID its init),
# criu linked
lrc_start() {
	command -v runc > /dev/null && command -v busybox > /dev/null || return 1
	mkdir -p "$T/bin" && ln -sf "$MEMDUMP" "$T/bin/criu" || fail "cannot link criu"
	[[ -d $1 ]] || runc_bundle "$1" ${3:+"$3"}
	(cd "$1" && runc run -d "$2") < /dev/null > /dev/null 2>&1 || fail "runc run failed"
	PID=$(runc_ctr_state "$2" pid)
	[[ $PID -gt 1 ]] || fail "no container init"
	track "$PID"
	wait_until 10 eval '(( $(count_of '"$1"'/rootfs/tmp/count) >= 5 ))' || fail "the container does not count"
}

# lrc_restore_lazy BUNDLE DIR ID: runc restore -d --lazy-pages of DIR as ID, running
lrc_restore_lazy() {
	(cd "$1" && timeout -k 5 "$OP_TIMEOUT" runc --criu "$T/bin/criu" restore -d --lazy-pages \
		--image-path "$2" "$3") < /dev/null > "$T/rst.out" 2>&1 ||
		{ show_file restore.log "$2/restore.log"; fail "runc restore --lazy-pages failed: $(tail -n2 "$T/rst.out")"; }
	[[ $(runc_ctr_state "$3" status) == running ]] || fail "runc state: $(runc state "$3" 2>&1)"
}

# lrc_counts_on B N: the container of bundle B counts on past N, no gap and no repeat
lrc_counts_on() {
	wait_until 10 eval '(( $(count_of '"$1"'/rootfs/tmp/count) >= '"$(($2 + 5))"' ))' ||
		fail "the restored container does not count on from $2"
	local last; last=$(count_of "$1/rootfs/tmp/count")
	[[ $(head -n "$last" "$1/rootfs/tmp/count") == "$(seq 1 "$last")" ]] ||
		fail "the count has a gap or a repeat"
}

# `runc checkpoint --pre-dump --lazy-pages` (a PRE_DUMP with lazy_pages): refused by name
# in the log runc points to, before anything is touched; the container counts on. `runc
# restore --lazy-pages` (lazy_pages in the RESTORE request) of a plain checkpoint, no
# lazy-pages daemon in its work directory, is memdump's lazy restore: the container counts
# on from where it was, its memory served by the page handler.
case_lazy_runc() {
	local b=$T/bundle id0=memdump-lc$$ id=memdump-lr$$ n
	trap 'runc_cleanup '"$id0"'; runc_cleanup '"$id" EXIT
	lrc_start "$b" "$id0" || { note "no runc or busybox: skipped"; return 0; }
	(cd "$b" && timeout -k 5 "$OP_TIMEOUT" runc --criu "$T/bin/criu" checkpoint --pre-dump \
		--lazy-pages --page-server 127.0.0.1:27393 --image-path "$T/lazyimg" "$id0") \
		> "$T/ckpt-lazy.out" 2>&1 && fail "runc checkpoint --pre-dump --lazy-pages succeeded"
	note "runc checkpoint --pre-dump --lazy-pages: $(tail -n1 "$T/ckpt-lazy.out")"
	grep -q 'PRE_DUMP failed: .*lazy_pages (a pre-dump leaves no pages served' "$T/lazyimg/dump.log" ||
		{ show_file dump.log "$T/lazyimg/dump.log"; fail "the refusal does not name lazy_pages"; }
	[[ $(runc_ctr_state "$id0" status) == running ]] || fail "the container is $(runc_ctr_state "$id0" status) after the refusal"
	n=$(count_of "$b/rootfs/tmp/count")
	wait_until 10 eval '(( $(count_of '"$b"'/rootfs/tmp/count) >= '"$((n + 3))"' ))' ||
		fail "the container does not count on after the refusal"
	[[ -e $T/lazyimg/inventory.img ]] && fail "a refused lazy checkpoint left an inventory"
	(cd "$b" && timeout -k 5 "$OP_TIMEOUT" runc --criu "$T/bin/criu" checkpoint \
		--image-path "$T/img" "$id0") > "$T/ckpt.out" 2>&1 ||
		{ show_file dump.log "$T/img/dump.log"; fail "runc checkpoint failed: $(tail -n2 "$T/ckpt.out")"; }
	wait_until 5 eval '[[ ! -d /proc/'"$PID"' ]]' || fail "the container's init outlived the dump"
	n=$(count_of "$b/rootfs/tmp/count")
	lrc_restore_lazy "$b" "$T/img" "$id"
	grep -q 'lazy-pages: page handler [0-9]' "$T/img/restore.log" ||
		{ show_file restore.log "$T/img/restore.log"; fail "no page handler: not a lazy restore"; }
	lrc_counts_on "$b" "$n"
	wait_until "$OP_TIMEOUT" eval 'grep -q "lazy-pages: done: " '"$T"'/img/restore.log' ||
		fail "the page handler did not finish: $(grep lazy-pages "$T/img/restore.log" | tail -n2)"
}
add lazy-runc case_lazy_runc
case_limit lazy-runc 240

# runc's lazy migration over CRIU's RPC: `runc checkpoint --lazy-pages --page-server A:P
# --status-fd FD` (a DUMP with lazy_pages and ps) leaves the set whole on disk and serves
# its pages-1.img at A:P, saying so with a zero byte on FD (runc's, from memdump's
# status-ready NOTIFY). The "destination", a copy of the set without pages-1.img, runs
# `criu lazy-pages --page-server` (memdump through CRIU's command line) and `runc restore
# --lazy-pages`: the container counts on from where it stopped (its shell's memory came
# over the page server), the checkpoint returns 0 once every page is fetched, and the
# source container is gone.
case_lazy_runc_migrate() {
	local b=$T/bundle id0=memdump-lm$$ id=memdump-ln$$ n rd
	trap 'runc_cleanup '"$id0"'; runc_cleanup '"$id" EXIT
	# one process: it waits on a FIFO of its own, no `sleep` child (a tree is refused)
	lrc_start "$b" "$id0" 'exec > /tmp/count; busybox mkfifo /tmp/f; exec 3<> /tmp/f; i=0; while true; do i=$((i+1)); echo $i; read -t 0.1 x <&3; done' ||
		{ note "no runc or busybox: skipped"; return 0; }
	mkfifo "$T/status" || fail "no fifo"
	head -c1 "$T/status" > "$T/status.byte" &
	rd=$!
	(cd "$b" && exec timeout -k 5 "$OP_TIMEOUT" runc --criu "$T/bin/criu" checkpoint \
		--lazy-pages --page-server 127.0.0.1:27394 --status-fd 3 --image-path "$T/src" \
		"$id0" 3> "$T/status") < /dev/null > "$T/ckpt.out" 2>&1 &
	LZPS_PID=$!
	track "$LZPS_PID"
	wait_until "$OP_TIMEOUT" test -s "$T/status.byte" ||
		{ show_file dump.log "$T/src/dump.log"; fail "no byte on the status fd: $(tail -n2 "$T/ckpt.out")"; }
	[[ $(od -An -tx1 "$T/status.byte") == " 00" ]] || fail "the status byte is not a zero"
	wait "$rd"
	grep -q 'lazy dump: serving .*pages-1.img on 127.0.0.1:27394' "$T/src/dump.log" ||
		{ show_file dump.log "$T/src/dump.log"; fail "the dump does not say it serves"; }
	wait_until 5 eval '[[ ! -d /proc/'"$PID"' ]]' || fail "the container's init outlived the dump"
	n=$(count_of "$b/rootfs/tmp/count")
	cp -a "$T/src" "$T/dst" && rm "$T/dst/pages-1.img" "$T/dst/dump.log" || fail "cannot copy the set"
	"$T/bin/criu" lazy-pages --page-server --address 127.0.0.1 --port 27394 -D "$T/dst" \
		-o lazyd.log -v4 > "$T/lzd.out" 2>&1 < /dev/null &
	LZD_PID=$!
	track "$LZD_PID"
	wait_until 10 test -S "$T/dst/lazy-pages.socket" || fail "no daemon socket: $(cat "$T/lzd.out")"
	lrc_restore_lazy "$b" "$T/dst" "$id"
	grep -q "pages-1.img comes from the daemon's page server" "$T/dst/restore.log" ||
		{ show_file restore.log "$T/dst/restore.log"; fail "the restore did not take the daemon's page channel"; }
	lrc_counts_on "$b" "$n"
	exit_of "$LZD_PID" 0 "the lazy-pages daemon"
	exit_of "$LZPS_PID" 0 "runc checkpoint --lazy-pages"
	grep -q 'the lazy restore is done: \([0-9]*\) of \1 bytes served' "$T/src/dump.log" ||
		fail "the page server does not say every byte was served: $(tail -n1 "$T/src/dump.log")"
	cmp -s "$T/src/pages-1.img" "$T/dst/pages-1.img" || fail "pages-1.img differs from the source's"
	runc state "$id0" > /dev/null 2>&1 && fail "the source container $id0 is still there"
	[[ $(runc_ctr_state "$id" status) == running ]] || fail "the restored container stopped"
}
add lazy-runc-migrate case_lazy_runc_migrate
case_limit lazy-runc-migrate 240

# runc checkpoint --page-server A:P of a container (a tree: runc's init and
# its children) over the RPC: the pages go to the page server, the other
# images to --image-path; gathered there, runc restore brings the container
# back counting on from where it stopped
case_runc_page_server() {
	local b=$T/bundle id0=memdump-lp$$ id=memdump-lq$$ n
	trap 'runc_cleanup '"$id0"'; runc_cleanup '"$id" EXIT
	lrc_start "$b" "$id0" || { note "no runc or busybox: skipped"; return 0; }
	"$MEMDUMP" page-server -D "$T/ps" --address 127.0.0.1 --port 27395 --status-fd 3 \
		3> "$T/ps.status" > "$T/ps.out" 2>&1 < /dev/null &
	PSPID=$!
	track "$PSPID"
	wait_until "$OP_TIMEOUT" test -s "$T/ps.status" || fail "the page server does not listen: $(cat "$T/ps.out")"
	(cd "$b" && timeout -k 5 "$OP_TIMEOUT" runc --criu "$T/bin/criu" checkpoint \
		--page-server 127.0.0.1:27395 --image-path "$T/img" "$id0") < /dev/null > "$T/ckpt.out" 2>&1 ||
		{ show_file dump.log "$T/img/dump.log"; fail "runc checkpoint --page-server failed: $(tail -n2 "$T/ckpt.out")"; }
	n=$(count_of "$b/rootfs/tmp/count")
	wait "$PSPID" || fail "the page server failed: $(tail -n2 "$T/ps.out")"
	[[ -e $T/ps/pages-1.img ]] || fail "the page server holds no pages-1.img"
	[[ -e $T/img/pages-1.img ]] && fail "the pages went to --image-path, not to the page server"
	cp -an "$T/img/." "$T/ps/" || fail "cannot gather the set"
	"$MEMDUMP" verify -D "$T/ps" > "$T/verify.out" 2>&1 || fail "the gathered set does not verify: $(tail -n1 "$T/verify.out")"
	(cd "$b" && timeout -k 5 "$OP_TIMEOUT" runc --criu "$T/bin/criu" restore -d \
		--image-path "$T/ps" "$id") < /dev/null > "$T/rst.out" 2>&1 ||
		{ show_file restore.log "$T/ps/restore.log"; fail "runc restore failed: $(tail -n2 "$T/rst.out")"; }
	[[ $(runc_ctr_state "$id" status) == running ]] || fail "runc state: $(runc state "$id" 2>&1)"
	lrc_counts_on "$b" "$n"
}
add runc-page-server case_runc_page_server
case_limit runc-page-server 240

add lazy-big case_lazy_big
add lazy-threads case_lazy_threads
add lazy-tree case_lazy_tree
add lazy-fork case_lazy_fork
add lazy-madv case_lazy_madv
add lazy-handler-killed case_lazy_handler_killed
add lazy-keeper-killed case_lazy_keeper_killed
add lazy-thp case_lazy_thp
add lazy-rstfail case_lazy_rstfail
add lazy-image-gone case_lazy_image_gone
add lazy-wait case_lazy_wait
add lazy-corrupt case_lazy_corrupt
add lazy-block-damaged case_lazy_block_damaged
add lazy-oldset case_lazy_oldset
add lazy-compressed case_lazy_compressed
add lazy-check-late case_lazy_check_late

# pages_present PID ADDR NPAGES STRIDE: how many of the pages ADDR + k*STRIDE*4096
# (k < NPAGES/STRIDE) are in memory (/proc/PID/pagemap's bit 63)
pages_present() {
	python3 - "$@" <<'PY'
import struct, sys
pid, addr, n, stride = sys.argv[1], int(sys.argv[2], 0), int(sys.argv[3]), int(sys.argv[4])
with open(f"/proc/{pid}/pagemap", "rb") as f:
    c = 0
    for p in range(0, n, stride):
        f.seek((addr // 4096 + p) * 8)
        c += struct.unpack("<Q", f.read(8))[0] >> 63
print(c)
PY
}

# lazy_chain MB STRIDE: t-incr of MB MiB pre-dumped to $T/p1, 1 page in STRIDE
# rewritten, then dumped (killing) on it to $T/d2
lazy_chain() {
	start_prog t-incr "$1" "$2" keep
	pre_dump "$T/p1"
	incr_step
	dump "$PID" "$T/d2" --prev-images-dir ../p1
	expect_killed "$PID"
}

# a chain (pre-dump, a step that rewrites 1 page in 8, dump on it): the lazy
# fill takes the pages written since the pre-dump (the dump's own pages) first,
# then the rest in address order. The process is idle until the hot pass is
# over, so whatever is in by then the background put there: every rewritten
# page, and none of the others yet (the handler's count of pages left and its
# -v 4 log order); then every byte is checked
case_lazy_hot_first() {
	local mb=16 stride=8
	local pages=$(( mb * 256 )) hot=$(( mb * 256 / stride ))
	lazy_chain "$mb" "$stride"
	local addr=${READY[2]}
	expect_parent_entries "$T/d2"	# crit decodes the set: the record is the chain's own
	md show show -D "$T/d2" || fail "show failed: $(tail -n1 "$MD_ERR")"
	local shown; shown=$(sed -n 's/^hot  *\([0-9]*\) pages written since the parent set.*/\1/p' "$MD_OUT")
	[[ -n $shown ]] && (( shown >= hot )) || fail "show gives '$shown' hot pages, want at least $hot"
	MEMDUMP_LAZY_PACE_MS=5 lazy_restore "$T/d2" 1 -v 4
	local first
	first=$(grep -m1 "lazy-pages: $PID: [0-9]* hot pages first" "$LZ_LOG") ||
		{ show_file "log" "$LZ_LOG"; fail "no 'hot pages first' line"; }
	first=${first##*: }; first=${first%% *}
	(( first >= hot )) || fail "$first hot pages planned, want at least $hot (the rewritten ones)"
	wait_until "$OP_TIMEOUT" eval 'grep -q "lazy-pages: $PID: the hot pages are in" "$LZ_LOG"' ||
		{ show_file "log" "$LZ_LOG"; fail "the hot pass did not end"; }
	local line left n
	line=$(grep -m1 "lazy-pages: $PID: the hot pages are in" "$LZ_LOG")
	note "${line#*: lazy-pages: }"
	left=$(sed 's/.*are in (\([0-9]*\) pages left.*/\1/' <<< "$line")
	(( left >= pages - hot )) ||
		fail "$left pages left after the hot pass, want at least $(( pages - hot )): cold pages came first"
	n=$(pages_present "$PID" "$addr" "$pages" "$stride")
	(( n == hot )) || fail "$n of the $hot rewritten pages are in after the hot pass"
	lazy_pass
	lazy_done "$pages"
	# the log order: no address-order piece before the last hot piece
	local order; order=$(grep -o "lazy-pages: $PID: \(hot\|fill\) " "$LZ_LOG" | awk '{print $3}' | uniq | tr '\n' ' ')
	[[ $order =~ ^hot\ (fill\ )?$ ]] || fail "the pieces came in the order '$order', want the hot ones first"
}
add lazy-hot-first case_lazy_hot_first

# a chain (pre-dump, 1 page in 8 rewritten, dump on it) with MEMDUMP_LAZY_CHECK=late:
# the pre-dump's pages image is not read before anything runs (the region's run is
# used in pieces, 7 pages in 8); intact, the handler checks its runs whole and all is
# filled; damaged in the middle of that run, restored even so, then killed with
# verify's words naming the parent image and the run (before, refused up front)
case_lazy_chain_late() {
	local mb=16 stride=8
	lazy_chain "$mb" "$stride"
	local addr=${READY[2]}
	MEMDUMP_LAZY_CHECK=late lazy_restore "$T/d2" good
	local line late
	line=$(grep -m1 "lazy-pages: the chain's runs: " "$LZ_LOG") ||
		{ show_file "log" "$LZ_LOG"; fail "no plan of the chain's checks"; }
	note "${line#*: lazy-pages: }"
	late=$(sed 's/.*, \([0-9]*\) left to the page handler.*/\1/' <<< "$line")
	(( late >= mb * 256 )) || fail "$late pages of the chain left to the handler, want the region's $(( mb * 256 ))"
	lazy_pass
	lazy_done $(( mb * 256 ))
	lazy_damage "$T/p1/pages-1.img"
	MEMDUMP_LAZY_CHECK=late MEMDUMP_LAZY_PACE_MS=5 lazy_restore "$T/d2" bad
	wait_until "$OP_TIMEOUT" eval '! alive '"$PID" ||
		fail "pid $PID still alive with a damaged parent pages image"
	line=$(grep -m1 "lazy-pages: image parent/pages-1.img is corrupt: the pages of the run at 0x[0-9a-f]* ([0-9]* pages) do not match their checksum: killed the restored processes $PID" "$LZ_LOG") ||
		{ show_file "log" "$LZ_LOG"; fail "no message naming the parent image and its run"; }
	note "${line#*: lazy-pages: }"
	local run n
	run=$(sed 's/.*run at \(0x[0-9a-f]*\) (\([0-9]*\) pages).*/\1 \2/' <<< "$line")
	n=${run#* }; run=${run% *}
	(( run <= addr && run + n * 4096 >= addr + mb * 1048576 )) ||
		fail "the run named ($run, $n pages) is not the one of the region at $addr"
}
add lazy-chain-late case_lazy_chain_late

# CRIU's lazy migration of a tree (t-lazy tree: a child with threads, its own region and
# 32 MiB it shares copy-on-write with its parent): the other side's pages-1.img (the
# root's) is sparse; the memory the tree shares, which the restore premaps before the
# fork, is fetched and checked first, the rest lazily. Both processes check every byte
# (the child the shared region too); every byte served, pages-1.img the source's.
case_lazy_page_server_tree() {
	start_prog t-lazy tree 32
	local kids; kids=$(cat /proc/"$PID"/task/*/children | tr -d " \n")
	[[ -n $kids ]] || fail "t-lazy tree has no child"
	lzps_dump "$T/src" 27413
	lzps_other "$T/dst" 27413
	lazy_restore "$T/dst" 1 --lazy-socket "$T/dst/lazy-pages.socket"
	grep -q 'memory shared copy-on-write in the tree: [0-9]* MiB premapped' "$LZ_LOG" ||
		fail "nothing premapped: the case does not test the shared memory"
	grep -q "lazy-pages: [0-9]* pages of pages-1.img process $PID reads before anything runs" "$LZ_LOG" ||
		{ show_file "log" "$LZ_LOG"; fail "the shared memory was not fetched before the fork"; }
	alive "$kids" || fail "the child $kids was not restored"
	lazy_pass
	lazy_done 1
	exit_of "$LZD_PID" 0 "the lazy-pages daemon"
	exit_of "$LZPS_PID" 0 "dump --lazy-pages"
	grep -q 'the lazy restore is done: \([0-9]*\) of \1 bytes served' "$T/lzps.out" ||
		fail "the page server does not say every byte was served: $(tail -n1 "$T/lzps.out")"
	cmp -s "$T/src/pages-1.img" "$T/dst/pages-1.img" || fail "pages-1.img differs from the source's"
}
add lazy-page-server-tree case_lazy_page_server_tree
