# Process trees (src/dump/tree.c, treedump.c, src/restore/tree.c): PID and
# every live process below it dumped at one instant and restored with the
# same PIDs, parents, groups and sessions; what a tree dump cannot take is
# refused in one line naming each process, every process left running.

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

# tree_pids PID: PID and every process below it, parents first
tree_pids() {
	local c
	echo "$1"
	for c in $(tree_children "$1"); do tree_pids "$c"; done
}

# a shell's jobs: bash -c 'sleep & bash -c "sleep & sleep & wait" & wait', dumped
# (killed) and restored: same PIDs and parents; the shells reap their jobs
case_tree_jobs_rst() {
	bash -c 'sleep 300 & bash -c "sleep 301 & sleep 302 & wait; echo inner done" & wait; echo outer done' \
		< /dev/null > "$T/jobs.out" 2>&1 &
	PID=$!; track "$PID"
	wait_until 5 tree_has 4 "$PID" || fail "the job tree did not appear (4 processes below $PID)"
	local before after p
	before=$(for p in $(tree_pids "$PID"); do echo "$p $(proc_field "$p" PPid)"; done | sort)
	for p in $(tree_pids "$PID"); do track "$p"; done
	dump "$PID" "$T/d"
	grep -q "dumped process tree of $PID: 5 processes" "$MD_OUT" || fail "no tree summary: $(head -c 300 "$MD_OUT")"
	for p in $(echo "$before" | cut -d' ' -f1); do
		wait_until 5 eval '[[ ! -d /proc/'"$p"' ]]' || fail "process $p outlived the killing dump"
	done
	[[ $(ls -d "$T"/d/proc-* | wc -l) == 4 ]] || fail "not 4 process sets in $T/d: $(ls "$T/d")"
	md verify verify -D "$T/d" || fail "verify failed: $(cat "$MD_ERR")"
	grep -q "verified: 5 processes" "$MD_OUT" || fail "verify: $(cat "$MD_OUT")"
	restore_bg "$T/d" 1
	wait_until "$OP_TIMEOUT" eval '[[ $(tree_count '"$PID"') == 4 ]]' ||
		fail "the restored tree is not there: $(cat "$MD_ERR")"
	after=$(for p in $(tree_pids "$PID"); do echo "$p $(proc_field "$p" PPid)"; done | sort)
	# the root's parent is memdump now
	[[ $(echo "$before" | grep -v "^$PID ") == $(echo "$after" | grep -v "^$PID ") ]] ||
		fail "processes and parents differ: before [$before] after [$after]"
	for p in $(tree_pids "$PID"); do
		[[ $p == "$PID" ]] || [[ $(proc_field "$p" TracerPid) == 0 ]] || fail "$p is still traced"
	done
	for p in $(tree_pids "$PID"); do
		[[ $(cat /proc/"$p"/comm) == sleep ]] && kill "$p"
	done
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC, want the outer shell's 0"
	grep -q "inner done" "$T/jobs.out" && grep -q "outer done" "$T/jobs.out" ||
		fail "the restored shells did not finish their wait: $(cat "$T/jobs.out")"
}

# zombie_parent STMT EXIT: a python parent whose child runs STMT, exits with EXIT
# and stays its zombie; PID is the parent
zombie_parent() {
	command -p python3 -c 'import os, sys, time
if os.fork() == 0:
    exec(sys.argv[1])
    os._exit(int(sys.argv[2]))
time.sleep(300)' "$1" "$2" < /dev/null > /dev/null 2>&1 &
	PID=$!; track "$PID"
	wait_until 5 eval '[[ $(proc_state "$(tree_children '"$PID"')") == Z ]]' ||
		fail "no zombie child appeared"
}

# a zombie that made a session and left a live member of it outside the dump
# (its child, reparented away): the restored zombie could not lead that
# session again while the member holds it: refused
case_tree_refuse_zombie() {
	zombie_parent "os.setsid()
if os.fork() == 0:
    time.sleep(300)" 3
	local z g; z=$(tree_children "$PID")
	wait_until 5 eval '[[ -n $(ps -o pid= -s '"$z"' | grep -vw '"$z"') ]]' ||
		fail "no member of session $z"
	g=$(ps -o pid= -s "$z" | tr -d ' ' | grep -vx "$z" | head -1); track "$g"
	expect_dump_refused "$PID" "child process $z \(python3\) of $PID, a zombie leading session $z, whose member $g is not a live process of the dump"
	tree_untouched "$PID"
	[[ $(proc_state "$z") == Z ]] || fail "the zombie $z was reaped or changed"
}

# a zombie that leads a session of its own (t-zombiepg session): the
# restored parent makes it there again (setsid, then its exit)
case_tree_zombie_session() {
	start_prog t-zombiepg session
	local z=${READY[2]}
	dump "$PID" "$T/d"
	expect_killed "$PID"
	wait_until 5 eval '[[ ! -d /proc/'"$z"' ]]' || fail "zombie $z outlived its killed parent"
	restore_and_pass "$T/d" 1
}

# a zombie in a group of its own, or in one whose leader is gone (zdtm
# zombie01): the restored parent makes it there again (a stand-in with the
# leader's PID makes the group); t-zombiepg checks group and status
case_tree_zombie_pg() {
	start_prog t-zombiepg "$1"
	local z=${READY[2]} g=${READY[3]}
	dump "$PID" "$T/d"
	expect_killed "$PID"
	wait_until 5 eval '[[ ! -d /proc/'"$z"' ]]' || fail "zombie $z outlived its killed parent"
	restore_and_pass "$T/d" 1
	[[ -d /proc/$g ]] && [[ $g != "$z" ]] && fail "the group's stand-in $g is still there"
	return 0
}

