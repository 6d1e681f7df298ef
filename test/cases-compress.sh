# Compressed pages images (dump --compress, src/image/compress.c) and image
# sets as one stream (pack, unpack, dump/restore --stream, src/cli/pack.c).
# t-compress holds a compressible heap beside incompressible pages.

CZ_MB=16

# pages_compressed DIR: pages-1.img of DIR starts with the compressed layout's magic
expect_compressed() {
	[[ $(head -c 8 "$1/pages-1.img") == MDPAGEZ1 ]] ||
		fail "$1/pages-1.img is not compressed (magic '$(head -c 8 "$1/pages-1.img" | od -An -c)')"
}

# readmem_heap DIR PAGE: read-mem of heap page PAGE of t-compress is what it wrote
expect_heap_page() {
	local a=$(( ${READY[2]} + $2 * 4096 ))
	md "read-mem.$2" read-mem -D "$1" "$a" 4096 || fail "read-mem failed: $(tail -n1 "$MD_ERR")"
	"$TESTBIN/t-compress" --gen "$a" 4096 "${READY[4]}" | cmp -s - "$MD_OUT" ||
		fail "read-mem of heap page $2 differs from what t-compress wrote"
}

# Round trip: the image is smaller than the raw pages, verify, read-mem and
# the restored content are exact.
case_compress_rt() {
	local algo=$1
	start_prog t-compress "$CZ_MB"
	dump "$PID" "$T/d" --compress="$algo"
	expect_killed "$PID"
	expect_compressed "$T/d"
	local size raw=$(( 2 * CZ_MB << 20 ))
	size=$(stat -c %s "$T/d/pages-1.img")
	note "pages-1.img: $size bytes for at least $raw raw"
	(( size < raw * 3 / 4 )) || fail "compressed pages-1.img is $size bytes, raw pages $raw"
	md verify verify -D "$T/d" || fail "verify failed: $(tail -n1 "$MD_ERR")"
	expect_heap_page "$T/d" 1
	expect_heap_page "$T/d" $(( (CZ_MB << 8) - 2 ))
	md show show -D "$T/d" || fail "show failed: $(tail -n1 "$MD_ERR")"
	restore_and_pass "$T/d" 1
}
for a in lz4 zstd zstd:9; do add "compress-rt-$a" case_compress_rt "$a"; done

