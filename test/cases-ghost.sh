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