# a zombie in a group that has a live member outside the dump: refused
case_tree_refuse_zombie_group() {
	command -p python3 -c 'import os, time; os.setpgid(0, 0); time.sleep(300)' \
		< /dev/null > /dev/null 2>&1 &
	local other=$!; track "$other"
	wait_until 5 eval '[[ $(awk "{print \$5}" /proc/'"$other"'/stat) == '"$other"' ]]' ||
		fail "the group leader $other did not make its group"
	zombie_parent "os.setpgid(0, $other)" 3
	local z; z=$(tree_children "$PID")
	[[ $(awk '{print $5}' "/proc/$z/stat") == "$other" ]] || fail "the zombie did not join group $other"
	expect_dump_refused "$PID" "child process $z \(python3\) of $PID, a zombie in process group $other, not its parent's"
	tree_untouched "$PID"
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

# a zombie with more supplementary groups than a core holds: refused by name
case_tree_refuse_zombie_creds() {
	zombie_parent "os.setgroups(list(range(1000, 1257)))" 0
	local z; z=$(tree_children "$PID")
	expect_dump_refused "$PID" "child process $z \(python3\) of $PID, a zombie with more than 256 supplementary groups \(Groups\)"
	tree_untouched "$PID"
}

# a zombie of another user than its root parent (zdtm helper_zombie_child):
# it comes back with its own ids and groups; t-zombiecred checks /proc and
# the si_uid and status waitid gives
case_tree_zombie_own_creds() {
	start_prog t-zombiecred
	local z=${READY[2]} k before=()
	for k in Uid Gid Groups; do before+=("$(proc_field "$z" "$k")"); done
	[[ ${before[0]} == "2001"*"2002"*"2003"*"2003" ]] || fail "zombie $z: Uid ${before[0]}"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	wait_until 5 eval '[[ ! -d /proc/'"$z"' ]]' || fail "zombie $z outlived its killed parent"
	crit_decodes "$T/d"
	if command -v crit > /dev/null; then
		crit show "$T/d/core-$z.img" | tr -d ' \n' | grep -q '"uid":2001,"gid":1001,"euid":2002' ||
			fail "core-$z.img does not hold the zombie's credentials"
	fi
	restore_bg "$T/d" 1
	wait_restored "$PID"
	local i=0
	for k in Uid Gid Groups; do
		[[ $(proc_field "$z" "$k") == "${before[i]}" ]] ||
			fail "zombie $z: $k $(proc_field "$z" "$k"), was ${before[i]}"
		i=$((i + 1))
	done
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC, want 0"
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
	expect_dump_refused "$PID" "child process $c \(h-leaderexit\) of $PID, whose main thread has exited"
	grep -q "a zombie" "$MD_ERR" && fail "$c, alive, was taken for a zombie"
	tree_untouched "$PID"
	[[ $(ls /proc/"$c"/task | wc -l) == 2 ]] || fail "$c lost its live thread"
}

# tree_snap PID...: the state of each process (statecmp), to compare after the restore
tree_snap() {
	local p
	for p in "$@"; do
		STATECMP_MERGE_ANON=1 "$TESTSRC/statecmp" snap "$p" "$T/state.before.$p" ||
			fail "statecmp snap $p failed"
	done
}

# tree_same LABEL PID...: each process shows what tree_snap recorded
tree_same() {
	local label=$1 p; shift
	for p in "$@"; do
		STATECMP_MERGE_ANON=1 "$TESTSRC/statecmp" snap "$p" "$T/state.after.$label.$p" ||
			fail "statecmp snap $p failed"
		if ! "$TESTSRC/statecmp" diff "$T/state.before.$p" "$T/state.after.$label.$p" \
			> "$T/state.diff.$label.$p"; then
			sed 's/^/#   /' "$T/state.diff.$label.$p" | head -n 40
			fail "restored state of $p differs: $(grep -m1 '^[-+][^-+]' "$T/state.diff.$label.$p")"
		fi
	done
	note "statecmp: $* as dumped"
}

# t-tree's processes after a restore: P A B G with their parents, B its own group
tree_shape_ok() {
	local p=$1 a=$2 b=$3 g=$4
	[[ $(proc_field "$a" PPid) == "$p" && $(proc_field "$b" PPid) == "$p" &&
	   $(proc_field "$g" PPid) == "$a" ]] ||
		fail "parents: A $(proc_field "$a" PPid) B $(proc_field "$b" PPid) G $(proc_field "$g" PPid)"
	[[ $(ps -o pgid= -p "$b" | tr -d ' ') == "$b" ]] || fail "B ($b) does not lead its group"
	[[ $(ps -o pgid= -p "$g" | tr -d ' ') == $(ps -o pgid= -p "$p" | tr -d ' ') ]] ||
		fail "G ($g) is not in P's group"
}

# the restored tree ends as t-tree says: every process "ok", then PASS, one after the other
tree_pass() {
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	local n
	for n in A B G; do
		grep -q "^ok $n" "$OUT" || fail "no 'ok $n' line: $(tail -c 300 "$OUT" | tr '\n' '|')"
	done
	[[ $(tail -n 5 "$OUT" | grep -c -E '^(ok [ABG]|PASS )') == 4 ]] ||
		fail "the lines of the shared stdout are garbled: $(tail -c 300 "$OUT" | tr '\n' '|')"
}

# restore $T/d (LABEL) and run the tree P A B G to its PASS
tree_restore_pass() {
	local label=$1
	shift
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" "$label"
	wait_restored "$1"
	tree_shape_ok "$@"
	tree_pass
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC, want 0"
}

# case_tree_prog MODE: t-tree dumped (killed) in MODE and restored twice
case_tree_prog() {
	local opts=()
	[[ $1 == default ]] || opts=(--mode "$1")
	start_prog t-tree
	local a=${READY[2]} b=${READY[3]} g=${READY[4]}
	track "$a"; track "$b"; track "$g"
	tree_snap "$PID" "$a" "$b" "$g"
	dump "$PID" "$T/d" "${opts[@]}"
	local p
	for p in "$PID" "$a" "$b" "$g"; do
		wait_until 5 eval '[[ ! -d /proc/'"$p"' ]]' || fail "process $p outlived the killing dump"
	done
	local label
	for label in 1 2; do
		truncate -s "$READY_SIZE" "$OUT"
		restore_bg "$T/d" "$label"
		wait_restored "$PID"
		tree_shape_ok "$PID" "$a" "$b" "$g"
		tree_same "$label" "$PID" "$a" "$b" "$g"
		tree_pass
		wait_restore_exit
		(( MD_RC == 0 )) || fail "restore exited with $MD_RC, want 0"
		wait_until 5 eval '[[ ! -d /proc/'"$a"' && ! -d /proc/'"$g"' ]]' || fail "A or G is left"
	done
}

# --leave-running: the tree runs on untouched, and its image restores
case_tree_prog_lr() {
	start_prog t-tree
	local a=${READY[2]} b=${READY[3]} g=${READY[4]}
	track "$a"; track "$b"; track "$g"
	dump "$PID" "$T/d" --leave-running
	tree_untouched "$PID" "$a" "$b" "$g"
	tree_shape_ok "$PID" "$a" "$b" "$g"
	tree_pass
	timeout_wait "$PID" || fail "t-tree exited with $? after PASS"
	wait_until 5 eval '[[ ! -d /proc/'"$a"' && ! -d /proc/'"$b"' && ! -d /proc/'"$g"' ]]' ||
		fail "a child of t-tree is left"
	tree_restore_pass 1 "$PID" "$a" "$b" "$g"
}

# a damaged image of a child: nothing of the tree starts
case_tree_corrupt() {
	start_prog t-tree
	local a=${READY[2]} b=${READY[3]} g=${READY[4]}
	track "$a"; track "$b"; track "$g"
	dump "$PID" "$T/d"
	wait_until 5 eval '[[ ! -d /proc/'"$g"' ]]' || fail "G outlived the killing dump"
	cp "$T/d/proc-$g/core-$g.img" "$T/core-g.good"
	printf 'X' | dd of="$T/d/proc-$g/core-$g.img" bs=1 seek=20 conv=notrunc status=none
	md rst-corrupt restore -D "$T/d"
	expect_md_error
	grep -q "proc-$g.*corrupt\|corrupt.*proc-$g\|core-$g.img is corrupt" "$MD_ERR" || fail "the error does not name proc-$g: $(cat "$MD_ERR")"
	for p in "$PID" "$a" "$b" "$g"; do alive "$p" && fail "process $p was started"; done
	cp "$T/core-g.good" "$T/d/proc-$g/core-$g.img"	# the same inode: its link beside the root's too
	rm -rf "$T/d/proc-$b"
	md rst-missing restore -D "$T/d"
	expect_md_error
	grep -q "proc-$b" "$MD_ERR" || fail "the error does not name proc-$b: $(cat "$MD_ERR")"
	return 0
}

# memory shared between processes of the tree (MAP_SHARED|MAP_ANONYMOUS before
# a fork): one object again after the restore, its content kept
SHM_TREE='import mmap, os, signal, struct, sys, time
m = mmap.mmap(-1, 4096, mmap.MAP_SHARED)
m[0:8] = struct.pack("Q", 0)
m[100:105] = b"hello"
usr1 = []
signal.signal(signal.SIGUSR1, lambda *a: usr1.append(1))
c = os.fork()
if c == 0:
    n = 0
    while struct.unpack("Q", m[8:16])[0] != 77:
        n += 1
        m[0:8] = struct.pack("Q", n)
        time.sleep(0.002)
    os._exit(0 if m[100:105] == b"hello" else 5)
while struct.unpack("Q", m[0:8])[0] < 10:
    time.sleep(0.01)
print("READY %d %d" % (os.getpid(), c), flush=True)
while not usr1:
    time.sleep(0.01)
a = struct.unpack("Q", m[0:8])[0]
time.sleep(0.1)
b = struct.unpack("Q", m[0:8])[0]
m[8:16] = struct.pack("Q", 77)
_, st = os.waitpid(c, 0)
print("PASS" if b > a and st == 0 else "FAIL counter %d -> %d, child status %d" % (a, b, st), flush=True)'

# py_pair_rst SCRIPT [ARG]: a python parent that prints "READY PID CHILD" once its
# child runs, dumped (killed) and restored; CHILD is its child again. Sets CHILD.
py_pair_rst() {
	OUT=$T/pair.out
	command -p python3 -c "$1" "${@:2}" < /dev/null > "$OUT" 2> "$T/pair.err" &
	PID=$!; track "$PID"
	wait_line "$OUT" "^READY " "$OP_TIMEOUT" || fail "the program did not start: $(cat "$T/pair.err")"
	CHILD=$(awk '/^READY/ { print $3 }' "$OUT"); track "$CHILD"
	READY_SIZE=$(stat -c %s "$OUT")
	dump "$PID" "$T/d"
	wait_until 5 eval '[[ ! -d /proc/'"$CHILD"' ]]' || fail "the child outlived the killing dump"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_until "$OP_TIMEOUT" eval '[[ $(proc_field '"$CHILD"' PPid) == '"$PID"' ]]' ||
		fail "the child was not restored: $(cat "$MD_ERR")"
	wait_until 5 eval '(( 0x$(proc_field '"$PID"' SigCgt) & (1 << 9) ))' || fail "no SIGUSR1 handler"
}

# py_pair_pass: SIGUSR1, PASS, restore exits 0
py_pair_pass() {
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}

case_tree_shared_mem() {
	py_pair_rst "$SHM_TREE"
	local ino_p ino_c
	ino_p=$(grep -m1 "/dev/zero (deleted)" /proc/"$PID"/maps | awk '{ print $5 }')
	ino_c=$(grep -m1 "/dev/zero (deleted)" /proc/"$CHILD"/maps | awk '{ print $5 }')
	[[ -n $ino_p && $ino_p == "$ino_c" ]] || fail "not one object: inode $ino_p in $PID, $ino_c in $CHILD"
	py_pair_pass
}

# ns_pids PID: "host-pid ns-pid" of PID and every process below it
ns_pids() {
	local p
	for p in $(tree_pids "$1"); do echo "$p $(proc_field "$p" NSpid | awk '{ print $NF }')"; done | sort
}

# case_tree_pidns [UNSHARE OPTIONS]: t-tree as the init of a PID namespace of its
# own (unshare --pid --fork), dumped and restored: every process keeps the PID
# it sees and the one memdump sees, the namespaces the options made kept too
case_tree_pidns() {
	OUT=$T/pidns.out
	# the inner unshare (no --fork) execs: the namespaces it makes are t-tree's alone
	unshare --pid --fork --kill-child sh -c 'exec unshare "$@"' sh "$@" sh -c \
		'hostname tree-ns 2> /dev/null; ipcmk -M 8192 > /dev/null 2>&1; exec "$0" "$1"' \
		"$TESTBIN/t-tree" "$T" > "$OUT" 2> /dev/null < /dev/null &
	local u=$!; track "$u"
	wait_line "$OUT" "^READY " "$OP_TIMEOUT" || fail "t-tree did not start"
	read -r -a READY < <(grep -m1 '^READY ' "$OUT")
	[[ ${READY[1]} == 1 ]] || fail "t-tree is not the init of its namespace: ${READY[*]}"
	READY_SIZE=$(stat -c %s "$OUT")
	PID=$(tree_children "$u"); track "$PID"
	local before after p uts
	before=$(ns_pids "$PID")
	[[ $(echo "$before" | wc -l) == 4 ]] || fail "not 4 processes: $before"
	for p in $(tree_pids "$PID"); do track "$p"; done
	uts=$(readlink /proc/"$PID"/ns/uts)
	dump "$PID" "$T/d"
	wait "$u" 2> /dev/null
	for p in $(echo "$before" | cut -d' ' -f1); do
		wait_until 5 eval '[[ ! -d /proc/'"$p"' ]]' || fail "process $p outlived the killing dump"
	done
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_until "$OP_TIMEOUT" eval '[[ $(tree_count '"$PID"') == 3 ]]' ||
		fail "the restored tree is not there: $(cat "$MD_ERR")"
	after=$(ns_pids "$PID")
	[[ $before == "$after" ]] || fail "PIDs differ: before [$before] after [$after]"
	[[ $(readlink /proc/"$PID"/ns/pid) != "$(readlink /proc/self/ns/pid)" ]] ||
		fail "the restored tree is in memdump's PID namespace"
	if [[ " $* " == *" --uts "* ]]; then
		[[ $(nsenter -u -t "$PID" hostname) == tree-ns ]] ||
			fail "the host name is $(nsenter -u -t "$PID" hostname), not tree-ns"
		[[ $(readlink /proc/"$PID"/ns/uts) != "$(readlink /proc/self/ns/uts)" ]] ||
			fail "the restored tree is in memdump's UTS namespace"
	fi
	for p in $(tree_pids "$PID"); do
		[[ $(readlink /proc/"$p"/ns/pid) == "$(readlink /proc/"$PID"/ns/pid)" ]] ||
			fail "process $p is in another PID namespace than the init"
	done
	if [[ " $* " == *" --mount-proc"* ]]; then
		local seen; seen=$(nsenter -t "$PID" -m ls /proc | grep -c '^[0-9]')
		(( seen == 4 )) || fail "the restored tree sees $seen processes in its /proc, not its 4"
		[[ $(readlink /proc/"$PID"/ns/mnt) != "$(readlink /proc/self/ns/mnt)" ]] ||
			fail "the restored tree is in memdump's mount namespace"
	fi
	if [[ " $* " == *" --ipc "* ]]; then
		nsenter -t "$PID" -i ipcs -m | grep -q " 8192 " ||
			fail "the System V segment is gone: $(nsenter -t "$PID" -i ipcs -m)"
	fi
	wait_until 5 eval '(( 0x$(proc_field '"$PID"' SigCgt) & (1 << 9) ))' || fail "no SIGUSR1 handler"
	tree_pass
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC, want 0"
	note "uts namespace at the dump: $uts"
}

# a process of a PID namespace that is not its init: refused by name
case_tree_pidns_refuse() {
	unshare --pid --fork --kill-child sh -c 'sleep 300 & wait' < /dev/null > /dev/null 2>&1 &
	local u=$!; track "$u"
	wait_until 5 tree_has 2 "$u" || fail "the namespace's processes did not appear"
	local init sl; init=$(tree_children "$u"); sl=$(tree_children "$init")
	track "$init"; track "$sl"
	PID=$sl
	md refuse dump -t "$sl" -D "$T/d"
	expect_md_error
	grep -q "process $sl is in a PID namespace of which it is not the init" "$MD_ERR" ||
		fail "the refusal does not say why: $(cat "$MD_ERR")"
	tree_untouched "$init" "$sl"
}

# real programs' trees, dumped mid-run (killed) and restored: they finish with
# the output of an uninterrupted run
# make -j2 on 30 targets (sleep, echo): make, its shells and their sleeps
case_tree_real_make() {
	mkdir -p "$T/mk"
	cat > "$T/mk/Makefile" <<'MK'
N := $(shell seq 1 30)
all: $(addprefix a,$(N))
	@echo all done
a%:
	@sleep 0.2; echo $@ > $@
MK
	# not a sub-make of the one that may run the tests (make test): its own jobserver
	(cd "$T/mk" && exec env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -j2) \
		> "$T/make.out" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_until 10 eval '(( $(ls '"$T"'/mk/a* 2> /dev/null | wc -l) >= 6 ))' || fail "make did not start"
	wait_until 5 tree_has 4 "$PID" || fail "make has not two jobs running"
	local p; for p in $(tree_pids "$PID"); do track "$p"; done
	dump "$PID" "$T/d"
	expect_killed "$PID"
	local made; made=$(ls "$T"/mk/a* | wc -l)
	(( made < 30 )) || fail "make had finished before the dump"
	note "dumped after $made targets"
	restore_bg "$T/d" 1
	wait_restore_exit
	(( MD_RC == 0 )) || fail "the restored make exited with $MD_RC: $(cat "$T/make.out")"
	[[ $(ls "$T"/mk/a* | wc -l) == 30 ]] || fail "not every target was made"
	for p in $(seq 1 30); do
		[[ $(cat "$T/mk/a$p") == "a$p" ]] || fail "target a$p holds $(cat "$T/mk/a$p")"
	done
	[[ $(cat "$T/make.out") == "all done" ]] || fail "make printed: $(cat "$T/make.out")"
}

# python's subprocess.run on a shell loop: the parent waits, the child counts on
case_tree_real_subprocess() {
	command -p python3 -u -c 'import subprocess, sys
r = subprocess.run(["sh", "-c", "i=0; while [ $i -lt 40 ]; do i=$((i+1)); echo $i; sleep 0.05; done"])
print("exit", r.returncode)' > "$T/sub.out" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_until 10 eval '(( $(grep -c . '"$T"'/sub.out) >= 5 ))' || fail "the loop did not start"
	local p; for p in $(tree_pids "$PID"); do track "$p"; done
	dump "$PID" "$T/d"
	expect_killed "$PID"
	local last; last=$(tail -n1 "$T/sub.out")
	note "dumped after $last"
	restore_bg "$T/d" 1
	wait_restore_exit
	(( MD_RC == 0 )) || fail "the restored python exited with $MD_RC"
	[[ $(cat "$T/sub.out") == "$(seq 1 40; echo exit 0)" ]] ||
		fail "the output is not an uninterrupted run's: $(tr '\n' ' ' < "$T/sub.out")"
}

# a socketpair made before a fork, one end in each process (stream and
# datagram): one pair again after the restore, talking
SKP_TREE='import os, signal, socket, sys, time
kind = socket.SOCK_DGRAM if sys.argv[1] == "dgram" else socket.SOCK_STREAM
a, b = socket.socketpair(socket.AF_UNIX, kind)
usr1 = []
signal.signal(signal.SIGUSR1, lambda *x: usr1.append(1))
c = os.fork()
if c == 0:
    a.close()
    while True:
        d = b.recv(100)
        if not d or d == b"end":
            os._exit(0)
        b.send(d.upper())
b.close()
def ping(m):
    a.send(m)
    return a.recv(100)
if ping(b"x") != b"X":
    sys.exit(2)
print("READY %d %d" % (os.getpid(), c), flush=True)
while not usr1:
    time.sleep(0.01)
r = ping(b"after")
a.send(b"end")
_, st = os.waitpid(c, 0)
print("PASS" if r == b"AFTER" and st == 0 else "FAIL %r %d" % (r, st), flush=True)'

# a FIFO two processes opened each on their own, bytes queued in it: the same
# FIFO after the restore, its bytes there once
FIFO_TREE='import os, signal, sys, time
p = sys.argv[1]
os.mkfifo(p)
fd = os.open(p, os.O_RDWR | os.O_NONBLOCK)
os.write(fd, b"abc")
usr1 = []
signal.signal(signal.SIGUSR1, lambda *x: usr1.append(1))
c = os.fork()
if c == 0:
    os.close(fd)
    mine = os.open(p, os.O_RDWR | os.O_NONBLOCK)
    while True:
        time.sleep(1)
time.sleep(0.2)
print("READY %d %d" % (os.getpid(), c), flush=True)
while not usr1:
    time.sleep(0.01)
got = os.read(fd, 100)
os.kill(c, 9)
os.waitpid(c, 0)
print("PASS" if got == b"abc" else "FAIL the FIFO holds %r" % got, flush=True)'

case_tree_fifo() {
	py_pair_rst "$FIFO_TREE" "$T/fifo"
	py_pair_pass
}

case_tree_socketpair() {
	py_pair_rst "$SKP_TREE" "$1"
	py_pair_pass
}

# nginx with a master and two workers (a listening socket, shared memory and a
# socketpair channel each between them): dumped (killed), restored, serving,
# and its master still reloads (new workers through the restored channels)
case_tree_real_nginx() {
	command -v nginx > /dev/null || { note "no nginx: skipped"; return 0; }
	local port=$((20000 + $$ % 20000)) d=$T/ngx i
	mkdir -p "$d/logs" "$d/html"
	echo "hello from memdump" > "$d/html/index.html"
	cat > "$d/nginx.conf" <<NGX
user root;
worker_processes 2;
daemon off;
master_process on;
pid $d/nginx.pid;
error_log $d/logs/error.log;
events { worker_connections 64; }
http {
	access_log off;
	server { listen 127.0.0.1:$port; root $d/html; }
}
NGX
	nginx -c "$d/nginx.conf" -p "$d" < /dev/null > "$d/out" 2>&1 &
	PID=$!; track "$PID"
	wait_until 5 tree_has 2 "$PID" || fail "nginx has not two workers"
	local before; before=$(tree_pids "$PID" | sort)
	for i in $before; do track "$i"; done
	wait_until 10 eval 'curl -sf -m 1 http://127.0.0.1:'"$port"'/ > /dev/null' || fail "nginx does not serve"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	curl -sf -m 1 "http://127.0.0.1:$port/" > /dev/null && fail "nginx still serves after the dump"
	restore_bg "$T/d" 1
	wait_until "$OP_TIMEOUT" eval 'curl -sf -m 1 http://127.0.0.1:'"$port"'/ > /dev/null' ||
		fail "the restored nginx does not serve: $(cat "$MD_ERR")"
	[[ $(tree_pids "$PID" | sort) == "$before" ]] || fail "not the same processes: $(tree_pids "$PID")"
	for i in 1 2 3 4 5 6; do
		[[ $(curl -sf -m 2 "http://127.0.0.1:$port/") == "hello from memdump" ]] ||
			fail "request $i to the restored nginx failed"
	done
	kill -HUP "$PID"
	wait_until 10 eval '[[ $(tree_pids '"$PID"' | sort) != "$before" ]] && tree_has 2 '"$PID" ||
		fail "the restored master did not reload its workers: $(tail -n3 "$d/logs/error.log")"
	[[ $(curl -sf -m 2 "http://127.0.0.1:$port/") == "hello from memdump" ]] ||
		fail "the reloaded nginx does not serve"
	kill -QUIT "$PID"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "nginx exited with $MD_RC"
}

# python multiprocessing: a Process feeding a Queue (a pipe, and semaphores in
# an unlinked /dev/shm file both processes map: one file again after the
# restore), dumped mid-run and restored, every item in order
case_tree_real_multiprocessing() {
	command -p python3 -c 'import multiprocessing as mp, time
def work(q):
    for i in range(100):
        q.put(i); time.sleep(0.02)
if __name__ == "__main__":
    mp.set_start_method("fork")
    q = mp.Queue()
    p = mp.Process(target=work, args=(q,)); p.start()
    got = [q.get() for _ in range(100)]
    p.join()
    print("ok" if got == list(range(100)) and p.exitcode == 0 else "bad %r" % got, flush=True)' \
		< /dev/null > "$T/mp.out" 2>&1 &
	PID=$!; track "$PID"
	wait_until 5 tree_has 1 "$PID" || fail "no worker process appeared"
	local c; c=$(tree_children "$PID"); track "$c"
	sleep 0.3
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_bg "$T/d" 1
	wait_restore_exit
	(( MD_RC == 0 )) || fail "the restored program exited with $MD_RC: $(cat "$T/mp.out")"
	[[ $(cat "$T/mp.out") == ok ]] || fail "the restored program printed: $(cat "$T/mp.out")"
}

add tree-jobs-rst case_tree_jobs_rst
add tree-rst-default case_tree_prog default
add tree-rst-read case_tree_prog read
add tree-rst-mem case_tree_prog mem
add tree-lr case_tree_prog_lr
add tree-corrupt case_tree_corrupt
add tree-shared-mem case_tree_shared_mem
add tree-socketpair-stream case_tree_socketpair stream
add tree-socketpair-dgram case_tree_socketpair dgram
add tree-fifo case_tree_fifo
add tree-pidns case_tree_pidns
add tree-real-make case_tree_real_make
add tree-real-nginx case_tree_real_nginx
add tree-real-multiprocessing case_tree_real_multiprocessing
add tree-real-subprocess case_tree_real_subprocess
add tree-pidns-ns case_tree_pidns --uts --ipc --net
add tree-pidns-all case_tree_pidns --mount --mount-proc=/proc --uts --ipc --net
add tree-pidns-refuse case_tree_pidns_refuse

# t-procfile as the init of a PID namespace with its own /proc: the /proc
# files it holds of its child name the child's PID in the namespace (2, which
# is another process outside: kthreadd); restore takes them for the set's and
# the restored process opens them in its own /proc (zdtm shm, ns flavour)
case_tree_pidns_procfile() {
	OUT=$T/procfile.out
	# the inner unshare execs: the mount namespace is t-procfile's alone
	unshare --pid --fork --kill-child sh -c 'exec unshare --mount --mount-proc=/proc "$0" "$1"' \
		"$TESTBIN/t-procfile" "$T" > "$OUT" 2> /dev/null < /dev/null &
	local u=$!; track "$u"
	wait_line "$OUT" "^READY " "$OP_TIMEOUT" || fail "t-procfile did not start"
	READY_SIZE=$(stat -c %s "$OUT")
	PID=$(tree_children "$u"); track "$PID"
	track "$(tree_children "$PID")"
	dump "$PID" "$T/d"
	wait "$u" 2> /dev/null
	restore_and_pass "$T/d" 1
}
add tree-pidns-procfile case_tree_pidns_procfile

# PROG (t-procgone, t-proccwd) as the init of a PID namespace with its own
# /proc: fds on /proc files of its reaped child, or its cwd in the child's /proc
# directory (zdtm remap_dead_pid, remap_dead_pid_root, unhashed_proc in the ns
# flavour); the restored init makes a stand-in of the child's PID in the new
# namespace while it opens them or changes into it, and reaps it: PROG checks
# links, modes, owners and the dead directory as it sees them
case_tree_pidns_gone() {
	OUT=$T/gone.out
	unshare --pid --fork --kill-child sh -c 'exec unshare --mount --mount-proc=/proc "$@"' sh \
		"$TESTBIN/$1" "$T" "${@:2}" > "$OUT" 2> /dev/null < /dev/null &
	local u=$!; track "$u"
	wait_line "$OUT" "^READY " "$OP_TIMEOUT" || fail "$1 did not start"
	READY_SIZE=$(stat -c %s "$OUT")
	PID=$(tree_children "$u"); track "$PID"
	dump "$PID" "$T/d"
	wait "$u" 2> /dev/null
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add tree-pidns-procgone case_tree_pidns_gone t-procgone
add tree-pidns-proccwd case_tree_pidns_gone t-proccwd
# the cwd inherited by a second child: each restored process its own stand-in, in turn
add tree-pidns-proccwd-tree case_tree_pidns_gone t-proccwd tree

# host view of a tree: "pid ppid pgid sid" of each process, sorted (the root's
# parent left out: unshare's, then memdump's)
tree_ids() {
	local p
	for p in $(tree_pids "$1"); do
		awk '{ sub(/^.*\) /, ""); print "'"$p"'", ("'"$p"'" == "'"$1"'" ? "-" : $2), $3, $4 }' \
			/proc/"$p"/stat
	done | sort
}

# pidns_dump_restore UNSHARE N: the tree of PID (the init of the PID namespace
# UNSHARE made) dumped, killed with it, restored; N processes below PID again
pidns_dump_restore() {
	dump "$PID" "$T/d"
	wait "$1" 2> /dev/null
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	wait_until "$OP_TIMEOUT" eval '[[ $(tree_count '"$PID"') == '"$2"' ]]' ||
		fail "the restored tree is not there: $(cat "$MD_ERR")"
}

# t-sessions as the init of a PID namespace: sessions whose leader is dead
# (a child of the init in it), a child of the init in a live leader's session,
# a process in the session its parent left by setsid, a group whose leader is
# dead, one whose leader is in another branch; restored with every process's
# session, group and parent (t-sessions checks them as the init sees them, the
# case as memdump sees them)
case_tree_pidns_sessions() {
	OUT=$T/sessions.out
	unshare --pid --fork --kill-child "$TESTBIN/t-sessions" "$T" > "$OUT" 2> /dev/null \
		< /dev/null &
	local u=$!; track "$u"
	wait_line "$OUT" "^READY " "$OP_TIMEOUT" || fail "t-sessions did not start: $(cat "$OUT")"
	READY_SIZE=$(stat -c %s "$OUT")
	PID=$(tree_children "$u"); track "$PID"
	local before after p
	for p in $(tree_pids "$PID"); do track "$p"; done
	before=$(tree_ids "$PID")
	[[ $(echo "$before" | wc -l) == 9 ]] || fail "not 9 processes: $before"
	pidns_dump_restore "$u" 8
	after=$(tree_ids "$PID")
	[[ $before == "$after" ]] ||
		fail "ids differ: before [$(tr '\n' ';' <<< "$before")] after [$(tr '\n' ';' <<< "$after")]"
	pass_restored
}
add tree-pidns-sessions case_tree_pidns_sessions

# tree_ids_rel PID: tree_ids, the root's group (memdump's at restore, which
# its children share) shown as R
tree_ids_rel() {
	tree_ids "$1" | awk 'NR == FNR { if ($2 == "-") g = $3; next } { if ($3 == g) $3 = "R"; print }' \
		- <(tree_ids "$1")
}

# a zombie leading the session of a live process (zdtm zombie_leader, ns
# flavour; t-zombiepg leader as a PID namespace's init): its child A's zombie
# Z made a session, forked G in it and exited; G fell to the init. At restore
# A forks Z, Z forks G and exits unreaped (task/sessions.c, SK_ZOMBIE): the
# same parents, groups and sessions, Z's status (t-zombiepg checks in A)
case_tree_zombie_leader() {
	pidns_prog t-zombiepg leader
	local before; before=$(tree_ids_rel "$PID")
	[[ $(echo "$before" | wc -l) == 4 ]] || fail "not 4 processes (init, A, its zombie, G): $before"
	pidns_dump_restore "$PIDNS_U" 3
	[[ $(tree_ids_rel "$PID") == "$before" ]] ||
		fail "ids differ: before [$(tr '\n' ';' <<< "$before")] after [$(tree_ids_rel "$PID" | tr '\n' ';')]"
	pass_restored
}
add tree-zombie-leader case_tree_zombie_leader

# the same tree, its restore's memdump SIGKILLed once the tree is forked (the
# zombie leader made, its member forked by it): nothing of the tree is left,
# and the next restore gives it back whole
case_tree_zombie_leader_killed() {
	pidns_prog t-zombiepg leader
	local before md hosts; before=$(tree_ids_rel "$PID")
	dump "$PID" "$T/d"
	wait "$PIDNS_U" 2> /dev/null
	MEMDUMP_FAULT=rst-forked restore_bg "$T/d" killed
	wait_line "$MD_ERR" "fault point rst-forked: " "$OP_TIMEOUT" ||
		fail "the restore did not reach rst-forked: $(cat "$MD_ERR")"
	# the processes below the init fork their own while the root stalls there
	wait_until 5 eval '[[ $(tree_count '"$PID"') == 3 ]]' ||
		fail "the tree was not forked: $(tree_ids "$PID")"
	hosts=$(tree_pids "$PID")	# the init, A, the zombie leader, its member
	md=$(pgrep -P "$RPID" -x memdump | head -n1)
	[[ -n $md ]] || fail "no memdump below timeout $RPID"
	kill -9 "$md"
	rstfail_wait_exit
	# shellcheck disable=SC2086 # one PID a word
	rstfail_gone $hosts
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	wait_until "$OP_TIMEOUT" eval '[[ $(tree_count '"$PID"') == 3 ]]' ||
		fail "the restored tree is not there: $(cat "$MD_ERR")"
	[[ $(tree_ids_rel "$PID") == "$before" ]] ||
		fail "ids differ after the second restore: $(tree_ids_rel "$PID" | tr '\n' ';')"
	pass_restored
}
add tree-zombie-leader-killed case_tree_zombie_leader_killed

# a child subreaper (no PID namespace) with a child in the session of a dead
# process: no helper could give it that session and the root as parent again:
# refused by name, the tree running on untouched
case_tree_sessions_refuse() {
	start_prog t-sessions subreaper
	local y=${READY[2]}; track "$y"
	md refuse dump -t "$PID" -D "$T/d"
	expect_md_error
	no_inventory "$T/d"
	grep -q "process $y is in session [0-9]*, which restore cannot give it: it was reparented" \
		"$MD_ERR" || fail "the refusal does not say why: $(cat "$MD_ERR")"
	alive "$y" || fail "Y is gone after the refused dump"
	check_child_pass
}
add tree-sessions-refuse case_tree_sessions_refuse

# far_pids: N, with no process of this machine at N+1 .. N+8 (below pid_max)
far_pids() {
	local n k max; max=$(cat /proc/sys/kernel/pid_max)
	for ((n = max - 400; n > 1000; n -= 50)); do
		for ((k = 1; k <= 8; k++)); do [[ -d /proc/$((n + k)) ]] && break; done
		(( k > 8 )) && { echo "$n"; return 0; }
	done
	return 1
}

# pidns_prog PROG [ARGS]: PROG as the init of a PID namespace with its own
# /proc, whose next PIDs there (its children's) are no PIDs memdump sees;
# PID is its PID outside
pidns_prog() {
	local base; base=$(far_pids) || fail "no free run of PIDs"
	OUT=$T/pidns.out
	unshare --pid --fork --kill-child sh -c 'exec unshare --mount --mount-proc=/proc sh -c '\''
		echo "$0" > /proc/sys/kernel/ns_last_pid && exec "$@"'\'' "$0" "$@"' "$base" \
		"$TESTBIN/$1" "$T" "${@:2}" > "$OUT" 2> /dev/null < /dev/null &
	PIDNS_U=$!; track "$PIDNS_U"
	wait_line "$OUT" "^READY " "$OP_TIMEOUT" || fail "$1 did not start"
	read -r -a READY < <(grep -m1 '^READY ' "$OUT")
	[[ ${READY[1]} == 1 ]] || fail "$1 is not the init of its namespace: ${READY[*]}"
	READY_SIZE=$(stat -c %s "$OUT")
	PID=$(tree_children "$PIDNS_U"); track "$PID"
	local p; for p in $(tree_pids "$PID"); do track "$p"; done
	PIDNS_BASE=$base
}

# pidns_restore_same BEFORE: $T/d restored; the tree's PIDs (ns_pids) are BEFORE again,
# and the program passes and exits 0
pidns_restore_same() {
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	[[ $(ns_pids "$PID") == "$1" ]] ||
		fail "PIDs differ: before [$1] after [$(ns_pids "$PID")]"
	pass_restored
}

# pidfds, SIGIO owners and /proc files of processes of a PID namespace, held
# in it (zdtm pidfd_*, file_lease*, child_opened_proc in the ns flavour): the
# images name them by their PIDs there, the restored processes open them there
case_tree_pidns_fd() {
	local prog=$1 before
	pidns_prog "$@"
	[[ $prog == t-fown ]] || (( READY[2] > PIDNS_BASE )) ||
		fail "the child's PID in the namespace is ${READY[2]}, not above $PIDNS_BASE"
	before=$(ns_pids "$PID")
	dump "$PID" "$T/d"
	wait "$PIDNS_U" 2> /dev/null
	crit_decodes "$T/d"
	if [[ $prog == t-fown ]] && command -v crit > /dev/null; then
		crit show "$T/d/files.img" > "$T/files.json" || fail "crit cannot decode files.img"
		grep -qE '"pid": 1,?$' "$T/files.json" && ! grep -qE "\"pid\": $PID,?\$" "$T/files.json" ||
			fail "the owners in files.img are not named by the PID in the namespace (1)"
	fi
	pidns_restore_same "$before"
}
add tree-pidns-pidfd case_tree_pidns_fd t-pidfd
add tree-pidns-fown case_tree_pidns_fd t-fown
add tree-pidns-procchild case_tree_pidns_fd t-procfile
# zombies of a PID namespace's init, in its group: forked again with both PIDs
add tree-pidns-zombie case_tree_pidns_fd t-zombie
# a zombie in a group of its own, and one in a group whose leader is gone (a
# stand-in leader made in the namespace with both PIDs): zdtm zombie01, ns
add tree-pidns-zombie-pg-own case_tree_pidns_fd t-zombiepg own
add tree-pidns-zombie-pg-dead case_tree_pidns_fd t-zombiepg dead

# a zombie of a PID namespace's init in a session whose leader is gone (its
# parent made the session, forked it, and exited: zdtm helper_zombie_child):
# a stand-in leader makes the session again, forks it and exits, the zombie
# falls to the init; same PIDs, session, group and status
case_tree_pidns_zombie_session() {
	OUT=$T/zs.out
	unshare --pid --fork --kill-child sh -c 'exec unshare --mount --mount-proc=/proc "$@"' sh \
		python3 -c '
import os, signal, time
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
r, w = os.pipe()
c = os.fork()
if c == 0:
    os.setsid()
    z = os.fork()
    if z == 0:
        os._exit(5)
    os.waitid(os.P_PID, z, os.WEXITED | os.WNOWAIT)
    os.write(w, b"%d" % z)
    os._exit(0)
os.waitpid(c, 0)
z = int(os.read(r, 32))
def stat():
    return open("/proc/%d/stat" % z).read().rsplit(")", 1)[1].split()[:4]
while stat()[1] != "1":
    time.sleep(0.01)
print("READY", os.getpid(), z, c, flush=True)
while not got:
    signal.pause()
st = stat()
pid, status = os.waitpid(z, 0)
ok = st == ["Z", "1", str(c), str(c)] and os.waitstatus_to_exitcode(status) == 5
print("PASS" if ok else "FAIL %r %#x" % (st, status), flush=True)' > "$OUT" 2> /dev/null < /dev/null &
	local u=$!; track "$u"
	wait_line "$OUT" "^READY " "$OP_TIMEOUT" || fail "the program did not start"
	READY_SIZE=$(stat -c %s "$OUT")
	PID=$(tree_children "$u"); track "$PID"
	local before; before=$(ns_pids "$PID")
	[[ $(echo "$before" | wc -l) == 2 ]] || fail "not an init and its zombie: $before"
	dump "$PID" "$T/d"
	wait "$u" 2> /dev/null
	pidns_restore_same "$before"
}
add tree-pidns-zombie-session case_tree_pidns_zombie_session

# what is left refused in a PID namespace, by name: a pidfd and a SIGIO owner
# of a process outside it (this shell), taken before the namespace was made;
# the init of the namespace is left running, untraced
case_tree_pidns_outside() {
	start_py pidnsout '
import ctypes, fcntl, os, signal, sys, time
out = os.getppid()
pfd = os.pidfd_open(out)
r, w = os.pipe()
fcntl.fcntl(r, fcntl.F_SETOWN, out)
if ctypes.CDLL(None, use_errno=True).unshare(0x20000000):
    sys.exit("unshare(CLONE_NEWPID) failed")
c = os.fork()
if c == 0:
    os.dup2(pfd, 20); os.dup2(r, 21)
    time.sleep(120); os._exit(0)
print("READY", c, out, flush=True)
os.waitpid(c, 0)'
	local init out
	read -r _ init out < <(grep -m1 '^READY ' "$OUT")
	track "$init"
	[[ $(proc_field "$init" NSpid | awk '{ print $NF }') == 1 ]] || fail "$init is not an init"
	md dump dump -t "$init" -D "$T/d"
	expect_md_error
	grep -qE "fd 20 \(anon_inode:\[pidfd\]: a pidfd of process $out, which is not dumped with it" \
		"$MD_ERR" || fail "the pidfd is not refused by name: $(tail -n1 "$MD_ERR")"
	grep -qE "fd 21 \([^)]*\) with a SIGIO owner \(F_SETOWN_EX, type 1, id $out\): a process that is not the fd's own" \
		"$MD_ERR" || fail "the owner is not refused by name: $(tail -n1 "$MD_ERR")"
	no_inventory "$T/d"
	expect_untraced "$init"
	kill "$init"
}
add tree-pidns-fd-refuse case_tree_pidns_outside
add tree-refuse-zombie case_tree_refuse_zombie
add tree-zombie-session case_tree_zombie_session
add tree-zombie-pg-own case_tree_zombie_pg own
add tree-zombie-pg-dead case_tree_zombie_pg dead
add tree-refuse-zombie-group case_tree_refuse_zombie_group
add tree-refuse-traced case_tree_refuse_traced
add tree-refuse-leader-exited case_tree_refuse_leader_exited
add tree-zombie-rst case_tree_zombie_rst
add tree-zombie-lr case_tree_zombie_lr
add tree-refuse-zombie-creds case_tree_refuse_zombie_creds
add tree-zombie-user case_tree_zombie_user
add tree-zombie-own-creds case_tree_zombie_own_creds

# --restore-sibling (CRIU's rst_sibling, as runc asks): the restored process is
# the child of memdump's parent, which reaps it; memdump prints its PID, returns
case_tree_rst_sibling() {
	start_prog t-pattern
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	command -p python3 -c 'import os, subprocess, sys
t, md = sys.argv[1], sys.argv[2]
open(t + "/shell.pid", "w").write("%d" % os.getpid())
r = subprocess.run([md, "restore", "-D", t + "/d", "--restore-sibling"], capture_output=True, text=True)
out = open(t + "/sib.out", "w")
out.write(r.stdout + "rc %d\n" % r.returncode); out.flush()
sys.stderr.write(r.stderr)
if r.returncode == 0:
    pid, st = os.waitpid(int(r.stdout.split()[0]), 0)
    out.write("reaped %d %d\n" % (pid, os.waitstatus_to_exitcode(st)))' "$T" "$MEMDUMP" \
		< /dev/null 2> "$T/sib.err" &
	local sh=$!; track "$sh"
	wait_until "$OP_TIMEOUT" eval 'grep -q "^rc " '"$T"'/sib.out' || fail "restore did not return: $(cat "$T/sib.err")"
	grep -q "^rc 0" "$T/sib.out" || fail "restore failed: $(cat "$T/sib.err")"
	[[ $(head -n1 "$T/sib.out") == "$PID" ]] || fail "restore printed $(head -n1 "$T/sib.out"), not $PID"
	[[ $(proc_field "$PID" PPid) == "$(cat "$T/shell.pid")" ]] ||
		fail "the restored process's parent is $(proc_field "$PID" PPid), not memdump's parent"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_until 10 eval 'grep -q "^reaped" '"$T"'/sib.out' || fail "memdump's parent did not reap it"
	grep -q "^reaped $PID 0" "$T/sib.out" || fail "memdump's parent got: $(tail -n1 "$T/sib.out")"
}
add tree-rst-sibling case_tree_rst_sibling

# a tree whose child is in a user namespace of its own: refused in one line
# naming it, every process left running
case_tree_refuse_userns() {
	bash -c 'unshare --user --map-root-user sleep 300 & sleep 301 & wait' < /dev/null > /dev/null 2>&1 &
	PID=$!; track "$PID"
	wait_until 5 tree_has 2 "$PID" || fail "the tree did not appear"
	local p; for p in $(tree_pids "$PID"); do track "$p"; done
	wait_until 5 eval '[[ $(for p in $(tree_children '"$PID"'); do readlink /proc/$p/ns/user; done | sort -u | wc -l) == 2 ]]' ||
		fail "no child in a user namespace of its own"
	md refuse dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qE "process [0-9]+ \((sleep|unshare)\).*(own user namespace|another user namespace)" "$MD_ERR" ||
		fail "the refusal does not name the user namespace: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	tree_untouched $(tree_pids "$PID")
}
add tree-refuse-userns case_tree_refuse_userns

# A child forked after the dump looked at the tree and before the freeze (the
# fault point "checked" stalls there): the dump starts again as a tree dump and
# takes both processes.
case_tree_child_appears() {
	python3 -c '
import os, signal, time
def fork_child(sig, frame):
    if os.fork() == 0:
        while True: time.sleep(1)
signal.signal(signal.SIGUSR2, fork_child)
print("READY", os.getpid(), flush=True)
while True: time.sleep(1)' > "$T/p.out" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$T/p.out" '^READY' "$OP_TIMEOUT" || fail "the program did not start"
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=checked MEMDUMP_FAULT_SECS=2 "$MEMDUMP" -v 3 dump -t "$PID" -D "$T/d" --leave-running \
		> "$T/md.dump.out" 2> "$MD_ERR" &
	local mdpid=$!
	wait_line "$MD_ERR" 'fault point checked' "$OP_TIMEOUT" || fail "the dump never reached 'checked'"
	kill -USR2 "$PID"
	wait_until 10 eval '[[ -n $(cat /proc/'"$PID"'/task/*/children 2>/dev/null) ]]' ||
		fail "the program did not fork"
	local child; child=$(cat /proc/"$PID"/task/*/children | awk '{print $1}')
	track "$child"
	wait "$mdpid" || fail "the dump failed: $(tail -n1 "$MD_ERR")"
	grep -q "appeared below $PID" "$MD_ERR" || fail "the dump did not say a child appeared"
	grep -q "tree of $PID: 2 processes" "$T/md.dump.out" ||
		fail "the dump did not take the tree: $(cat "$T/md.dump.out")"
	[[ -d $T/d/proc-$child ]] || fail "no images of the child $child"
	expect_untraced "$PID"
	kill "$child" "$PID"
}
add tree-child-appears case_tree_child_appears

# peer credentials of connections made after the forks to another process's
# listener, in a PID namespace (its init the parent): the listener's process
# tells its connectors apart by their PIDs there (t-peercred mgr, forkconn)
case_tree_pidns_peercred() {
	local before
	pidns_prog t-peercred "$1"
	before=$(ns_pids "$PID")
	dump "$PID" "$T/d"
	wait "$PIDNS_U" 2> /dev/null
	pidns_restore_same "$before"
}
add tree-pidns-peercred-mgr case_tree_pidns_peercred mgr
add tree-pidns-peercred-forkconn case_tree_pidns_peercred forkconn