# --leave-running: the target runs on, the compressed set restores after it is gone.
case_compress_lr() {
	start_prog t-compress "$CZ_MB"
	dump "$PID" "$T/d" --compress --leave-running
	expect_untraced "$PID"
	expect_compressed "$T/d"
	kill -9 "$PID"; expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add compress-lr case_compress_lr

# An incremental chain mixing raw and compressed sets (helpers of cases-incr.sh).
case_compress_chain() {
	local first="" second=""	# z: that set compressed
	[[ $1 == z ]] && first=--compress
	[[ $2 == z ]] && second=--compress=zstd
	start_prog t-incr "$INCR_MB" "$INCR_STRIDE"
	pre_dump "$T/p1" $first
	incr_step
	dump "$PID" "$T/d2" --prev-images-dir ../p1 $second
	expect_killed "$PID"
	[[ -n $first ]] && expect_compressed "$T/p1"
	[[ -n $second ]] && expect_compressed "$T/d2"
	expect_parent_entries "$T/d2"
	md verify verify -D "$T/d2" || fail "verify of the chain failed: $(tail -n1 "$MD_ERR")"
	local a=$(( READY[2] )) p
	for p in 0:0x1acc0002 1:0x1acc0001; do
		md read-mem read-mem -D "$T/d2" $(( a + ${p%%:*} * 4096 )) 4096 ||
			fail "read-mem of the chain failed: $(tail -n1 "$MD_ERR")"
		"$TESTBIN/t-incr" --gen $(( a + ${p%%:*} * 4096 )) 4096 "${p#*:}" | cmp -s - "$MD_OUT" ||
			fail "read-mem of page ${p%%:*} through the chain differs"
	done
	restore_and_pass "$T/d2" 1
}
add compress-chain-z-raw case_compress_chain z raw
add compress-chain-raw-z case_compress_chain raw z

# An LZ4 set restores with the blob decoding the blocks straight into the
# process's memory (no memfd of raw bytes): whole blocks, blocks stored as
# they are (the incompressible pages), blocks cut by a run's or a piece's
# edge (the program's small VMAs share blocks), with both of the blob's fill
# helpers, with its sum helper alone, and with none.
case_compress_blob() {
	local helper=$1
	start_prog t-compress "$CZ_MB"
	dump "$PID" "$T/d" --compress
	expect_killed "$PID"
	expect_compressed "$T/d"
	truncate -s "$READY_SIZE" "$OUT"
	if [[ $helper == both ]]; then
		restore_bg "$T/d" 1 -v 3
	else
		MEMDUMP_FILL_HELPER=$helper restore_bg "$T/d" 1 -v 3
	fi
	wait_restored "$PID"
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
	grep -q 'pages-1.img: LZ4, [0-9]* blocks decoded into the memory by the blob' "$MD_ERR" ||
		fail "the blob did not decode the blocks itself"
	grep -q 'compressed pages-1.img' "$MD_ERR" && fail "a memfd was filled: $(grep -m1 memfd "$MD_ERR")"
	return 0
}
for h in both sum 0; do add "compress-blob-$h" case_compress_blob "$h"; done

# first_block DIR STORED: the file offset of the first block of DIR/pages-1.img
# stored as it is (STORED=1) or compressed (0), and its length
first_block() {
	python3 - "$1/pages-1.img" "$2" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
magic, algo, block, raw, nb = struct.unpack_from('<8sIIQQ', d, 0)
pos = 32 + 4 * nb
for b in range(nb):
    (v,) = struct.unpack_from('<I', d, 32 + 4 * b)
    if (v >> 31) == int(sys.argv[2]):
        print(pos, v & 0x7fffffff, b)
        break
    pos += v & 0x7fffffff
PY
}

# A corrupted compressed image is refused by name before anything is restored;
# the pristine copy still restores.
case_compress_corrupt() {
	local how=$1 algo=${2:-lz4}
	start_prog t-compress "$CZ_MB"
	dump "$PID" "$T/d" --compress="$algo"
	expect_killed "$PID"
	cp -a "$T/d" "$T/good"
	local s; s=$(stat -c %s "$T/d/pages-1.img")
	case $how in
	block)	# bytes in the middle of the blocks
		printf 'corrupted!corrupted!' | dd of="$T/d/pages-1.img" bs=1 seek=$(( s / 2 )) \
			conv=notrunc status=none ;;
	index)	# the size of the first block
		printf '\x07\x00\x00\x00' | dd of="$T/d/pages-1.img" bs=1 seek=32 conv=notrunc status=none ;;
	trunc)	truncate -s $(( s - 5000 )) "$T/d/pages-1.img" ;;
	token|stored)	# a compressed block's first tokens (it cannot decode), a stored block's byte
		local at len blk
		read -r at len blk < <(first_block "$T/d" $([[ $how == stored ]] && echo 1 || echo 0))
		[[ -n $at ]] || fail "no such block in pages-1.img"
		note "block $blk at $at, $len bytes"
		if [[ $how == token ]]; then
			printf '\xf0\xff\xff\xff\xff\xff\xff\xff' | dd of="$T/d/pages-1.img" bs=1 \
				seek="$at" conv=notrunc status=none
		else
			printf '\x5a' | dd of="$T/d/pages-1.img" bs=1 seek=$(( at + len / 2 )) \
				conv=notrunc status=none
		fi ;;
	esac
	md restore restore -D "$T/d"
	expect_md_error
	grep -q 'pages-1.img is \(corrupt\|truncated\)' "$MD_ERR" ||
		fail "the error does not name pages-1.img as corrupt: $(cat "$MD_ERR")"
	case $how in
	token) grep -q "pages-1.img is corrupt: its block $blk (pages bytes .*) does not decompress" \
		"$MD_ERR" || fail "the error does not name the block: $(cat "$MD_ERR")" ;;
	stored) grep -q 'pages-1.img is corrupt: the pages of the run at' "$MD_ERR" ||
		fail "the error does not name the run: $(cat "$MD_ERR")" ;;
	esac
	sleep 0.2
	alive "$PID" && fail "a process with pid $PID is left after the failed restore"
	md verify verify -D "$T/d" && fail "verify passed a corrupted compressed image"
	restore_and_pass "$T/good" good
}
for h in block index trunc token stored; do add "compress-corrupt-$h" case_compress_corrupt "$h"; done
# zstd: the blocks are decompressed by memdump as it feeds them to the blob
for h in block token stored; do add "compress-corrupt-zstd-$h" case_compress_corrupt "$h" zstd; done

