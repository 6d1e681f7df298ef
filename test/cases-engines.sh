# Container engines drive memdump end to end (issue 29): Debian's podman and
# docker.io, with memdump on PATH as `criu` (a script in $T/bin that logs its
# calls and runs memdump under that name), checkpoint and restore containers
# of a busybox-static image the case imports (no pulls). A counter container
# writes 1, 2, 3... to its stdout every 0.1 s; the engine's log of it must
# run on without a gap or a repeat across the checkpoints and restores.

# eng_setup: $T/bin/criu (memdump) first on PATH, $T/bb.tar the busybox rootfs
eng_setup() {
	local r=$T/rootfs c
	command -v busybox > /dev/null || { note "no busybox: skipped"; return 1; }
	mkdir -p "$T/bin" "$r/bin" "$r/tmp" "$r/proc" "$r/sys" "$r/dev" "$r/etc"
	printf '#!/bin/bash\necho "$*" >> %s/criu.calls\nexec -a criu %s "$@"\n' "$T" "$MEMDUMP" \
		> "$T/bin/criu" && chmod +x "$T/bin/criu" || fail "cannot write the criu script"
	cp "$(command -v busybox)" "$r/bin/" || fail "cannot copy busybox"
	for c in sh sleep echo cat ls nc; do ln -sf busybox "$r/bin/$c"; done
	tar -C "$r" -cf "$T/bb.tar" . || fail "cannot make the rootfs tarball"
	export PATH="$T/bin:$PATH"
}

ENG_COUNTER='i=0; while true; do i=$((i+1)); echo $i; sleep 0.1; done'

# eng_run_ok LOGFILE: the numbers of LOGFILE run up by one each, from 1
eng_run_ok() {
	awk 'NR == 1 && $1 != 1 { bad = 1 } NR > 1 && $1 != prev + 1 { bad = 1 } { prev = $1 }
	     END { exit bad || NR == 0 }' "$1"
}

eng_last() { tail -n1 "$1" 2> /dev/null | tr -dc 0-9; }

# eng_used_memdump: the engine ran our criu (memdump), not another on PATH
eng_used_memdump() {
	grep -q '^swrk' "$T/criu.calls" 2> /dev/null || fail "the engine did not run memdump as criu"
}

# ------------------------------------------------------------------ podman

# Podman's default RLIMIT_NPROC/NOFILE are above what this machine lets root
# raise to (no CAP_SYS_RESOURCE): lower ones, which runc can always set.
ENG_PODMAN_RUN="--ulimit nofile=1024:1024 --ulimit nproc=1024:1024"

eng_podman_setup() {
	command -v podman > /dev/null || { note "no podman (scripts/install-deps): skipped"; return 1; }
	eng_setup || return 1
	PIMG=localhost/memdump-bb-$$:test
	podman import -q "$T/bb.tar" "$PIMG" > /dev/null 2>&1 || fail "podman import failed"
}

# eng_podman_cleanup NAME...: the containers and the image gone
eng_podman_cleanup() {
	local n
	for n in "$@"; do podman rm -f -t 0 "$n" > /dev/null 2>&1; done
	podman rmi -f "$PIMG" > /dev/null 2>&1
	return 0
}

# eng_podman_counter NAME: a running counter container, counted to 5 at least
eng_podman_counter() {
	# shellcheck disable=SC2086
	podman run -d $ENG_PODMAN_RUN --name "$1" "$PIMG" sh -c "$ENG_COUNTER" > "$T/run.out" 2>&1 ||
		fail "podman run failed: $(tail -n2 "$T/run.out")"
	wait_until 20 eval '(( $(podman logs '"$1"' 2> /dev/null | tail -n1 | tr -dc 0-9) >= 5 ))' ||
		fail "the container does not count"
}

# eng_podman_log NAME FILE: its log so far into FILE
eng_podman_log() { podman logs "$1" > "$2" 2> /dev/null; }

# eng_podman_counts_on NAME FROM: it counts 5 past FROM
eng_podman_counts_on() {
	wait_until 20 eval '(( $(podman logs '"$1"' 2> /dev/null | tail -n1 | tr -dc 0-9) >= '"$(($2 + 5))"' ))' ||
		fail "the restored container does not count on from $2"
}

eng_podman_do() { # eng_podman_do WHAT ARGS...: podman container ARGS, failing with WHAT
	local what=$1 dir; shift
	timeout -k 5 60 podman container "$@" > "$T/podman.out" 2>&1 && return 0
	# memdump's own log of it, in the container's directory (the last argument names it)
	dir=$(podman inspect -f '{{.StaticDir}}' "${!#}" 2> /dev/null) &&
		for f in dump.log restore.log; do
			tail -n 30 "$dir/$f" > "$T/$f.tail" 2> /dev/null && show_file "$f" "$T/$f.tail"
		done
	fail "podman $what failed: $(tail -n3 "$T/podman.out")"
}

