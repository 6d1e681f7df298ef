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
