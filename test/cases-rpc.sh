# CRIU's RPC (memdump swrk FD) driven by test/rpc-client.py, which speaks
# through CRIU's own generated module (pycriu.rpc_pb2, as runc through
# go-criu), and --action-script.

RPC_CLIENT=$TESTSRC/rpc-client.py

# rpc LABEL ARGS... : run the client; sets RPC_RC, RPC_OUT, RPC_ERR
rpc() {
	local label=$1; shift
	RPC_OUT=$T/rpc.$label.out RPC_ERR=$T/rpc.$label.err
	timeout -k 5 "$OP_TIMEOUT" "$RPC_CLIENT" "$@" > "$RPC_OUT" 2> "$RPC_ERR" < /dev/null
	RPC_RC=$?
	note "rpc-client $* -> $RPC_RC"
	sed 's/^/#   /' "$RPC_OUT"
	head -c 2000 "$RPC_ERR" | sed 's/^/#   stderr: /'
	(( RPC_RC == 124 || RPC_RC == 137 )) && fail "rpc-client $label timed out"
	return 0
}

# rpc_ok: the response said success and memdump exited 0
rpc_ok() {
	grep -q '^RESP .* success=True' "$RPC_OUT" || fail "no successful response: $(grep -m1 '^RESP' "$RPC_OUT")"
	grep -qx 'EXIT 0' "$RPC_OUT" || fail "memdump swrk did not exit 0: $(grep '^EXIT' "$RPC_OUT")"
}

# rpc_refused REGEX...: one failed response naming every REGEX; memdump exited
# with an error status, not from a signal
rpc_refused() {
	grep -q '^RESP .* success=False errno=[1-9]' "$RPC_OUT" ||
		fail "no failed response with an errno: $(grep -m1 '^RESP' "$RPC_OUT")"
	local re
	for re in "$@"; do
		grep '^RESP' "$RPC_OUT" | grep -qE -- "$re" || fail "the response does not say '$re'"
	done
	grep -qx 'EXIT 1' "$RPC_OUT" || fail "memdump swrk exit: $(grep '^EXIT' "$RPC_OUT"), want 1"
}

# notified LIST: the NOTIFY lines, in order, are exactly "name pid=..." of LIST
notified() {
	local got; got=$(sed -n 's/^NOTIFY //p' "$RPC_OUT" | tr '\n' ' ')
	[[ $got == "$1 " ]] || fail "notifications '$got', want '$1'"
}

case_rpc_version() {
	rpc v "$MEMDUMP" VERSION
	rpc_ok
	grep -q '^VERSION major=4 minor=0 sublevel=0 name=memdump gitid=memdump-' "$RPC_OUT" ||
		fail "VERSION answer: $(grep '^VERSION' "$RPC_OUT")"
	# as criu, through a symlink (runc --criu PATH)
	ln -s "$MEMDUMP" "$T/criu"
	rpc criu "$T/criu" VERSION
	rpc_ok
	"$T/criu" --version > "$T/criu.version" || fail "criu --version failed"
	grep -qx 'Version: 4.0' "$T/criu.version" || fail "criu --version: $(cat "$T/criu.version")"
	rpc argv0 --argv0 criu "$MEMDUMP" VERSION
	rpc_ok
}

case_rpc_features() {
	rpc f "$MEMDUMP" FEATURE_CHECK
	rpc_ok
	grep -qx 'FEATURES mem_track=True lazy_pages=True pidfd_store=False' "$RPC_OUT" ||
		fail "FEATURE_CHECK answer: $(grep '^FEATURES' "$RPC_OUT")"
	# keep_open: a VERSION request on the same connection
	rpc keep --keep-open "$MEMDUMP" FEATURE_CHECK
	rpc_ok
	[[ $(grep -c '^RESP .* success=True' "$RPC_OUT") == 2 ]] || fail "keep_open: not two answers"
	grep -q '^VERSION major=4' "$RPC_OUT" || fail "keep_open: no VERSION answer"
	# keep_open on a DUMP is refused (as CRIU)
	rpc dkeep --keep-open "$MEMDUMP" DUMP pid=1 images_dir="$T"
	rpc_refused "keep_open is only for"
}

case_rpc_check() {
	rpc c "$MEMDUMP" CHECK
	rpc_ok
}

