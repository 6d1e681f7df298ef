# Files (issues 7 and 8): deleted files and mappings (ghosts), inotify, file
# locks, POSIX timers, terminals. Each target program checks itself after
# restore; the images must decode with crit.

# f2_crit DIR IMAGE...: crit decodes each IMAGE of DIR
f2_crit() {
	local dir=$1 f; shift
	command -v crit > /dev/null || { note "crit not on PATH: not decoded"; return 0; }
	for f in "$@"; do
		[[ -e $dir/$f ]] || fail "$f missing from the dump"
		timeout 30 crit show "$dir/$f" > "$T/crit.$f.json" 2>&1 ||
			fail "crit cannot decode $f: $(tail -n1 "$T/crit.$f.json")"
	done
}

# f2_rst PROG [ARGS]: statecmp snapshot, killing dump, restore twice (each one PASSes)
case_f2_rst() {
	start_prog "$@"
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}

case_f2_lr() {
	start_prog "$@"
	dump "$PID" "$T/d" --leave-running
	check_child_pass
}

# ---- deleted files (ghosts)

case_ghost_rst() {
	start_prog t-ghost
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	f2_crit "$T/d" remap-fpath.img ghost-file-1.img ghost-file-2.img
	grep -q '"remap_type": "GHOST"' "$T/crit.remap-fpath.img.json" || fail "no GHOST remap in remap-fpath.img"
	md show show -D "$T/d" || fail "show failed"
	grep -qE '10 +REG .*ghost-rw \(deleted, 10000 bytes saved\)' "$MD_OUT" ||
		{ show_file show "$MD_OUT"; fail "show does not tell fd 10 is a deleted file"; }
	ls "$T"/ghost-* 2> /dev/null && fail "a ghost file is left in $T before the restore"
	restore_and_pass "$T/d" 1
	ls "$T"/ghost-* 2> /dev/null && fail "a recreated ghost file is left in $T"
	ls /dev/shm | grep -q "t-ghost-$PID" && fail "the shm ghost is left in /dev/shm"
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add ghost-rst case_ghost_rst
add ghost-lr case_f2_lr t-ghost

# The name of a deleted file was taken again: the ghost is made beside it.
case_ghost_name_taken() {
	start_prog t-ghost renamed
	dump "$PID" "$T/d"
	expect_killed "$PID"
	echo other > "$T/ghost-rw"
	restore_and_pass "$T/d" 1
	[[ $(cat "$T/ghost-rw") == other ]] || fail "restore changed the file that took the name"
	ls "$T" | grep -q memdump-ghost && fail "the ghost made beside it is left"
	return 0
}
add ghost-name-taken case_ghost_name_taken

# Above --ghost-limit: refused by name before the target is seized.
case_ghost_limit() {
	start_prog t-ghost
	md dump dump -t "$PID" -D "$T/d" --leave-running --ghost-limit 9K
	expect_md_error
	grep -qE "fd 10 \(.*ghost-rw \(deleted\): a deleted file with [0-9]+ bytes of data, above the ghost limit of 9216 bytes: dump with --ghost-limit [0-9]+K or more\)" "$MD_ERR" ||
		fail "the error does not name fd 10 and the limit"
	grep -q "fd 11 " "$MD_ERR" || fail "the error does not name fd 11"
	grep -qE "ghost-shared \(deleted\): a deleted file with 12288 bytes of data" "$MD_ERR" ||
		fail "the error does not name the shared mapping"
	no_inventory "$T/d"
	expect_untraced "$PID"
	dump "$PID" "$T/d2" --leave-running --ghost-limit 16K
	check_child_pass
}
add ghost-limit case_ghost_limit

# python multiprocessing: a Value (an unlinked /dev/shm arena, mapped and
# open) and a Lock held (an unlinked POSIX semaphore). SharedMemory starts
# a resource tracker process: a process tree, refused.
case_ghost_python_mp() {
	command -v python3 > /dev/null || { note "no python3: skipped"; return 0; }
	OUT=$T/mp.out
	python3 -c '
import ctypes, multiprocessing as mp, os, signal, sys, time
v = mp.Value("q", 0x1234567)
lock = mp.Lock(); lock.acquire()
got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))
print("READY", os.getpid(), flush=True)
while not got: time.sleep(0.01)
ok = v.value == 0x1234567 and not lock.acquire(False)
lock.release(); ok = ok and lock.acquire(False)
with v.get_lock(): v.value += 1
print("PASS" if ok and v.value == 0x1234568 else "FAIL state lost", flush=True)
' > "$OUT" 2> "$T/mp.err" < /dev/null &
	PID=$!; track "$PID"
	wait_line "$OUT" '^READY' 20 || { show_file stderr "$T/mp.err"; fail "python did not start"; }
	READY_SIZE=$(stat -c %s "$OUT")
	grep -q ' (deleted)$' "/proc/$PID/maps" || fail "python holds no deleted mapping"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add ghost-python-mp case_ghost_python_mp

