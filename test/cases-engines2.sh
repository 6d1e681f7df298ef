# More engines driving memdump end to end (issue 29): containerd's ctr, LXC,
# podman's --tcp-established. The helpers (eng_setup, eng_run_ok...) are in
# cases-engines.sh.

# ------------------------------------------------------------------ containerd

# eng_ctr_image DIR TARBALL: a docker-archive image (memdump-bb:test) of the
# busybox rootfs eng_setup made, for `ctr image import`
eng_ctr_image() {
	local d=$1 sum
	mkdir -p "$d" && cp "$T/bb.tar" "$d/layer.tar" || return 1
	sum=$(sha256sum "$d/layer.tar" | cut -d' ' -f1)
	printf '{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/bin"],"Cmd":["sh"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$sum" > "$d/config.json"
	printf '[{"Config":"config.json","RepoTags":["memdump-bb:test"],"Layers":["layer.tar"]}]' > "$d/manifest.json"
	tar -C "$d" -cf "$2" manifest.json config.json layer.tar
}

# eng_containerd: a containerd of the case's own (root, state, sockets under
# $T/ctd, the CRI plugin off), memdump first on its PATH (the shim's runc
# finds `criu` there); sets CTR (the ctr command for it, namespace of its own)
eng_containerd() {
	local d=$T/ctd
	command -v containerd > /dev/null && command -v ctr > /dev/null ||
		{ note "no containerd (scripts/install-deps): skipped"; return 1; }
	command -v runc > /dev/null || { note "no runc (scripts/install-deps): skipped"; return 1; }
	eng_setup || return 1
	mkdir -p "$d"
	cat > "$d/config.toml" <<-EOF
	version = 2
	root = "$d/root"
	state = "$d/state"
	disabled_plugins = ["io.containerd.grpc.v1.cri"]
	[grpc]
	  address = "$d/sock"
	[ttrpc]
	  address = "$d/sock.ttrpc"
	EOF
	containerd --config "$d/config.toml" > "$d/log" 2>&1 &
	CTD_PID=$!
	CTD_NS=memdump$$
	CTR="ctr -a $d/sock -n $CTD_NS"
	wait_until 60 eval "$CTR"' version > /dev/null 2>&1' ||
		{ show_file containerd "$d/log"; fail "containerd did not start"; }
	eng_ctr_image "$d/img" "$d/bb-image.tar" || fail "cannot make the image tarball"
	$CTR image import "$d/bb-image.tar" > "$d/import.out" 2>&1 ||
		fail "ctr image import failed: $(tail -n2 "$d/import.out")"
}

# eng_containerd_stop: every task, container and image of the case gone, the
# containerd and the shims it started stopped, their mounts undone
eng_containerd_stop() {
	local c p
	if [[ -n $CTR ]]; then
		for c in $($CTR c ls -q 2> /dev/null); do
			$CTR t kill -s KILL "$c" > /dev/null 2>&1
			wait_until 10 eval '! '"$CTR"' t ls 2> /dev/null | grep -q "^'"$c"' .*RUNNING"'
			$CTR t rm -f "$c" > /dev/null 2>&1
			$CTR c rm "$c" > /dev/null 2>&1
		done
		for c in $($CTR i ls -q 2> /dev/null); do $CTR i rm "$c" > /dev/null 2>&1; done
	fi
	[[ -n $CTD_PID ]] && kill "$CTD_PID" 2> /dev/null &&
		wait_until 20 eval '! kill -0 '"$CTD_PID"' 2> /dev/null'
	# shims left behind (containerd killed with a task up): ours name our socket
	for p in /proc/[0-9]*; do
		grep -qsF -- "$T/ctd/sock" "$p/cmdline" && kill -9 "${p#/proc/}" 2> /dev/null
	done
	grep " $T/ctd" /proc/mounts | awk '{ print $2 }' | sort -r | xargs -r -n1 umount -l 2> /dev/null
	[[ -n $CTD_NS ]] && rm -rf "/run/containerd/runc/$CTD_NS" 2> /dev/null
	# containerd's cgroups of the namespace's containers are /NAMESPACE/ID: the
	# namespace's own, empty once they are gone, stays behind
	[[ -n $CTD_NS ]] && find /sys/fs/cgroup -maxdepth 3 -depth -type d \
		\( -path "*/$CTD_NS" -o -path "*/$CTD_NS/*" \) -exec rmdir {} \; 2> /dev/null
	return 0
}