# 1. checkpoint (the container gone) and restore under its name: the counter
# goes on with no gap and no repeat; podman's default seccomp profile is on
case_eng_podman() {
	eng_podman_setup || return 0
	local c=md-eng-p$$ n
	trap 'eng_podman_cleanup '"$c" EXIT
	eng_podman_counter "$c"
	PID=$(podman inspect -f '{{.State.Pid}}' "$c")
	[[ $(proc_field "$PID" Seccomp) == 2 ]] || fail "the container has no seccomp filter"
	eng_podman_do checkpoint checkpoint "$c"
	eng_used_memdump
	[[ $(podman inspect -f '{{.State.Status}}' "$c") == exited ]] ||
		fail "the container runs on after the checkpoint"
	eng_podman_log "$c" "$T/log1"; n=$(eng_last "$T/log1")
	eng_podman_do restore restore "$c"
	eng_podman_counts_on "$c" "$n"
	PID=$(podman inspect -f '{{.State.Pid}}' "$c")
	[[ $(proc_field "$PID" Seccomp) == 2 ]] || fail "the restored container lost its seccomp filter"
	eng_podman_log "$c" "$T/log"
	eng_run_ok "$T/log" || fail "the count has a gap or a repeat: $(uniq -d "$T/log" | head -3)"
}

add eng-podman case_eng_podman

# 2. checkpoint --leave-running twice in a row (the same checkpoint directory):
# the counter never stops; then the container is killed and restored from the
# second checkpoint: it counts on from the number it had then
case_eng_podman_leave() {
	eng_podman_setup || return 0
	local c=md-eng-l$$ before after k first
	trap 'eng_podman_cleanup '"$c" EXIT
	eng_podman_counter "$c"
	eng_podman_do "checkpoint --leave-running" checkpoint --leave-running "$c"
	eng_podman_log "$c" "$T/l1"; before=$(eng_last "$T/l1")
	eng_podman_do "second checkpoint --leave-running" checkpoint --leave-running "$c"
	eng_podman_log "$c" "$T/l2"; after=$(eng_last "$T/l2")
	eng_used_memdump
	[[ $(podman inspect -f '{{.State.Status}}' "$c") == running ]] ||
		fail "the container stopped after checkpoint --leave-running"
	eng_podman_counts_on "$c" "$after"
	podman kill "$c" > /dev/null 2>&1 || fail "podman kill failed"
	wait_until 20 eval '[[ $(podman inspect -f "{{.State.Status}}" '"$c"') == exited ]]' ||
		fail "the container did not stop"
	eng_podman_log "$c" "$T/l3"; k=$(wc -l < "$T/l3")
	eng_run_ok "$T/l3" || fail "the count had a gap or a repeat while checkpointed"
	eng_podman_do restore restore "$c"
	eng_podman_counts_on "$c" "$(eng_last "$T/l3")"
	eng_podman_log "$c" "$T/l4"
	# the restored part: a run from the number after the second checkpoint's
	tail -n +"$((k + 1))" "$T/l4" > "$T/new"
	first=$(head -n1 "$T/new")
	(( first > before && first <= after + 1 )) ||
		fail "the restore counts from $first, the checkpoint was between $before and $after"
	awk 'NR > 1 && $1 != prev + 1 { bad = 1 } { prev = $1 } END { exit bad }' "$T/new" ||
		fail "the restored count has a gap or a repeat"
}

add eng-podman-leave case_eng_podman_leave