# A zstd image is fed to the blob as it is decompressed (src/image/feed.c),
# not decompressed whole into a memfd first; the content is exact.
case_compress_zstd_fed() {
	start_prog t-compress "$CZ_MB"
	dump "$PID" "$T/d" --compress=zstd
	expect_killed "$PID"
	expect_compressed "$T/d"
	restore_and_pass "$T/d" 1 -v 3
	grep -q 'pages-1.img fed to the restorer as it is decompressed' "$MD_ERR" ||
		fail "pages-1.img was not fed to the blob: $(grep -m1 pages-1 "$MD_ERR")"
}
add compress-zstd-fed case_compress_zstd_fed

# A killing dump compresses after the kill. Its worker killed there (stalled
# at pages-compressed: the compressed pages-1.img, its pagemap and inventory
# written and synced, all unnamed, nothing renamed yet): the raw set is whole
# (inventory, raw pages, no leftover file) and restores.
case_compress_killed_late() {
	start_prog t-compress "$CZ_MB"
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=pages-compressed "$MEMDUMP" dump -t "$PID" -D "$T/d" --compress 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" 'fault point pages-compressed' "$OP_TIMEOUT" ||
		fail "the dump never reached pages-compressed"
	alive "$PID" && [[ $(proc_state "$PID") != Z ]] &&
		fail "the target still runs at pages-compressed: the compression was not after the kill"
	kill_worker "$mdpid"
	expect_killed "$PID"
	[[ -e $T/d/inventory.img ]] || fail "the raw set lost its inventory.img"
	[[ $(head -c 8 "$T/d/pages-1.img") != MDPAGEZ1 ]] || fail "pages-1.img is compressed"
	local extra; extra=$(find "$T/d" -name '.*' ! -name . | head -n1)
	[[ -z $extra ]] || fail "a file is left behind: $extra"
	md verify verify -D "$T/d" || fail "verify of the raw set failed: $(tail -n1 "$MD_ERR")"
	restore_and_pass "$T/d" 1
}
add compress-killed-late case_compress_killed_late

# The compressed set fails as its last unnamed file is written (as on a full
# disk: fault point pages-compressed made to fail): the dump keeps the raw
# set, complete and untouched, says so, and it restores.
case_compress_late_fail() {
	start_prog t-compress "$CZ_MB"
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=pages-compressed MEMDUMP_FAULT_FAIL=1 "$MEMDUMP" dump -t "$PID" -D "$T/d" \
		--compress 2> "$MD_ERR" || fail "dump failed: $(tail -n1 "$MD_ERR")"
	show_file "dump stderr" "$MD_ERR"
	expect_killed "$PID"
	grep -q 'fault injected at pages-compressed.*pages-1.img is left uncompressed' "$MD_ERR" ||
		fail "the dump does not say the pages are left uncompressed"
	[[ -e $T/d/inventory.img ]] || fail "the raw set lost its inventory.img"
	[[ $(head -c 8 "$T/d/pages-1.img") != MDPAGEZ1 ]] || fail "pages-1.img is compressed"
	local extra; extra=$(find "$T/d" -name '.*' ! -name . | head -n1)
	[[ -z $extra ]] || fail "a file is left behind: $extra"
	md verify verify -D "$T/d" || fail "verify of the raw set failed: $(tail -n1 "$MD_ERR")"
	restore_and_pass "$T/d" 1
}
add compress-late-fail case_compress_late_fail

# The compression after the kill, then done: the compressed set is complete.
case_compress_late_done() {
	start_prog t-compress "$CZ_MB"
	MD_ERR=$T/md.dump.err
	"$MEMDUMP" dump -t "$PID" -D "$T/d" --compress -v 3 2> "$MD_ERR" || fail "dump failed: $(tail -n1 "$MD_ERR")"
	expect_killed "$PID"
	expect_compressed "$T/d"
	grep -q 'pages-1.img: .* compressed to' "$MD_ERR" || fail "no line about the compression"
	[[ -z $(find "$T/d" -name '.*' ! -name . | head -n1) ]] || fail "a dot file is left in the set"
	md verify verify -D "$T/d" || fail "verify failed: $(tail -n1 "$MD_ERR")"
	restore_and_pass "$T/d" 1
}
add compress-late-done case_compress_late_done