# eng_ctr_pid NAME: the pid of its task, if it runs
eng_ctr_pid() { $CTR t ls 2> /dev/null | awk -v c="$1" '$1 == c && $3 == "RUNNING" { print $2 }'; }

# eng_ctr_count PID: the last number the counter in the container wrote
eng_ctr_count() { tail -n1 "/proc/$1/root/tmp/count" 2> /dev/null | tr -dc 0-9; }

ENG_FILE_COUNTER='i=0; while true; do i=$((i+1)); echo $i >> /tmp/count; sleep 0.1; done'

# 8. ctr container checkpoint --task --rw (containerd pauses the task, runc
# dumps it leaving it running, the rw layer is taken while paused); the
# container removed, ctr container restore --live --rw: the counter, writing
# to a file of its rw layer, goes on from the checkpoint's number with no gap
# and no repeat, with the same pid
case_eng_ctr() {
	local c=md-eng-c$$ ck=memdump/ck-$$:1 pid pid2 n
	trap 'eng_containerd_stop' EXIT
	eng_containerd || return 0
	$CTR run -d --null-io docker.io/library/memdump-bb:test "$c" sh -c "$ENG_FILE_COUNTER" > "$T/run.out" 2>&1 ||
		fail "ctr run failed: $(tail -n2 "$T/run.out")"
	wait_until 20 eval '[[ -n $(eng_ctr_pid '"$c"') ]]' || fail "the container does not run"
	pid=$(eng_ctr_pid "$c")
	wait_until 20 eval '(( $(eng_ctr_count '"$pid"') >= 5 ))' || fail "the container does not count"
	timeout -k 5 60 $CTR c checkpoint --task --rw "$c" "$ck" > "$T/ck.out" 2>&1 ||
		fail "ctr c checkpoint failed: $(tail -n3 "$T/ck.out")"
	eng_used_memdump
	n=$(eng_ctr_count "$pid")
	[[ -n $(eng_ctr_pid "$c") ]] || fail "the container stopped after the checkpoint"
	$CTR t kill -s KILL "$c" > /dev/null 2>&1
	wait_until 20 eval '[[ -z $(eng_ctr_pid '"$c"') ]]' || fail "the task did not stop"
	$CTR t rm "$c" > /dev/null 2>&1 && $CTR c rm "$c" > /dev/null 2>&1 ||
		fail "cannot remove the container"
	timeout -k 5 60 $CTR c restore --live --rw "$c" "$ck" > "$T/rst.out" 2>&1 ||
		fail "ctr c restore --live failed: $(tail -n3 "$T/rst.out")"
	grep -q '^swrk' <(tail -n1 "$T/criu.calls") || fail "the restore did not run memdump"
	pid2=$(eng_ctr_pid "$c")
	[[ $pid2 == "$pid" ]] || fail "the restored task has pid '$pid2', it had $pid"
	wait_until 20 eval '(( $(eng_ctr_count '"$pid"') >= '"$((n + 5))"' ))' ||
		fail "the restored container does not count on from $n"
	cp "/proc/$pid/root/tmp/count" "$T/count"
	eng_run_ok "$T/count" || fail "the count has a gap or a repeat: $(uniq -d "$T/count" | head -3)"
}

add eng-ctr case_eng_ctr

# ------------------------------------------------------------------ LXC

