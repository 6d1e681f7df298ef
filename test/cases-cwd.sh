# A deleted cwd or open directory (issue 24): dumped as a ghost directory (empty, its
# mode, owner and times), recreated by the restore, the cwd and fds set on it, and
# removed again before the process runs. t-cwd checks itself after the restore.

# cwd_crit DIR: crit decodes the ghost images, a directory ghost among them
cwd_crit() {
	local f
	command -v crit > /dev/null || { note "crit not on PATH: not decoded"; return 0; }
	for f in "$1"/ghost-file-*.img "$1"/remap-fpath.img; do
		[[ -e $f ]] || fail "no ghost image in $1"
		timeout 30 crit show "$f" > "$T/crit.$(basename "$f").json" 2>&1 ||
			fail "crit cannot decode $(basename "$f"): $(tail -n1 "$T/crit.$(basename "$f").json")"
	done
	grep -q '"mode": 16840' "$T"/crit.ghost-file-*.json ||	# S_IFDIR | 0710
		{ cat "$T"/crit.ghost-file-*.json | sed 's/^/#   /'; fail "no ghost of a directory of mode 0710"; }
}

case_cwd_deleted_rst() {
	start_prog t-cwd
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	cwd_crit "$T/d"
	restore_and_pass "$T/d" 1
	[[ -e $T/cwd-gone || -e $T/cwd-fdonly ]] && fail "a recreated directory is left after the restore"
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
	[[ -e $T/cwd-gone || -e $T/cwd-fdonly ]] && fail "a recreated directory is left after the second restore"
	return 0
}
add cwd-deleted-rst case_cwd_deleted_rst

# --leave-running: the dump neither changes nor leaves anything
case_cwd_deleted_lr() {
	start_prog t-cwd
	dump "$PID" "$T/d" --leave-running
	ls "$T" | grep -qE '^cwd-' && fail "the dump left a directory in $T"
	check_child_pass
}
add cwd-deleted-lr case_cwd_deleted_lr

# The name was taken again before the restore: recreated beside it, the new one untouched.
case_cwd_name_taken() {
	start_prog t-cwd renamed
	dump "$PID" "$T/d"
	expect_killed "$PID"
	mkdir "$T/cwd-gone"
	echo mine > "$T/cwd-gone/keep"
	restore_and_pass "$T/d" 1
	[[ $(cat "$T/cwd-gone/keep") == mine && $(ls "$T/cwd-gone") == keep ]] ||
		fail "restore changed the directory that took the name"
	ls "$T" | grep -q memdump-ghost && fail "the directory made beside it is left"
	return 0
}
add cwd-name-taken case_cwd_name_taken

# Its parent directory is gone too: made again for the restore and removed
# again after it (zdtm rmdir_open), nothing of it left.
case_cwd_parent_gone() {
	case_f2_rst t-cwd parentgone
	[[ -e $T/cwd-par ]] && fail "the parent directory made for the restore is left"
	return 0
}
add cwd-parent-gone case_cwd_parent_gone

# A tree in one deleted cwd: one directory recreated for both, both back in it.
case_cwd_deleted_tree() {
	mkdir "$T/cwd-tree"
	(cd "$T/cwd-tree" && exec setsid bash -c 'sleep 300 & wait') < /dev/null > /dev/null 2>&1 &
	PID=$!; track "$PID"
	wait_until 5 eval '[[ -n $(cat /proc/'"$PID"'/task/'"$PID"'/children 2> /dev/null) ]]' ||
		fail "no child appeared"
	local c; c=$(awk '{print $1}' "/proc/$PID/task/$PID/children"); track "$c"
	rmdir "$T/cwd-tree"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	md restore restore -D "$T/d" -d || fail "restore failed: $(tail -n1 "$MD_ERR")"
	local p want="$T/cwd-tree (deleted)"
	for p in "$PID" "$c"; do
		[[ $(readlink "/proc/$p/cwd") == "$want" ]] ||
			fail "the cwd of $p is '$(readlink "/proc/$p/cwd")', want '$want'"
	done
	[[ $(stat -Lc %i "/proc/$PID/cwd") == $(stat -Lc %i "/proc/$c/cwd") ]] ||
		fail "the two processes are in two directories"
	[[ -e $T/cwd-tree ]] && fail "the recreated directory is left after the restore"
	kill -9 "$c" "$PID"
	return 0
}
add cwd-deleted-tree case_cwd_deleted_tree

# A cwd in the /proc directory of a process that exited (zdtm unhashed_proc): a
# stand-in with its PID while the process changes into it, gone before it runs.
# t-proccwd checks the link, getcwd's ENOENT, the directory, its PID free.
# proccwd_remap DIR: remap-fpath.img remaps the cwd as PROCFS to the PID (crit)
proccwd_remap() {
	command -v crit > /dev/null || { note "crit not on PATH: not decoded"; return 0; }
	timeout 30 crit show "$1/remap-fpath.img" > "$T/crit.remap.json" 2>&1 ||
		fail "crit cannot decode remap-fpath.img: $(tail -n1 "$T/crit.remap.json")"
	grep -q '"remap_type": "PROCFS"' "$T/crit.remap.json" &&
		grep -q "\"remap_id\": $2\b" "$T/crit.remap.json" ||
		{ sed 's/^/#   /' "$T/crit.remap.json"; fail "no PROCFS remap to PID $2"; }
}

case_cwd_proc_gone() {
	start_prog t-proccwd "$@"
	local gone=${READY[2]}
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	proccwd_remap "$T/d" "$gone"
	restore_and_pass "$T/d" 1
	kill -0 "$gone" 2> /dev/null && fail "PID $gone (the stand-in) is left after the restore"
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add cwd-proc-gone-rst case_cwd_proc_gone
add cwd-proc-gone-tree case_cwd_proc_gone tree

case_cwd_proc_gone_lr() {
	start_prog t-proccwd
	dump "$PID" "$T/d" --leave-running
	check_child_pass
}
add cwd-proc-gone-lr case_cwd_proc_gone_lr

# Its PID taken by another process when the restore comes: refused before anything
# starts, naming the PID; the other process untouched.
case_cwd_proc_gone_taken() {
	start_prog t-proccwd
	local gone=${READY[2]}
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_refused_pid_taken "$T/d" "$gone"
}
add cwd-proc-gone-taken case_cwd_proc_gone_taken