# 3. checkpoint --export, restore --import under a new name (-n): the runtime
# gives a new root (another overlay): the new container counts on from the
# old one's last number, with its own root
case_eng_podman_export() {
	eng_podman_setup || return 0
	local c=md-eng-e$$ c2=md-eng-i$$ n
	trap 'eng_podman_cleanup '"$c $c2"'; rm -f '"$T/exp.tar.gz" EXIT
	eng_podman_counter "$c"
	eng_podman_do "checkpoint --export" checkpoint --export "$T/exp.tar.gz" "$c"
	eng_used_memdump
	eng_podman_log "$c" "$T/log1"; n=$(eng_last "$T/log1")
	eng_run_ok "$T/log1" || fail "the count has a gap or a repeat before the checkpoint"
	eng_podman_do "restore --import -n" restore --import "$T/exp.tar.gz" -n "$c2"
	eng_podman_counts_on "$c2" "$n"
	# the export carries the old log: the new container's runs on from it
	eng_podman_log "$c2" "$T/log2"
	cmp -s "$T/log1" <(head -n "$n" "$T/log2") ||
		fail "the imported container's log does not begin with the old one's"
	eng_run_ok "$T/log2" || fail "the imported container's count has a gap or a repeat"
	# and once more under the old name, the old container removed (same ID, new overlay)
	podman rm -f -t 0 "$c2" > /dev/null 2>&1
	podman rm -f -t 0 "$c" > /dev/null 2>&1
	eng_podman_do "restore --import (same name)" restore --import "$T/exp.tar.gz"
	eng_podman_counts_on "$c" "$n"
	eng_podman_log "$c" "$T/log3"
	eng_run_ok "$T/log3" || fail "restored under its old name, its count has a gap or a repeat"
}

add eng-podman-export case_eng_podman_export

# 4. --print-stats: podman reads memdump's stats-dump and stats-restore from
# its work directory (CRIU's fields)
case_eng_podman_stats() {
	eng_podman_setup || return 0
	local c=md-eng-s$$ n
	trap 'eng_podman_cleanup '"$c" EXIT
	eng_podman_counter "$c"
	eng_podman_do "checkpoint --print-stats" checkpoint --print-stats "$c"
	show_file checkpoint-stats "$T/podman.out"
	python3 - "$T/podman.out" dump <<'PY' || fail "checkpoint --print-stats: no CRIU statistics"
import json, sys
s = json.load(open(sys.argv[1]))
c = s['container_statistics'][0]['criu_statistics']
assert c.get('frozen_time', 0) > 0 and c.get('pages_written', 0) > 0, c
PY
	eng_podman_log "$c" "$T/log1"; n=$(eng_last "$T/log1")
	eng_podman_do "restore --print-stats" restore --print-stats "$c"
	show_file restore-stats "$T/podman.out"
	python3 - "$T/podman.out" <<'PY' || fail "restore --print-stats: no CRIU statistics"
import json, sys
s = json.load(open(sys.argv[1]))
c = s['container_statistics'][0]['criu_statistics']
assert c.get('restore_time', 0) > 0 or c.get('forking_time', 0) > 0 or c.get('pages_restored', 0) > 0, c
PY
	eng_podman_counts_on "$c" "$n"
	eng_podman_log "$c" "$T/log"
	eng_run_ok "$T/log" || fail "the count has a gap or a repeat"
}

add eng-podman-stats case_eng_podman_stats

# 5. pre-checkpoint (-P: memory only, left running and tracked), then
# checkpoint --with-previous: the restore finds every page
case_eng_podman_predump() {
	eng_podman_setup || return 0
	local c=md-eng-d$$ n
	trap 'eng_podman_cleanup '"$c" EXIT
	eng_podman_counter "$c"
	eng_podman_do "checkpoint -P" checkpoint -P "$c"
	[[ $(podman inspect -f '{{.State.Status}}' "$c") == running ]] ||
		fail "the container stopped after the pre-checkpoint"
	eng_podman_log "$c" "$T/l0"; eng_podman_counts_on "$c" "$(eng_last "$T/l0")"
	eng_podman_do "checkpoint --with-previous" checkpoint --with-previous "$c"
	eng_used_memdump
	eng_podman_log "$c" "$T/log1"; n=$(eng_last "$T/log1")
	eng_podman_do restore restore "$c"
	eng_podman_counts_on "$c" "$n"
	eng_podman_log "$c" "$T/log"
	eng_run_ok "$T/log" || fail "the count has a gap or a repeat"
}

add eng-podman-predump case_eng_podman_predump

# ------------------------------------------------------------------ docker

# eng_dockerd: a dockerd --experimental of the case's own (data, exec root,
# socket under $T) on a bridge of its own as its default bridge network;
# sets D (the docker command for it)
eng_dockerd() {
	local br=mdeng$$ net=$((($$ % 200) + 20))
	command -v dockerd > /dev/null && command -v docker > /dev/null ||
		{ note "no dockerd (docker.io, scripts/install-deps): skipped"; return 1; }
	eng_setup || return 1
	ip link add "$br" type bridge && ip addr add "172.30.$net.1/24" dev "$br" &&
		ip link set "$br" up || fail "cannot make the bridge $br"
	DK_BR=$br
	mkdir -p "$T/dk"
	dockerd --experimental --data-root "$T/dk/data" --exec-root "$T/dk/exec" \
		-H "unix://$T/dk/sock" --pidfile "$T/dk/pid" --bridge "$br" --iptables=false \
		--ip-masq=false > "$T/dk/log" 2>&1 &
	DK_PID=$!
	D="docker -H unix://$T/dk/sock"
	wait_until 60 eval "$D"' info > /dev/null 2>&1' ||
		{ show_file dockerd "$T/dk/log"; fail "dockerd did not start"; }
	$D import "$T/bb.tar" memdump-bb:test > /dev/null 2>&1 || fail "docker import failed"
}

