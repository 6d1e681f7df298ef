# A runc container (Debian's runc, a busybox-static bundle the test builds):
# its init dumped with memdump and restored into new namespaces on the same
# rootfs (its process tree, PID, mount with a root of its own, UTS, IPC and
# network namespaces, its cgroups), still counting.

# runc_bundle DIR [SCRIPT]: a bundle whose init runs SCRIPT (default: counts into
# /tmp/count of its rootfs)
runc_bundle() {
	local b=$1 c script=${2:-'exec > /tmp/count; i=0; while true; do i=$((i+1)); echo $i; sleep 0.1; done'}
	mkdir -p "$b/rootfs/bin" "$b/rootfs/proc" "$b/rootfs/sys" "$b/rootfs/dev" "$b/rootfs/tmp"
	cp "$(command -v busybox)" "$b/rootfs/bin/"
	for c in sh sleep echo cat ls; do ln -sf busybox "$b/rootfs/bin/$c"; done
	(cd "$b" && runc spec) || fail "runc spec failed"
	python3 - "$b/config.json" "$script" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c['process']['terminal'] = False
c['process']['args'] = ['sh', '-c', sys.argv[2]]
c['root']['readonly'] = False
c['hostname'] = 'memdump-ct'
json.dump(c, open(sys.argv[1], 'w'))
PY
}

