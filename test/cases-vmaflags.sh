# VMA flags: every VmFlags bit restored or refused by name.

add rst-t-noreserve case_rst default t-noreserve
for m in read mem; do add "rst-$m-t-noreserve" case_rst "$m" t-noreserve; done
# mlock2(MLOCK_ONFAULT) (VmFlags lf), refused before, restored (t-mseal checks it too)
add rst-t-noreserve-onfault case_rst default t-noreserve onfault

# An ASan-built program: its shadow is a ~20 TiB MAP_NORESERVE reservation
# among ~80 VMAs; dumped, restored, and it checks its memory.
case_asan_program() {
	mkdir -p "$T/bin"
	gcc -O1 -g -fsanitize=address -fno-omit-frame-pointer -I"$TESTSRC" -o "$T/bin/t-pattern-asan" \
		"$TESTSRC/t-pattern.c" 2> "$T/cc.err" || { show_file cc "$T/cc.err"; fail "cannot build t-pattern with ASan"; }
	TESTBIN=$T/bin start_prog t-pattern-asan 8
	grep -qE '^VmFlags:.* nr( |$)' "/proc/$PID/smaps" || fail "no MAP_NORESERVE shadow in the ASan program"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" asan
}
add real-asan-program case_asan_program

# mlockall(MCL_FUTURE), which only the mappings made after it show (lo, lf):
# read from the parasite's area, set again by the blob (t-mlockfut)
for m in future onfault current nonroot; do add "rst-t-mlockfut-$m" case_rst default t-mlockfut "$m"; done

# MCL_FUTURE, not root, RLIMIT_MEMLOCK too small for the parasite's area: its
# mmap fails (EAGAIN); refused by name, nothing left in the target, which
# still runs with its mappings locked as they were.
case_mlockfut_nonroom() {
	start_prog t-mlockfut nonroot-small
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	local want="process $PID locks its future mappings (mlockall MCL_FUTURE) and its RLIMIT_MEMLOCK (262144 bytes) leaves no room"
	grep -qF "$want" "$MD_ERR" || fail "the error does not say '$want'"
	no_inventory "$T/d"
	expect_untraced "$PID"
	grep -q memfd: "/proc/$PID/maps" && fail "the parasite's area is left in the target"
	check_child_pass
}
add err-mlockfut-nonroom case_mlockfut_nonroom

# show names mlockall(MCL_FUTURE|MCL_ONFAULT) (text and --json), and nothing for MCL_CURRENT only
case_mlockfut_show() {
	local m
	for m in onfault current; do
		start_prog t-mlockfut "$m"
		dump "$PID" "$T/d-$m" --leave-running
		md show show -D "$T/d-$m" || fail "show failed: $(tail -n1 "$MD_ERR")"
		if [[ $m == onfault ]]; then
			grep -q '^mlockall   MCL_FUTURE|MCL_ONFAULT: ' "$MD_OUT" || fail "show names no mlockall(MCL_FUTURE|MCL_ONFAULT)"
			md show.json show --json -D "$T/d-$m" || fail "show --json failed: $(tail -n1 "$MD_ERR")"
			python3 -c 'import json, sys
assert json.load(open(sys.argv[1]))["process"]["mlockall"] == "MCL_FUTURE|MCL_ONFAULT"' "$MD_OUT" ||
				fail "show --json names no mlockall(MCL_FUTURE|MCL_ONFAULT)"
		else
			grep -q '^mlockall' "$MD_OUT" && fail "show names mlockall for MCL_CURRENT only"
		fi
		check_child_pass
	done
}
add show-mlockfut case_mlockfut_show
