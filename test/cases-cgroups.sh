# Cgroups recreated by a restore (cgroup.img, --manage-cgroups), and the restore dry run a
# killing dump makes before it kills. The case makes its own cgroups (unique names) in every
# v1 hierarchy mounted under /sys/fs/cgroup and in the v2 one, removes them after.

# cg_dirs: the hierarchies' mount points the cases use
cg_dirs() {
	local d
	for d in cpu cpuacct cpuset memory devices freezer blkio pids systemd unified; do
		[[ -e /sys/fs/cgroup/$d/cgroup.procs ]] && echo "/sys/fs/cgroup/$d"
	done
}

# cg_setup: $CGN (unique), $CGN/sub in each hierarchy with properties set, $T/cgwrap execs a
# program in them; the trap kills what is left in them and removes them
cg_setup() {
	CGN=memdump-cg$$-$RANDOM
	local d
	for d in $(cg_dirs); do mkdir -p "$d/$CGN/sub" || fail "cannot make $d/$CGN/sub"; done
	trap cg_cleanup EXIT
	local cs=/sys/fs/cgroup/cpuset
	if [[ -d $cs/$CGN ]]; then
		cat "$cs/cpuset.mems" > "$cs/$CGN/cpuset.mems"
		echo 0 > "$cs/$CGN/cpuset.cpus"; echo 0 > "$cs/$CGN/sub/cpuset.cpus"
		cat "$cs/cpuset.mems" > "$cs/$CGN/sub/cpuset.mems"
	fi
	cg_set cpu sub/cpu.shares 512; cg_set cpu sub/cpu.cfs_period_us 50000
	cg_set cpu sub/cpu.cfs_quota_us 20000; cg_set memory sub/memory.limit_in_bytes 67108864
	cg_set memory sub/memory.soft_limit_in_bytes 33554432; cg_set memory sub/memory.swappiness 30
	cg_set pids sub/pids.max 77; cg_set memory memory.limit_in_bytes 134217728
	{
		echo '#!/bin/sh'
		for d in $(cg_dirs); do echo "echo \$\$ > $d/$CGN/sub/cgroup.procs || exit 1"; done
		echo 'exec "$@"'
	} > "$T/cgwrap"
	chmod +x "$T/cgwrap"
}

cg_set() { [[ -d /sys/fs/cgroup/$1/$CGN ]] && echo "$3" > "/sys/fs/cgroup/$1/$CGN/$2"; }

cg_props() { # cg_props: the properties the cases set, one per line
	local f
	for f in cpu/sub/cpu.shares cpu/sub/cpu.cfs_period_us cpu/sub/cpu.cfs_quota_us \
		 memory/sub/memory.limit_in_bytes memory/sub/memory.soft_limit_in_bytes \
		 memory/sub/memory.swappiness memory/memory.limit_in_bytes pids/sub/pids.max \
		 cpuset/sub/cpuset.cpus cpuset/sub/cpuset.mems; do
		[[ -e /sys/fs/cgroup/${f%%/*}/$CGN/${f#*/} ]] &&
			echo "$f=$(cat "/sys/fs/cgroup/${f%%/*}/$CGN/${f#*/}")"
	done
}

# cg_remove: the case's cgroups removed (empty: the process was dumped), deepest first
cg_remove() {
	local d s
	for d in $(cg_dirs); do
		for s in $(cd "$d/$CGN" 2>/dev/null && find . -mindepth 1 -depth -type d); do
			rmdir "$d/$CGN/$s" || fail "cannot remove $d/$CGN/$s"
		done
		[[ -d $d/$CGN ]] && { rmdir "$d/$CGN" || fail "cannot remove $d/$CGN"; }
	done
	return 0
}

cg_cleanup() {
	local d p
	for d in $(cg_dirs); do
		for p in $(cat $(find "$d/$CGN" -name cgroup.procs 2>/dev/null) 2>/dev/null); do
			kill -9 "$p" 2>/dev/null
		done
	done
	sleep 0.2
	for d in $(cg_dirs); do
		find "$d/$CGN" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null
		rmdir "$d/$CGN" 2>/dev/null
	done
}

