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
	out=$("$CRIU" lazy-pages -D "$T" 2>&1)
	[[ $out == *"criu lazy-pages is not supported by memdump" ]] || fail "lazy-pages: '$out'"
	"$CRIU" check --feature mem_dirty_track > /dev/null || fail "mem_dirty_track not supported"
	"$CRIU" check --feature lazy_pages > /dev/null && fail "lazy_pages said to be supported"
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
