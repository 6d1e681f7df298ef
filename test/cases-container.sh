# A runc container (Debian's runc, a busybox-static bundle the test builds):
# its init dumped with memdump and restored into new namespaces on the same
# rootfs (its process tree, PID, mount with a root of its own, UTS, IPC and
# network namespaces, its cgroups), still counting.

# runc_bundle DIR: a bundle whose init counts into /tmp/count of its rootfs
runc_bundle() {
	local b=$1 c
	mkdir -p "$b/rootfs/bin" "$b/rootfs/proc" "$b/rootfs/sys" "$b/rootfs/dev" "$b/rootfs/tmp"
	cp "$(command -v busybox)" "$b/rootfs/bin/"
	for c in sh sleep echo cat ls; do ln -sf busybox "$b/rootfs/bin/$c"; done
	(cd "$b" && runc spec) || fail "runc spec failed"
	python3 - "$b/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c['process']['terminal'] = False
c['process']['args'] = ['sh', '-c', 'exec > /tmp/count; i=0; while true; do i=$((i+1)); echo $i; sleep 0.1; done']
c['root']['readonly'] = False
c['hostname'] = 'memdump-ct'
json.dump(c, open(sys.argv[1], 'w'))
PY
}

# runc_cleanup ID: the container, its processes and cgroups gone
runc_cleanup() {
	local p
	for p in $(cat /sys/fs/cgroup/pids/"$1"/cgroup.procs 2> /dev/null); do kill -9 "$p"; done
	runc delete -f "$1" > /dev/null 2>&1
	for p in /sys/fs/cgroup/*/"$1" /sys/fs/cgroup/*/*/*/"$1"; do rmdir "$p" 2> /dev/null; done
	return 0
}

count_of() { tail -n1 "$1" 2> /dev/null | tr -dc 0-9; }

case_runc_busybox() {
	command -v runc > /dev/null && command -v busybox > /dev/null ||
		{ note "no runc or busybox: skipped"; return 0; }
	local b=$T/bundle id=memdump-t$$ n
	runc_bundle "$b"
	trap 'runc_cleanup '"$id" EXIT
	(cd "$b" && runc run -d "$id") < /dev/null > /dev/null 2>&1 || fail "runc run failed"
	PID=$(runc state "$id" | python3 -c 'import json, sys; print(json.load(sys.stdin)["pid"])')
	[[ $PID -gt 1 ]] || fail "no container init"
	track "$PID"
	wait_until 10 eval '(( $(count_of '"$b"'/rootfs/tmp/count) >= 5 ))' || fail "the container does not count"
	local before; before=$(proc_field "$PID" NSpid)
	dump "$PID" "$T/d"
	wait_until 5 eval '[[ ! -d /proc/'"$PID"' ]]' || fail "the container's init outlived the dump"
	n=$(count_of "$b/rootfs/tmp/count")
	local size; size=$(stat -c %s "$b/rootfs/tmp/count")
	sleep 0.5
	[[ $(count_of "$b/rootfs/tmp/count") == "$n" ]] || fail "the container counts on after the dump"
	md verify verify -D "$T/d" || fail "verify failed"
	md rst restore -D "$T/d" -d || fail "restore failed: $(cat "$MD_ERR")"
	wait_until 10 eval '(( $(count_of '"$b"'/rootfs/tmp/count) >= '"$((n + 5))"' ))' ||
		fail "the restored container does not count on from $n: $(tail -n2 "$b/rootfs/tmp/count")"
	[[ $(proc_field "$PID" NSpid) == "$before" ]] ||
		fail "the init's PIDs differ: [$before] [$(proc_field "$PID" NSpid)]"
	[[ $(nsenter -t "$PID" -u hostname) == memdump-ct ]] || fail "the host name is lost"
	local seen; seen=$(nsenter -t "$PID" -m -p ls /proc | grep -c '^[0-9]')
	(( seen <= 4 )) || fail "the container sees $seen processes"
	nsenter -t "$PID" -m /bin/busybox test -e /bin/sh || fail "the restored container has not its root"
	! nsenter -t "$PID" -m /bin/busybox test -e /etc/debian_version ||
		fail "the restored container sees the host root"
	grep -q ":/$id\$" /proc/"$PID"/cgroup || fail "the container is not back in its cgroups"
	# every number once, in order, across the dump and the restore
	local last; last=$(count_of "$b/rootfs/tmp/count")
	[[ $(head -n "$last" "$b/rootfs/tmp/count") == "$(seq 1 "$last")" ]] ||
		fail "the count has a gap or a repeat: $(uniq -d "$b/rootfs/tmp/count" | head -3)"
	# again, with its rootfs given at another place (restore --root, CRIU's root)
	local p; for p in $(cat /sys/fs/cgroup/pids/"$id"/cgroup.procs); do kill -9 "$p"; done
	wait_until 5 eval '[[ ! -d /proc/'"$PID"' ]]' || fail "the restored init did not die"
	mkdir "$T/root2"
	mount --bind "$b/rootfs" "$T/root2" || fail "cannot bind the rootfs"
	trap 'umount -l '"$T/root2"'; runc_cleanup '"$id" EXIT
	truncate -s "$size" "$b/rootfs/tmp/count"	# the file as it was dumped
	md rst2 restore -D "$T/d" -d --root "$T/root2" || fail "restore --root failed: $(cat "$MD_ERR")"
	wait_until 10 eval '(( $(count_of '"$b"'/rootfs/tmp/count) >= '"$((n + 5))"' ))' ||
		fail "the container restored on --root does not count on from $n"
	[[ $(head -n "$((n + 5))" "$b/rootfs/tmp/count") == "$(seq 1 "$((n + 5))")" ]] ||
		fail "the count restored on --root has a gap or a repeat"
}

add runc-busybox case_runc_busybox