# runc_cleanup ID: the container, its processes and cgroups gone
# runc_rm_cgroups ID: container ID's cgroups removed; false while one is still busy
runc_rm_cgroups() {
	local p left=0
	for p in /sys/fs/cgroup/*/"$1" /sys/fs/cgroup/*/*/*/"$1"; do
		[[ -d $p ]] || continue
		rmdir "$p" 2> /dev/null || left=1
	done
	return $left
}

# Its cgroups go once its killed processes are reaped (PID 1 here reaps late: a
# cgroup left in memdump's own would be dumped with a later case's process,
# cgroup-strict-own: "memdump-w... exists already").
runc_cleanup() {
	local p
	for p in $(cat /sys/fs/cgroup/pids/"$1"/cgroup.procs 2> /dev/null); do kill -9 "$p"; done
	runc delete -f "$1" > /dev/null 2>&1
	wait_until 5 runc_rm_cgroups "$1" || note "cgroups of $1 still busy after 5 s"
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

# A container's init holding files of its own namespaces (fd 7: /proc/self/ns/net,
# fd 8: uts): the restored init opens them again under its own root, in its new
# namespaces (zdtm's proc-self in the ns flavour). Its children get neither: a
# description of one shared by two processes is refused by name (runc-nsfile-shared).
NSFILE_LOOP='exec 7< /proc/self/ns/net 8< /proc/self/ns/uts > /tmp/count; i=0; while true; do i=$((i+1)); echo $i; sleep 0.1 SHARE; done'

# runc_nsfile_start BUNDLE ID SCRIPT: the container running SCRIPT, counting; PID its init
runc_nsfile_start() {
	runc_bundle "$1" "$3"
	trap 'runc_cleanup '"$2" EXIT
	(cd "$1" && runc run -d "$2") < /dev/null > /dev/null 2>&1 || fail "runc run failed"
	PID=$(runc_ctr_state "$2" pid)
	[[ $PID -gt 1 ]] || fail "no container init"
	track "$PID"
	wait_until 10 eval '(( $(count_of '"$1"'/rootfs/tmp/count) >= 3 ))' || fail "the container does not count"
}

case_runc_nsfile() {
	command -v runc > /dev/null && command -v busybox > /dev/null ||
		{ note "no runc or busybox: skipped"; return 0; }
	local b=$T/bundle n k
	runc_nsfile_start "$b" memdump-n$$ "${NSFILE_LOOP/SHARE/7<&- 8<&-}"
	dump "$PID" "$T/d"
	wait_until 5 eval '[[ ! -d /proc/'"$PID"' ]]' || fail "the container's init outlived the dump"
	n=$(count_of "$b/rootfs/tmp/count")
	md rst restore -D "$T/d" -d || fail "restore failed: $(cat "$MD_ERR")"
	wait_until 10 eval '(( $(count_of '"$b"'/rootfs/tmp/count) >= '"$((n + 3))"' ))' ||
		fail "the restored container does not count on from $n"
	for k in 7:net 8:uts; do
		[[ $(readlink /proc/"$PID"/fd/"${k%:*}") == "$(readlink /proc/"$PID"/ns/"${k#*:}")" ]] ||
			fail "fd ${k%:*} is $(readlink /proc/"$PID"/fd/"${k%:*}"), not its ${k#*:} namespace $(readlink /proc/"$PID"/ns/"${k#*:}")"
	done
	[[ $(readlink /proc/"$PID"/ns/net) != "$(readlink /proc/self/ns/net)" ]] ||
		fail "the restored container is in memdump's network namespace"
}
add runc-nsfile case_runc_nsfile

case_runc_nsfile_shared() {
	command -v runc > /dev/null && command -v busybox > /dev/null ||
		{ note "no runc or busybox: skipped"; return 0; }
	local b=$T/bundle
	runc_nsfile_start "$b" memdump-s$$ "${NSFILE_LOOP/SHARE/}"
	md d dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "is a namespace file that process $PID holds too" "$MD_ERR" ||
		fail "the refusal does not name the shared namespace file: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	local n; n=$(count_of "$b/rootfs/tmp/count")
	wait_until 5 eval '(( $(count_of '"$b"'/rootfs/tmp/count) > '"$n"' ))' ||
		fail "the container stopped counting after the refused dump"
}
add runc-nsfile-shared case_runc_nsfile_shared

# runc_ctr_state ID FIELD: a field of `runc state`
runc_ctr_state() {
	runc state "$1" 2> /dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["'"$2"'"])'
}

# the NSpid of a process and of its children running 'sleep 100000', on one line
nspids_of() {
	local p
	for p in "$1" $(cat /proc/"$1"/task/"$1"/children 2> /dev/null); do
		[[ $p == "$1" ]] || tr '\0' ' ' < /proc/"$p"/cmdline | grep -q 'sleep 100000' || continue
		printf '%s; ' "$(proc_field "$p" NSpid | tr '\t' ' ')"
	done
}

# numbers_run FILE: the numbers of FILE (lines of digits only) run up by one each
numbers_run() {
	grep -E '^[0-9]+$' "$1" | awk 'NR > 1 && $1 != prev + 1 { bad = 1 } { prev = $1 } END { exit bad }'
}

# runc drives memdump through CRIU's RPC (runc --criu, memdump under the name criu):
# a container with a child process, its stderr a pipe, checkpointed (runc sends
# freeze_cgroup, ext_mnt, empty_ns, config_file, notify_scripts, and writes
# descriptors.json into the images directory) and gone; restored by runc under
# another name, so in other cgroups (cg_root; inherit_fd for the stderr pipe,
# rst_sibling, root): running with the same PIDs in and out, counting on without a
# gap into its file and into its new stderr pipe. Then checkpoints with
# --leave-running, paused (it stays paused) and running.
case_runc_criu() {
	command -v runc > /dev/null && command -v busybox > /dev/null ||
		{ note "no runc or busybox: skipped"; return 0; }
	local b=$T/bundle id0=memdump-c$$ id=memdump-r$$ n before after
	mkdir -p "$T/bin" && ln -s "$MEMDUMP" "$T/bin/criu" || fail "cannot link criu"
	runc_bundle "$b" 'sleep 100000 & exec > /tmp/count; i=0; while true; do i=$((i+1)); echo $i; echo $i >&2; sleep 0.1; done'
	# a prestart hook: runc runs it at the start, and at the restore's setup-namespaces
	python3 - "$b/config.json" "$T/hook.log" <<'PY' || fail "cannot add the hook"
import json, sys
c = json.load(open(sys.argv[1]))
c['hooks'] = {'prestart': [{'path': '/bin/sh', 'args': ['sh', '-c', 'cat >> ' + sys.argv[2] + '; echo >> ' + sys.argv[2]]}]}
json.dump(c, open(sys.argv[1], 'w'))
PY
	trap 'runc_cleanup '"$id0"'; runc_cleanup '"$id" EXIT
	(cd "$b" && runc run -d "$id0") < /dev/null > /dev/null 2> >(cat > "$T/err1") ||
		fail "runc run failed"
	PID=$(runc_ctr_state "$id0" pid)
	[[ $PID -gt 1 ]] || fail "no container init"
	track "$PID"
	wait_until 10 eval '(( $(count_of '"$b"'/rootfs/tmp/count) >= 5 ))' || fail "the container does not count"
	before=$(nspids_of "$PID")
	[[ $before == *\;*\;* ]] || fail "the init has no child: $before"
	(cd "$b" && timeout -k 5 "$OP_TIMEOUT" runc --criu "$T/bin/criu" checkpoint \
		--image-path "$T/img" "$id0") > "$T/ckpt.out" 2>&1 ||
		{ show_file dump.log "$T/img/dump.log"; fail "runc checkpoint failed: $(tail -n2 "$T/ckpt.out")"; }
	grep -q "cgroup /sys/fs/cgroup/.*freezer.* frozen" "$T/img/dump.log" ||
		fail "the dump did not freeze the container's freezer cgroup"
	runc state "$id0" > /dev/null 2>&1 && fail "the container outlived its checkpoint"
	[[ -d /sys/fs/cgroup/pids/$id0 ]] && fail "runc left the container's cgroup"
	wait_until 5 eval '[[ ! -d /proc/'"$PID"' ]]' || fail "the container's init outlived the dump"
	n=$(count_of "$b/rootfs/tmp/count")
	[[ -f $T/img/descriptors.json ]] || fail "runc wrote no descriptors.json"
	md verify verify -D "$T/img" || fail "verify failed with runc's descriptors.json beside"
	cp -a "$T/img" "$T/bad" && echo '["x"]' > "$T/bad/descriptors.json"
	md verify-bad verify -D "$T/bad"
	expect_md_error
	grep -q "descriptors.json" "$MD_ERR" || fail "a changed descriptors.json is not named"
	(cd "$b" && timeout -k 5 "$OP_TIMEOUT" runc --criu "$T/bin/criu" restore -d \
		--image-path "$T/img" "$id") < /dev/null > "$T/rst.out" 2> >(cat > "$T/err2") ||
		{ show_file restore.log "$T/img/restore.log"; fail "runc restore failed: $(tail -n2 "$T/err2")"; }
	[[ $(runc_ctr_state "$id" status) == running ]] || fail "runc state: $(runc state "$id" 2>&1)"
	[[ $(grep -c "\"pid\":$PID," "$T/hook.log") == 2 ]] ||
		fail "the prestart hook did not run again at setup-namespaces: $(cat "$T/hook.log")"
	[[ $(runc_ctr_state "$id" pid) == "$PID" ]] || fail "runc state names pid $(runc_ctr_state "$id" pid), not $PID"
	after=$(nspids_of "$PID")
	[[ $after == "$before" ]] || fail "the PIDs in and out differ: [$before] [$after]"
	wait_until 10 eval '(( $(count_of '"$b"'/rootfs/tmp/count) >= '"$((n + 5))"' ))' ||
		fail "the restored container does not count on from $n"
	local last; last=$(count_of "$b/rootfs/tmp/count")
	[[ $(head -n "$last" "$b/rootfs/tmp/count") == "$(seq 1 "$last")" ]] ||
		fail "the count has a gap or a repeat"
	wait_until 5 eval '(( $(grep -cE "^[0-9]+$" '"$T"'/err2) >= 3 ))' ||
		fail "the restored container writes nothing into its new stderr pipe (inherit_fd)"
	numbers_run "$T/err2" || fail "its stderr skips: $(head -c 200 "$T/err2")"
	(( $(grep -m1 -E '^[0-9]+$' "$T/err2") > $(grep -E '^[0-9]+$' "$T/err1" | tail -n1) )) ||
		fail "its stderr goes back: $(grep -E '^[0-9]+$' "$T/err1" | tail -n1), then $(head -n1 "$T/err2")"
	grep -q ":/$id\$" /proc/"$PID"/cgroup && ! grep -q "$id0" /proc/"$PID"/cgroup ||
		fail "the container is not in its new cgroups: $(tr '\n' ' ' < /proc/"$PID"/cgroup)"
	grep -q "restored as .*/$id (--cgroup-root)" "$T/img/restore.log" ||
		fail "the restore log does not say the cgroups were moved"
	# paused: a --leave-running checkpoint leaves it paused
	runc pause "$id" || fail "runc pause failed"
	n=$(count_of "$b/rootfs/tmp/count")
	(cd "$b" && timeout -k 5 "$OP_TIMEOUT" runc --criu "$T/bin/criu" checkpoint --leave-running \
		--image-path "$T/img2" "$id") > "$T/ckpt2.out" 2>&1 ||
		fail "runc checkpoint --leave-running (paused) failed: $(tail -n2 "$T/ckpt2.out")"
	[[ $(runc_ctr_state "$id" status) == paused ]] || fail "the paused container is $(runc_ctr_state "$id" status) after its checkpoint"
	sleep 0.3
	[[ $(count_of "$b/rootfs/tmp/count") == "$n" ]] || fail "the paused container counted on"
	runc resume "$id" || fail "runc resume failed"
	wait_until 10 eval '(( $(count_of '"$b"'/rootfs/tmp/count) >= '"$((n + 3))"' ))' ||
		fail "the resumed container does not count on"
	# running: a --leave-running checkpoint leaves it running, its set complete
	(cd "$b" && timeout -k 5 "$OP_TIMEOUT" runc --criu "$T/bin/criu" checkpoint --leave-running \
		--image-path "$T/img3" "$id") > "$T/ckpt3.out" 2>&1 ||
		fail "runc checkpoint --leave-running failed: $(tail -n2 "$T/ckpt3.out")"
	n=$(count_of "$b/rootfs/tmp/count")
	wait_until 10 eval '(( $(count_of '"$b"'/rootfs/tmp/count) >= '"$((n + 3))"' ))' ||
		fail "the container left running does not count on"
	[[ $(cat /sys/fs/cgroup/freezer/"$id"/freezer.state 2> /dev/null || echo THAWED) == THAWED ]] ||
		fail "the container's freezer is left $(cat /sys/fs/cgroup/freezer/"$id"/freezer.state)"
	md verify3 verify -D "$T/img3" || fail "verify of the --leave-running set failed"
	[[ $(nspids_of "$PID") == "$before" ]] || fail "the PIDs changed after the checkpoints"
}

