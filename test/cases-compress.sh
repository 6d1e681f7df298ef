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

# A corrupted compressed image is refused by name before anything is restored;
# the pristine copy still restores.
case_compress_corrupt() {
	local how=$1
	start_prog t-compress "$CZ_MB"
	dump "$PID" "$T/d" --compress
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
	esac
	md restore restore -D "$T/d"
	expect_md_error
	grep -q 'pages-1.img is \(corrupt\|truncated\)' "$MD_ERR" ||
		fail "the error does not name pages-1.img as corrupt: $(cat "$MD_ERR")"
	sleep 0.2
	alive "$PID" && fail "a process with pid $PID is left after the failed restore"
	md verify verify -D "$T/d" && fail "verify passed a corrupted compressed image"
	restore_and_pass "$T/good" good
}
for h in block index trunc; do add "compress-corrupt-$h" case_compress_corrupt "$h"; done
