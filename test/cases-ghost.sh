# Deleted files that came back wrong (issue 31): the holes of a sparse ghost file,
# a deleted name of a file still linked elsewhere, and the owner of an fd's SIGIO.
# Each target program checks itself after the restore; the images decode with crit.

# ghost_crit DIR: crit decodes every ghost-file image of DIR
ghost_crit() {
	local f
	command -v crit > /dev/null || { note "crit not on PATH: not decoded"; return 0; }
	for f in "$1"/ghost-file-*.img; do
		[[ -e $f ]] || fail "no ghost-file image in $1"
		timeout 30 crit show "$f" > "$T/crit.$(basename "$f").json" 2>&1 ||
			fail "crit cannot decode $(basename "$f"): $(tail -n1 "$T/crit.$(basename "$f").json")"
	done
}

# ---- sparse ghost files: only the data extents are saved, the holes come back as holes

case_ghost_holes_rst() {
	start_prog t-ghosthole
	dump "$PID" "$T/d"
	expect_killed "$PID"
	ghost_crit "$T/d"
	grep -q '"chunks": true' "$T"/crit.ghost-file-*.json || fail "no ghost image has chunks"
	# the 512 KiB file of 64 data blocks: its image holds the 256 KiB of data, not the holes
	local big
	big=$(find "$T/d" -name 'ghost-file-*.img' -size +200k -size -300k | wc -l)
	(( big == 1 )) || { ls -l "$T/d" | sed 's/^/#   /'; fail "the image of the sparse 512 KiB file is not about its 256 KiB of data"; }
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add ghost-holes-rst case_ghost_holes_rst
add ghost-holes-lr case_f2_lr t-ghosthole

# ---- a deleted name of a file still linked: the fd comes back on the same inode, by that name

case_ghost_link_rst() {
	start_prog t-ghostlink
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
	[[ -e $T/ghostlink-a ]] && fail "the deleted name is left after the restore"
	[[ $(stat -c %h "$T/ghostlink-a.link") == 1 ]] || fail "the link has $(stat -c %h "$T/ghostlink-a.link") names after the restore"
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add ghost-link-rst case_ghost_link_rst
add ghost-link-lr case_f2_lr t-ghostlink

# The deleted name's directory was removed too, the other link is in its parent (zdtm
# unlink_regular00): found there; the directory is made again for the open and removed after.
case_ghost_link_dirgone() {
	start_prog t-ghostlink dirgone
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
	[[ -e $T/ghostlink-d ]] && fail "the directory made again for the deleted name is left"
	[[ $(stat -c %h "$T/ghostlink-a.link") == 1 ]] || fail "the link has $(stat -c %h "$T/ghostlink-a.link") names after the restore"
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
	[[ -e $T/ghostlink-d ]] && fail "the directory made again for the deleted name is left"
	return 0
}
add ghost-link-dirgone case_ghost_link_dirgone

# The deleted name was taken again before the restore: linked beside it, the new file untouched.
case_ghost_link_name_taken() {
	start_prog t-ghostlink renamed
	dump "$PID" "$T/d"
	expect_killed "$PID"
	echo other > "$T/ghostlink-a"
	restore_and_pass "$T/d" 1
	[[ $(cat "$T/ghostlink-a") == other ]] || fail "restore changed the file that took the name"
	ls "$T" | grep -q memdump-ghost && fail "the link made beside it is left"
	return 0
}
add ghost-link-name-taken case_ghost_link_name_taken

# The other link is in another directory: refused by name, the target runs on.
case_ghost_link_refused() {
	start_prog t-ghostlink elsewhere
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qE "fd 10 \(.*/ghostlink-a \(deleted\): a deleted name of a file still linked 1 time\(s\) elsewhere, with no other name in its directory\)" "$MD_ERR" ||
		fail "not refused by name: $(tail -n1 "$MD_ERR")"
	[[ -e $T/d/inventory.img ]] && fail "a refused dump left an inventory"
	check_child_pass
}
add ghost-link-refused case_ghost_link_refused

# ---- a deleted file on a read-only bind of a writable filesystem (zdtm ghost_on_rofs, the
# host's view): made again through a writable clone of the mount, opened on the read-only one

# ghost_ro_mount: a tmpfs at $T/ro, unmounted when the case ends
ghost_ro_mount() {
	mkdir -p "$T/ro" && mount -t tmpfs md-ghostro "$T/ro" || fail "cannot mount a tmpfs at $T/ro"
	trap 'umount -l "'"$T/ro"'" 2>/dev/null' EXIT
}

case_ghost_ro_rst() {
	ghost_ro_mount
	start_prog t-ghostro ro
	mount -o remount,ro,bind "$T/ro" || fail "cannot remount $T/ro read-only"
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
	[[ -z $(ls -A "$T/ro") ]] || fail "the ghost is left on the read-only mount: $(ls -A "$T/ro")"
	grep -q " $T/ro ro," /proc/self/mountinfo || fail "the mount is no longer read-only"
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
	[[ -z $(ls -A "$T/ro") ]] || fail "the ghost is left on the read-only mount: $(ls -A "$T/ro")"
	return 0
}
add ghost-ro-rst case_ghost_ro_rst
# (a filesystem read-only itself cannot hold a deleted file still open: the kernel refuses
# to remount it read-only while one is; memdump refuses it by name all the same)

# The read-only bind is unbindable too: no clone of it can be made, refused by name.
case_ghost_ro_unbindable() {
	ghost_ro_mount
	start_prog t-ghostro ro
	mount -o remount,ro,bind "$T/ro" && mount --make-unbindable "$T/ro" ||
		fail "cannot make $T/ro read-only and unbindable"
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qE "fd 10 \(.*/ro/ghost-ro \(deleted\): a deleted file on a read-only mount of a filesystem read-only too, or an unbindable one" "$MD_ERR" ||
		fail "not refused by name: $(tail -n1 "$MD_ERR")"
	[[ -e $T/d/inventory.img ]] && fail "a refused dump left an inventory"
	check_child_pass
}
add ghost-ro-unbindable case_ghost_ro_unbindable


# ---- the owner of an fd's SIGIO (F_SETOWN, F_SETOWN_EX, F_SETSIG) and O_ASYNC

case_fown_rst() {
	start_prog t-fown
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	command -v crit > /dev/null && {
		crit show "$T/d/files.img" > "$T/crit.files.json" 2>&1 || fail "crit cannot decode files.img"
		grep -q "\"pid\": $PID" "$T/crit.files.json" || fail "no fown_entry names pid $PID in files.img"
	}
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add fown-rst case_fown_rst
add fown-lr case_f2_lr t-fown

# An owner restore cannot give back, or a kind whose owner it does not restore: refused by name.
case_fown_refused() {
	local mode=$1 want=$2
	start_prog t-fown "$mode"
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qE "fd 16 \([^)]*\) with $want" "$MD_ERR" || fail "not refused by name: $(tail -n1 "$MD_ERR")"
	[[ -e $T/d/inventory.img ]] && fail "a refused dump left an inventory"
	check_child_pass
}
add fown-refused-other case_fown_refused other "a SIGIO owner \(F_SETOWN_EX, type 1, id [0-9]+\): a process that is not the fd's own"
add fown-refused-inotify case_fown_refused inotify "signal-driven I/O \(O_ASYNC, F_SETOWN or F_SETSIG\) on a kind of fd"
