# File kinds refused before issue 24: leases, O_PATH fds, /proc files of a
# process of the dump, namespace files. Each target checks itself after restore.

# ---- leases

# Read and write leases come back held by the restored process: another
# process's open still breaks them with the holder's signal (t-lease).
case_lease_rst() {
	start_prog t-lease
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	md show show -D "$T/d" || fail "show failed"
	grep -qE '^locks +fd 10 lease read$' "$MD_OUT" && grep -qE '^ +fd 11 lease write$' "$MD_OUT" ||
		{ show_file show "$MD_OUT"; fail "show does not list the leases"; }
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add lease-rst case_lease_rst
add lease-lr case_f2_lr t-lease

# Another process opened the read-leased file for reading and writing since
# the dump: the restore cannot take the lease back and fails naming it.
case_lease_conflict() {
	start_prog t-lease
	dump "$PID" "$T/d"
	expect_killed "$PID"
	sleep 300 3<> "$T/lease-rd" < /dev/null > /dev/null 2>&1 &
	local holder=$!; track "$holder"
	wait_until 5 eval '[[ -e /proc/'"$holder"'/fd/3 ]]' || fail "the writer did not start"
	md restore restore -D "$T/d"
	expect_md_error
	grep -q "cannot take the read lease of fd 10: the file is open elsewhere in a conflicting mode" "$MD_ERR" ||
		fail "the error does not name the lease"
	alive "$PID" && fail "a failed restore left pid $PID running"
	kill "$holder"; wait "$holder" 2> /dev/null
	restore_and_pass "$T/d" 1
}
add lease-conflict case_lease_conflict

# A killing dump whose worker is killed while the parasite runs: the target
# runs on untraced with its leases held, and they still break (kill_worker,
# no_parasite_left: cases-faults.sh).
case_fk_worker_killed() {
	mkdir -p "$T/d"
	start_prog "$@"
	MD_ERR=$T/md.dump.err
	MEMDUMP_FAULT=parasite-running "$MEMDUMP" dump -t "$PID" -D "$T/d" 2> "$MD_ERR" &
	local mdpid=$!
	track "$mdpid"
	wait_line "$MD_ERR" 'fault point parasite-running' "$OP_TIMEOUT" || fail "the dump never reached the parasite"
	kill_worker "$mdpid"
	expect_untraced "$PID"
	sleep 0.2	# the parasite wakes when its pipe loses its reader
	no_parasite_left "$PID"
	no_inventory "$T/d"
	check_child_pass
}
add lease-worker-killed case_fk_worker_killed t-lease

# ---- O_PATH fds

# O_PATH fds on a file, a directory, a symlink itself and a FIFO: the same
# inodes, still O_PATH, still working with *at() calls (t-opath).
add opath-rst case_f2_rst t-opath
add opath-lr case_f2_lr t-opath
# and on a removed file and a removed symlink, with an fd on a removed device
# node: ghosts made again, opened again, their names gone after the restore
case_opath_deleted() {
	case_f2_rst t-opath deleted
	local n
	for n in op-gone op-gonelink op-null; do
		[[ -e $T/$n || -L $T/$n ]] && fail "the ghost $n is left after the restore"
	done
	return 0
}
add opath-deleted-rst case_opath_deleted
add opath-worker-killed case_fk_worker_killed t-opath

# ---- /proc files of a process of the dump

# /proc/CHILD/stat and a dup'ed /proc/CHILD/comm held by the parent: opened
# again by the restored parent once its child has its PID (t-procfile).
add procfile-rst case_f2_rst t-procfile
add procfile-lr case_f2_lr t-procfile
add procfile-worker-killed case_fk_worker_killed t-procfile


# ---- namespace files

# Files of the process's own namespaces (net, uts, ipc, mnt) come back as
# files of the namespaces it is restored in (t-nsfile): memdump's, and
# namespaces of its own that the restore recreates.
add nsfile-rst case_f2_rst t-nsfile
add nsfile-lr case_f2_lr t-nsfile
add nsfile-worker-killed case_fk_worker_killed t-nsfile
case_nsfile_own() {
	START_WRAP="unshare --uts --ipc $TESTSRC/netns-wrap" start_prog t-nsfile
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add nsfile-own-rst case_nsfile_own