# DUMP with leave_running: pre-dump, post-dump with the PID; a complete set
case_rpc_dump_lr() {
	start_prog t-pattern
	mkdir "$T/d"
	rpc d "$MEMDUMP" DUMP images_dir="$T/d" pid="$PID" leave_running=true notify_scripts=true \
		log_file=dump.log log_level=4
	rpc_ok
	notified "pre-dump pid=$PID post-dump pid=$PID"
	[[ -s $T/d/dump.log ]] || fail "no dump.log in the images directory"
	md verify verify -D "$T/d" || fail "verify of the RPC dump failed: $(tail -n1 "$MD_ERR")"
	expect_untraced "$PID"
	check_child_pass
}

# DUMP (killing), then RESTORE of it: every notification in order, the PID in the response
case_rpc_dump_restore() {
	start_prog t-pattern
	state_snap "$PID"
	mkdir "$T/d"
	rpc d "$MEMDUMP" DUMP images_dir="$T/d" pid="$PID" notify_scripts=true log_file=dump.log
	rpc_ok
	notified "pre-dump pid=$PID post-dump pid=$PID"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	rpc r "$MEMDUMP" RESTORE images_dir="$T/d" notify_scripts=true log_file=restore.log \
		shell_job=true manage_cgroups=true manage_cgroups_mode=DEFAULT
	rpc_ok
	track "$PID"
	notified "pre-restore pid=$PID setup-namespaces pid=$PID post-setup-namespaces pid=$PID post-restore pid=$PID pre-resume pid=$PID post-resume pid=$PID"
	grep -q "^RESP type=RESTORE success=True errno=0 pid=$PID " "$RPC_OUT" ||
		fail "the RESTORE response does not carry pid $PID"
	expect_untraced "$PID"
	state_same "$PID" rpc
	kill -USR1 "$PID" || fail "cannot signal restored pid $PID"
	get_result "$OUT"
}

# Options memdump cannot honour: refused by name, the target untouched
case_rpc_refuse_options() {
	start_prog t-pattern
	mkdir "$T/d"
	echo "tcp-close" > "$T/criu.conf"
	rpc d "$MEMDUMP" DUMP images_dir="$T/d" pid="$PID" auto_dedup=true \
		lazy_pages=true status_fd=1 manage_cgroups_mode=PROPS external=net:x \
		cg_root=cpu:/x empty_ns=$((0x20000 | 0x40000000)) config_file="$T/criu.conf" \
		log_file=rpc.log
	rpc_refused "DUMP: options memdump cannot honour" "auto_dedup \(" \
		"lazy_pages \(a lazy dump needs ps" "status_fd \(" "manage_cgroups_mode \(" "external \(only one net" \
		"cg_root \(" "empty_ns \(only CLONE_NEWNET" "config_file \(.*criu.conf exists"
	grep -q "DUMP failed: .*config_file" "$T/d/rpc.log" ||
		fail "the refusal is not in the request's log file (where runc points)"
	rpc ps "$MEMDUMP" DUMP images_dir="$T/d" pid="$PID" ps=port:27396,fd:1 lazy_pages=true
	rpc_refused "DUMP: options memdump cannot honour" "ps \(fd: a connection of the client's"
	rpc lpd "$MEMDUMP" PRE_DUMP images_dir="$T/d" pid="$PID" ps=port:27396 lazy_pages=true
	rpc_refused "PRE_DUMP: options memdump cannot honour" "lazy_pages \(a pre-dump leaves no pages"
	rpc fz "$MEMDUMP" DUMP images_dir="$T/d" pid="$PID" freeze_cgroup=/sys/fs/cgroup/x
	rpc_refused "freeze cgroup /sys/fs/cgroup/x: No such file"
	rpc root "$MEMDUMP" DUMP images_dir="$T/d" pid="$PID" root=/tmp
	rpc_refused "root \(/tmp is not the root of the target"
	rpc rst "$MEMDUMP" RESTORE images_dir="$T/d" lazy_pages=true leave_running=true \
		lsm_profile=apparmor:x tls=true weak_sysctls=true link_remap=true
	rpc_refused "RESTORE: options memdump cannot honour" "leave_running \(" \
		"lsm_profile \(memdump does not change LSM" "tls \(TLS is the page server's, over the command line only"
	grep -q "weak_sysctls\|link_remap" "$RPC_OUT" && fail "weak_sysctls or link_remap refused"
	grep -q "lazy_pages" "$RPC_OUT" && fail "a restore's lazy_pages refused (memdump's lazy restore)"
	rpc nopid "$MEMDUMP" DUMP images_dir="$T/d"
	rpc_refused "no pid"
	rpc psrv "$MEMDUMP" PAGE_SERVER images_dir="$T/d" pid="$PID"
	rpc_refused "PAGE_SERVER \(5\) is not supported"
	no_inventory "$T/d"
	expect_untraced "$PID"
	check_child_pass
}

