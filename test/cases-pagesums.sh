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