add runc-criu case_runc_criu

# runc --criu checkpoint --tcp-established of a container in a network namespace
# of the runtime's (a netns path in config.json, as a pod sandbox): runc sends
# external net[INO]:extRootNetNS, so the namespace is not saved; its server (busybox
# nc -e cat, a process of the tree) keeps its connection to a client outside the
# container, in that namespace, across the checkpoint and runc's restore
# (inherit_fd extRootNetNS: the same namespace); every echo arrives, in order.
case_runc_criu_tcp() {
	command -v runc > /dev/null && command -v busybox > /dev/null ||
		{ note "no runc or busybox: skipped"; return 0; }
	local b=$T/bundle id=memdump-t$$ ns=memdump-ct$$ cpid
	mkdir -p "$T/bin" && ln -s "$MEMDUMP" "$T/bin/criu" || fail "cannot link criu"
	ip netns add "$ns" && ip -n "$ns" link set lo up || fail "cannot make a network namespace"
	trap 'runc_cleanup '"$id"'; ip netns del '"$ns" EXIT
	runc_bundle "$b" 'nc -l -p 7000 -e /bin/cat & exec > /tmp/count; i=0; while true; do i=$((i+1)); echo $i; sleep 0.1; done'
	python3 - "$b/config.json" "/var/run/netns/$ns" <<'PY' || fail "cannot set the netns path"
import json, sys
c = json.load(open(sys.argv[1]))
for n in c['linux']['namespaces']:
    if n['type'] == 'network':
        n['path'] = sys.argv[2]
json.dump(c, open(sys.argv[1], 'w'))
PY
	(cd "$b" && runc run -d "$id") < /dev/null > /dev/null 2>&1 || fail "runc run failed"
	PID=$(runc_ctr_state "$id" pid)
	track "$PID"
	wait_until 10 eval 'ip netns exec '"$ns"' ss -ltn | grep -q ":7000 "' || fail "no server in the container"
	ip netns exec "$ns" python3 "$TESTSRC/sk-client.py" echo 7000 8 > "$T/client.out" 2>&1 &
	cpid=$!
	# the server has accepted the connection (a loaded machine takes its time)
	wait_until 10 eval 'ip netns exec '"$ns"' ss -Htn state established "( sport = :7000 )" | grep -q . &&
		ip netns exec '"$ns"' ss -Hltn "( sport = :7000 )" | awk "{ exit \$2 != 0 }"' ||
		fail "the server did not accept the client's connection"
	sleep 0.5	# a few echoes before the checkpoint
	(cd "$b" && timeout -k 5 "$OP_TIMEOUT" runc --criu "$T/bin/criu" checkpoint --tcp-established \
		--image-path "$T/img" "$id") > "$T/ckpt.out" 2>&1 ||
		{ show_file dump.log "$T/img/dump.log"; fail "runc checkpoint failed: $(tail -n2 "$T/ckpt.out")"; }
	[[ ! -e $T/img/netdev-1.img ]] || fail "the runtime's network namespace was saved"
	(cd "$b" && timeout -k 5 "$OP_TIMEOUT" runc --criu "$T/bin/criu" restore --tcp-established -d \
		--image-path "$T/img" "$id") < /dev/null > "$T/rst.out" 2>&1 ||
		{ show_file restore.log "$T/img/restore.log"; fail "runc restore failed: $(tail -n2 "$T/rst.out")"; }
	[[ $(readlink /proc/"$PID"/ns/net) == "$(ip netns exec "$ns" readlink /proc/self/ns/net)" ]] ||
		fail "the restored container is not in the runtime's network namespace"
	wait "$cpid"
	show_file client "$T/client.out"
	grep -q '^PASS' "$T/client.out" || fail "the client: $(cat "$T/client.out")"
	ip netns exec "$ns" nft list tables > "$T/nft.out" 2>&1; grep -q memdump-lock "$T/nft.out" &&
		fail "a network lock is left"
	return 0
}