# Garbage, truncated, unknown type, oversized, an empty packet, a stray NOTIFY:
# each gets a failed response and memdump exits 1
case_rpc_malformed() {
	/usr/bin/python3 - "$T" <<'EOF' || fail "cannot write the messages"
import os, sys
from pycriu import rpc_pb2 as r
t = sys.argv[1]
q = r.criu_req(); q.type = r.DUMP; q.opts.images_dir_fd = 5; q.opts.pid = 123
q.opts.log_file = "x" * 40
b = q.SerializeToString()
open(t + "/truncated", "wb").write(b[:-7])
open(t + "/garbage", "wb").write(os.urandom(300))
open(t + "/unknown", "wb").write(b"\x08\x63")
open(t + "/oversized", "wb").write(b"\x08\x0a" + b"\x00" * (150 << 10))
open(t + "/empty", "wb").write(b"")
q = r.criu_req(); q.type = r.NOTIFY; q.notify_success = True
open(t + "/notify", "wb").write(q.SerializeToString())
q = r.criu_req(); q.type = r.DUMP
q.opts.images_dir_fd = -1; q.opts.pid = 1
open(t + "/noreq", "wb").write(q.SerializeToString()[:3])
EOF
	rpc garbage --raw "$T/garbage" "$MEMDUMP" VERSION
	rpc_refused "malformed request \(300 bytes"
	rpc truncated --raw "$T/truncated" "$MEMDUMP" VERSION
	rpc_refused "malformed request"
	rpc noreq --raw "$T/noreq" "$MEMDUMP" VERSION
	rpc_refused "malformed request"
	rpc unknown --raw "$T/unknown" "$MEMDUMP" VERSION
	rpc_refused "request type unknown \(99\) is not supported"
	rpc oversized --raw "$T/oversized" "$MEMDUMP" VERSION
	rpc_refused "a request of [0-9]+ bytes \(more than 131072\)"
	rpc empty --raw "$T/empty" "$MEMDUMP" VERSION
	rpc_refused "an empty request"
	rpc notify --raw "$T/notify" "$MEMDUMP" VERSION
	rpc_refused "NOTIFY request outside a notification"
}

# no_parasite: nothing of memdump left in PID
no_parasite() {
	! grep -q '/memfd: (deleted)' "/proc/$1/maps" || fail "a parasite mapping is left in $1"
}

# The client dies mid-request: at the post-dump notification (the target
# frozen, its images written) and while the parasite runs (stalled there)
case_rpc_client_dies() {
	start_prog t-pattern
	mkdir "$T/d"
	rpc die1 --die-at post-dump "$MEMDUMP" DUMP images_dir="$T/d" pid="$PID" notify_scripts=true
	grep -q '^NOTIFY post-dump' "$RPC_OUT" || fail "no post-dump notification"
	expect_untraced "$PID"
	wait_until 5 no_inventory "$T/d"
	MEMDUMP_FAULT=parasite-running rpc die2 --die-after 1 "$MEMDUMP" DUMP images_dir="$T/d" \
		pid="$PID"
	expect_untraced "$PID"
	no_parasite "$PID"
	no_inventory "$T/d"
	check_child_pass
}

# The client fails a notification: pre-dump, post-dump, post-restore abort cleanly
case_rpc_notify_fail() {
	start_prog t-pattern
	mkdir "$T/d"
	rpc f1 --fail-at pre-dump "$MEMDUMP" DUMP images_dir="$T/d" pid="$PID" notify_scripts=true
	rpc_refused "the RPC client failed the pre-dump notification"
	notified "pre-dump pid=$PID"
	rpc f2 --fail-at post-dump "$MEMDUMP" DUMP images_dir="$T/d" pid="$PID" notify_scripts=true
	rpc_refused "the RPC client failed the post-dump notification"
	expect_untraced "$PID"
	no_inventory "$T/d"
	rpc d "$MEMDUMP" DUMP images_dir="$T/d" pid="$PID" notify_scripts=true
	rpc_ok
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	rpc r1 --fail-at post-restore "$MEMDUMP" RESTORE images_dir="$T/d" notify_scripts=true
	rpc_refused "the RPC client failed the post-restore notification"
	notified "pre-restore pid=$PID setup-namespaces pid=$PID post-setup-namespaces pid=$PID post-restore pid=$PID"
	wait_until 5 eval '[[ ! -d /proc/'"$PID"' ]]' || fail "pid $PID left after a failed post-restore"
	rpc r2 "$MEMDUMP" RESTORE images_dir="$T/d"
	rpc_ok
	track "$PID"
	expect_untraced "$PID"
	kill -USR1 "$PID"
	get_result "$OUT"
}