# pack DIR > FILE, unpack: the same files, and the unpacked set restores.
case_pack_rt() {
	start_prog t-compress "$CZ_MB"
	dump "$PID" "$T/d" --compress=zstd
	expect_killed "$PID"
	timeout "$OP_TIMEOUT" "$MEMDUMP" pack "$T/d" > "$T/s" 2> "$T/pack.err" ||
		fail "pack failed: $(cat "$T/pack.err")"
	timeout "$OP_TIMEOUT" "$MEMDUMP" unpack "$T/u" < "$T/s" 2> "$T/unpack.err" ||
		fail "unpack failed: $(cat "$T/unpack.err")"
	diff -r "$T/d" "$T/u" > /dev/null || fail "the unpacked set differs from the packed one"
	md verify verify -D "$T/u" || fail "verify of the unpacked set failed: $(tail -n1 "$MD_ERR")"
	restore_and_pass "$T/u" 1
}
add pack-rt case_pack_rt

# pack into a pipe splices the pages image (16 MiB raw: over the 4 MiB the
# splice starts at) while a thread hashes it: the same stream, byte for byte,
# as pack into a file (read and written), which unpacks and restores; a reader
# that goes away early fails pack with one line naming the stream.
case_pack_pipe() {
	start_prog t-compress "$CZ_MB"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	(( $(stat -c %s "$T/d/pages-1.img") >= 4 << 20 )) || fail "pages-1.img is under 4 MiB"
	timeout "$OP_TIMEOUT" "$MEMDUMP" pack "$T/d" > "$T/s.file" 2> "$T/pack.err" ||
		fail "pack into a file failed: $(cat "$T/pack.err")"
	( timeout "$OP_TIMEOUT" "$MEMDUMP" pack "$T/d" 2> "$T/pack.err" | cat > "$T/s.pipe" ) ||
		fail "pack into a pipe failed: $(cat "$T/pack.err")"
	cmp "$T/s.file" "$T/s.pipe" || fail "the stream through a pipe differs from the one into a file"
	timeout "$OP_TIMEOUT" "$MEMDUMP" unpack "$T/u" < "$T/s.pipe" 2> "$T/unpack.err" ||
		fail "unpack failed: $(cat "$T/unpack.err")"
	local rc
	timeout "$OP_TIMEOUT" "$MEMDUMP" pack "$T/d" 2> "$T/pack.err" | head -c 1000 > /dev/null
	rc=${PIPESTATUS[0]}
	show_file "pack into a reader that left" "$T/pack.err"
	(( rc != 0 && rc != 124 )) || fail "pack into a reader that left exited with $rc"
	[[ $(wc -l < "$T/pack.err") == 1 ]] || fail "not one line: $(cat "$T/pack.err")"
	grep -q 'cannot write the stream: Broken pipe' "$T/pack.err" ||
		fail "the error does not name the stream: $(cat "$T/pack.err")"
	restore_and_pass "$T/u" 1
}
add pack-pipe case_pack_pipe

# restore --stream -: from a pipe (cat), run in the background as restore_bg does
restore_stream_bg() {
	local label=$1; shift
	RPIDFILE=$T/pidfile.$label MD_ERR=$T/md.restore.$label.err MD_OUT=$T/md.restore.$label.out
	rm -f "$RPIDFILE"
	# shellcheck disable=SC2002
	( cat "$@" | timeout -k 5 $((OP_TIMEOUT * 3)) "$MEMDUMP" restore --stream - \
		--pidfile "$RPIDFILE" > "$MD_OUT" 2> "$MD_ERR" ) < /dev/null &
	RPID=$!
	track "$RPID"
}

# dump --stream - into a pipe, restore --stream - from one: the content is exact,
# and neither leaves its private directory behind.
case_stream_rt() {
	local algo=$1
	[[ $algo == raw ]] && algo=""
	mkdir -p "$T/tmp"
	start_prog t-compress "$CZ_MB"
	( TMPDIR=$T/tmp timeout -k 5 "$OP_TIMEOUT" "$MEMDUMP" dump -t "$PID" --stream - \
		${algo:+--compress=$algo} | cat > "$T/s" ) 2> "$T/dump.err" ||
		fail "dump --stream failed: $(cat "$T/dump.err")"
	expect_killed "$PID"
	[[ $(head -c 8 "$T/s") == MDSTRM01 ]] || fail "the dump's stdout is not a stream"
	grep -q "^dumped process $PID" "$T/dump.err" || fail "the dump's summary is not on stderr"
	truncate -s "$READY_SIZE" "$OUT"
	TMPDIR=$T/tmp restore_stream_bg 1 "$T/s"
	wait_restored "$PID"
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore --stream exited with $MD_RC"
	[[ -z $(ls -A "$T/tmp") ]] || fail "left in TMPDIR: $(ls -A "$T/tmp")"
}
add stream-rt-raw case_stream_rt raw
add stream-rt-lz4 case_stream_rt lz4