add runc-criu-tcp case_runc_criu_tcp

# A process of a container (not its init) with a UNIX socket bound to a path in the
# container's root (busybox syslogd's /dev/log, on the container's /dev tmpfs):
# it was refused (restore would have bound that path as memdump sees it, outside
# the container). Bound again under the restored root now: the container counts
# on, and a message sent to /dev/log inside it reaches syslogd's log.
case_runc_unix_path() {
	command -v runc > /dev/null && command -v busybox > /dev/null ||
		{ note "no runc or busybox: skipped"; return 0; }
	local b=$T/bundle id=memdump-u$$ n
	runc_bundle "$b" 'syslogd -n -O /tmp/log & exec > /tmp/count; i=0; while true; do i=$((i+1)); echo $i; sleep 0.1; done'
	for n in syslogd logger; do ln -sf busybox "$b/rootfs/bin/$n"; done
	trap 'runc_cleanup '"$id" EXIT
	(cd "$b" && runc run -d "$id") < /dev/null > /dev/null 2>&1 || fail "runc run failed"
	PID=$(runc_ctr_state "$id" pid)
	track "$PID"
	wait_until 10 eval '(( $(count_of '"$b"'/rootfs/tmp/count) >= 3 ))' || fail "the container does not count"
	wait_until 10 test -S /proc/"$PID"/root/dev/log || fail "no /dev/log in the container"
	dump "$PID" "$T/d"
	wait_until 5 eval '[[ ! -d /proc/'"$PID"' ]]' || fail "the container's init outlived the dump"
	n=$(count_of "$b/rootfs/tmp/count")
	md rst restore -D "$T/d" -d || fail "restore failed: $(cat "$MD_ERR")"
	wait_until 10 eval '(( $(count_of '"$b"'/rootfs/tmp/count) >= '"$((n + 3))"' ))' ||
		fail "the restored container does not count on from $n"
	[[ -S /proc/$PID/root/dev/log ]] || fail "no /dev/log in the restored container"
	nsenter -t "$PID" -m /bin/busybox logger -t memdump "after-restore-$$" ||
		fail "logger cannot send to the restored /dev/log"
	wait_until 10 grep -q "after-restore-$$" "$b/rootfs/tmp/log" ||
		fail "the restored syslogd did not log the message: $(tail -n2 "$b/rootfs/tmp/log")"
}

add runc-unix-path case_runc_unix_path

# A mount that mount propagation copied (a tmpfs mounted under a shared tmpfs,
# copied onto its slave bind, zdtm mntns_overmount): each restored once, the
# copy still a slave's, and what is mounted on the master after reaches the
# slave again; the container counts on
case_runc_propagated() {
	command -v runc > /dev/null && command -v busybox > /dev/null ||
		{ note "no runc or busybox: skipped"; return 0; }
	local b=$T/bundle id=memdump-p$$ n
	runc_bundle "$b" 'mkdir -p /tmp/1 /tmp/2 && mount -t tmpfs s /tmp/1 && mount --make-shared /tmp/1 && mount --bind /tmp/1 /tmp/2 && mount --make-slave /tmp/2 && mkdir /tmp/1/x /tmp/1/y && mount -t tmpfs o /tmp/1/x && exec > /tmp/count; i=0; while true; do i=$((i+1)); echo $i; sleep 0.1; done'
	for c in mount mkdir; do ln -sf busybox "$b/rootfs/bin/$c"; done
	python3 - "$b/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c['process']['capabilities'] = {k: ['CAP_SYS_ADMIN'] for k in ('bounding', 'effective', 'permitted')}
json.dump(c, open(sys.argv[1], 'w'))
PY
	trap 'runc_cleanup '"$id" EXIT
	(cd "$b" && runc run -d "$id") < /dev/null > /dev/null 2>&1 || fail "runc run failed"
	PID=$(runc_ctr_state "$id" pid)
	track "$PID"
	wait_until 10 eval '(( $(count_of '"$b"'/rootfs/tmp/count) >= 3 ))' || fail "the container does not count"
	grep -q " /tmp/2/x " /proc/"$PID"/mountinfo || fail "no propagated copy at /tmp/2/x"
	dump "$PID" "$T/d"
	wait_until 5 eval '[[ ! -d /proc/'"$PID"' ]]' || fail "the container's init outlived the dump"
	n=$(count_of "$b/rootfs/tmp/count")
	md rst restore -D "$T/d" -d || fail "restore failed: $(cat "$MD_ERR")"
	wait_until 10 eval '(( $(count_of '"$b"'/rootfs/tmp/count) >= '"$((n + 3))"' ))' ||
		fail "the restored container does not count on from $n"
	(( $(grep -c " /tmp/2/x " /proc/"$PID"/mountinfo) == 1 )) ||
		fail "/tmp/2/x is not there once: $(grep /tmp/ /proc/"$PID"/mountinfo)"
	nsenter -t "$PID" -m mount -t tmpfs q /tmp/1/y || fail "cannot mount on /tmp/1/y"
	grep -q " /tmp/2/y " /proc/"$PID"/mountinfo || fail "a mount on /tmp/1 no longer reaches its slave /tmp/2"
}

