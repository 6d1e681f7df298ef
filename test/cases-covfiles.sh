# File states zdtm found refused (issue 24, covfiles): /proc files of the
# process itself, removed directories, inotify watches on removed files,
# large ghosts. Each target checks itself after restore.

# ---- files of its own /proc directory (zdtm memfd02, cgroup_ignore)

# /proc/self/maps (offset kept) and /proc/self/status: opened again by the
# restored process once it has its PID (t-procself).
add procself-rst case_f2_rst t-procself
add procself-lr case_f2_lr t-procself

# ---- /proc files of processes outside the dump (zdtm pid_file)

# /proc/OTHER/stat (offset kept) of a sleep outside the dump, and
# /proc/1/status: the same files again, opened by path, the restore having
# checked OTHER is still the same process (t-procout).
case_procout_rst() {
	sleep 300 < /dev/null > /dev/null 2>&1 &
	local other=$!; track "$other"
	case_f2_rst t-procout "$other"
	kill "$other"
}
add procout-rst case_procout_rst

# The process outside the dump is gone before the restore: the restore
# fails naming it (its PID may be another process's by then) and leaves
# nothing running.
case_procout_gone() {
	sleep 300 < /dev/null > /dev/null 2>&1 &
	local other=$!; track "$other"
	start_prog t-procout "$other"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	kill "$other"; wait "$other" 2> /dev/null
	md restore restore -D "$T/d"
	expect_md_error
	grep -q "file /proc/$other/stat: process $other, outside the dump, is gone" "$MD_ERR" ||
		fail "the error does not name the process that is gone"
	alive "$PID" && fail "a failed restore left pid $PID running"
	return 0
}
add procout-gone case_procout_gone

# ---- files open in removed directories (zdtm rmdir_open)

# A directory removed with its parent, a file deleted in a directory removed
# with its parent: the directories gone are made again for the restore and
# removed again after it (t-rmdiropen).
case_rmdiropen_rst() {
	case_f2_rst t-rmdiropen
	[[ -e $T/rmo-par || -e $T/rmo-gone ]] && fail "a directory made for the restore is left"
	return 0
}
add rmdiropen-rst case_rmdiropen_rst
add rmdiropen-lr case_f2_lr t-rmdiropen

# A restore killed (SIGKILL) once its ghosts are made, and once its processes
# are: the sweeper removes the ghosts and the directories made for them, and
# a restore after it passes (rstfail_wait_exit: cases-rstfail.sh).
case_rmdiropen_kill_restore() {
	start_prog t-rmdiropen
	dump "$PID" "$T/d"
	expect_killed "$PID"
	local point md_pid
	for point in rst-ghosts rst-prepared; do
		MEMDUMP_FAULT=$point restore_bg "$T/d" "$point.KILL"
		wait_line "$MD_ERR" "fault point $point: " "$OP_TIMEOUT" ||
			fail "$point: the restore did not reach its fault point: $(cat "$MD_ERR")"
		[[ $point != rst-ghosts || -d $T/rmo-gone/deep ]] ||
			fail "rst-ghosts: no directory made for the restore to leave behind"
		md_pid=$(pgrep -P "$RPID" -x memdump | head -n1)
		[[ -n $md_pid ]] || fail "no memdump below timeout $RPID"
		kill -KILL "$md_pid"
		rstfail_wait_exit
		wait_until 5 eval '[[ ! -e $T/rmo-par && ! -e $T/rmo-gone ]]' ||
			fail "$point: directories made for the restore are left: $(ls "$T")"
	done
	truncate -s "$READY_SIZE" "$OUT"
	restore_and_pass "$T/d" 1
}
add rmdiropen-kill-restore case_rmdiropen_kill_restore

# ---- a deleted file above the ghost limit (zdtm ghost_holes_large01)