# stream_bad FILE OUT HOW: a broken copy of the stream FILE
stream_bad() {
	case $3 in
	trunc)	head -c $(( $(stat -c %s "$1") / 2 )) "$1" > "$2" ;;
	tail)	head -c $(( $(stat -c %s "$1") - 3 )) "$1" > "$2" ;;
	corrupt) cp "$1" "$2"
		printf 'corrupted!' | dd of="$2" bs=1 seek=$(( $(stat -c %s "$1") / 2 )) \
			conv=notrunc status=none ;;
	reorder) python3 - "$1" "$2" <<'PY' || fail "cannot reorder the stream"
import struct, sys
d = open(sys.argv[1], 'rb').read()
pos, ents = 32, []
while True:
    magic, idx, kind, nl, zero, size = struct.unpack_from('<IIHHIQ', d, pos)
    end = pos + 24 + nl + (size if kind != 3 else 0) + 8
    ents.append(d[pos:end])
    pos = end
    if kind == 3:
        break
ents[2], ents[3] = ents[3], ents[2]
open(sys.argv[2], 'wb').write(d[:32] + b''.join(ents))
PY
		;;
	other)	# the head of this stream, the entries of another set's
		{ head -c 32 "$1"; tail -c +33 "$T/s2"; } > "$2" ;;
	esac
}

# md_in FILE LABEL ARGS...: memdump ARGS with FILE on stdin (md's reads /dev/null)
md_in() {
	local in=$1 label=$2; shift 2
	MD_OUT=$T/md.$label.out MD_ERR=$T/md.$label.err
	timeout -k 5 "$OP_TIMEOUT" "$MEMDUMP" "$@" < "$in" > "$MD_OUT" 2> "$MD_ERR"
	MD_RC=$?
	note "memdump $* < ${in##*/} -> exit $MD_RC"
	head -c 3000 "$MD_ERR" | sed 's/^/#   stderr: /'
	(( MD_RC == 124 || MD_RC == 137 )) && fail "memdump $1 timed out"
	return $MD_RC
}

# Truncated, corrupted, reordered streams and a stream of another set: one
# line, nothing restored, nothing left (neither DIR nor its temporary).
case_stream_bad() {
	local how=$1
	mkdir -p "$T/tmp"
	start_prog t-compress 4
	dump "$PID" "$T/d" --compress
	expect_killed "$PID"
	"$MEMDUMP" pack "$T/d" > "$T/s" || fail "pack failed"
	if [[ $how == other ]]; then
		local keep=$PID keep_out=$OUT keep_size=$READY_SIZE
		start_prog t-pattern 4
		dump "$PID" "$T/d2"
		expect_killed "$PID"
		"$MEMDUMP" pack "$T/d2" > "$T/s2" || fail "pack failed"
		PID=$keep OUT=$keep_out READY_SIZE=$keep_size
	fi
	local want
	case $how in
	trunc|tail) want='truncated' ;;
	corrupt) want='checksum of .* does not match' ;;
	reorder) want='reordered' ;;
	other) want='another set' ;;
	esac
	stream_bad "$T/s" "$T/bad" "$how"
	md_in "$T/bad" unpack unpack "$T/u"
	expect_md_error
	grep -q "$want" "$MD_ERR" || fail "the error does not say '$want': $(cat "$MD_ERR")"
	[[ -z $(ls -d "$T"/u* 2>/dev/null) ]] || fail "a failed unpack left $(ls -d "$T"/u*)"
	TMPDIR=$T/tmp md_in "$T/bad" restore restore --stream -
	expect_md_error
	grep -q "$want" "$MD_ERR" || fail "the error does not say '$want': $(cat "$MD_ERR")"
	sleep 0.2
	alive "$PID" && fail "a process with pid $PID is left after the failed restore"
	[[ -z $(ls -A "$T/tmp") ]] || fail "left in TMPDIR: $(ls -A "$T/tmp")"
	note "the intact stream still restores"
	truncate -s "$READY_SIZE" "$OUT"
	restore_stream_bg good "$T/s"
	wait_restored "$PID"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
}
for h in trunc tail corrupt reorder other; do add "stream-bad-$h" case_stream_bad "$h"; done