add runc-propagated case_runc_propagated

# runc_console_start SOCK OUT IN [ROWSxCOLS]: a console-socket receiver (console-recv.py)
# holding the master runc sends on SOCK; its output into OUT, the FIFO IN into it
runc_console_start() {
	mkfifo "$3" || fail "cannot make the FIFO $3"
	python3 "$TESTSRC/console-recv.py" "$@" > /dev/null 2>&1 &
	echo $! >> "$T/consoles"
	wait_until 5 test -S "$1" || fail "the console receiver does not listen on $1"
}

runc_console_stop() {
	local p
	for p in $(cat "$T/consoles" 2> /dev/null); do kill "$p" 2> /dev/null; done
	return 0
}

# file_settled FILE: wait (up to 10 s) until FILE has not grown for half a second
file_settled() {
	local a b i
	for i in $(seq 20); do
		a=$(stat -c %s "$1"); sleep 0.5; b=$(stat -c %s "$1")
		[[ $a == "$b" ]] && return 0
	done
	return 0
}

# the numbers counted ("n N" lines, CRs dropped) of a terminal's output
term_counts() { tr -d '\r' < "$1" | sed -n 's/^n \([0-9][0-9]*\)$/\1/p'; }

# A container with a terminal ("terminal": true, runc run -d --console-socket): its
# stdio and controlling terminal are a pty slave of the container's devpts whose
# master a receiver of the test holds. runc --criu checkpoint sends orphan_pts_master,
# so the slave is dumped as external; runc restore --console-socket gets the new
# master in an orphan-pts-master notification and passes it to the new receiver.
# After the restore: same PIDs, the counter (a child) counts on into the new
# terminal, its window size is kept, and a line typed into the new master reaches
# the init, which answers on it.
case_runc_criu_tty() {
	command -v runc > /dev/null && command -v busybox > /dev/null ||
		{ note "no runc or busybox: skipped"; return 0; }
	local b=$T/bundle id0=memdump-y$$ id=memdump-z$$ n before after last first
	mkdir -p "$T/bin" && ln -s "$MEMDUMP" "$T/bin/criu" || fail "cannot link criu"
	runc_bundle "$b" '(i=0; while true; do i=$((i+1)); echo "n $i"; sleep 0.1; done) & while read l; do case $l in size) echo "size $(stty size)";; noecho) stty -echo; echo "echo off";; *) echo "got $l";; esac; done'
	ln -sf busybox "$b/rootfs/bin/stty"
	python3 - "$b/config.json" <<'PY' || fail "cannot ask for a terminal"
import json, sys
c = json.load(open(sys.argv[1]))
c['process']['terminal'] = True
json.dump(c, open(sys.argv[1], 'w'))
PY
	trap 'runc_cleanup '"$id0"'; runc_cleanup '"$id"'; runc_console_stop' EXIT
	runc_console_start "$T/c1.sock" "$T/out1" "$T/in1" 37x91
	(cd "$b" && runc run -d --console-socket "$T/c1.sock" "$id0") < /dev/null > "$T/run.out" 2>&1 ||
		fail "runc run failed: $(tail -n2 "$T/run.out")"
	PID=$(runc_ctr_state "$id0" pid)
	[[ $PID -gt 1 ]] || fail "no container init"
	track "$PID"
	wait_until 10 eval '(( $(term_counts '"$T"'/out1 | wc -l) >= 5 ))' ||
		fail "the container does not count on its terminal: $(head -c 300 "$T/out1")"
	[[ $(readlink /proc/"$PID"/fd/0) == /dev/pts/0 ]] || fail "the init's stdin is $(readlink /proc/"$PID"/fd/0)"
	echo size > "$T/in1"
	wait_until 5 grep -q 'size 37 91' "$T/out1" || fail "the terminal's size is not 37x91: $(tail -c 200 "$T/out1")"
	echo noecho > "$T/in1"
	wait_until 5 grep -q 'echo off' "$T/out1" || fail "the init did not turn echo off"
	before=$(proc_field "$PID" NSpid)
	(cd "$b" && timeout -k 5 "$OP_TIMEOUT" runc --criu "$T/bin/criu" checkpoint \
		--image-path "$T/img" "$id0") > "$T/ckpt.out" 2>&1 ||
		{ show_file dump.log "$T/img/dump.log"; fail "runc checkpoint failed: $(tail -n2 "$T/ckpt.out")"; }
	wait_until 5 eval '[[ ! -d /proc/'"$PID"' ]]' || fail "the container's init outlived the dump"
	file_settled "$T/out1"	# the old receiver has read what the old terminal holds
	last=$(term_counts "$T/out1" | tail -n1)
	md verify verify -D "$T/img" || fail "verify failed"
	runc_console_start "$T/c2.sock" "$T/out2" "$T/in2"
	(cd "$b" && timeout -k 5 "$OP_TIMEOUT" runc --criu "$T/bin/criu" restore -d \
		--console-socket "$T/c2.sock" --image-path "$T/img" "$id") < /dev/null > "$T/rst.out" 2>&1 ||
		{ show_file restore.log "$T/img/restore.log"; fail "runc restore failed: $(tail -n2 "$T/rst.out")"; }
	[[ $(runc_ctr_state "$id" status) == running ]] || fail "runc state: $(runc state "$id" 2>&1)"
	[[ $(runc_ctr_state "$id" pid) == "$PID" ]] || fail "runc state names pid $(runc_ctr_state "$id" pid), not $PID"
	after=$(proc_field "$PID" NSpid)
	[[ $after == "$before" ]] || fail "the init's PIDs differ: [$before] [$after]"
	wait_until 10 eval '(( $(term_counts '"$T"'/out2 | wc -l) >= 5 ))' ||
		fail "the restored container does not count on its new terminal: $(head -c 300 "$T/out2")"
	first=$(term_counts "$T/out2" | head -n1)
	[[ $first == $((last + 1)) ]] || fail "the count went from $last to $first across the restore"
	cat "$T/out1" "$T/out2" | tr -d '\r' | sed -n 's/^n \([0-9]*\)$/\1/p' > "$T/all"
	numbers_run "$T/all" || fail "the count skips or repeats"
	[[ $(readlink /proc/"$PID"/fd/0) == /dev/pts/0 ]] || fail "the restored init's stdin is $(readlink /proc/"$PID"/fd/0)"
	echo hello > "$T/in2"
	wait_until 5 grep -q 'got hello' "$T/out2" || fail "a line typed on the new master does not reach the init: $(tail -c 300 "$T/out2")"
	tr -d '\r' < "$T/out2" | grep -qx hello && fail "the new terminal echoes: its termios (-echo) is lost"
	echo size > "$T/in2"
	wait_until 5 grep -q 'size 37 91' "$T/out2" || fail "the window size is not kept: $(grep size "$T/out2")"
	[[ $(awk '{print $7}' /proc/"$PID"/stat) != 0 ]] || fail "the restored init has no controlling terminal"
	local counter; counter=$(tree_children "$PID" | head -n1)
	[[ $(awk '{print $7}' /proc/"$counter"/stat) == $(awk '{print $7}' /proc/"$PID"/stat) ]] ||
		fail "the restored counter (a child) has not the init's controlling terminal"
	grep -q 'got' "$T/out1" && fail "the old terminal got an answer"
	# and a --leave-running checkpoint of the restored container leaves it on its terminal
	(cd "$b" && timeout -k 5 "$OP_TIMEOUT" runc --criu "$T/bin/criu" checkpoint --leave-running \
		--image-path "$T/img2" "$id") > "$T/ckpt2.out" 2>&1 ||
		fail "runc checkpoint --leave-running failed: $(tail -n2 "$T/ckpt2.out")"
	last=$(term_counts "$T/out2" | tail -n1)
	wait_until 10 eval '(( $(term_counts '"$T"'/out2 | tail -n1) >= '"$((last + 3))"' ))' ||
		fail "the container left running does not count on its terminal"
	echo again > "$T/in2"
	wait_until 5 grep -q 'got again' "$T/out2" || fail "input does not reach the container left running"
	return 0
}

