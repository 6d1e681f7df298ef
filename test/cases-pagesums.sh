# Every page run has its own checksum (pagemap_entry.sum, field 50): a
# damaged page is reported by verify, read-mem and restore naming the address
# of its run, and crit still decodes the pagemaps.

# run_at_offset PAGEMAP OFF: the start address of the present run holding byte OFF
run_at_offset() {
	crit show "$1" | python3 -c '
import json, sys
off, at = int(sys.argv[1]), 0
for e in json.load(sys.stdin)["entries"][1:]:
    n = int(e.get("nr_pages", e.get("compat_nr_pages", 0))) * 4096
    if at <= off < at + n:
        print(e["vaddr"]); break
    at += n' "$2"
}

# flip_byte FILE OFF
flip_byte() {
	local b; b=$(od -An -tu1 -j "$2" -N1 "$1")
	printf "\\x$(printf %02x $(( (b ^ 0xa5) & 0xff )))" |
		dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# expect_run_named LABEL IMG ADDR: the last md call failed naming the run at ADDR
expect_run_named() {
	expect_md_error
	grep -q "image $2 is corrupt: the pages of the run at $3 ([0-9]* pages) do not match their checksum" \
		"$MD_ERR" || fail "$1 did not name the run at $3: $(cat "$MD_ERR")"
}

case_pagesum_flip() {
	local pages off addr
	start_prog t-pattern 1
	dump "$PID" "$T/d"
	expect_killed "$PID"
	timeout 30 crit show "$T/d/pagemap-$PID.img" > /dev/null || fail "crit cannot decode the pagemap"
	cp -a "$T/d" "$T/m"
	pages=$(stat -c %s "$T/m/pages-1.img")
	off=$(( pages / 2 + 123 ))
	addr=$(run_at_offset "$T/m/pagemap-$PID.img" "$off")
	[[ -n $addr ]] || fail "no run holds offset $off of pages-1.img"
	flip_byte "$T/m/pages-1.img" "$off"
	md verify verify -D "$T/m"
	expect_run_named verify pages-1.img "$addr"
	md read-mem read-mem -D "$T/m" "${READY[2]}" 16
	expect_run_named read-mem pages-1.img "$addr"
	md restore restore -D "$T/m"
	expect_run_named restore pages-1.img "$addr"
	alive "$PID" && fail "a process with pid $PID was restored from a damaged set"
	restore_and_pass "$T/d" good
}
add pagesum-flip case_pagesum_flip

# The pages of shared memory (pagemap-shmem-ID.img) have their own sums.
case_pagesum_flip_shmem() {
	local pm img id addr
	start_prog t-shared
	dump "$PID" "$T/d"
	expect_killed "$PID"
	pm=$(cd "$T/d" && ls pagemap-shmem-*.img | head -n1)
	[[ -n $pm ]] || fail "no pagemap-shmem image in the dump of t-shared"
	timeout 30 crit show "$T/d/$pm" > /dev/null || fail "crit cannot decode $pm"
	id=$(crit show "$T/d/$pm" | python3 -c 'import json,sys; print(json.load(sys.stdin)["entries"][0]["pages_id"])')
	img=pages-$id.img
	addr=$(run_at_offset "$T/d/$pm" 0)
	[[ -n $addr ]] || fail "$pm lists no run"
	flip_byte "$T/d/$img" 7
	md verify verify -D "$T/d"
	expect_run_named verify "$img" "$addr"
}
add pagesum-flip-shmem case_pagesum_flip_shmem

# Both ways of writing pages-1.img sum it right: through the page cache (a
# thread hashes the image's cache pages behind the splice) and O_DIRECT (a
# thread reads the frozen target's memory); t-protnone mixes spliced runs
# with runs read through /proc/PID/mem.
case_pagesum_pages_write() {
	local how=$1 want
	start_prog t-protnone
	dump "$PID" "$T/d" --pages-write "$how" -v 3
	expect_killed "$PID"
	want="through the page cache"
	if [[ $how == direct ]]; then
		want=O_DIRECT
		dd if=/dev/zero of="$T/d/probe" bs=4096 count=1 oflag=direct status=none 2>/dev/null ||
			want="through the page cache"	# this filesystem refuses O_DIRECT
		rm -f "$T/d/probe"
	fi
	grep -q "pages-1.img: $want" "$MD_ERR" || fail "pages-1.img not written $want: $(grep pages-1 "$MD_ERR")"
	md verify verify -D "$T/d" || fail "the set does not verify: $(tail -n1 "$MD_ERR")"
	restore_and_pass "$T/d" good
}
add pagesum-pages-write-direct case_pagesum_pages_write direct
add pagesum-pages-write-cache case_pagesum_pages_write cache

# An image larger than the page cache's room: its head through the cache,
# the rest with O_DIRECT (pagecache.c; the room capped to 64 KiB here), in
# splice mode (both kinds of runs) and read mode; the set verifies, restores.
case_pagesum_pages_split() {
	local mode=$1
	start_prog t-protnone
	MEMDUMP_PAGES_CACHE_MAX=65536 dump "$PID" "$T/d" --mode "$mode" -v 3
	expect_killed "$PID"
	grep -q "pages-1.img: through the page cache for 0 MiB, then O_DIRECT" "$MD_ERR" ||
		fail "pages-1.img not split: $(grep pages-1 "$MD_ERR")"
	if dd if=/dev/zero of="$T/d/probe" bs=4096 count=1 oflag=direct status=none 2>/dev/null; then
		grep -q "pages-1.img: O_DIRECT from 0 MiB on" "$MD_ERR" ||
			fail "no switch to O_DIRECT: $(grep pages-1 "$MD_ERR")"
	fi
	rm -f "$T/d/probe"
	md verify verify -D "$T/d" || fail "the set does not verify: $(tail -n1 "$MD_ERR")"
	restore_and_pass "$T/d" good
}
add pagesum-pages-split-splice case_pagesum_pages_split splice
add pagesum-pages-split-read case_pagesum_pages_split read
