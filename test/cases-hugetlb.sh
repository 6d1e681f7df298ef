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

# hugetlb_hog [KEEP]: every free huge page of 2 MiB but KEEP taken by a process
# of the case (HOG), so that the pool has no more to give until it is killed
hugetlb_hog() {
	local n=$(( $(awk '/HugePages_Free/ { print $2 }' /proc/meminfo) - ${1:-0} ))
	(( n >= 0 )) || n=0
	python3 -c '
import mmap, os, sys, time
n = int(sys.argv[1])
m = mmap.mmap(-1, n << 21, flags=mmap.MAP_PRIVATE | 0x40000) if n else None
for i in range(n):
    m[i << 21] = 1
print("HOGGED", n, flush=True)
time.sleep(600)' "$n" > "$T/hog.out" 2>&1 < /dev/null &
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

# The same dumped --leave-running (the snapshot leaves hugetlb memory out:
# saved while frozen), and in read mode (a copy of the pages, not vmsplice):
# the original checks itself, then the set restores
case_hugetlb_lr() {
	hugetlb_reserve 1 || { note "no free hugetlb page: skipped"; return 0; }
	start_prog t-hugepage hugetlb
	dump "$PID" "$T/d" --leave-running "$@"
	check_child_pass
	restore_and_pass "$T/d" 1
	[[ $RESULT == *hugetlb=yes* ]] || fail "program said $RESULT"
}
add hugetlb-lr case_hugetlb_lr
add hugetlb-lr-read case_hugetlb_lr --mode read

# --lazy-pages (cases-lazy.sh): the hugetlb region is filled before the
# process runs (the handler copies 4 KiB pages, which a hugetlb VMA takes
# not), the THP region by the handler
case_hugetlb_lazy() {
	hugetlb_reserve 1 || { note "no free hugetlb page: skipped"; return 0; }
	start_prog t-hugepage hugetlb
	dump "$PID" "$T/d"
	expect_killed "$PID"
	lazy_restore "$T/d" 1
	lazy_done 2048
	lazy_pass
	[[ $RESULT == *hugetlb=yes* ]] || fail "program said $RESULT"
}
add hugetlb-lazy case_hugetlb_lazy

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

# MAP_NORESERVE hugetlb memory takes only the pages filled: two pages mapped,
# one written, restored with one free page in the pool (counted whole, the
# restore was refused)
case_hugetlb_noreserve() {
	hugetlb_reserve 1 || { note "no free hugetlb page: skipped"; return 0; }
	start_prog t-hugepage hugetlb-noreserve
	dump "$PID" "$T/d"
	expect_killed "$PID"
	hugetlb_hog 1
	restore_and_pass "$T/d" 1
	[[ $RESULT == *hugetlb=yes* ]] || fail "program said $RESULT"
}
add hugetlb-noreserve case_hugetlb_noreserve

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

# System V segments of huge pages (SHM_HUGETLB) in an IPC namespace the dump
# saves (zdtm shm-hugetlb): one attached, one attached by no process (was
# refused: err-shm-hugetlb; memdump tells it by its own attach). After the
# restore both hold their bytes, and an attach of each is of 2 MiB pages.
case_hugetlb_sysv() {
	hugetlb_reserve 2 || { note "no free hugetlb page: skipped"; return 0; }
	OUT=$T/shmh.out
	unshare --ipc python3 -c '
import ctypes, signal, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
def huge(a):
    cur = False
    for line in open("/proc/self/smaps"):
        f = line.split()
        if "-" in f[0] and len(f) > 4:
            cur = int(f[0].split("-")[0], 16) == a
        elif cur and f[0] == "KernelPageSize:":
            return f[1] == "2048"
    return False
ids, addrs = [], []
for k, c in ((0x4d440001, b"A"), (0x4d440002, b"B")):
    sid = libc.shmget(k, 2 << 20, 0o1000 | 0o4000 | 0o600)	# IPC_CREAT | SHM_HUGETLB
    a = libc.shmat(sid, None, 0) if sid >= 0 else None
    if a in (None, ctypes.c_void_p(-1).value):
        print("NOHUGE", ctypes.get_errno(), flush=True); raise SystemExit(2)
    ctypes.memset(a, c[0], 4096)
    ids.append(sid); addrs.append(a)
libc.shmdt(ctypes.c_void_p(addrs[1]))			# B: attached by no process
got = []
signal.signal(signal.SIGUSR1, lambda *x: got.append(1))
print("READY", os.getpid(), *ids, flush=True)
while not got:
    signal.pause()
b = libc.shmat(ids[1], None, 0)
ok = (b not in (None, ctypes.c_void_p(-1).value) and huge(addrs[0]) and huge(b) and
      ctypes.string_at(addrs[0], 4) == b"AAAA" and ctypes.string_at(b, 4) == b"BBBB")
print("PASS sysv" if ok else "FAIL", flush=True)' > "$OUT" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$OUT" '^(READY|NOHUGE) ' 10 || { show_file out "$OUT"; fail "the program did not start"; }
	grep -q '^NOHUGE' "$OUT" && { note "no hugetlb segment: skipped"; return 0; }
	read -r -a READY < <(grep -m1 '^READY ' "$OUT")
	READY_SIZE=$(stat -c %s "$OUT")
	dump "$PID" "$T/d"
	expect_killed "$PID"
	# SHM_HUGETLB | 21 << 26 (2 MiB pages), as CRIU writes it, for both
	local img; img=$(ls "$T"/d/ipcns-shm-*.img | head -n1)
	(( $(crit decode -i "$img" | grep -o '"hugetlb_flag": 1409288192' | wc -l) == 2 )) ||
		fail "the segments' hugetlb_flag is not in $img"
	restore_and_pass "$T/d" 1
}
add hugetlb-sysv case_hugetlb_sysv

# memfds made with MFD_HUGETLB (zdtm maps10's kin): one mapped shared and
# privately (a COW copy of its own), one only held by its fd. They came back
# as plain memfds, or were refused mapped; now made again in huge pages of
# the same size (hugetlbfs: statvfs f_bsize 2 MiB) with their bytes.
case_hugetlb_memfd() {
	hugetlb_reserve 4 || { note "no free hugetlb page: skipped"; return 0; }
	OUT=$T/mfdh.out
	python3 -c '
import mmap, os, signal
H = 2 << 20
def kps(a):
    cur = False
    for line in open("/proc/self/smaps"):
        f = line.split()
        if "-" in f[0] and len(f) > 4:
            cur = int(f[0].split("-")[0], 16) == a
        elif cur and f[0] == "KernelPageSize:":
            return f[1]
import ctypes
def addr(m):
    return ctypes.addressof(ctypes.c_char.from_buffer(m))
a = os.memfd_create("t-mfdh-a", os.MFD_HUGETLB)
os.ftruncate(a, 2 * H)
sh = mmap.mmap(a, 2 * H)
sh[0:4] = b"AAAA"; sh[H:H + 4] = b"aaaa"
pv = mmap.mmap(a, H, flags=mmap.MAP_PRIVATE)
pv[8:12] = b"PPPP"
b = os.memfd_create("t-mfdh-b", os.MFD_HUGETLB)
os.ftruncate(b, H)
t = mmap.mmap(b, H); t[0:4] = b"BBBB"; t.close()
got = []
signal.signal(signal.SIGUSR1, lambda *x: got.append(1))
print("READY", os.getpid(), a, b, flush=True)
while not got:
    signal.pause()
tb = mmap.mmap(b, H)
ok = {
  "a data": sh[0:4] == b"AAAA" and sh[H:H + 4] == b"aaaa",
  "private": pv[8:12] == b"PPPP" and pv[0:4] == b"AAAA" and sh[8:12] != b"PPPP",
  "b data": tb[0:4] == b"BBBB",
  "a huge": os.fstatvfs(a).f_bsize == H and os.fstat(a).st_size == 2 * H,
  "b huge": os.fstatvfs(b).f_bsize == H,
  "maps huge": kps(addr(sh)) == "2048" and kps(addr(pv)) == "2048",
}
bad = [k for k, v in ok.items() if not v]
print("PASS memfd" if not bad else "FAIL " + " ".join(bad), flush=True)' > "$OUT" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$OUT" '^READY ' 10 || { show_file out "$OUT"; fail "the program did not start"; }
	read -r -a READY < <(grep -m1 '^READY ' "$OUT")
	READY_SIZE=$(stat -c %s "$OUT")
	dump "$PID" "$T/d"
	expect_killed "$PID"
	# MFD_HUGETLB | 21 << 26 (2 MiB pages), CRIU's field, for both
	(( $(crit decode -i "$T/d/memfd.img" | grep -o '"hugetlb_flag": 1409286148' | wc -l) == 2 )) ||
		fail "the memfds' hugetlb_flag is not in memfd.img"
	restore_and_pass "$T/d" 1
}
add hugetlb-memfd case_hugetlb_memfd