# A killing dump into a pipe streams its pages while frozen (version 3:
# pages-1.img first, inventory.img last; MEMDUMP_STREAM_STAGED=1 stages the
# set whole first, version 1). The stream restores; truncated, corrupted (in
# the pages: their run checksums), reordered and another stream's entries
# are refused with one line and nothing is left behind.
case_stream_direct() {
	mkdir -p "$T/tmp"
	start_prog t-compress "$CZ_MB"
	( TMPDIR=$T/tmp timeout -k 5 "$OP_TIMEOUT" "$MEMDUMP" dump -t "$PID" --stream - -v 3 |
		cat > "$T/s" ) 2> "$T/dump.err" || fail "dump --stream failed: $(tail -n1 "$T/dump.err")"
	expect_killed "$PID"
	grep -q 'pages-1.img: into the stream' "$T/dump.err" || fail "the pages were not streamed"
	[[ -z $(ls -A "$T/tmp") ]] || fail "dump --stream left in TMPDIR: $(ls -A "$T/tmp")"
	[[ $(od -An -t u4 -j 8 -N 4 "$T/s" | tr -d ' ') == 3 ]] || fail "the stream is not of version 3"
	local keep=$PID keep_out=$OUT keep_size=$READY_SIZE
	start_prog t-pattern 4
	( MEMDUMP_STREAM_STAGED=1 "$MEMDUMP" dump -t "$PID" --stream - | cat > "$T/s1" ) 2> "$T/dump1.err" ||
		fail "the staged dump --stream failed: $(tail -n1 "$T/dump1.err")"
	[[ $(od -An -t u4 -j 8 -N 4 "$T/s1" | tr -d ' ') == 1 ]] || fail "the staged stream is not of version 1"
	start_prog t-pattern 4
	( "$MEMDUMP" dump -t "$PID" --stream - | cat > "$T/s2" ) 2> "$T/dump2.err" ||
		fail "the second dump --stream failed: $(tail -n1 "$T/dump2.err")"
	PID=$keep OUT=$keep_out READY_SIZE=$keep_size
	local how want
	for how in trunc tail corrupt reorder other; do
		case $how in
		trunc|tail) want='truncated' ;;
		corrupt) want='pages-1.img is corrupt' ;;
		reorder) want='reordered' ;;
		other) want='not the ones it was written with' ;;
		esac
		stream_bad "$T/s" "$T/bad" "$how"
		md_in "$T/bad" "unpack.$how" unpack "$T/u"
		expect_md_error
		grep -q "$want" "$MD_ERR" || fail "$how: the error does not say '$want': $(cat "$MD_ERR")"
		[[ -z $(ls -d "$T"/u* 2>/dev/null) ]] || fail "a failed unpack left $(ls -d "$T"/u*)"
		TMPDIR=$T/tmp md_in "$T/bad" "restore.$how" restore --stream -
		expect_md_error
		grep -q "$want" "$MD_ERR" || fail "$how: the error does not say '$want': $(cat "$MD_ERR")"
		alive "$PID" && fail "a process with pid $PID is left after the failed restore"
		[[ -z $(ls -A "$T/tmp") ]] || fail "left in TMPDIR: $(ls -A "$T/tmp")"
	done
	md_in "$T/s" unpack unpack "$T/u" || fail "unpack failed: $(tail -n1 "$MD_ERR")"
	md verify verify -D "$T/u" || fail "verify of the unpacked set failed: $(tail -n1 "$MD_ERR")"
	note "the intact stream restores"
	truncate -s "$READY_SIZE" "$OUT"
	TMPDIR=$T/tmp restore_stream_bg good "$T/s"
	wait_restored "$PID"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	[[ -z $(ls -A "$T/tmp") ]] || fail "restore --stream left in TMPDIR: $(ls -A "$T/tmp")"
}
add stream-direct case_stream_direct