add runc-criu-tty case_runc_criu_tty

# The same container's terminal without runc: a dump that does not declare the pty
# slave a runtime's is refused, naming it and its key, and the container counts on;
# memdump dump --external tty[RDEV:DEV] dumps it, restore without a terminal for it
# is refused by name, and restore --inherit-fd fd[N]:tty[RDEV:DEV] gives the
# restored tree memdump's terminal N (a pty pair of the test's), which it counts on
# and reads from.
case_runc_tty_cli() {
	command -v runc > /dev/null && command -v busybox > /dev/null ||
		{ note "no runc or busybox: skipped"; return 0; }
	local b=$T/bundle id=memdump-x$$ key n
	runc_bundle "$b" '(i=0; while true; do i=$((i+1)); echo "n $i"; sleep 0.1; done) & while read l; do echo "got $l"; done'
	python3 - "$b/config.json" <<'PY' || fail "cannot ask for a terminal"
import json, sys
c = json.load(open(sys.argv[1]))
c['process']['terminal'] = True
json.dump(c, open(sys.argv[1], 'w'))
PY
	trap 'runc_cleanup '"$id"'; runc_console_stop' EXIT
	runc_console_start "$T/c1.sock" "$T/out1" "$T/in1"
	(cd "$b" && runc run -d --console-socket "$T/c1.sock" "$id") < /dev/null > "$T/run.out" 2>&1 ||
		fail "runc run failed: $(tail -n2 "$T/run.out")"
	PID=$(runc_ctr_state "$id" pid)
	[[ $PID -gt 1 ]] || fail "no container init"
	track "$PID"
	wait_until 10 eval '(( $(term_counts '"$T"'/out1 | wc -l) >= 3 ))' || fail "the container does not count"
	key=$(python3 -c 'import os, sys; s = os.stat(sys.argv[1]); print("tty[%x:%x]" % (s.st_rdev, s.st_dev))' /proc/"$PID"/fd/0)
	md refuse dump -t "$PID" -D "$T/d0"
	expect_md_error
	grep -qF "fd 0 (/dev/pts/0: a pseudo-terminal slave whose master is outside the dump (a runtime's terminal: dump with --external $key" "$MD_ERR" ||
		fail "the refusal does not name the terminal and its key $key: $(cat "$MD_ERR")"
	no_inventory "$T/d0"
	n=$(term_counts "$T/out1" | tail -n1)
	wait_until 10 eval '(( $(term_counts '"$T"'/out1 | tail -n1) >= '"$((n + 3))"' ))' ||
		fail "the container does not count on after the refusal"
	[[ $(proc_field "$PID" TracerPid) == 0 ]] || fail "the container's init is left traced"
	dump "$PID" "$T/d" --external "$key"
	wait_until 5 eval '[[ ! -d /proc/'"$PID"' ]]' || fail "the container's init outlived the dump"
	md show show -D "$T/d" || fail "show failed: $(cat "$MD_ERR")"
	grep -qF "pty /dev/pts/0 slave:" "$MD_OUT" && grep -qF "its master outside the dump ($key)" "$MD_OUT" ||
		fail "show does not tell the runtime's terminal: $(grep pty "$MD_OUT")"
	file_settled "$T/out1"
	n=$(term_counts "$T/out1" | tail -n1)
	md rst-none restore -D "$T/d" -d
	expect_md_error
	grep -qF -- "--inherit-fd fd[N]:$key" "$MD_ERR" || fail "the restore without a terminal does not say how: $(cat "$MD_ERR")"
	mkfifo "$T/in2"
	python3 "$TESTSRC/console-recv.py" --pty "$T/out2" "$T/in2" -- "$MEMDUMP" restore -D "$T/d" -d \
		--inherit-fd "fd[{fd}]:$key" > "$T/rst.out" 2> "$T/rst.err" &
	echo $! >> "$T/consoles"
	wait_until "$OP_TIMEOUT" test -s "$T/out2.rc" || fail "the restore did not end"
	[[ $(cat "$T/out2.rc") == 0 ]] || fail "restore --inherit-fd failed: $(cat "$T/rst.err")"
	wait_until 10 eval '(( $(term_counts '"$T"'/out2 | wc -l) >= 3 ))' ||
		fail "the restored tree does not count on the given terminal: $(head -c 300 "$T/out2")"
	[[ $(term_counts "$T/out2" | head -n1) == $((n + 1)) ]] ||
		fail "the count went from $n to $(term_counts "$T/out2" | head -n1)"
	echo hello > "$T/in2"
	wait_until 5 grep -q 'got hello' "$T/out2" || fail "input on the given terminal does not reach the init"
	return 0
}

