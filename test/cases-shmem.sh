# Shared memory objects (MAP_SHARED|MAP_ANONYMOUS memory, memfds) as more
# than plain shared mappings: private mappings of them, fds on them, exec of
# a memfd; and the files behind shared mappings (issue 31).

# A private mapping of shared anonymous memory (through map_files) and of a
# memfd: untouched pages show the object, COW copies kept (zdtm shmemfd-priv).
add rst-t-shmpriv case_rst default t-shmpriv
add lr-t-shmpriv case_lr splice t-shmpriv
add snap-rst-t-shmpriv case_snapshot_rst t-shmpriv

# A memfd run with execveat() after the restore: its read-write fd is
# memfd_create's own description, which the kernel does not count as a
# writer (zdtm memfd04, memfd05: with a private and a shared mapping).
add rst-t-memfdrun case_rst default t-memfdrun
add rst-t-memfdrun-maps case_rst default t-memfdrun maps

# A file mapped MAP_SHARED cut shorter after the dump: the restored process
# would die of SIGBUS on its first access past the new end, so the restore
# fails by name before anything runs; grown, the same; put back, it works.
case_rst_shared_file_size() {
	start_prog t-filemap
	local f=$T/filemap-shared.dat
	dump "$PID" "$T/d"
	expect_killed "$PID"
	cp "$f" "$T/saved.dat"
	truncate -s $(( $(stat -c %s "$f") / 2 )) "$f"
	md restore restore -D "$T/d"
	expect_md_error
	grep -q "file $f changed since the dump (size 131072, was 262144)" "$MD_ERR" ||
		fail "the error does not name the truncated file and its sizes"
	alive "$PID" && fail "a failed restore left pid $PID running"
	cp "$T/saved.dat" "$f"
	printf x >> "$f"
	md restore2 restore -D "$T/d"
	expect_md_error
	grep -q "file $f changed since the dump (size 262145, was 262144)" "$MD_ERR" ||
		fail "the error does not name the grown file"
	alive "$PID" && fail "a failed restore left pid $PID running"
	truncate -s 262144 "$f"
	restore_and_pass "$T/d" 1
}
add rst-shared-file-size case_rst_shared_file_size