# ---- inotify

case_inotify_rst() {
	start_prog t-inotify
	grep -c '^inotify' "/proc/$PID/fdinfo/10" | grep -qx 3 || fail "fd 10 has not 3 watches"
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	f2_crit "$T/d" files.img
	grep -q '"wd": 4' "$T/crit.files.img.json" || fail "crit shows no wd 4"
	md show show -D "$T/d" || fail "show failed"
	grep -qE "10 +INOTIFY .*inotify, 3 watch\(es\): wd 1 mask 0x300 [^ ]*/w; wd 2 mask 0x2 [^ ]*/w/f; wd 4 mask 0x80000004 [^ ]*/y$" "$MD_OUT" ||
		{ show_file show "$MD_OUT"; fail "show does not list fd 10's watches"; }
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add inotify-rst case_inotify_rst
add inotify-lr case_f2_lr t-inotify

# A watched file deleted, held by a mapping but by no fd (the watch lives on,
# its path is gone; one an fd holds is restored on its ghost: inotifydel-rst):
# refused by name.
case_inotify_deleted() {
	python3 -c '
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
d = sys.argv[1]; p = d + "/watched"
keep = open(p, "w+b"); keep.write(b"x"); keep.flush()
libc.mmap(None, 1, 1, 1, keep.fileno(), 0)	# PROT_READ, MAP_SHARED
fd = libc.inotify_init1(0)
wd = libc.inotify_add_watch(fd, p.encode(), 2)
os.unlink(p); keep.close()
print("READY", os.getpid(), fd, wd, flush=True)
time.sleep(60)' "$T" > "$T/i.out" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$T/i.out" '^READY' "$OP_TIMEOUT" || { show_file out "$T/i.out"; fail "python did not start"; }
	md dump dump -t "$PID" -D "$T/d" --leave-running
	expect_md_error
	grep -qE "fd [0-9]+ \(anon_inode:inotify: an inotify watch \(wd 1\) on a deleted file no fd of the process holds" "$MD_ERR" ||
		fail "the error does not name the watch: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	expect_untraced "$PID"
}
add inotify-deleted case_inotify_deleted

# fanotify: cases-evloop.sh (fanotify-*).

# ---- file locks

case_locks_rst() {
	start_prog t-locks
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	f2_crit "$T/d" filelocks.img
	local n; n=$(grep -c '"flag"' "$T/crit.filelocks.img.json")
	(( n == 5 )) || fail "filelocks.img holds $n locks, want 5"
	md show show -D "$T/d" || fail "show failed"
	grep -qE '^locks +fd 10 flock write$' "$MD_OUT" && grep -qE '^ +fd 12 POSIX read from 200 to EOF$' "$MD_OUT" &&
		grep -qE '^ +fd 13 OFD write from 10 for 10 bytes$' "$MD_OUT" ||
		{ show_file show "$MD_OUT"; fail "show does not list the locks"; }
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add locks-rst case_locks_rst
add locks-lr case_f2_lr t-locks

# Another process took a lock of the dump since: the restore fails with one
# line naming it, and succeeds once the lock is free.
case_locks_held() {
	start_prog t-locks
	dump "$PID" "$T/d"
	expect_killed "$PID"
	flock -n -o "$T/flock-ex" sleep 60 < /dev/null > /dev/null 2>&1 &
	local holder=$!; track "$holder"
	wait_until 5 grep -q FLOCK /proc/locks || fail "flock(1) took no lock"
	md restore restore -D "$T/d"
	expect_md_error
	grep -q "cannot take the flock write lock of fd 10 (0+0): another process holds a conflicting lock" "$MD_ERR" ||
		fail "the error does not name the lock"
	alive "$PID" && fail "a failed restore left pid $PID running"
	local sl; sl=$(cat "/proc/$holder/task/$holder/children"); track "$sl"
	kill "$holder"; wait "$holder" 2> /dev/null; kill $sl 2> /dev/null
	restore_and_pass "$T/d" 1
}
add locks-held case_locks_held

# A POSIX lock on a file the process maps: the restorer's close of the
# mapping's fd would drop it, so the restorer takes it back after that close.
case_locks_mapped() {
	python3 -c '
import fcntl, mmap, os, sys, time
fd = os.open(sys.argv[1] + "/mapped", os.O_RDWR | os.O_CREAT, 0o600)
os.ftruncate(fd, 4096)
m = mmap.mmap(fd, 4096)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("READY", os.getpid(), fd, flush=True)
time.sleep(300)' "$T" > "$T/m.out" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$T/m.out" '^READY' 10 || { show_file out "$T/m.out"; fail "python did not start"; }
	local ino; ino=$(stat -c %i "$T/mapped")
	dump "$PID" "$T/d"
	expect_killed "$PID"
	md restore restore -D "$T/d" -d || fail "restore failed: $(tail -n1 "$MD_ERR")"
	track "$PID"
	wait_until 5 untraced "$PID" || fail "restored pid $PID not running"
	grep -qE "POSIX +ADVISORY +WRITE +$PID [0-9a-f]+:[0-9a-f]+:$ino 0 EOF" /proc/locks ||
		{ grep POSIX /proc/locks | sed 's/^/# /'; fail "the restored process does not hold its POSIX lock"; }
	# held, not only listed: another process cannot take it
	python3 -c 'import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB); sys.exit(1)
except OSError:
    sys.exit(0)' "$T/mapped" || fail "another process took the lock"
	kill "$PID"
}
add locks-mapped-rst case_locks_mapped

# ---- POSIX timers

# No statecmp here: timer 3 signals a thread every 50 ms, so a signal may be
# pending in any snapshot (t-ptimers checks its timers itself).
case_ptimers_rst() {
	start_prog t-ptimers
	dump "$PID" "$T/d"
	expect_killed "$PID"
	f2_crit "$T/d" "core-$PID.img"
	local n; n=$(grep -c '"it_id"' "$T/crit.core-$PID.img.json")
	(( n == 4 )) || fail "core-$PID.img holds $n POSIX timers, want 4"
	grep -q '"notify_thread_id"' "$T/crit.core-$PID.img.json" || fail "crit shows no notify_thread_id"
	md show show -D "$T/d" || fail "show failed"
	grep -qE '^timers +id 0 clock 1, signal 35, in [0-9.]+ s every 50.000000000 s$' "$MD_OUT" &&
		grep -qE '^ +id 3 clock 1, signal to thread 36 \(tid [0-9]+\), in' "$MD_OUT" &&
		grep -qE '^ +id 4 clock 7, signal 37, disarmed$' "$MD_OUT" ||
		{ show_file show "$MD_OUT"; fail "show does not list the POSIX timers"; }
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add ptimers-rst case_ptimers_rst
add ptimers-lr case_f2_lr t-ptimers

# ---- terminals

# t-pattern run by script(1): its fds 0-2 are its controlling terminal.
f2_start_on_tty() {
	OUT=$T/script.out
	script -qfec "exec $TESTBIN/t-pattern $T" /dev/null > "$OUT" 2>&1 < /dev/null &
	track $!
	wait_line "$OUT" '^READY ' "$OP_TIMEOUT" || { show_file out "$OUT"; fail "t-pattern on a tty did not start"; }
	PID=$(awk '/^READY/ { print $2; exit }' "$OUT"); track "$PID"
	[[ $(readlink "/proc/$PID/fd/0") == /dev/pts/* ]] || fail "fd 0 of $PID is no terminal"
}

case_tty_shell_job() {
	f2_start_on_tty
	md dump dump -t "$PID" -D "$T/d0" --leave-running
	expect_md_error
	grep -qE "fd 0 \(/dev/pts/[0-9]+: the job's controlling terminal: dump with --shell-job" "$MD_ERR" ||
		fail "the error does not ask for --shell-job"
	no_inventory "$T/d0"
	expect_untraced "$PID"
	dump "$PID" "$T/d" --shell-job
	expect_killed "$PID"
	md restore0 restore -D "$T/d"
	expect_md_error
	grep -q "restore with --shell-job" "$MD_ERR" || fail "restore does not ask for --shell-job"
	restore_bg "$T/d" 1 --shell-job
	wait_restored "$PID"
	[[ $(readlink "/proc/$PID/fd/1") == "$MD_OUT" ]] || fail "fd 1 is $(readlink "/proc/$PID/fd/1"), not memdump's stdout"
	[[ $(readlink "/proc/$PID/fd/0") == /dev/null ]] || fail "fd 0 is $(readlink "/proc/$PID/fd/0"), not memdump's stdin"
	kill -USR1 "$PID"
	get_result "$MD_OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}
add tty-shell-job case_tty_shell_job

# A terminal that is not the job's own (a pty slave whose master another
# process, outside the dump, holds; pairs it holds are dumped, cases-tty.sh;
# a slave whose master was closed, hung up, too: cases-ttydev.sh): refused by
# name, with --shell-job too.
case_tty_other() {
	python3 -c '
import os, time
m, s = os.openpty()
if os.fork() == 0:
    os.close(m)     # a pty slave whose master its parent, outside the dump, holds
    print("READY", os.getpid(), s, flush=True)
    time.sleep(60)
    os._exit(0)
os.close(s)
time.sleep(60)' > "$T/p.out" 2>&1 < /dev/null &
	track "$!"
	wait_line "$T/p.out" '^READY' "$OP_TIMEOUT" || { show_file out "$T/p.out"; fail "python did not start"; }
	PID=$(awk '/^READY/ { print $2 }' "$T/p.out")
	track "$PID"
	local fd; fd=$(awk '/^READY/ { print $3 }' "$T/p.out")
	md dump dump -t "$PID" -D "$T/d" --leave-running --shell-job
	expect_md_error
	grep -qE "fd $fd \(/dev/pts/[0-9]+( \(deleted\))?: a terminal other than the job's controlling terminal" "$MD_ERR" ||
		fail "the error does not name the terminal"
	no_inventory "$T/d"
	expect_untraced "$PID"
}
add tty-other case_tty_other

# The program's own binary deleted while it runs: its exe and text mappings
# are ghosts, recreated and deleted again.
case_ghost_exe() {
	mkdir "$T/bin"
	cp "$TESTBIN/t-pattern" "$T/bin/t-pattern"
	OUT=$T/t-pattern.out
	"$T/bin/t-pattern" "$T" > "$OUT" 2> /dev/null < /dev/null &
	PID=$!; track "$PID"
	wait_line "$OUT" '^READY ' "$OP_TIMEOUT" || fail "t-pattern did not start"
	READY_SIZE=$(stat -c %s "$OUT")
	rm "$T/bin/t-pattern"
	[[ $(readlink "/proc/$PID/exe") == *" (deleted)" ]] || fail "the exe is not deleted"
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	state_same "$PID" 1
	[[ $(readlink "/proc/$PID/exe") == "$T/bin/t-pattern (deleted)" ]] ||
		fail "the restored exe is '$(readlink "/proc/$PID/exe")'"
	[[ -e $T/bin/t-pattern ]] && fail "the recreated exe is left"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}
add ghost-exe case_ghost_exe

# A deleted file whose directory is gone too, and a file where the directory
# was: no directory to make it in again, refused (one whose directory is
# only gone is made again in it: t-rmdiropen).
case_ghost_dir_gone() {
	mkdir "$T/gone"
	python3 -c '
import os, sys, time
d = sys.argv[1]
f = open(d + "/gone/x", "w"); f.write("data"); f.flush()
os.unlink(d + "/gone/x"); os.rmdir(d + "/gone")
open(d + "/gone", "w").close()
print("READY", os.getpid(), f.fileno(), flush=True)
time.sleep(60)' "$T" > "$T/g.out" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$T/g.out" '^READY' 10 || { show_file out "$T/g.out"; fail "python did not start"; }
	local fd; fd=$(awk '/^READY/ { print $3 }' "$T/g.out")
	md dump dump -t "$PID" -D "$T/d" --leave-running
	expect_md_error
	grep -qE "fd $fd \(.*/gone/x \(deleted\): a deleted file whose directory is gone too, with no directory left to make it in again\)" "$MD_ERR" ||
		fail "the error does not name the file"
	no_inventory "$T/d"
	expect_untraced "$PID"
}
add ghost-dir-gone case_ghost_dir_gone