add runc-tty-cli case_runc_tty_cli

# runc checkpoint --pre-dump of a container (a tree: its init and a child, both
# t-incr with 16 MiB of known pages, the host's libc copied into the rootfs), then
# each rewrites a 16th of its pages, then runc checkpoint --parent-path ../p1:
# each process's set in the dump holds about the written pages only, linked to its
# pre-dump set; runc restore brings the container back and both processes find
# every byte as they left it (each checks itself on SIGUSR1).
case_runc_criu_predump() {
	command -v runc > /dev/null && command -v busybox > /dev/null ||
		{ note "no runc or busybox: skipped"; return 0; }
	local b=$T/bundle id0=memdump-p$$ id=memdump-q$$ child rsize csize lib mb=16 stride=16
	local written=$(( mb * 256 / stride ))
	mkdir -p "$T/bin" && ln -s "$MEMDUMP" "$T/bin/criu" || fail "cannot link criu"
	runc_bundle "$b" "/bin/t-incr /tmp $mb $stride > /tmp/child.out 2>&1 & exec /bin/t-incr /tmp $mb $stride > /tmp/root.out 2>&1"
	cp "$TESTBIN/t-incr" "$b/rootfs/bin/" || fail "cannot copy t-incr"
	for lib in $(ldd "$TESTBIN/t-incr" | grep -o '/[^ ]*'); do
		mkdir -p "$b/rootfs$(dirname "$lib")" && cp -L "$lib" "$b/rootfs$lib" || fail "cannot copy $lib"
	done
	trap 'runc_cleanup '"$id0"'; runc_cleanup '"$id" EXIT
	(cd "$b" && runc run -d "$id0") < /dev/null > "$T/run.out" 2>&1 || fail "runc run failed: $(tail -n2 "$T/run.out")"
	PID=$(runc_ctr_state "$id0" pid)
	[[ $PID -gt 1 ]] || fail "no container init"
	track "$PID"
	wait_line "$b/rootfs/tmp/root.out" "^READY " "$OP_TIMEOUT" || fail "the init is not READY: $(cat "$b/rootfs/tmp/root.out")"
	wait_line "$b/rootfs/tmp/child.out" "^READY " "$OP_TIMEOUT" || fail "the child is not READY"
	child=$(tree_children "$PID" | head -n1)
	[[ -n $child ]] || fail "the init has no child"
	track "$child"
	(cd "$b" && timeout -k 5 "$OP_TIMEOUT" runc --criu "$T/bin/criu" checkpoint --pre-dump \
		--image-path "$T/p1" "$id0") > "$T/pre.out" 2>&1 ||
		{ show_file dump.log "$T/p1/dump.log"; fail "runc checkpoint --pre-dump failed: $(tail -n2 "$T/pre.out")"; }
	[[ $(runc_ctr_state "$id0" status) == running ]] || fail "the container is $(runc_ctr_state "$id0" status) after the pre-dump"
	[[ -f $T/p1/proc-$child/inventory.img ]] || fail "no pre-dump set of the child: $(ls "$T/p1")"
	kill -USR2 "$PID" "$child"
	wait_line "$b/rootfs/tmp/root.out" "^STEP 1\$" "$OP_TIMEOUT" || fail "the init did not do its step"
	wait_line "$b/rootfs/tmp/child.out" "^STEP 1\$" "$OP_TIMEOUT" || fail "the child did not do its step"
	rsize=$(stat -c %s "$b/rootfs/tmp/root.out")
	csize=$(stat -c %s "$b/rootfs/tmp/child.out")
	(cd "$b" && timeout -k 5 "$OP_TIMEOUT" runc --criu "$T/bin/criu" checkpoint --parent-path ../p1 \
		--image-path "$T/d" "$id0") > "$T/ckpt.out" 2>&1 ||
		{ show_file dump.log "$T/d/dump.log"; fail "runc checkpoint --parent-path failed: $(tail -n2 "$T/ckpt.out")"; }
	wait_until 5 eval '[[ ! -d /proc/'"$PID"' ]]' || fail "the container's init outlived the dump"
	local n p
	for p in "$T/d" "$T/d/proc-$child"; do
		n=$(( $(stat -c %s "$p/pages-1.img") / 4096 ))
		note "$p/pages-1.img: $n pages"
		(( n > written && n <= written + 64 )) || fail "$p/pages-1.img holds $n pages, not about $written"
		[[ -L $p/parent ]] || fail "$p has no parent link"
	done
	md verify verify -D "$T/d" || fail "verify of the container's chain failed: $(cat "$MD_ERR")"
	truncate -s "$rsize" "$b/rootfs/tmp/root.out"
	truncate -s "$csize" "$b/rootfs/tmp/child.out"
	(cd "$b" && timeout -k 5 "$OP_TIMEOUT" runc --criu "$T/bin/criu" restore -d \
		--image-path "$T/d" "$id") < /dev/null > "$T/rst.out" 2>&1 ||
		{ show_file restore.log "$T/d/restore.log"; fail "runc restore failed: $(tail -n2 "$T/rst.out")"; }
	[[ $(runc_ctr_state "$id" pid) == "$PID" ]] || fail "runc state names pid $(runc_ctr_state "$id" pid), not $PID"
	kill -USR1 "$child"
	wait_line "$b/rootfs/tmp/child.out" "^(PASS|FAIL)" "$OP_TIMEOUT" || fail "no answer from the restored child"
	grep -q '^PASS' "$b/rootfs/tmp/child.out" || fail "the restored child: $(tail -n1 "$b/rootfs/tmp/child.out")"
	kill -USR1 "$PID"
	wait_line "$b/rootfs/tmp/root.out" "^(PASS|FAIL)" "$OP_TIMEOUT" || fail "no answer from the restored init"
	grep -q '^PASS' "$b/rootfs/tmp/root.out" || fail "the restored init: $(tail -n1 "$b/rootfs/tmp/root.out")"
}