# action_script FILE [FAIL_AT]: a script logging "action pid dir" into $T/actions
action_script() {
	cat > "$1" <<EOF
#!/bin/sh
echo "\$CRTOOLS_SCRIPT_ACTION \$CRTOOLS_INIT_PID \$CRTOOLS_IMAGE_DIR" >> "$T/actions"
[ "\$CRTOOLS_SCRIPT_ACTION" != "${2:-none}" ]
EOF
	chmod +x "$1"
}

# actions_are LIST: $T/actions holds these actions in order, each with $PID and $T/d
actions_are() {
	local got want=""
	got=$(tr '\n' ' ' < "$T/actions" 2>/dev/null)
	for a in $1; do want+="$a $PID $T/d "; done
	[[ $got == "$want" ]] || fail "action scripts ran '$got', want '$want'"
	rm -f "$T/actions"
}

case_action_script() {
	action_script "$T/hook"
	start_prog t-pattern
	dump "$PID" "$T/d" --leave-running --tcp-established --action-script "$T/hook"
	actions_are "pre-dump network-lock post-dump network-unlock"
	expect_untraced "$PID"
	rm -rf "$T/d"
	dump "$PID" "$T/d" --action-script "$T/hook"
	actions_are "pre-dump post-dump"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	md restore restore -D "$T/d" -d --action-script "$T/hook" ||
		fail "restore with an action script failed: $(tail -n1 "$MD_ERR")"
	track "$PID"
	[[ $(tr -dc 0-9 < "$MD_OUT") == "$PID" ]] || fail "restore -d printed '$(cat "$MD_OUT")'"
	actions_are "pre-restore setup-namespaces post-setup-namespaces post-restore pre-resume post-resume"
	expect_untraced "$PID"
	kill -USR1 "$PID"
	get_result "$OUT"
}

# A failing script aborts: the dump at post-dump (target running, no set), the restore at
# pre-restore and at post-restore (nothing left running)
case_action_script_fail() {
	start_prog t-pattern
	action_script "$T/fail-post-dump" post-dump
	md dump1 dump -t "$PID" -D "$T/d" --action-script "$T/fail-post-dump"
	expect_md_error
	grep -q "the post-dump action script $T/fail-post-dump exited with 1" "$MD_ERR" ||
		fail "the error does not name the script: $(cat "$MD_ERR")"
	actions_are "pre-dump post-dump"
	expect_untraced "$PID"
	no_inventory "$T/d"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	local at
	for at in pre-restore setup-namespaces post-restore; do
		action_script "$T/fail-$at" "$at"
		md "rst-$at" restore -D "$T/d" -d --action-script "$T/fail-$at"
		expect_md_error
		grep -q "the $at action script $T/fail-$at exited with 1" "$MD_ERR" ||
			fail "the error does not name the $at script"
		wait_until 5 eval '[[ ! -d /proc/'"$PID"' ]]' || fail "pid $PID left after a failed $at"
		rm -f "$T/actions"
	done
	restore_and_pass "$T/d" 1
}

# PRE_DUMP, then DUMP with parent_img (as runc checkpoint --pre-dump, then
# checkpoint --parent-path): the second set holds only what was written, and
# the chain restores.
case_rpc_predump() {
	start_prog t-pattern 32
	mkdir "$T/d1" "$T/d1s" "$T/d2"
	rpc p "$MEMDUMP" PRE_DUMP images_dir="$T/d1" pid="$PID"
	rpc_ok
	grep -q '^RESP type=PRE_DUMP success=True' "$RPC_OUT" || fail "no PRE_DUMP response"
	expect_untraced "$PID"
	# its pages read after the thaw unless pre_dump_mode says SPLICE (CRIU's 1, READ 2)
	timeout 30 crit show "$T/d1/inventory.img" | grep -q '"pre_dump_mode": 2' ||
		fail "the pre-dump's inventory does not say read mode"
	rpc ps "$MEMDUMP" PRE_DUMP images_dir="$T/d1s" pid="$PID" parent_img=../d1 pre_dump_mode=SPLICE
	rpc_ok
	timeout 30 crit show "$T/d1s/inventory.img" | grep -q '"pre_dump_mode": 1' ||
		fail "pre_dump_mode=SPLICE: the pre-dump's inventory does not say splice mode"
	rpc d "$MEMDUMP" DUMP images_dir="$T/d2" pid="$PID" parent_img=../d1s
	rpc_ok
	expect_killed "$PID"
	local full part
	full=$(stat -c %s "$T/d1/pages-1.img") part=$(stat -c %s "$T/d2/pages-1.img")
	(( part * 4 < full )) || fail "the dump after the pre-dump wrote $part bytes of pages, the pre-dump $full"
	[[ -L $T/d2/parent ]] || fail "no parent link in the second set"
	restore_and_pass "$T/d2" rpc
}