# The process's cgroups: every line of /proc/PID/cgroup as at the dump
cg_same() { # cg_same PID FILE
	diff "$2" "/proc/$1/cgroup" > "$T/cg.diff" ||
		fail "restored cgroups differ: $(tr '\n' ' ' < "$T/cg.diff")"
}

# cg_dump_removed: t-threads in the case's cgroups dumped (killed), the cgroups removed
cg_dump_removed() {
	cg_setup
	START_WRAP=$T/cgwrap start_prog t-threads
	cat "/proc/$PID/cgroup" > "$T/cg.before"
	grep -q ":/$CGN/sub\$" "$T/cg.before" || fail "the target is not in $CGN"
	cg_props > "$T/props.before"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	[[ -s $T/d/cgroup.img ]] || fail "no cgroup.img"
	crit decode -i "$T/d/cgroup.img" > "$T/cg.json" 2>&1 || fail "crit cannot decode cgroup.img"
	grep -q "\"$CGN/sub\"" "$T/cg.json" || fail "cgroup.img does not name $CGN/sub"
	cg_remove
}

# restore_cg LABEL [opts]: restored and running, its cgroups the dumped ones, then it passes
restore_cg() {
	local label=$1; shift
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" "$label" "$@"
	wait_restored "$PID"
}

finish_cg() {
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}

# soft (the default): the removed cgroups made again, same paths, same properties
case_cgroup_recreate() {
	cg_dump_removed
	restore_cg soft
	cg_same "$PID" "$T/cg.before"
	cg_props > "$T/props.after"
	diff "$T/props.before" "$T/props.after" > "$T/props.diff" ||
		fail "properties differ: $(tr '\n' ' ' < "$T/props.diff")"
	note "$(wc -l < "$T/props.after") properties as dumped in $(cg_dirs | wc -l) hierarchies"
	finish_cg
}
add cgroup-recreate case_cgroup_recreate

# soft keeps an existing cgroup's properties, full sets the dumped ones
case_cgroup_full() {
	[[ -d /sys/fs/cgroup/cpu ]] || { note "no v1 cpu hierarchy: skipped"; return 0; }
	cg_setup
	START_WRAP=$T/cgwrap start_prog t-threads
	cat "/proc/$PID/cgroup" > "$T/cg.before"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	cg_set cpu sub/cpu.shares 1000
	restore_cg soft
	[[ $(cat /sys/fs/cgroup/cpu/$CGN/sub/cpu.shares) == 1000 ]] || fail "soft changed cpu.shares"
	finish_cg
	wait_until 5 eval '[[ ! -d /proc/'"$PID"' ]]' || fail "pid $PID not gone"
	restore_cg full --manage-cgroups=full
	cg_same "$PID" "$T/cg.before"
	[[ $(cat /sys/fs/cgroup/cpu/$CGN/sub/cpu.shares) == 512 ]] ||
		fail "full left cpu.shares $(cat /sys/fs/cgroup/cpu/$CGN/sub/cpu.shares), dumped 512"
	finish_cg
}
add cgroup-full case_cgroup_full

# strict: an existing cgroup refused by name (the restore starts nothing), a missing one made
case_cgroup_strict() {
	cg_setup
	START_WRAP=$T/cgwrap start_prog t-threads
	cat "/proc/$PID/cgroup" > "$T/cg.before"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	md rst.strict restore -D "$T/d" --manage-cgroups=strict
	expect_md_error
	grep -q "$CGN.*exists already" "$MD_ERR" || fail "strict did not name the existing cgroup"
	alive "$PID" && fail "a refused restore started pid $PID"
	cg_remove
	restore_cg strict --manage-cgroups=strict
	cg_same "$PID" "$T/cg.before"
	finish_cg
}
add cgroup-strict case_cgroup_strict