# memdump SIGKILLed while the frozen target's pages go into the stream (a
# reader that stops after 4 MB): the target runs on unharmed, and the stream
# it left is refused as truncated.
case_stream_direct_killed() {
	mkdir -p "$T/tmp"
	start_prog t-compress 64
	( TMPDIR=$T/tmp "$MEMDUMP" dump -t "$PID" --stream - -v 3 2> "$T/dump.err" & echo $! > "$T/md.pid"
	  wait ) | { head -c 4000000 > "$T/s"; sleep 30; } &
	local reader=$!
	track "$reader"
	wait_until 20 grep -q 'pages-1.img: into the stream' "$T/dump.err" ||
		fail "the pages never went into the stream: $(tail -n1 "$T/dump.err")"
	wait_until 10 eval '(( $(stat -c %s "$T/s") >= 4000000 ))' || fail "the reader got no 4 MB"
	kill -KILL "$(cat "$T/md.pid")"
	note "memdump killed while the pages were streamed"
	kill -KILL "$reader" 2>/dev/null
	wait_until 10 untraced "$PID" || sleep 5
	expect_untraced "$PID"
	kill -USR1 "$PID" || fail "cannot signal $PID"
	get_result "$OUT"
	md_in "$T/s" unpack unpack "$T/u"
	expect_md_error
	grep -q 'truncated' "$MD_ERR" || fail "the cut stream: $(cat "$MD_ERR")"
	[[ -z $(ls -d "$T"/u* 2>/dev/null) ]] || fail "a failed unpack left $(ls -d "$T"/u*)"
	note "a reader that goes away after 100 kB: the dump fails in one line, the target runs on"
	start_prog t-compress 16
	mkdir -p "$T/tmp2"	# the SIGKILLed one left its staged directory in tmp
	( TMPDIR=$T/tmp2 timeout -k 5 "$OP_TIMEOUT" "$MEMDUMP" dump -t "$PID" --stream - 2> "$T/gone.err" |
		head -c 100000 > /dev/null )
	show_file "dump into a reader that left" "$T/gone.err"
	[[ $(wc -l < "$T/gone.err") == 1 ]] || fail "not one line: $(cat "$T/gone.err")"
	grep -q "^memdump: dump failed: .*reader is gone" "$T/gone.err" ||
		fail "the error does not name the reader: $(cat "$T/gone.err")"
	[[ -z $(ls -A "$T/tmp2") ]] || fail "left in TMPDIR: $(ls -A "$T/tmp2")"
	check_child_pass
}
add stream-direct-killed case_stream_direct_killed

