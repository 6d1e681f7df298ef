# VMA flags: every VmFlags bit restored or refused by name.

case_vmaflags_refused() {
	start_prog t-noreserve onfault
	md dump dump -t "$PID" -D "$T/d" --leave-running
	expect_md_error
	grep -qF "MLOCK_ONFAULT) (VmFlags lf)" "$MD_ERR" || fail "the error does not name VmFlags lf"
	no_inventory "$T/d"
	check_child_pass
}

add rst-t-noreserve case_rst default t-noreserve
for m in read mem; do add "rst-$m-t-noreserve" case_rst "$m" t-noreserve; done
add err-vmaflags-onfault case_vmaflags_refused