# ignore: nothing made or joined, the process restored in memdump's cgroups
case_cgroup_ignore() {
	cg_dump_removed
	restore_cg ignore --manage-cgroups=ignore
	diff <(cut -d: -f2- /proc/self/cgroup) <(cut -d: -f2- "/proc/$PID/cgroup") > /dev/null ||
		fail "ignore: the process is not in memdump's cgroups: $(tr '\n' ' ' < "/proc/$PID/cgroup")"
	local d
	for d in $(cg_dirs); do [[ -d $d/$CGN ]] && fail "ignore made $d/$CGN"; done
	finish_cg
}
add cgroup-ignore case_cgroup_ignore

# A thread in other cgroups than its leader (v1 tasks): both recreated, each back in its own
case_cgroup_thread() {
	[[ -d /sys/fs/cgroup/cpu ]] || { note "no v1 cpu hierarchy: skipped"; return 0; }
	cg_setup
	START_WRAP=$T/cgwrap start_prog t-threads
	local tid=${READY[3]} h
	for h in cpu pids; do
		mkdir "/sys/fs/cgroup/$h/$CGN/sub/t2" || fail "cannot make $h/$CGN/sub/t2"
		echo "$tid" > "/sys/fs/cgroup/$h/$CGN/sub/t2/tasks" || fail "cannot move thread $tid"
	done
	cg_set cpu sub/t2/cpu.shares 256
	cat "/proc/$PID/cgroup" > "$T/cg.before"
	cat "/proc/$PID/task/$tid/cgroup" > "$T/cg.thread"
	grep -q "cpu:/$CGN/sub/t2\$" "$T/cg.thread" || fail "thread $tid not moved"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	cg_remove
	restore_cg thread
	cg_same "$PID" "$T/cg.before"
	diff "$T/cg.thread" "/proc/$PID/task/$tid/cgroup" > "$T/cg.diff" ||
		fail "thread $tid's cgroups differ: $(tr '\n' ' ' < "$T/cg.diff")"
	[[ $(cat /sys/fs/cgroup/cpu/$CGN/sub/t2/cpu.shares) == 256 ]] || fail "t2's cpu.shares not restored"
	finish_cg
}
add cgroup-thread case_cgroup_thread

# The dry run: a limit the restore could not set (zdtm maps06: RLIMIT_NOFILE above memdump's
# hard limit, no CAP_SYS_RESOURCE) refused before the kill: target running, untraced, its
# parasite (still in until the kill) cured, no images
case_err_dryrun_rlimit() {
	start_prog t-pattern
	prlimit --pid "$PID" --nofile=8192:8192 || fail "cannot set the target's RLIMIT_NOFILE"
	mkdir -p "$T/d"
	(
		ulimit -n 4096 || fail "cannot lower memdump's RLIMIT_NOFILE"
		md dump.rl dump -t "$PID" -D "$T/d"
		expect_md_error
		grep -q "a restore here would fail: RLIMIT_NOFILE hard limit 8192" "$MD_ERR" ||
			fail "the dry run did not name RLIMIT_NOFILE: $(cat "$MD_ERR")"
	) || exit 1
	no_inventory "$T/d"
	[[ -z $(ls "$T/d") ]] || fail "images left: $(ls "$T/d" | tr '\n' ' ')"
	expect_untraced "$PID"
	no_parasite_left "$PID"	# cured after the failed dry run (dump.c, cure_late)
	check_child_pass
}
add err-dryrun-rlimit case_err_dryrun_rlimit

# strict: a process in memdump's own cgroups (some not the root here) is restored there
case_cgroup_strict_own() {
	start_prog t-pattern
	cat "/proc/$PID/cgroup" > "$T/cg.before"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_cg own --manage-cgroups=strict
	cg_same "$PID" "$T/cg.before"
	finish_cg
}
add cgroup-strict-own case_cgroup_strict_own