add rpc-version case_rpc_version
add rpc-predump case_rpc_predump
add rpc-features case_rpc_features
add rpc-check case_rpc_check
add rpc-dump-leave-running case_rpc_dump_lr
add rpc-dump-restore case_rpc_dump_restore
add rpc-refuse-options case_rpc_refuse_options
add rpc-malformed case_rpc_malformed
add rpc-client-dies case_rpc_client_dies
add rpc-notify-fail case_rpc_notify_fail
add action-script case_action_script
add action-script-fail case_action_script_fail

# scripts/oci-hook: the runtime's state on stdin, a --leave-running dump of its pid
case_oci_hook() {
	start_prog t-pattern
	printf '{"ociVersion": "1.0.2", "id": "ctr1", "status": "running", "pid": %d, "bundle": "%s"}' \
		"$PID" "$T" > "$T/state.json"
	"$TESTSRC/../scripts/oci-hook" --memdump "$MEMDUMP" "$T/ckpt" < "$T/state.json" \
		> "$T/hook.out" 2> "$T/hook.err" || fail "oci-hook failed: $(tail -n1 "$T/hook.err")"
	local d; d=$(ls -d "$T"/ckpt/ctr1-*) || fail "oci-hook made no ctr1-* directory"
	md verify verify -D "$d" || fail "the hook's dump does not verify: $(tail -n1 "$MD_ERR")"
	echo '{"id": "../x", "pid": 1}' | "$TESTSRC/../scripts/oci-hook" "$T/ckpt" 2> "$T/bad.err" &&
		fail "oci-hook took the id ../x"
	grep -q "bad container id" "$T/bad.err" || fail "oci-hook: $(cat "$T/bad.err")"
	expect_untraced "$PID"
	check_child_pass
}

add oci-hook case_oci_hook

# As a runtime drives it (podman reuses its checkpoint directory and reads the
# stats from its work directory): a second DUMP into the same images directory
# replaces the first; stats-dump (CRIU's fields, shpages_written too) and
# stats-restore land in work_dir, where crit decodes them.
case_rpc_workdir_stats() {
	start_prog t-shared
	mkdir "$T/d" "$T/w"
	rpc d1 "$MEMDUMP" DUMP images_dir="$T/d" work_dir="$T/w" pid="$PID" leave_running=true
	rpc_ok
	rpc d2 "$MEMDUMP" DUMP images_dir="$T/d" work_dir="$T/w" pid="$PID"
	rpc_ok
	expect_killed "$PID"
	[[ -f $T/w/stats-dump ]] || fail "no stats-dump in the work directory"
	crit decode -i "$T/w/stats-dump" --pretty > "$T/stats-dump.json" 2>&1 ||
		fail "crit cannot decode stats-dump: $(tail -n1 "$T/stats-dump.json")"
	grep -q '"shpages_written": [1-9]' "$T/stats-dump.json" ||
		{ show_file stats-dump "$T/stats-dump.json"; fail "no shared memory pages in stats-dump"; }
	truncate -s "$READY_SIZE" "$OUT"
	rpc r "$MEMDUMP" RESTORE images_dir="$T/d" work_dir="$T/w"
	rpc_ok
	track "$PID"
	crit decode -i "$T/w/stats-restore" --pretty > "$T/stats-restore.json" 2>&1 ||
		fail "crit cannot decode stats-restore: $(tail -n1 "$T/stats-restore.json")"
	grep -q '"restore_time": [1-9]' "$T/stats-restore.json" || fail "no restore_time in stats-restore"
	expect_untraced "$PID"
	kill -USR1 "$PID"
	get_result "$OUT"
}
add rpc-workdir-stats case_rpc_workdir_stats