# A tree's chain in one stream: two pre-dumps (p1, p2 on it), then dump --stream
# with --prev-images-dir p2 given relative to the current directory; the stream
# carries p2 and p1 (parent/, parent/parent/, each proc-PID/parent made again),
# unpack makes a chain that verifies, a changed byte in it or a truncated one is
# refused with nothing left, and restore --stream brings the tree back whole.
# With "enc": every set sealed and compressed (--encrypt --compress), unpacked
# with and without the key, a wrong key refused.
case_stream_incr_tree() {
	local enc=() dec=() want
	mkdir -p "$T/tmp"
	if [[ ${1:-} == enc ]]; then
		head -c 32 /dev/urandom > "$T/key"; head -c 32 /dev/urandom > "$T/key2"
		enc=(--encrypt "$T/key" --compress) dec=(--decrypt "$T/key")
	fi
	start_incr_tree
	pre_dump "$T/p1" "${enc[@]}"
	incr_tree_step 1
	pre_dump "$T/p2" --prev-images-dir ../p1 "${enc[@]}"
	incr_tree_step 2
	READY_SIZE=$(stat -c %s "$OUT")
	( cd "$T" && TMPDIR=$T/tmp timeout -k 5 "$OP_TIMEOUT" "$MEMDUMP" dump -t "$PID" --stream - \
		--prev-images-dir p2 "${enc[@]}" | cat > "$T/s" ) 2> "$T/dump.err" ||
		fail "dump --stream of the chain failed: $(cat "$T/dump.err")"
	expect_killed "$PID"
	wait_until 5 eval '[[ ! -d /proc/'"$CHILD"' ]]' || fail "the child outlived the dump"
	[[ -z $(ls -A "$T/tmp") ]] || fail "dump --stream left in TMPDIR: $(ls -A "$T/tmp")"
	md_in "$T/s" unpack unpack "${dec[@]}" "$T/u" || fail "unpack failed: $(tail -n1 "$MD_ERR")"
	[[ -d $T/u/parent && ! -L $T/u/parent && -d $T/u/parent/parent/proc-$CHILD ]] ||
		fail "the unpacked chain: $(ls -l "$T/u" "$T/u/parent")"
	[[ $(readlink "$T/u/proc-$CHILD/parent") == ../parent/proc-$CHILD &&
	   $(readlink "$T/u/parent/proc-$CHILD/parent") == ../parent/proc-$CHILD ]] ||
		fail "the child's links: $(readlink "$T/u/proc-$CHILD/parent" "$T/u/parent/proc-$CHILD/parent")"
	diff -r "$T/p1" "$T/u/parent/parent" > /dev/null || fail "the unpacked p1 differs from p1"
	md verify verify -D "$T/u" "${dec[@]}" || fail "verify of the unpacked chain failed: $(tail -n1 "$MD_ERR")"
	if [[ ${1:-} == enc ]]; then
		md_in "$T/s" unpack.nokey unpack "$T/u2" || fail "unpack without the key failed: $(tail -n1 "$MD_ERR")"
		md_in "$T/s" unpack.wrong unpack --decrypt "$T/key2" "$T/u3" && fail "unpack with a wrong key passed"
		grep -q "wrong key" "$MD_ERR" || fail "the wrong key: $(cat "$MD_ERR")"
		[[ -z $(ls -d "$T"/u3* 2>/dev/null) ]] || fail "a refused unpack left $(ls -d "$T"/u3*)"
	fi
	"$MEMDUMP" pack "$T/u" > "$T/s2" 2> "$T/pack.err" || fail "pack of the chain failed: $(cat "$T/pack.err")"
	cmp -s "$T/s" "$T/s2" || fail "the unpacked chain packs into another stream"
	for want in corrupt trunc v1 nolink-dir; do
		case $want in
		corrupt|trunc) stream_bad "$T/s" "$T/bad" "$want" ;;
		*) python3 "$TESTSRC/streamcraft.py" "$T/s" "$T/bad" "$want" ||
			fail "streamcraft $want failed" ;;
		esac
		md_in "$T/bad" "unpack.$want" unpack "${dec[@]}" "$T/ub"
		expect_md_error
		[[ -z $(ls -d "$T"/ub* 2>/dev/null) ]] || fail "a failed unpack left $(ls -d "$T"/ub*)"
	done
	grep -q "links parent/proc-$CHILD, which it did not make" "$MD_ERR" ||
		fail "a link to a directory never made: $(cat "$MD_ERR")"
	python3 "$TESTSRC/streamcraft.py" "$T/s" "$T/same" same && cmp -s "$T/s" "$T/same" ||
		fail "streamcraft.py does not rewrite a stream as it is: its refusals prove nothing"
	incr_tree_rewind
	RPIDFILE=$T/pidfile.s MD_ERR=$T/md.restore.s.err MD_OUT=$T/md.restore.s.out
	( cat "$T/s" | TMPDIR=$T/tmp timeout -k 5 $((OP_TIMEOUT * 3)) "$MEMDUMP" restore --stream - \
		"${dec[@]}" --pidfile "$RPIDFILE" > "$MD_OUT" 2> "$MD_ERR" ) < /dev/null &
	RPID=$!
	track "$RPID"
	incr_tree_pass
	[[ -z $(ls -A "$T/tmp") ]] || fail "left in TMPDIR: $(ls -A "$T/tmp")"
}
add stream-incr-tree case_stream_incr_tree
add stream-incr-tree-enc case_stream_incr_tree enc

# --compress with --page-server: the pages go to the server as they are, so the
# dump refuses the pair by name before it seizes the target.
case_compress_page_server_refused() {
	command -p python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print("PORT", s.getsockname()[1], flush=True); c, _ = s.accept(); time.sleep(30)' \
		> "$T/ps.out" 2>&1 &
	track $!
	wait_line "$T/ps.out" '^PORT ' 10 || fail "the listener did not start"
	start_prog t-sleeper
	md refuse dump -t "$PID" -D "$T/d" --compress --page-server --address 127.0.0.1 \
		--port "$(awk '/^PORT/ { print $2 }' "$T/ps.out")"
	expect_md_error
	grep -q -- "--compress with --page-server" "$MD_ERR" || fail "the refusal does not say why: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	expect_untraced "$PID"
	kill "$PID"
}
add compress-page-server-refused case_compress_page_server_refused