eng_dockerd_stop() {
	[[ -n $D ]] && $D rm -f $($D ps -aq) > /dev/null 2>&1
	[[ -n $DK_PID ]] && kill "$DK_PID" 2> /dev/null && wait_until 20 eval '! kill -0 '"$DK_PID"' 2> /dev/null'
	grep " $T/dk" /proc/mounts | awk '{ print $2 }' | sort -r | xargs -r -n1 umount -l 2> /dev/null
	[[ -n $DK_BR ]] && ip link del "$DK_BR" 2> /dev/null
	return 0
}

# eng_docker_start_ck NAME CHECKPOINT: docker start --checkpoint, output in
# $T/st.out. Docker 20.10 (Debian 12) tars the checkpoint into containerd's
# content store, where `checkpoint create` left the same tar unless
# containerd's garbage collector ran in between: "commit failed: content
# sha256:...: already exists" (moby#42900, fixed in later dockers), before
# anything of the container starts. Then the images' times are touched, so
# the tar differs, and it is started once more.
eng_docker_start_ck() {
	local id
	timeout -k 5 60 $D start --checkpoint "$2" "$1" > "$T/st.out" 2>&1 && return 0
	grep -q "failed to upload checkpoint to containerd: commit failed: .*already exists" \
		"$T/st.out" || return 1
	note "docker's content store held the checkpoint already (moby#42900): once more"
	id=$($D inspect -f '{{.Id}}' "$1") && [[ -d $T/dk/data/containers/$id/checkpoints/$2 ]] ||
		return 1
	find "$T/dk/data/containers/$id/checkpoints/$2" -type f -exec touch {} +
	timeout -k 5 60 $D start --checkpoint "$2" "$1" > "$T/st.out" 2>&1
}

# 7. docker checkpoint create / docker start --checkpoint on the default
# bridge: runc restores with empty_ns (the network namespace empty, docker's
# hook puts the new veth end in): the container has its eth0 and address
# again and counts on without a gap or a repeat
case_eng_docker() {
	local c=md-eng-k$$ n ip1 ip2
	trap 'eng_dockerd_stop' EXIT
	eng_dockerd || return 0
	$D run -d --name "$c" memdump-bb:test sh -c "$ENG_COUNTER" > "$T/run.out" 2>&1 ||
		fail "docker run failed: $(tail -n2 "$T/run.out")"
	wait_until 20 eval '(( $('"$D"' logs '"$c"' 2> /dev/null | tail -n1 | tr -dc 0-9) >= 5 ))' ||
		fail "the container does not count"
	ip1=$($D inspect -f '{{.NetworkSettings.IPAddress}}' "$c")
	[[ -n $ip1 ]] || fail "the container has no address on the bridge"
	timeout -k 5 60 $D checkpoint create "$c" ck1 > "$T/ck.out" 2>&1 ||
		fail "docker checkpoint create failed: $(tail -n3 "$T/ck.out")"
	eng_used_memdump
	$D logs "$c" > "$T/log1" 2> /dev/null; n=$(eng_last "$T/log1")
	eng_docker_start_ck "$c" ck1 ||
		fail "docker start --checkpoint failed: $(tail -n3 "$T/st.out")"
	wait_until 20 eval '(( $('"$D"' logs '"$c"' 2> /dev/null | tail -n1 | tr -dc 0-9) >= '"$((n + 5))"' ))' ||
		fail "the restored container does not count on from $n"
	$D logs "$c" > "$T/log" 2> /dev/null
	eng_run_ok "$T/log" || fail "the count has a gap or a repeat: $(uniq -d "$T/log" | head -3)"
	ip2=$($D inspect -f '{{.NetworkSettings.IPAddress}}' "$c")
	$D exec "$c" cat /proc/net/dev > "$T/netdev" 2>&1
	grep -q eth0 "$T/netdev" || fail "the restored container has no eth0"
	busybox ping -c1 -W2 "$ip2" > /dev/null 2>&1 || fail "the restored container ($ip2) does not answer"
}

add eng-docker case_eng_docker
