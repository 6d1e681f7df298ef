# MAP_HUGETLB memory (issue 24): anonymous, private and shared, dumped and
# mapped again with MAP_HUGETLB and its page size (src/mem/vma.c, shmem.c,
# hugetlb.c); the huge pages a restore needs are checked before it starts,
# and before a killing dump kills. t-hugepage checks its data, VmFlags ht and
# KernelPageSize after the restore. The cases give the system the huge pages
# they need for their run (hugetlb_reserve) and take nothing else from it.

# hugetlb_reserve N: at least N free huge pages of 2 MiB, the pool grown for
# the case if it has fewer (put back when it ends); fails if they are not there
hugetlb_reserve() {
	local want=$1 nr free
	nr=$(cat /proc/sys/vm/nr_hugepages)
	free=$(awk '/HugePages_Free/ { print $2 }' /proc/meminfo)
	if (( free < want )); then
		echo $(( nr + want - free )) > /proc/sys/vm/nr_hugepages
		trap 'echo '"$nr"' > /proc/sys/vm/nr_hugepages' EXIT
	fi
	(( $(awk '/HugePages_Free/ { print $2 }' /proc/meminfo) >= want ))
}

# hugetlb_hog: every free huge page of 2 MiB taken by a process of the case
# (HOG), so that the pool has none to give until it is killed
hugetlb_hog() {
	python3 -c '
import mmap, os, sys, time
n = int(sys.argv[1])
m = mmap.mmap(-1, n << 21, flags=mmap.MAP_PRIVATE | 0x40000) if n else None
for i in range(n):
    m[i << 21] = 1
print("HOGGED", n, flush=True)
time.sleep(600)' "$(awk '/HugePages_Free/ { print $2 }' /proc/meminfo)" > "$T/hog.out" 2>&1 < /dev/null &
	HOG=$!; track "$HOG"
	wait_line "$T/hog.out" '^HOGGED' 10 || { show_file hog "$T/hog.out"; fail "the hog did not start"; }
}

# t-hugepage MODE dumped (killed) and restored: data, VmFlags ht, page size
case_hugetlb_rst() {
	hugetlb_reserve "$2" || { note "no free hugetlb page: skipped"; return 0; }
	start_prog t-hugepage "$1"
	[[ ${READY[5]} != "(nil)" ]] || fail "no MAP_HUGETLB region: ${READY[*]}"
	local c=${READY[6]:-}
	[[ -n $c ]] && track "$c"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	[[ -z $c ]] || wait_until 5 eval '[[ ! -d /proc/'"$c"' ]]' || fail "child $c outlived the killing dump"
	restore_and_pass "$T/d" 1
	[[ $RESULT == *hugetlb=yes* ]] || fail "program said $RESULT"
}
add hugetlb-private case_hugetlb_rst hugetlb 1
add hugetlb-shared-tree case_hugetlb_rst hugetlb-shared 2

# The same dumped --leave-running in read mode (a copy of the pages, not
# vmsplice): the original checks itself, then the set restores
case_hugetlb_lr_read() {
	hugetlb_reserve 1 || { note "no free hugetlb page: skipped"; return 0; }
	start_prog t-hugepage hugetlb
	dump "$PID" "$T/d" --leave-running --mode read
	check_child_pass
	restore_and_pass "$T/d" 1
	[[ $RESULT == *hugetlb=yes* ]] || fail "program said $RESULT"
}
add hugetlb-lr-read case_hugetlb_lr_read

# A restore the pool cannot give the huge pages to fails before it starts,
# with one line naming their size and count; once they are free it works.
case_hugetlb_rst_short() {
	hugetlb_reserve 1 || { note "no free hugetlb page: skipped"; return 0; }
	start_prog t-hugepage hugetlb
	dump "$PID" "$T/d"
	expect_killed "$PID"
	hugetlb_hog
	md restore restore -D "$T/d"
	expect_md_error
	grep -q "1 huge pages of 2048 kB (MAP_HUGETLB memory) are needed, and the pool can give 0" \
		"$MD_ERR" || fail "the error does not name the huge pages: $(tail -n1 "$MD_ERR")"
	alive "$PID" && fail "a failed restore left pid $PID running"
	kill "$HOG"; wait "$HOG" 2>/dev/null
	restore_and_pass "$T/d" 1
}
add hugetlb-rst-short case_hugetlb_rst_short

# A killing dump of a process whose huge page is a surplus one (the pool had
# none; nr_overcommit_hugepages lent it) when the pool cannot give one back:
# the page goes back to the kernel, not to the pool, at the kill, so the dry
# run refuses by name and the process runs on.
case_hugetlb_dryrun() {
	local over; over=$(cat /proc/sys/vm/nr_overcommit_hugepages)
	hugetlb_hog
	echo $(( over + 1 )) > /proc/sys/vm/nr_overcommit_hugepages
	trap 'echo '"$over"' > /proc/sys/vm/nr_overcommit_hugepages' EXIT
	start_prog t-hugepage hugetlb
	echo "$over" > /proc/sys/vm/nr_overcommit_hugepages
	(( $(awk '/HugePages_Surp/ { print $2 }' /proc/meminfo) >= 1 )) ||
		fail "the process's huge page is not a surplus one"
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "a restore here would fail: .*huge pages of 2048 kB (MAP_HUGETLB memory) are needed" \
		"$MD_ERR" || fail "the error does not name the huge pages: $(tail -n1 "$MD_ERR")"
	no_inventory "$T/d"
	check_child_pass
}
add hugetlb-dryrun case_hugetlb_dryrun
