# Encrypted image sets (dump --encrypt, readers' --decrypt; src/image/crypt.c).
# t-secret holds a secret string, made at start, in its heap and in a pipe.

ENC_MB=8

# enc_keys: $T/key, $T/key2 (another), $T/key.short (31 bytes), $T/key.long (33)
enc_keys() {
	head -c 32 /dev/urandom > "$T/key"
	head -c 32 /dev/urandom > "$T/key2"
	head -c 31 /dev/urandom > "$T/key.short"
	head -c 33 /dev/urandom > "$T/key.long"
	touch "$T/enc.start"
}

# expect_sealed DIR [MIN]: every image of DIR (and of its sub-sets) starts with the
# sealed head; at least MIN (6) of them
expect_sealed() {
	local f n=0
	while IFS= read -r f; do
		[[ $(head -c 8 "$f") == MDSEAL01 ]] || fail "${f#"$1"/} is not encrypted"
		n=$(( n + 1 ))
	done < <(find "$1" -type f \( -name '*.img' -o -name stats-dump \))
	(( n >= ${2:-6} )) || fail "only $n images in $1"
}

# expect_no_secret DIR...: the secret (READY field 2, or each of SECRETS) is in no
# file of DIR, nor in a file memdump could have left in /tmp, /var/tmp or TMPDIR since
# the case began (written since, three levels down at most; the test runs' own
# directories are not memdump's)
expect_no_secret() {
	local secrets=("${SECRETS[@]:-${READY[2]}}") secret hits=""
	for secret in "${secrets[@]}"; do
		[[ $secret == MDSECRET-* ]] || fail "no secret from t-secret: '$secret'"
		hits+=$( { grep -rlsF -D skip -- "$secret" "$@"
			   find /tmp /var/tmp "${TMPDIR:-/tmp}" -xdev -maxdepth 3 -type f \
				-newer "$T/enc.start" -size -256M -not -path '*/memdump-test.*' \
				-print0 2>/dev/null | xargs -0 -r grep -lsF -D skip -- "$secret"; } |
			 sort -u)
	done
	[[ -z $hits ]] || fail "a secret is in: $(echo $hits)"
	note "no secret (${#secrets[@]}) is in an image nor a temporary file"
}

# enc_refused LABEL DIR WHAT ARGS...: restore DIR (with ARGS) fails naming WHAT, nothing restored
enc_refused() {
	local label=$1 dir=$2 what=$3; shift 3
	md "restore.$label" restore -D "$dir" "$@" && fail "restore of $label succeeded"
	[[ $(wc -l < "$MD_ERR") == 1 ]] || fail "restore of $label: not one line: $(cat "$MD_ERR")"
	grep -qF -- "$what" "$MD_ERR" || fail "restore of $label does not name '$what': $(cat "$MD_ERR")"
	alive "$PID" && fail "restore of $label left process $PID"
	return 0
}

