# CRIU's command line, memdump run under the name `criu` (LXC, zdtm, scripts):
# options CRIU documents are passed on, accepted where they cannot matter,
# or refused by name in one line; never "unrecognized".

# criu_link: $T/bin/criu -> memdump; sets CRIU
criu_link() {
	mkdir -p "$T/bin"
	ln -sf "$MEMDUMP" "$T/bin/criu"
	CRIU=$T/bin/criu
}

# LXC's dump and restore options (lxc-checkpoint -s / -r), -o relative to -D
case_criu_cli_lxc() {
	criu_link
	start_prog t-pattern
	mkdir -p "$T/d"
	"$CRIU" dump --tcp-established --file-locks --link-remap \
		--ext-mount-map auto --enable-external-sharing --enable-external-masters \
		--enable-fs hugetlbfs --enable-fs tracefs -D "$T/d" -o dump.log -v4 \
		--skip-in-flight --force-irmap --no-default-config --timeout 10 -t "$PID" \
		> "$T/dump.out" 2> "$T/dump.err" ||
		{ show_file "criu dump stderr" "$T/dump.err"; fail "criu dump failed"; }
	[[ -f $T/d/inventory.img ]] || fail "no inventory.img after criu dump"
	grep -q . "$T/d/dump.log" || fail "-o dump.log did not land in the images dir"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	"$CRIU" restore -D "$T/d" -o restore.log -v4 --restore-detached --file-locks \
		--link-remap --lsm-profile "apparmor:unconfined" --ext-mount-map console: \
		--external apparmor:unconfined \
		--pidfile "$T/pidfile" --no-default-config > "$T/restore.out" 2> "$T/restore.err" ||
		{ show_file "criu restore stderr" "$T/restore.err"; fail "criu restore failed"; }
	track "$PID"
	[[ $(cat "$T/pidfile") == "$PID" ]] || fail "--pidfile holds '$(cat "$T/pidfile")', want $PID"
	grep -q . "$T/d/restore.log" || fail "-o restore.log did not land in the images dir"
	wait_until 5 untraced "$PID" || fail "restored pid $PID not running"
	kill -USR1 "$PID"
	get_result "$OUT"
}
add criu-cli-lxc case_criu_cli_lxc

# What memdump lacks is refused by name, an unknown option too; check --feature
case_criu_cli_refuse() {
	criu_link
	local out
	out=$("$CRIU" dump -t 1 -D "$T" --auto-dedup 2>&1)
	(( $? == 1 )) || fail "criu dump --auto-dedup did not exit 1"
	[[ $out == "memdump (as criu): --auto-dedup is not supported: deduplication of parent images is not supported" ]] ||
		fail "--auto-dedup refusal: '$out'"
	# --tls is passed on (the page server's): without --page-server, memdump's own refusal
	out=$("$CRIU" dump -t 1 -D "$T" --tls 2>&1)
	(( $? == 1 )) || fail "criu dump --tls without --page-server did not exit 1"
	[[ $out == *"--tls is for the page server's connection: with --page-server" ]] ||
		fail "--tls without --page-server: '$out'"
	out=$("$CRIU" restore -D "$T" --no-such-option 2>&1)
	(( $? == 1 )) || fail "an unknown option did not exit 1"
	[[ $out == *"unknown option --no-such-option (not one of CRIU 4.2's)" ]] ||
		fail "unknown option: '$out'"
	out=$("$CRIU" lazy-pages -D "$T/none" 2>&1)
	(( $? == 1 )) || fail "criu lazy-pages in a missing directory did not exit 1"
	[[ $out == *"cannot listen on $T/none/lazy-pages.socket"* ]] || fail "lazy-pages: '$out'"
	"$CRIU" check --feature mem_dirty_track > /dev/null || fail "mem_dirty_track not supported"
	# lazy pages: memdump's lazy restore, which needs userfaultfd with its events
	"$CRIU" check --feature lazy_pages > /dev/null || fail "lazy_pages not supported"
	# loginuid is restored; the kernel has it when audit gives processes one
	if [[ -e /proc/self/loginuid ]]; then
		"$CRIU" check --feature loginuid > /dev/null || fail "loginuid not supported"
	fi
	# has_ipt_legacy: legacy iptables installed (tests add their own rules with it)
	if command -v iptables-legacy > /dev/null && command -v ip6tables-legacy > /dev/null; then
		"$CRIU" check --feature has_ipt_legacy > /dev/null || fail "has_ipt_legacy not supported"
	else
		PATH=/nonexistent "$CRIU" check --feature has_ipt_legacy > /dev/null &&
			fail "has_ipt_legacy said to be supported without iptables-legacy"
	fi
	"$CRIU" --version | grep -q '^Version: ' || fail "criu --version not in CRIU's format"
	return 0
}
add criu-cli-refuse case_criu_cli_refuse