# 2 MiB of data around a 1 GiB hole: refused under the default 1 MiB limit,
# the message saying which --ghost-limit takes it; with that limit, dumped
# in chunks (only the data) and restored with its hole (t-ghostlarge).
case_ghostlarge_rst() {
	start_prog t-ghostlarge
	md dump.limit dump -t "$PID" -D "$T/d0"
	expect_md_error
	grep -qE "fd 10 \(.*/ghostlarge \(deleted\): a deleted file with 2097152 bytes of data, above the ghost limit of 1048576 bytes: dump with --ghost-limit 2048K or more\)" "$MD_ERR" ||
		fail "the error does not say how to raise the limit: $(tail -n1 "$MD_ERR")"
	no_inventory "$T/d0"
	expect_untraced "$PID"
	state_snap "$PID"
	dump "$PID" "$T/d" --ghost-limit 2048K
	expect_killed "$PID"
	local saved; saved=$(du -sk "$T/d" | cut -f1)
	(( saved < 8192 )) || fail "the images take $saved KiB: the hole was saved"
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add ghostlarge-rst case_ghostlarge_rst

# ---- inotify watches on deleted files (zdtm inotify00)

# A watch on a file deleted while the process holds it open: added again,
# with its wd, on the ghost the restore makes of that file (t-inotifydel).
add inotifydel-rst case_f2_rst t-inotifydel
add inotifydel-lr case_f2_lr t-inotifydel

# fds on /proc/CHILD/mountinfo and /proc/CHILD of a child that exited and was
# reaped (zdtm remap_dead_pid, remap_dead_pid_root): dumped as CRIU does (PROCFS
# remaps to CHILD), opened again by the restored process while a stand-in of its
# own has PID CHILD and the file's owner, gone again before it runs (t-procgone
# checks links, flags, modes, owners, offset, the dead directory, PID CHILD free).
procgone_remaps() {
	command -v crit > /dev/null || { note "crit not on PATH: not decoded"; return 0; }
	timeout 30 crit show "$1/remap-fpath.img" > "$T/crit.remap.json" 2>&1 ||
		fail "crit cannot decode remap-fpath.img: $(tail -n1 "$T/crit.remap.json")"
	(( $(grep -c '"remap_type": "PROCFS"' "$T/crit.remap.json") == $3 )) &&
		(( $(grep -c "\"remap_id\": $2\b" "$T/crit.remap.json") == $3 )) ||
		{ sed 's/^/#   /' "$T/crit.remap.json"; fail "not $3 PROCFS remaps to PID $2"; }
}

case_procgone_rst() {
	start_prog t-procgone "$@"
	local gone=${READY[2]}
	dump "$PID" "$T/d"
	expect_killed "$PID"
	procgone_remaps "$T/d" "$gone" $(( $# ? 3 : 2 ))
	restore_and_pass "$T/d" 1
	kill -0 "$gone" 2> /dev/null && fail "PID $gone (the stand-in) is left after the restore"
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add procgone-rst case_procgone_rst
# its cwd in /proc/CHILD too: the fds are opened while memdump's stand-in for the cwd lives
add procgone-cwd-rst case_procgone_rst cwd

case_procgone_lr() {
	start_prog t-procgone
	dump "$PID" "$T/d" --leave-running
	check_child_pass
}
add procgone-lr case_procgone_lr

# PID CHILD taken by another process when the restore comes: refused before
# anything starts, naming the PID; the other process untouched.
case_procgone_taken() {
	start_prog t-procgone
	local gone=${READY[2]}
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_refused_pid_taken "$T/d" "$gone"
}
add procgone-taken case_procgone_taken

# An fd on /proc/CHILD/task/TID/stat of a thread (not the main one) of a child
# that exited: the stand-in would have no such thread, refused naming the fd
# before the target is harmed.
case_procgone_thread_refused() {
	OUT=$T/thr.out
	python3 -c '
import os, signal, threading, time
r, w = os.pipe()
c = os.fork()
if c == 0:
    threading.Thread(target=lambda: (os.write(w, b"%d" % threading.get_native_id()), time.sleep(300)), daemon=True).start()
    time.sleep(300)
    os._exit(0)
tid = int(os.read(r, 32))
fd = os.open("/proc/%d/task/%d/stat" % (c, tid), os.O_RDONLY)
os.kill(c, signal.SIGKILL)
os.waitpid(c, 0)
print("READY", os.getpid(), c, tid, fd, flush=True)
signal.pause()' > "$OUT" 2> "$T/thr.err" < /dev/null &
	PID=$!; track "$PID"
	wait_line "$OUT" "^READY " 10 || { show_file err "$T/thr.err"; fail "the target did not start"; }
	read -r -a READY < <(grep -m1 '^READY ' "$OUT")
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "fd ${READY[4]} (/proc/${READY[2]}/task/${READY[3]}/stat.*a thread of a process that exited" \
		"$MD_ERR" || fail "the refusal does not name the thread's file: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	alive "$PID" || fail "the target did not survive the refused dump"
	untraced "$PID" || fail "the target is still traced or stopped"
	kill -9 "$PID"
}
add procgone-thread-refused case_procgone_thread_refused
