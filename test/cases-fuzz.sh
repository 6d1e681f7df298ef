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
