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