# Its own /proc/PID/cgroup held open (zdtm cgroup_ignore): opened again by
# the restored process once it has its PID, the file of the same name
case_procself_cgroup_rst() {
	printf '#!/bin/sh\nexec 3< /proc/self/cgroup\nexec "$@"\n' > "$T/procwrap"
	chmod +x "$T/procwrap"
	START_WRAP=$T/procwrap start_prog t-pattern
	[[ $(readlink "/proc/$PID/fd/3") == /proc/$PID/cgroup ]] || fail "fd 3 is not /proc/$PID/cgroup"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	[[ $(readlink "/proc/$PID/fd/3") == /proc/$PID/cgroup ]] ||
		fail "restored fd 3 is $(readlink "/proc/$PID/fd/3"), not /proc/$PID/cgroup"
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC, want 0"
}
add procself-cgroup-rst case_procself_cgroup_rst

# The empty cgroups below the process's own (zdtm cgroup01, cgroup03, cgroup04), removed after
# the dump, made again with their mode, owner, properties (a file's perms, devices.list),
# and a directory fd on its own cgroup (zdtm cgroup02) opened on the one made again
case_cgroup_below() {
	local cpu=/sys/fs/cgroup/cpu dev=/sys/fs/cgroup/devices
	[[ -d $cpu && -d $dev ]] || { note "no v1 cpu and devices hierarchies: skipped"; return 0; }
	cg_setup
	mkdir -p "$cpu/$CGN/sub/e0" "$cpu/$CGN/sub/e1/deep" "$dev/$CGN/sub/e0" ||
		fail "cannot make the empty cgroups"
	echo 300 > "$cpu/$CGN/sub/e0/cpu.shares"; echo 1 > "$cpu/$CGN/sub/e0/notify_on_release"
	chmod 0750 "$cpu/$CGN/sub/e0"; chown 1000:1000 "$cpu/$CGN/sub/e0"
	chmod 0666 "$cpu/$CGN/sub/e0/notify_on_release"; chown 1000:1000 "$cpu/$CGN/sub/e0/cgroup.procs"
	echo a > "$dev/$CGN/sub/e0/devices.deny"; echo 'c 1:3 rwm' > "$dev/$CGN/sub/e0/devices.allow"
	echo 'b 7:* r' > "$dev/$CGN/sub/e0/devices.allow"
	local f want=()
	for f in "$cpu/$CGN/sub/e0" "$cpu/$CGN/sub/e0/notify_on_release" "$cpu/$CGN/sub/e0/cgroup.procs"; do
		want+=("$(stat -c '%n %a %u %g' "$f")")
	done
	want+=("$(cat "$cpu/$CGN/sub/e0/cpu.shares" "$cpu/$CGN/sub/e0/notify_on_release" \
		     "$dev/$CGN/sub/e0/devices.list" | tr '\n' ' ')")
	printf '#!/bin/sh\nexec 3< %s\nexec "$@"\n' "$cpu/$CGN/sub" > "$T/dirwrap"
	chmod +x "$T/dirwrap"
	START_WRAP="$T/cgwrap $T/dirwrap" start_prog t-threads
	[[ $(readlink "/proc/$PID/fd/3") == "$cpu/$CGN/sub" ]] || fail "fd 3 is not $cpu/$CGN/sub"
	cat "/proc/$PID/cgroup" > "$T/cg.before"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit decode -i "$T/d/cgroup.img" > "$T/cg.json" 2>&1 || fail "crit cannot decode cgroup.img"
	grep -q "\"$CGN/sub/e1/deep\"" "$T/cg.json" || fail "cgroup.img does not name $CGN/sub/e1/deep"
	cg_remove
	[[ -d $cpu/$CGN ]] && fail "$cpu/$CGN not removed"
	restore_cg below
	cg_same "$PID" "$T/cg.before"
	[[ -d $cpu/$CGN/sub/e1/deep ]] || fail "$CGN/sub/e1/deep not made again"
	local got=()
	for f in "$cpu/$CGN/sub/e0" "$cpu/$CGN/sub/e0/notify_on_release" "$cpu/$CGN/sub/e0/cgroup.procs"; do
		got+=("$(stat -c '%n %a %u %g' "$f")")
	done
	got+=("$(cat "$cpu/$CGN/sub/e0/cpu.shares" "$cpu/$CGN/sub/e0/notify_on_release" \
		    "$dev/$CGN/sub/e0/devices.list" | tr '\n' ' ')")
	[[ "${got[*]}" == "${want[*]}" ]] || fail "made again as '${got[*]}', dumped '${want[*]}'"
	[[ $(readlink "/proc/$PID/fd/3") == "$cpu/$CGN/sub" ]] ||
		fail "restored fd 3 is $(readlink "/proc/$PID/fd/3"), not $cpu/$CGN/sub"
	finish_cg
}
add cgroup-below case_cgroup_below