add runc-criu-predump case_runc_criu_predump

# Input typed on a runtime's terminal that its container has not read cannot be
# taken without the master: the dump is refused naming it, the container runs on.
case_runc_tty_refuse_input() {
	command -v runc > /dev/null && command -v busybox > /dev/null ||
		{ note "no runc or busybox: skipped"; return 0; }
	local b=$T/bundle id=memdump-w$$ key n
	runc_bundle "$b" 'i=0; while true; do i=$((i+1)); echo "n $i"; sleep 0.1; done'
	python3 - "$b/config.json" <<'PY' || fail "cannot ask for a terminal"
import json, sys
c = json.load(open(sys.argv[1]))
c['process']['terminal'] = True
json.dump(c, open(sys.argv[1], 'w'))
PY
	trap 'runc_cleanup '"$id"'; runc_console_stop' EXIT
	runc_console_start "$T/c1.sock" "$T/out1" "$T/in1"
	(cd "$b" && runc run -d --console-socket "$T/c1.sock" "$id") < /dev/null > "$T/run.out" 2>&1 ||
		fail "runc run failed: $(tail -n2 "$T/run.out")"
	PID=$(runc_ctr_state "$id" pid)
	[[ $PID -gt 1 ]] || fail "no container init"
	track "$PID"
	wait_until 10 eval '(( $(term_counts '"$T"'/out1 | wc -l) >= 3 ))' || fail "the container does not count"
	key=$(python3 -c 'import os, sys; s = os.stat(sys.argv[1]); print("tty[%x:%x]" % (s.st_rdev, s.st_dev))' /proc/"$PID"/fd/0)
	echo typed > "$T/in1"
	wait_until 5 grep -q typed "$T/out1" || fail "the typed line is not echoed"
	md refuse dump -t "$PID" -D "$T/d" --external "$key"
	expect_md_error
	grep -qF "(pty slave /dev/pts/0) has 6 bytes of input not read yet (its master is outside)" "$MD_ERR" ||
		fail "the refusal does not name the unread input: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	n=$(term_counts "$T/out1" | tail -n1)
	wait_until 10 eval '(( $(term_counts '"$T"'/out1 | tail -n1) >= '"$((n + 3))"' ))' ||
		fail "the container does not count on after the refusal"
	[[ $(proc_field "$PID" TracerPid) == 0 ]] || fail "the container's init is left traced"
}

add runc-tty-refuse-input case_runc_tty_refuse_input