# eng_lxc NAME: a container NAME of the case's own under $T/lxc (lxc-start -P),
# made by hand: the busybox rootfs, a network namespace with lo only, no
# console or ttys, a host directory bound at /data (LXC passes it to criu as
# an --ext-mount-map), /counter as init appending to /tmp/count
eng_lxc() {
	local n=$1 r=$T/rootfs
	command -v lxc-start > /dev/null && command -v lxc-checkpoint > /dev/null ||
		{ note "no lxc (scripts/install-deps): skipped"; return 1; }
	eng_setup || return 1
	LXC_PIVOT=$(ls -d /sys/fs/cgroup/*/lxc.pivot 2> /dev/null)	# LXC's, made on a stop
	printf '#!/bin/sh\ni=0; while true; do i=$((i+1)); echo $i >> /tmp/count; sleep 0.1; done\n' \
		> "$r/counter" && chmod +x "$r/counter" || fail "cannot write /counter"
	mkdir -p "$T/lxc/$n" "$T/data" "$r/data"
	cat > "$T/lxc/$n/config" <<-EOF
	lxc.uts.name = $n
	lxc.rootfs.path = dir:$r
	lxc.net.0.type = empty
	lxc.apparmor.profile = unconfined
	lxc.autodev = 1
	lxc.tty.max = 0
	lxc.pty.max = 0
	lxc.console.path = none
	lxc.mount.auto = proc:mixed sys:ro
	lxc.mount.entry = $T/data data none bind 0 0
	lxc.environment = PATH=/bin
	lxc.init.cmd = /counter
	EOF
	LXC_NAME=$n
}

eng_lxc_stop() {
	local d
	[[ -n $LXC_NAME ]] || return 0
	lxc-stop -P "$T/lxc" -n "$LXC_NAME" -k > /dev/null 2>&1
	for d in /sys/fs/cgroup/*/lxc.pivot; do	# those the case made, if empty
		[[ $'\n'$LXC_PIVOT$'\n' == *$'\n'$d$'\n'* ]] || rmdir "$d" 2> /dev/null
	done
	return 0
}

# eng_lxc_pid: its init's pid while it runs
eng_lxc_pid() {
	[[ $(lxc-info -P "$T/lxc" -n "$LXC_NAME" -sH 2> /dev/null) == RUNNING ]] &&
		lxc-info -P "$T/lxc" -n "$LXC_NAME" -pH 2> /dev/null
}

eng_lxc_count() { tail -n1 "$T/rootfs/tmp/count" 2> /dev/null | tr -dc 0-9; }

# eng_lxc_ckpt WHAT ARGS...: lxc-checkpoint ARGS with memdump as criu
eng_lxc_ckpt() {
	local what=$1; shift
	timeout -k 5 60 lxc-checkpoint -P "$T/lxc" -n "$LXC_NAME" -D "$T/ck" "$@" -l INFO \
		-o "$T/lxc-$what.log" > "$T/lxc.out" 2>&1 ||
		{ show_file "lxc-checkpoint $what" "$T/lxc.out"; fail "lxc-checkpoint $what failed"; }
}

# 9. lxc-checkpoint -s (LXC runs `criu dump` with its own options: cgroup
# roots, the freezer, an external bind mount, --tcp-established...) stops the
# container; lxc-checkpoint -r (`criu restore --root --restore-detached
# --restore-sibling --external apparmor:...`) brings it back with the same
# init pid: the count in its rootfs goes on with no gap and no repeat
case_eng_lxc() {
	local c=md-eng-x$$ pid n
	trap 'eng_lxc_stop' EXIT
	eng_lxc "$c" || return 0
	lxc-start -P "$T/lxc" -n "$c" -l INFO -o "$T/lxc-start.log" > "$T/start.out" 2>&1 ||
		{ show_file lxc-start "$T/lxc-start.log"; fail "lxc-start failed: $(tail -n2 "$T/start.out")"; }
	wait_until 20 eval '(( $(eng_lxc_count) >= 5 ))' || fail "the container does not count"
	pid=$(eng_lxc_pid)
	[[ -n $pid ]] || fail "the container does not run"
	eng_lxc_ckpt dump -s
	grep -q '^dump .*--ext-mount-map /data:data' "$T/criu.calls" ||
		fail "LXC did not run memdump as criu dump with its bind mount: $(head -c 300 "$T/criu.calls")"
	[[ -z $(eng_lxc_pid) ]] || fail "the container runs on after lxc-checkpoint -s"
	n=$(eng_lxc_count)
	eng_lxc_ckpt restore -r
	grep -q '^restore .*--restore-sibling' "$T/criu.calls" || fail "LXC did not run memdump as criu restore"
	[[ $(eng_lxc_pid) == "$pid" ]] || fail "the restored container's init is '$(eng_lxc_pid)', it was $pid"
	wait_until 20 eval '(( $(eng_lxc_count) >= '"$((n + 5))"' ))' ||
		fail "the restored container does not count on from $n"
	cp "$T/rootfs/tmp/count" "$T/count"
	eng_run_ok "$T/count" || fail "the count has a gap or a repeat: $(uniq -d "$T/count" | head -3)"
}

add eng-lxc case_eng_lxc

# ------------------------------------------------------------------ podman --tcp-established

# eng_tcp_client IP GO: connects to IP:7001 (the IPv4 listener) and IP:7002
# (the IPv6 one, v4-mapped), a line echoed on each, prints CONNECTED; once
# the file GO exists, a line each way on both again: PASS, or FAIL and why
ENG_TCP_CLIENT='
import os, socket, sys, time
ip, go = sys.argv[1], sys.argv[2]
def exchange(s, msg):
    s.sendall(msg)
    got = b""
    while len(got) < len(msg):
        d = s.recv(len(msg) - len(got))
        if not d:
            raise OSError("the server closed the connection")
        got += d
    if got != msg:
        raise OSError("echoed %r for %r" % (got, msg))
try:
    socks = [socket.create_connection((ip, p), timeout=10) for p in (7001, 7002)]
    for i, s in enumerate(socks):
        exchange(s, b"before %d\n" % i)
    print("CONNECTED", flush=True)
    while not os.path.exists(go):
        time.sleep(0.05)
    for s in socks:
        s.settimeout(30)
    for i, s in enumerate(socks):
        exchange(s, b"after %d, on the connection made before the checkpoint\n" % i)
    print("PASS", flush=True)
except OSError as e:
    print("FAIL: %s" % e, flush=True)
    sys.exit(1)
'

# 10. podman container checkpoint / restore --tcp-established: h-echosrv in
# the container (on podman's default network) has an IPv4 and an IPv6
# listener; a client on the host keeps a connection to each across the
# checkpoint and the restore (podman gives the restore a new network
# namespace with the same address): no reset, data both ways after
case_eng_podman_tcp() {
	eng_podman_setup_echo || return 0
	local c=md-eng-t$$ ip cp
	trap 'eng_podman_cleanup '"$c"'; [[ -n $cp ]] && kill $cp 2> /dev/null' EXIT
	# shellcheck disable=SC2086
	podman run -d $ENG_PODMAN_RUN --name "$c" "$PIMG" /bin/h-echosrv 7001 7002 > "$T/run.out" 2>&1 ||
		fail "podman run failed: $(tail -n2 "$T/run.out")"
	wait_until 20 eval 'podman logs '"$c"' 2> /dev/null | grep -q LISTENING' ||
		fail "the echo server does not listen: $(podman logs "$c" 2>&1 | tail -n2)"
	ip=$(podman inspect -f '{{.NetworkSettings.IPAddress}}' "$c")
	[[ -n $ip ]] || fail "the container has no address"
	python3 -c "$ENG_TCP_CLIENT" "$ip" "$T/go" > "$T/client.out" 2>&1 &
	cp=$!
	wait_line "$T/client.out" '^(CONNECTED|FAIL)' 20 && grep -q CONNECTED "$T/client.out" ||
		fail "the client did not connect: $(cat "$T/client.out")"
	eng_podman_do "checkpoint --tcp-established" checkpoint --tcp-established "$c"
	eng_used_memdump
	[[ $(podman inspect -f '{{.State.Status}}' "$c") == exited ]] ||
		fail "the container runs on after the checkpoint"
	eng_podman_do "restore --tcp-established" restore --tcp-established "$c"
	[[ $(podman inspect -f '{{.NetworkSettings.IPAddress}}' "$c") == "$ip" ]] ||
		fail "the restored container has another address"
	touch "$T/go"
	wait "$cp"; cp=
	grep -q '^PASS' "$T/client.out" || fail "the client: $(cat "$T/client.out")"
}

add eng-podman-tcp case_eng_podman_tcp

# eng_podman_setup_echo: eng_podman_setup with h-echosrv (and the libraries
# it is linked with) in the image
eng_podman_setup_echo() {
	local l
	command -v podman > /dev/null || { note "no podman (scripts/install-deps): skipped"; return 1; }
	command -v python3 > /dev/null || { note "no python3: skipped"; return 1; }
	mkdir -p "$T/rootfs/bin"
	cp "$TESTBIN/h-echosrv" "$T/rootfs/bin/" || fail "no $TESTBIN/h-echosrv (run make)"
	for l in $(ldd "$TESTBIN/h-echosrv" | grep -o '/[^ ]*'); do
		cp -L --parents "$l" "$T/rootfs/" || fail "cannot copy $l into the rootfs"
	done
	eng_podman_setup
}
