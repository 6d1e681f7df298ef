# The image loaders under libFuzzer (fuzz/fuzz-images.c, built by `make fuzz`):
# a short run seeded from a real dump must end without a crash, a sanitizer
# report, a leak or a hang. scripts/fuzz-images runs it longer.

FUZZER=${FUZZER:-$TESTSRC/../build-fuzz/fuzz-images}
FUZZ_TIME=${FUZZ_TIME:-45}

case_fuzz_images() {
	[[ -x $FUZZER ]] || fail "$FUZZER missing (run make fuzz)"
	start_prog t-pattern 1
	dump "$PID" "$T/set"
	expect_killed "$PID"
	FUZZER=$FUZZER timeout -k 5 $((FUZZ_TIME + 40)) "$TESTSRC/../scripts/fuzz-images" \
		--time "$FUZZ_TIME" --set "$T/set" --work "$T/fz" > "$T/fz.out" 2>&1
	local rc=$? runs
	show_file "fuzz-images" "$T/fz.out"
	(( rc == 0 )) || fail "fuzz-images exited $rc: a finding is in $T/fz"
	runs=$(sed -n 's/^no crash, sanitizer report, leak or hang: \([0-9]*\) runs$/\1/p' "$T/fz.out")
	[[ -n $runs ]] || fail "fuzz-images did not report its runs"
	# that it ran, not how fast (speed goals live in scripts/bench-*): this
	# shared machine gave 408-441 runs in 45 s at load 1.5-3, with the old build too
	(( runs >= 100 )) || fail "only $runs inputs tried in ${FUZZ_TIME}s"
	note "$runs inputs, none made the loaders fail badly"
}
add fuzz-images case_fuzz_images
