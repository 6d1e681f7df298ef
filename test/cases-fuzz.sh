# The image loaders under libFuzzer (fuzz/fuzz-images.c, built by `make fuzz`):
# a fixed number of inputs seeded from a real dump must end without a crash,
# a sanitizer report, a leak or a hang. scripts/fuzz-images runs it longer.
# The count is fixed, not the time: a test asserts no speed.

FUZZER=${FUZZER:-$TESTSRC/../build-fuzz/fuzz-images}
FUZZ_RUNS=${FUZZ_RUNS:-150}

case_fuzz_images() {
	[[ -x $FUZZER ]] || fail "$FUZZER missing (run make fuzz)"
	start_prog t-pattern 1
	dump "$PID" "$T/set"
	expect_killed "$PID"
	# no time limit of its own beyond the case's: a loaded machine only runs it longer
	FUZZER=$FUZZER "$TESTSRC/../scripts/fuzz-images" \
		--runs "$FUZZ_RUNS" --set "$T/set" --work "$T/fz" > "$T/fz.out" 2>&1
	local rc=$? runs
	show_file "fuzz-images" "$T/fz.out"
	(( rc == 0 )) || fail "fuzz-images exited $rc: a finding is in $T/fz"
	runs=$(sed -n 's/^no crash, sanitizer report, leak or hang: \([0-9]*\) runs$/\1/p' "$T/fz.out")
	[[ -n $runs ]] || fail "fuzz-images did not report its runs"
	(( runs >= FUZZ_RUNS )) || fail "only $runs of $FUZZ_RUNS inputs tried"
	note "$runs inputs, none made the loaders fail badly"
}
add fuzz-images case_fuzz_images
case_limit fuzz-images 600

# The restorer blob's LZ4 block decoder (include/lz4blk.h), its host build
# with ASan/UBSan against liblz4 (test/lz4blk-fuzz.c): a fixed number of
# blocks, each decoded exactly, and damaged copies of each decoded as liblz4
# decodes them or refused, never read or written out of bounds.
# scripts/fuzz-lz4blk runs it longer.
case_fuzz_lz4blk() {
	local fz=$TESTBIN/lz4blk-fuzz seed=$(( (RANDOM << 15) | RANDOM ))
	[[ -x $fz ]] || fail "$fz missing (run make)"
	"$fz" --iters 300 --seed "$seed" > "$T/fz.out" 2>&1
	local rc=$?
	show_file "lz4blk-fuzz" "$T/fz.out"
	(( rc == 0 )) || fail "lz4blk-fuzz exited $rc (replay: $fz --iters 300 --seed $seed)"
	grep -q '^lz4blk-fuzz: 300 blocks decoded exactly, 2400 damaged ones' "$T/fz.out" ||
		fail "lz4blk-fuzz did not report its 300 blocks"
}
add fuzz-lz4blk case_fuzz_lz4blk
case_limit fuzz-lz4blk 600
