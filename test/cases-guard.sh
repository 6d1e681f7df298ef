# Guard pages (MADV_GUARD_INSTALL): recorded at dump time (no content: a read
# of one faults), and installed again by the restorer after the memory is filled.
# t-guard checks that they still fault after the restore and that the pages
# around them kept their bytes.

case_guard() {
	local mode=$1
	start_prog t-guard
	dump "$PID" "$T/d" --mode "$mode"
	expect_killed "$PID"
	timeout 30 crit show "$T/d/mm-$PID.img" > /dev/null || fail "crit cannot decode mm-$PID.img"
	md show show -D "$T/d" > /dev/null || fail "show failed: $(cat "$MD_ERR")"
	# the guard pages are in the mm image, not in the pages
	md read-mem read-mem -D "$T/d" "${READY[2]}" $((4 * 4096)) ||
		fail "read-mem of the pages before the guard failed: $(cat "$MD_ERR")"
	"$TESTBIN/t-guard" --gen "${READY[2]}" $((4 * 4096)) "${READY[4]}" | cmp -s - "$MD_OUT" ||
		fail "read-mem bytes before the guard pages differ"
	restore_and_pass "$T/d" restore
}
for m in "${MODES[@]}"; do add "guard-$m" case_guard "$m"; done