# A v1 hierarchy no mount shows (zdtm's tests umount theirs once joined): read at the dump,
# made again and joined by the restore through mounts of their own, not attached anywhere
case_cgroup_unmounted() {
	local name=memdump-cgu$$ m=$T/cgmnt
	mkdir -p "$m"
	mount -t cgroup -o "none,name=$name" none "$m" || { note "cannot mount a named v1 hierarchy: skipped"; return 0; }
	CGN=memdump-cg$$-$RANDOM
	trap 'mount -t cgroup -o "none,name='"$name"'" none "'"$m"'" 2>/dev/null; for p in $(cat "'"$m/$CGN"'"/sub/cgroup.procs 2>/dev/null); do kill -9 $p; done; sleep 0.2; find "'"$m/$CGN"'" -depth -type d -exec rmdir {} \; 2>/dev/null; rmdir "'"$m/$CGN-holder"'" 2>/dev/null; umount "'"$m"'" 2>/dev/null' EXIT
	# a cgroup outside the case's keeps the hierarchy while nothing mounts it (zdtm's holder)
	mkdir -p "$m/$CGN/sub/e0" "$m/$CGN-holder" || fail "cannot make $CGN/sub/e0"
	chmod 0700 "$m/$CGN/sub/e0"; echo 1 > "$m/$CGN/sub/e0/notify_on_release"
	printf '#!/bin/sh\necho $$ > %s/cgroup.procs || exit 1\nexec "$@"\n' "$m/$CGN/sub" > "$T/uwrap"
	chmod +x "$T/uwrap"
	START_WRAP=$T/uwrap start_prog t-threads
	umount "$m" || fail "cannot umount $m"
	grep -q "name=$name" /proc/self/mountinfo && fail "$name still mounted"
	grep -q ":name=$name:/$CGN/sub\$" "/proc/$PID/cgroup" || fail "the target is not in $CGN/sub"
	cat "/proc/$PID/cgroup" > "$T/cg.before"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit decode -i "$T/d/cgroup.img" > "$T/cg.json" 2>&1 || fail "crit cannot decode cgroup.img"
	grep -q "\"$CGN/sub/e0\"" "$T/cg.json" || fail "cgroup.img does not name $CGN/sub/e0"
	mount -t cgroup -o "none,name=$name" none "$m" || fail "cannot mount $name again"
	rmdir "$m/$CGN/sub/e0" "$m/$CGN/sub" "$m/$CGN" || fail "cannot remove $CGN"
	umount "$m" || fail "cannot umount $m"
	restore_cg unmounted
	cg_same "$PID" "$T/cg.before"
	mount -t cgroup -o "none,name=$name" none "$m" || fail "cannot mount $name again"
	[[ $(stat -c %a "$m/$CGN/sub/e0" 2>&1) == 700 ]] ||
		fail "$CGN/sub/e0 made again as $(stat -c %a "$m/$CGN/sub/e0" 2>&1), dumped 700"
	[[ $(cat "$m/$CGN/sub/e0/notify_on_release") == 1 ]] || fail "e0's notify_on_release not restored"
	finish_cg
}
add cgroup-unmounted case_cgroup_unmounted