# Every long option of CRIU 4.2 (criu/config.c's table: B boolean, so --no-X too; A with an
# argument; N without), for dump and restore: never "unknown option".
CRIU42_OPTS="A:tree N:leave-stopped N:leave-running B:restore-detached B:restore-sibling B:daemon
	A:images-dir A:work-dir A:log-file A:join-ns A:root N:help B:tcp-established A:close
	B:log-pid N:version B:evasive-devices A:pidfile A:veth-pair A:action-script B:link-remap
	B:shell-job B:file-locks B:page-server A:address A:port A:prev-images-dir N:ms B:track-mem
	B:auto-dedup A:libdir N:cpu-cap B:force-irmap A:ext-mount-map N:exec-cmd N:manage-cgroups
	A:cgroup-root A:inherit-fd A:feature A:skip-mnt A:enable-fs N:enable-external-sharing
	N:enable-external-masters A:freeze-cgroup A:ghost-limit A:irmap-scan-path A:lsm-profile
	A:timeout A:external A:empty-ns N:lazy-pages B:extra B:experimental N:all A:cgroup-props
	A:cgroup-props-file A:cgroup-dump-controller B:skip-in-flight B:deprecated B:display-stats
	B:weak-sysctls A:status-fd B:tcp-close N:verbosity A:ps-socket B:stream A:config
	N:no-default-config A:tls-cacert A:tls-cacrl A:tls-cert A:tls-key B:tls N:tls-no-cn-verify
	A:cgroup-yard A:pre-dump-mode A:file-validation B:skip-file-rwx-check A:lsm-mount-context
	A:network-lock B:mntns-compat-mode B:unprivileged B:ghost-fiemap B:allow-uprobes"

case_criu_cli_every_option() {
	criu_link
	local o name forms f act out n=0
	for o in $CRIU42_OPTS; do
		name=${o#?:}
		case $o in
		B:*) forms="--$name --no-$name" ;;
		A:*) forms="--$name=1" ;;
		*) forms="--$name" ;;
		esac
		for f in $forms; do
			for act in dump restore; do
				out=$(timeout 10 "$CRIU" "$act" -t 1 -D "$T/none" "$f" 2>&1 < /dev/null)
				[[ $out == *"unknown option"* || $out == *"unrecognized"* ]] &&
					fail "criu $act $f: '$out'"
				n=$((n + 1))
			done
		done
	done
	note "$n option forms of CRIU 4.2 taken or refused by name"
	(( n >= 200 )) || fail "only $n option forms tried"
}
add criu-cli-every-option case_criu_cli_every_option

# CRIU's --external mnt[] (external bind mounts found by the dump itself, :s
# and :m for their sharing): memdump finds them anyway, so the forms are taken;
# another flag is refused by name
case_criu_cli_mnt_auto() {
	criu_link
	local f out
	for f in 'mnt[]' 'mnt[]:s' 'mnt[]:m' 'mnt[]:sm'; do
		out=$("$CRIU" dump -t 1 -D "$T/none" --external "$f" 2>&1)
		[[ $out == *"is init"* ]] || fail "--external $f not taken: '$out'"
	done
	out=$("$CRIU" dump -t 1 -D "$T/none" --external 'mnt[]:x' 2>&1)
	[[ $out == "memdump (as criu): --external mnt[] takes the flags s and m, not ':x'" ]] ||
		fail "--external mnt[]:x: '$out'"
}
add criu-cli-mnt-auto case_criu_cli_mnt_auto