# enc_restore_and_pass DIR LABEL: restore_and_pass with --decrypt $T/key
enc_restore_and_pass() {
	truncate -s "$READY_SIZE" "$OUT"
	alive "$PID" && fail "pid $PID is in use before restore"
	restore_bg "$1" "$2" --decrypt "$T/key"
	wait_restored "$PID"
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC, want 0 (the program's status)"
}

# Round trip of a killing dump: every image sealed, no secret anywhere, the
# readers with --decrypt, the restored process checks itself.
case_enc_rt() {
	enc_keys
	start_prog t-secret "$ENC_MB"
	dump "$PID" "$T/d" --encrypt "$T/key"
	expect_killed "$PID"
	expect_sealed "$T/d"
	expect_no_secret "$T/d"
	md verify.plain verify -D "$T/d" && fail "verify without the key passed"
	grep -q "is encrypted: give --decrypt" "$MD_ERR" || fail "verify without the key: $(cat "$MD_ERR")"
	md verify verify -D "$T/d" --decrypt "$T/key" || fail "verify failed: $(tail -n1 "$MD_ERR")"
	md show show -D "$T/d" --decrypt "$T/key" || fail "show failed: $(tail -n1 "$MD_ERR")"
	grep -q "t-secret" "$MD_OUT" || fail "show does not list t-secret"
	md show.json show --json -D "$T/d" --decrypt "$T/key" || fail "show --json failed: $(tail -n1 "$MD_ERR")"
	enc_restore_and_pass "$T/d" 1
	expect_no_secret "$T/d"
}
add enc-rt case_enc_rt

# The layout as docs/images.md gives it, read by another implementation
# (sealcheck.py, python3-cryptography): every file of a killing dump and of a
# --leave-running one under the same key authenticates with its set's own
# key (HKDF of the key and the set id), the two sets' keys differ, and the
# pages image (sealed by the page writer) holds the secret in its plaintext.
case_enc_layout() {
	enc_keys
	start_prog t-secret "$ENC_MB"
	dump "$PID" "$T/a" --encrypt "$T/key" --leave-running
	expect_untraced "$PID"
	dump "$PID" "$T/b" --encrypt "$T/key"
	expect_killed "$PID"
	local s
	for s in a b; do
		python3 "$TESTSRC/sealcheck.py" "$T/key" "$T/$s" "${READY[2]}" > "$T/check.$s" 2>&1 ||
			fail "set $s does not open as documented: $(tail -n 3 "$T/check.$s")"
		grep -qE '^holds:.* pages-1\.img' "$T/check.$s" ||
			fail "set $s: the secret is not in pages-1.img's plaintext: $(cat "$T/check.$s")"
	done
	[[ $(grep -o 'set key [0-9a-f]*' "$T/check.a") != $(grep -o 'set key [0-9a-f]*' "$T/check.b") ]] ||
		fail "two sets under one key are sealed with the same set key"
	expect_no_secret "$T/a" "$T/b"
	enc_restore_and_pass "$T/b" 1
}
add enc-layout case_enc_layout

# --leave-running, the key from an fd; read-mem of a heap page shows the secret
case_enc_lr_fd() {
	enc_keys
	start_prog t-secret "$ENC_MB"
	dump "$PID" "$T/d" --leave-running --encrypt-key-fd 7 7< "$T/key"
	expect_untraced "$PID"
	expect_sealed "$T/d"
	expect_no_secret "$T/d"
	"$MEMDUMP" read-mem -D "$T/d" --decrypt-key-fd 0 "${READY[3]}" 64 < "$T/key" \
		> "$T/readmem.out" 2> "$T/readmem.err" ||
		fail "read-mem failed: $(cat "$T/readmem.err")"
	grep -qF "${READY[2]}" "$T/readmem.out" || fail "read-mem of the heap does not show the secret"
	kill -9 "$PID"; expect_killed "$PID"
	enc_restore_and_pass "$T/d" 1
}
add enc-lr-key-fd case_enc_lr_fd

# A wrong key, no key, a key file missing or of the wrong size: refused, nothing restored;
# a dump with a bad key refuses before the seize.
case_enc_keys() {
	enc_keys
	start_prog t-secret 1
	local k
	for k in key.short key.long nokey; do
		md "dump.$k" dump -t "$PID" -D "$T/bad" --encrypt "$T/$k" && fail "dump with $k succeeded"
		grep -qE "not 32 bytes|cannot read the key" "$MD_ERR" || fail "dump with $k: $(cat "$MD_ERR")"
		expect_untraced "$PID"
	done
	[[ -e $T/bad/inventory.img ]] && fail "a refused dump left an inventory"
	dump "$PID" "$T/d" --encrypt "$T/key"
	expect_killed "$PID"
	enc_refused wrong "$T/d" "image inventory.img is refused: wrong key" --decrypt "$T/key2"
	enc_refused none "$T/d" "is encrypted: give --decrypt"
	enc_refused short "$T/d" "not 32 bytes" --decrypt "$T/key.short"
	enc_refused dir "$T/d" "cannot read the key" --decrypt "$T"
	enc_restore_and_pass "$T/d" 1
}
add enc-keys case_enc_keys

# One byte changed in each image of the set, each in its own copy: refused by name.
case_enc_flip() {
	enc_keys
	start_prog t-secret "$ENC_MB"
	dump "$PID" "$T/d" --encrypt "$T/key"
	expect_killed "$PID"
	local f n=0 size
	for f in $(cd "$T/d" && ls); do
		rm -rf "$T/c"; cp -a "$T/d" "$T/c"
		size=$(stat -c %s "$T/c/$f")
		printf '\x5a' | dd of="$T/c/$f" bs=1 seek=$(( 64 + (size - 64) / 2 )) conv=notrunc status=none
		cmp -s "$T/d/$f" "$T/c/$f" && printf '\xa5' | dd of="$T/c/$f" bs=1 \
			seek=$(( 64 + (size - 64) / 2 )) conv=notrunc status=none
		enc_refused "flip.$f" "$T/c" "image $f is refused" --decrypt "$T/key"
		n=$(( n + 1 ))
	done
	note "$n images, each refused with a changed byte"
	printf '\x01' | dd of="$T/d/pages-1.img" bs=1 seek=20 conv=notrunc status=none	# the head's set id
	enc_refused head "$T/d" "image pages-1.img is refused" --decrypt "$T/key"
}
add enc-flip case_enc_flip

# A restore feeds the pages image to the restorer as it decrypts it (crypt.c,
# crypt_feed_*): a byte changed in its last chunk is found when most of the
# memory is filled already; the restore is refused naming that chunk, the
# process never runs. The set itself restores through the feed and passes.
case_enc_late_flip() {
	enc_keys
	start_prog t-secret 48
	dump "$PID" "$T/d" --encrypt "$T/key"
	expect_killed "$PID"
	local size n
	size=$(stat -c %s "$T/d/pages-1.img")
	n=$(( (size - 64 + 1048576 + 16 - 1) / (1048576 + 16) ))
	(( n >= 40 )) || fail "pages-1.img has only $n chunks"
	cp -a "$T/d" "$T/c"
	printf '\x5a' | dd of="$T/c/pages-1.img" bs=1 seek=$(( size - 40 )) conv=notrunc status=none
	cmp -s "$T/d/pages-1.img" "$T/c/pages-1.img" && printf '\xa5' | dd of="$T/c/pages-1.img" \
		bs=1 seek=$(( size - 40 )) conv=notrunc status=none
	enc_refused late "$T/c" "image pages-1.img is refused: its chunk $n of $n does not authenticate" \
		--decrypt "$T/key"
	note "refused: $(cat "$MD_ERR")"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1 --decrypt "$T/key" -v 3 --log-file "$T/restore.log"
	wait_restored "$PID"
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC, want 0 (the program's status)"
	grep -q "pages-1.img fed to the restorer as it is decrypted" "$T/restore.log" ||
		fail "the pages image was not fed as it was decrypted: $(grep -i decrypt "$T/restore.log")"
	expect_no_secret "$T/d"
}
add enc-late-flip case_enc_late_flip

# A restore whose child calls setresgid() (peer credentials made again under
# other ids: t-peercred euid) while its pages are fed as they are decrypted:
# the feed's threads start only once the process is forked. Started before,
# they were in the list of threads glibc's setresgid() signals in the child
# (a raw clone3 copies the list, not the threads) and the child waited for one
# of them forever (a java heap did, one restore in two). Four restores.
case_enc_feed_setxid() {
	enc_keys
	start_prog t-peercred euid
	dump "$PID" "$T/d" --encrypt "$T/key"
	expect_killed "$PID"
	local i
	for i in 1 2 3 4; do
		truncate -s "$READY_SIZE" "$OUT"
		restore_bg "$T/d" "$i" --decrypt "$T/key" -v 3 --log-file "$T/restore.$i.log"
		wait_restored "$PID"
		kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
		get_result "$OUT"
		wait_restore_exit
		(( MD_RC == 0 )) || fail "restore $i exited with $MD_RC, want 0 (the program's status)"
		grep -q "pages-1.img fed to the restorer as it is decrypted" "$T/restore.$i.log" ||
			fail "restore $i did not feed the pages as they were decrypted"
	done
}
add enc-feed-setxid case_enc_feed_setxid

# A file from another set (same key, same process name), truncated and reordered files.
case_enc_swap_trunc() {
	enc_keys
	start_prog t-secret 4
	dump "$PID" "$T/a" --encrypt "$T/key" --leave-running
	expect_untraced "$PID"
	dump "$PID" "$T/b" --encrypt "$T/key"
	expect_killed "$PID"
	local f
	for f in pages-1.img "pagemap-$PID.img" "core-$PID.img" files.img; do
		rm -rf "$T/c"; cp -a "$T/a" "$T/c"; cp "$T/b/$f" "$T/c/$f"
		enc_refused "swap.$f" "$T/c" "image $f is refused: it is from another image set" \
			--decrypt "$T/key"
	done
	rm -rf "$T/c"; cp -a "$T/a" "$T/c"; cp "$T/b/inventory.img" "$T/c/inventory.img"
	enc_refused swap.inventory "$T/c" "is from another image set" --decrypt "$T/key"
	rm -rf "$T/c"; cp -a "$T/a" "$T/c"
	truncate -s $(( 64 + (1048576 + 16) * 2 )) "$T/c/pages-1.img"	# at a chunk's end
	enc_refused trunc.chunk "$T/c" "image pages-1.img is refused: it is truncated" --decrypt "$T/key"
	rm -rf "$T/c"; cp -a "$T/a" "$T/c"
	truncate -s -1 "$T/c/core-$PID.img"
	enc_refused trunc.byte "$T/c" "image core-$PID.img is refused: it is truncated" --decrypt "$T/key"
	rm -rf "$T/c"; cp -a "$T/a" "$T/c"
	python3 - "$T/c/pages-1.img" <<'PY' || fail "cannot swap two chunks"
import sys
p = sys.argv[1]; d = bytearray(open(p, 'rb').read()); n = 1048576 + 16
a, b = d[64:64 + n], d[64 + n:64 + 2 * n]
d[64:64 + n], d[64 + n:64 + 2 * n] = b, a
open(p, 'wb').write(d)
PY
	enc_refused reorder "$T/c" "image pages-1.img is refused: its chunk 1 of" --decrypt "$T/key"
	enc_restore_and_pass "$T/b" 1
}
add enc-swap-trunc case_enc_swap_trunc

# memdump killed (its worker, SIGKILL) while the plaintext set is in its staging,
# and half way through the pages: the target runs on, no plaintext anywhere.
case_enc_killed() {
	enc_keys
	local point=$1
	mkdir -p "$T/d"
	start_prog t-secret 64
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=$point "$MEMDUMP" dump -t "$PID" -D "$T/d" --encrypt "$T/key" 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" "fault point $point" "$OP_TIMEOUT" || fail "the dump never reached $point"
	kill_worker "$mdpid"
	expect_untraced "$PID"
	no_inventory "$T/d"
	expect_no_secret "$T/d"
	check_child_pass
}
add enc-killed-images case_enc_killed images-written
add enc-killed-pages case_enc_killed pages-half

# The pages are sealed on two threads (pages.c, seal_runs): sealing the middle
# chunk fails on whichever took it; the other stops, the dump fails with one
# line naming the chunk, the target runs on, no inventory, no plaintext.
case_enc_seal_fail() {
	enc_keys
	mkdir -p "$T/d"
	start_prog t-secret 64
	MEMDUMP_FAULT=seal-chunk MEMDUMP_FAULT_FAIL=1 md dump.fail dump -t "$PID" -D "$T/d" \
		--encrypt "$T/key" && fail "the dump succeeded with a failing chunk"
	[[ $(wc -l < "$MD_ERR") == 1 ]] || fail "not one line: $(cat "$MD_ERR")"
	grep -qE 'cannot write the pages image \(chunk [0-9]+ of [0-9]+\)' "$MD_ERR" ||
		fail "the error does not name the chunk: $(cat "$MD_ERR")"
	expect_untraced "$PID"
	no_inventory "$T/d"
	[[ -z $(ls -A "$T/d") ]] || fail "the failed dump left files: $(ls -A "$T/d")"
	expect_no_secret "$T/d"
	check_child_pass
}
add enc-seal-fail case_enc_seal_fail

# compressed, then encrypted
case_enc_compress() {
	enc_keys
	start_prog t-secret "$ENC_MB"
	dump "$PID" "$T/d" --encrypt "$T/key" --compress=zstd
	expect_killed "$PID"
	expect_sealed "$T/d"
	local size
	size=$(stat -c %s "$T/d/pages-1.img")
	(( size < (ENC_MB << 20) / 4 )) || fail "pages-1.img is $size bytes: not compressed"
	md verify verify -D "$T/d" --decrypt "$T/key" || fail "verify failed: $(tail -n1 "$MD_ERR")"
	enc_restore_and_pass "$T/d" 1
}
add enc-compress case_enc_compress

# restore_enc_stream_pass STREAM: restore --stream - --decrypt of STREAM (TMPDIR
# $T/tmp) into a process that passes its checks, and the restore exits 0
restore_enc_stream_pass() {
	truncate -s "$READY_SIZE" "$OUT"
	RPIDFILE=$T/pidfile.s MD_ERR=$T/md.restore.s.err MD_OUT=$T/md.restore.s.out
	( cat "$1" | TMPDIR=$T/tmp timeout -k 5 $((OP_TIMEOUT * 3)) "$MEMDUMP" restore --stream - \
		--decrypt "$T/key" --pidfile "$RPIDFILE" > "$MD_OUT" 2> "$MD_ERR" ) < /dev/null &
	RPID=$!
	track "$RPID"
	wait_restored "$PID"
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore --stream exited with $MD_RC"
}

# enc_stream_dump: t-secret dumped with --stream - --encrypt into $T/s (TMPDIR $T/tmp), killed
enc_stream_dump() {
	enc_keys
	mkdir -p "$T/tmp"
	start_prog t-secret "$ENC_MB"
	( TMPDIR=$T/tmp timeout -k 5 "$OP_TIMEOUT" "$MEMDUMP" dump -t "$PID" --stream - \
		--encrypt "$T/key" | cat > "$T/s" ) 2> "$T/dump.err" ||
		fail "dump --stream failed: $(cat "$T/dump.err")"
	expect_killed "$PID"
}

# dump --stream | restore --stream, pack and unpack of an encrypted set
case_enc_stream() {
	enc_stream_dump
	expect_no_secret "$T/s" "$T/tmp"
	md_in "$T/s" unpack unpack --decrypt "$T/key" "$T/u" || fail "unpack failed: $(tail -n1 "$MD_ERR")"
	expect_sealed "$T/u"
	md_in "$T/s" unpack.nokey unpack "$T/u2" || fail "unpack without key failed: $(tail -n1 "$MD_ERR")"
	md_in "$T/s" unpack.wrong unpack --decrypt "$T/key2" "$T/u3" && fail "unpack with a wrong key passed"
	[[ -e $T/u3 ]] && fail "a refused unpack left $T/u3"
	timeout "$OP_TIMEOUT" "$MEMDUMP" pack "$T/u" > "$T/s2" 2> "$T/pack.err" || fail "pack failed: $(cat "$T/pack.err")"
	restore_enc_stream_pass "$T/s2"
	[[ -z $(ls -A "$T/tmp") ]] || fail "left in TMPDIR: $(ls -A "$T/tmp")"
	expect_no_secret "$T/tmp" "$T/u"
}
add enc-stream case_enc_stream

# pre-dump and dump encrypted with the same key: an incremental chain
case_enc_incr() {
	enc_keys
	start_prog t-incr "$INCR_MB" "$INCR_STRIDE"
	pre_dump "$T/p1" --encrypt "$T/key"
	incr_step
	dump "$PID" "$T/d2" --prev-images-dir ../p1 --encrypt "$T/key"
	expect_killed "$PID"
	expect_sealed "$T/p1" 3
	expect_sealed "$T/d2"
	[[ $(readlink "$T/d2/parent") == ../p1 ]] || fail "parent link: $(readlink "$T/d2/parent")"
	md verify verify -D "$T/d2" --decrypt "$T/key" || fail "verify of the chain failed: $(tail -n1 "$MD_ERR")"
	local a=$(( READY[2] ))
	md read-mem read-mem -D "$T/d2" --decrypt "$T/key" $(( a + 4096 )) 4096 ||
		fail "read-mem of the chain failed: $(tail -n1 "$MD_ERR")"
	"$TESTBIN/t-incr" --gen $(( a + 4096 )) 4096 0x1acc0001 | cmp -s - "$MD_OUT" ||
		fail "read-mem of a parent's page through the chain differs"
	printf '\x5a' | dd of="$T/p1/pages-1.img" bs=1 seek=100 conv=notrunc status=none
	md restore.bad restore -D "$T/d2" --decrypt "$T/key" && fail "a changed parent restored"
	grep -q "image parent/pages-1.img is refused" "$MD_ERR" || fail "changed parent: $(cat "$MD_ERR")"
}
add enc-incr case_enc_incr

# sealed_pages_between DIR MIN MAX: DIR's sealed pages-1.img holds MIN..MAX pages
# (its plaintext size, in the sealed head at byte 48)
sealed_pages_between() {
	local n=$(( $(od -An -t u8 -j 48 -N 8 "$1/pages-1.img") / 4096 ))
	note "$1/pages-1.img: $n pages sealed"
	(( n >= $2 && n <= $3 )) || fail "$1/pages-1.img holds $n pages, expected $2..$3"
}

# A tree's encrypted chain of three (incr-tree sealed): two pre-dumps and the
# dump, each process's set sealed and linked to its own set in the previous
# one, each writing its written pages only; a wrong key, a changed byte in a
# grandparent's child set and a child set linked out of the chain are refused
# by name before anything runs; the tree restores with every byte.
case_enc_incr_tree() {
	local w=$(( INCR_WRITTEN + 1 )) x=$(( INCR_WRITTEN + 64 )) s
	enc_keys
	start_incr_tree
	pre_dump "$T/p1" --encrypt "$T/key"
	grep -q "pre-dumped process tree of $PID: 2 processes" "$MD_OUT" || fail "no tree summary: $(cat "$MD_OUT")"
	incr_tree_step 1
	pre_dump "$T/p2" --prev-images-dir ../p1 --encrypt "$T/key"
	incr_tree_step 2
	READY_SIZE=$(stat -c %s "$OUT")
	dump "$PID" "$T/d3" --prev-images-dir ../p2 --encrypt "$T/key"
	expect_killed "$PID"
	wait_until 5 eval '[[ ! -d /proc/'"$CHILD"' ]]' || fail "the child outlived the dump"
	expect_sealed "$T/p1"; expect_sealed "$T/p2"; expect_sealed "$T/d3" 20
	for s in p2 p2/proc-$CHILD d3 d3/proc-$CHILD; do sealed_pages_between "$T/$s" "$w" "$x"; done
	[[ $(readlink "$T/d3/parent") == ../p2 ]] || fail "parent link: $(readlink "$T/d3/parent")"
	[[ $(readlink "$T/d3/proc-$CHILD/parent") == "../../p2/proc-$CHILD" &&
	   $(readlink "$T/p2/proc-$CHILD/parent") == "../../p1/proc-$CHILD" ]] ||
		fail "the child's parent links: $(readlink "$T/d3/proc-$CHILD/parent" "$T/p2/proc-$CHILD/parent")"
	md verify verify -D "$T/d3" --decrypt "$T/key" || fail "verify of the chain failed: $(cat "$MD_ERR")"
	enc_refused key2 "$T/d3" "wrong key" --decrypt "$T/key2"
	mkdir "$T/c"; cp -a "$T/p1" "$T/p2" "$T/d3" "$T/c/"
	printf '\x5a' | dd of="$T/c/p1/proc-$CHILD/pages-1.img" bs=1 seek=100 conv=notrunc status=none
	enc_refused grandparent "$T/c/d3" "image parent/parent/proc-$CHILD/pages-1.img is refused" \
		--decrypt "$T/key"
	rm -rf "$T/c"; mkdir "$T/c"; cp -a "$T/p1" "$T/p2" "$T/d3" "$T/c/"
	ln -sfn "../../p1/proc-$CHILD" "$T/c/d3/proc-$CHILD/parent"
	enc_refused outside "$T/c/d3" "proc-$CHILD/parent (../../p1/proc-$CHILD) does not name" \
		--decrypt "$T/key"
	restore_incr_tree "$T/d3" --decrypt "$T/key"
}
add enc-incr-tree case_enc_incr_tree

# No plaintext of a tree's memory on disk through an encrypted incremental
# dump: two t-secret (a root and its child, each its own secret in MBs of heap
# and a pipe), pre-dump and dump on it sealed; neither secret is in p1, d2,
# /tmp, /var/tmp or TMPDIR, while read-mem through the key shows the root's
# (the check can see it) and the restored tree has both (each checks itself).
case_enc_no_plaintext_tree() {
	local cout=$T/child.out child csize crs SECRETS
	enc_keys
	OUT=$T/root.out
	sh -c "\"$TESTBIN/t-secret\" \"$T\" $ENC_MB > \"$cout\" 2>&1 & exec \"$TESTBIN/t-secret\" \"$T\" $ENC_MB" \
		> "$OUT" 2> "$T/root.err" < /dev/null &
	PID=$!; track "$PID"
	wait_line "$OUT" "^READY " "$OP_TIMEOUT" || fail "the root did not become READY"
	wait_line "$cout" "^READY " "$OP_TIMEOUT" || fail "the child did not become READY"
	read -r -a READY < <(grep -m1 '^READY ' "$OUT")
	read -r -a crs < <(grep -m1 '^READY ' "$cout")
	child=${crs[1]}; track "$child"
	[[ $(proc_field "$child" PPid) == "$PID" ]] || fail "$child is not the child of $PID"
	SECRETS=("${READY[2]}" "${crs[2]}")
	READY_SIZE=$(stat -c %s "$OUT") csize=$(stat -c %s "$cout")
	mkdir -p "$T/p1"
	md pre-dump pre-dump -t "$PID" -D "$T/p1" --encrypt "$T/key" || fail "pre-dump failed: $(tail -n1 "$MD_ERR")"
	dump "$PID" "$T/d2" --prev-images-dir ../p1 --encrypt "$T/key"
	expect_killed "$PID"
	wait_until 5 eval '[[ ! -d /proc/'"$child"' ]]' || fail "the child outlived the dump"
	expect_sealed "$T/p1"; expect_sealed "$T/d2" 20
	[[ -d $T/d2/proc-$child && -L $T/d2/proc-$child/parent ]] || fail "no incremental set proc-$child"
	expect_no_secret "$T/p1" "$T/d2"
	md read-mem read-mem -D "$T/d2" --decrypt "$T/key" "${READY[3]}" 64 || fail "read-mem failed: $(tail -n1 "$MD_ERR")"
	grep -qF "${READY[2]}" "$MD_OUT" || fail "read-mem of the root's heap does not show its secret"
	truncate -s "$READY_SIZE" "$OUT"; truncate -s "$csize" "$cout"
	restore_bg "$T/d2" 1 --decrypt "$T/key"
	CHILD=$child COUT=$cout incr_tree_pass	# cases-incr.sh
	expect_no_secret "$T/p1" "$T/d2"
}
add enc-no-plaintext-tree case_enc_no_plaintext_tree

# restore_stream_refused LABEL FILE WHAT ARGS...: restore --stream of FILE (with ARGS)
# fails in one line naming WHAT; nothing restored, nothing left in TMPDIR ($T/tmp)
restore_stream_refused() {
	local label=$1 file=$2 what=$3; shift 3
	TMPDIR=$T/tmp md_in "$file" "restore.$label" restore --stream - "$@"
	expect_md_error
	grep -qF -- "$what" "$MD_ERR" || fail "restore --stream ($label) does not name '$what': $(cat "$MD_ERR")"
	sleep 0.2
	alive "$PID" && fail "restore --stream ($label) left process $PID"
	[[ -z $(ls -A "$T/tmp") ]] || fail "restore --stream ($label) left in TMPDIR: $(ls -A "$T/tmp")"
	return 0
}

# Bad input on an encrypted stream: without the key, a wrong key, and a stream
# whose checksums hold but whose sealed pages image has a changed byte (packed
# from a changed unpacked set): each refused in one line, nothing restored,
# nothing left behind; unpack refuses the last with the key and names the chunk.
case_stream_bad_enc() {
	enc_stream_dump
	restore_stream_refused nokey "$T/s" "is encrypted"
	restore_stream_refused key2 "$T/s" "wrong key" --decrypt "$T/key2"
	md_in "$T/s" unpack unpack "$T/u" || fail "unpack without the key failed: $(tail -n1 "$MD_ERR")"
	printf '\x5a' | dd of="$T/u/pages-1.img" bs=1 seek=4000 conv=notrunc status=none
	"$MEMDUMP" pack "$T/u" > "$T/bad" 2> "$T/pack.err" || fail "pack failed: $(cat "$T/pack.err")"
	md_in "$T/bad" unpack.bad unpack --decrypt "$T/key" "$T/ub"
	expect_md_error
	grep -q "image pages-1.img is refused: its chunk 1 of .* does not authenticate" "$MD_ERR" ||
		fail "unpack of a changed chunk: $(cat "$MD_ERR")"
	[[ -z $(ls -d "$T"/ub* 2>/dev/null) ]] || fail "a refused unpack left $(ls -d "$T"/ub*)"
	restore_stream_refused flipped "$T/bad" "image pages-1.img is refused" --decrypt "$T/key"
	expect_no_secret "$T/tmp" "$T/u" "$T/s"
	note "the intact stream still restores"
	restore_enc_stream_pass "$T/s"
}
add stream-bad-enc case_stream_bad_enc

# What an encrypted set cannot do yet is refused before the seize.
case_enc_refused() {
	enc_keys
	start_prog t-secret 1
	md ps dump -t "$PID" -D "$T/d" --encrypt "$T/key" --page-server --address 127.0.0.1 --port 1 &&
		fail "--encrypt with --page-server passed"
	grep -q "encrypt with --page-server" "$MD_ERR" || fail "page server: $(cat "$MD_ERR")"
	expect_untraced "$PID"
	md both dump -t "$PID" -D "$T/d" --encrypt "$T/key" --decrypt "$T/key" && fail "two keys passed"
	dump "$PID" "$T/d" --encrypt "$T/key"
	expect_killed "$PID"
	md lazy restore -D "$T/d" --decrypt "$T/key" --lazy-pages && fail "--lazy-pages with --decrypt passed"
	grep -q "lazy-pages with --decrypt" "$MD_ERR" || fail "lazy: $(cat "$MD_ERR")"
	alive "$PID" && fail "a refused restore left $PID"
	return 0
}
add enc-refused case_enc_refused

# A process tree: its processes' sets (proc-PID/) sealed with the set's id;
# a file of one of them swapped for the root's is refused; the tree restores.
case_enc_tree() {
	enc_keys
	start_prog t-tree
	local a=${READY[2]} b=${READY[3]} g=${READY[4]}
	track "$a"; track "$b"; track "$g"
	dump "$PID" "$T/d" --encrypt "$T/key"
	local p
	for p in "$PID" "$a" "$b" "$g"; do
		wait_until 5 eval '[[ ! -d /proc/'"$p"' ]]' || fail "process $p outlived the killing dump"
	done
	expect_sealed "$T/d" 20
	[[ -d $T/d/proc-$a ]] || fail "no set proc-$a"
	rm -rf "$T/c"; cp -a "$T/d" "$T/c"
	cp "$T/c/pages-1.img" "$T/c/proc-$a/pages-1.img"
	enc_refused subset "$T/c" "image proc-$a/pages-1.img is refused" --decrypt "$T/key"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1 --decrypt "$T/key"
	wait_restored "$PID"
	tree_shape_ok "$PID" "$a" "$b" "$g"
	tree_pass
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC, want 0"
}
add enc-tree case_enc_tree

# CRIU's RPC with memdump's image_key_fd (criu_opts field 1000): a sealed dump
# and its restore; a restore of it without the key is refused by name.
case_enc_rpc() {
	enc_keys
	start_prog t-secret "$ENC_MB"
	mkdir "$T/d"
	rpc d "$MEMDUMP" DUMP images_dir="$T/d" pid="$PID" image_key="$T/key"
	rpc_ok
	expect_killed "$PID"
	expect_sealed "$T/d"
	expect_no_secret "$T/d"
	rpc r0 "$MEMDUMP" RESTORE images_dir="$T/d"
	grep -q "success=False.*is encrypted: the request gives no key" "$RPC_OUT" ||
		fail "RPC restore without the key: $(cat "$RPC_OUT")"
	alive "$PID" && fail "a refused RPC restore left process $PID"
	truncate -s "$READY_SIZE" "$OUT"
	rpc r "$MEMDUMP" RESTORE images_dir="$T/d" image_key="$T/key"
	rpc_ok
	track "$PID"
	grep -q "^RESP type=RESTORE success=True errno=0 pid=$PID " "$RPC_OUT" ||
		fail "the RESTORE response does not carry pid $PID: $(cat "$RPC_OUT")"
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
}
add enc-rpc case_enc_rpc
