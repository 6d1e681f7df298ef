# --tls: the page server's and the migration's stream through GnuTLS, both sides
# authenticated by X.509 certificates (CRIU's options). The two hosts of
# cases-pageserver.sh (ps_hosts: 10.77.0.1 runs the target and the dump,
# 10.77.0.2 the page server or the receiver); certificates made by each case
# (tls-certs.py: a CA, a certificate for 10.77.0.2 used by both sides, and ones
# that must be refused: another CA's, expired, revoked, another name).

# tls_certs: the certificates in $T/pki. Sets PKI.
tls_certs() {
	PKI=$T/pki
	mkdir -p "$PKI"
	python3 "$TESTSRC/tls-certs.py" "$PKI" 10.77.0.2 || fail "cannot make the certificates"
}

# tls_opts CERT [opts]: --tls with the CA and CERT.pem/CERT.key of $PKI
tls_opts() {
	local c=$1; shift
	echo "--tls --tls-cacert $PKI/ca.pem --tls-cert $PKI/$c.pem --tls-key $PKI/$c.key $*"
}

# A dump through a TLS page server: the set verified and restored on host B.
case_tls_roundtrip() {
	ps_hosts
	tls_certs
	ps_target t-pattern
	PSDIR=$T/B
	# shellcheck disable=SC2046
	ps_server "$T/B" $(tls_opts host) -v 3
	# shellcheck disable=SC2046
	ps_dump dump "$T/A" dump $(tls_opts host) -v 3
	expect_killed "$PID"
	grep -q 'TLS with the page server 10.77.0.2' "$MD_ERR" ||
		fail "the dump did not say it speaks TLS"
	grep -q 'TLS with the client 10.77.0.1' "$PSERR" ||
		fail "the page server did not say it speaks TLS"
	ps_gather "$T/A" "$T/B"
	md verify verify -D "$T/B" || fail "verify on host B failed: $(tail -n1 "$MD_ERR")"
	restore_and_pass "$T/B" 1
}
add tls-roundtrip case_tls_roundtrip

# tls_refused LABEL PATTERN SERVER-OPTS -- DUMP-OPTS: a page server started with
# SERVER-OPTS, a dump with DUMP-OPTS refused with one line matching PATTERN and
# naming the page server; the page server fails and leaves nothing; no inventory
# on A; the target runs on, untraced.
tls_refused() {
	local label=$1 pattern=$2 sopts=() dopts=()
	shift 2
	while [[ $1 != -- ]]; do sopts+=("$1"); shift; done
	shift
	dopts=("$@")
	PSDIR=$T/B
	ps_server "$T/B" "${sopts[@]}"
	mkdir -p "$T/A"
	MEMDUMP=$MDA md "$label" dump -t "$PID" -D "$T/A" --page-server --address 10.77.0.2 \
		--port "$PS_PORT" "${dopts[@]}"
	sed 's/^/#   stderr: /' "$MD_ERR"
	expect_md_error
	grep -q 'page server 10.77.0.2' "$MD_ERR" || fail "$label: the error does not name the page server"
	grep -qE "$pattern" "$MD_ERR" || fail "$label: the error does not say /$pattern/"
	ps_server_exit
	(( PSRC != 0 )) || fail "$label: the page server exited 0"
	grep -q '^memdump: page-server failed: ' "$PSERR" || fail "$label: no error line from the page server"
	[[ -z $(ls -A "$T/B") ]] || fail "$label: the page server left files: $(ls "$T/B")"
	no_inventory "$T/A"
	expect_untraced "$PID"
}

# Every certificate or stream that must be refused, refused before the target is
# touched: the target passes at the end.
case_tls_refused() {
	ps_hosts
	tls_certs
	ps_target t-pattern 8
	# shellcheck disable=SC2046
	{
	tls_refused wrong-ca 'NOT trusted|issuer is unknown' $(tls_opts stranger) -- $(tls_opts host)
	tls_refused expired 'expired' $(tls_opts expired) -- $(tls_opts host)
	tls_refused revoked 'revoked' $(tls_opts revoked) -- $(tls_opts host --tls-cacrl "$PKI/crl.pem")
	tls_refused cn 'does not match.*--tls-no-cn-verify' $(tls_opts wrongname) -- $(tls_opts host)
	tls_refused client-ca 'TLS|refused|alert' $(tls_opts host) -- $(tls_opts stranger)
	grep -qE 'NOT trusted|issuer is unknown' "$PSERR" ||
		fail "the page server does not say why it refused the client's certificate"
	tls_refused plain-client 'TLS server' $(tls_opts host) --
	grep -q 'TLS handshake with the client' "$PSERR" ||
		fail "the page server does not say the client spoke no TLS"
	tls_refused plain-server 'TLS handshake with the page server' -- $(tls_opts host)
	}
	check_child_pass
}
add tls-refused case_tls_refused

# Both certificates name another host: the page server's is refused without
# --tls-no-cn-verify (tls-refused), accepted with it; a page server listening
# on the wildcard address checks no client name (its --address names no host).
# The set restored.
case_tls_no_cn_verify() {
	ps_hosts
	tls_certs
	ps_target t-pattern
	PSDIR=$T/B
	# shellcheck disable=SC2046
	ps_server "$T/B" $(tls_opts wrongname) --address 0.0.0.0
	# shellcheck disable=SC2046
	ps_dump dump "$T/A" dump $(tls_opts wrongname --tls-no-cn-verify)
	expect_killed "$PID"
	ps_gather "$T/A" "$T/B"
	restore_and_pass "$T/B" 1
}
add tls-no-cn-verify case_tls_no_cn_verify

# tls_receiver OPTS: ms_receiver's migrate-receive with OPTS (cases-pageserver.sh)
tls_receiver() {
	RXERR=$T/rx.err
	rm -f "$T/rx.status"
	nsenter --net="/run/netns/$NSB" unshare -m -p -f --mount-proc sh -c \
		"'$MEMDUMP' migrate-receive -D '$T/B' --address 10.77.0.2 --port $PS_PORT \
		 --status-fd 3 $* 2> '$RXERR'; echo \$? > '$T/rx.rc'; exec sleep 600" \
		3> "$T/rx.status" > /dev/null < /dev/null &
	RXPID=$!
	track "$RXPID"
	wait_until "$OP_TIMEOUT" test -s "$T/rx.status" ||
		{ show_file "receiver" "$RXERR"; fail "the receiver did not start listening"; }
}

# migrate --tls: the process runs on host B, its memory the source's.
# (tls-migrate-lazy: with --lazy-pages, the pages fetched after the switch through the
# same session; the source served its final set's pages and B's set verifies whole.)
case_tls_migrate() {
	local lazy=${1:-}
	ps_hosts
	tls_certs
	ps_target t-heartbeat 64
	tls_receiver "$(tls_opts host)"
	# shellcheck disable=SC2046
	MEMDUMP=$MDA OP_TIMEOUT=$(( OP_TIMEOUT * 3 )) md migrate migrate -t "$PID" \
		--to "10.77.0.2:$PS_PORT" $(tls_opts host) ${lazy:+--lazy-pages -v 3 -D "$T/A"} ||
		fail "migrate failed: $(tail -n1 "$MD_ERR")"
	expect_killed "$PID"
	wait_until "$OP_TIMEOUT" test -s "$T/rx.rc" || fail "the receiver did not exit"
	[[ $(cat "$T/rx.rc") == 0 ]] || fail "the receiver failed: $(tail -n1 "$RXERR")"
	if [[ -n $lazy ]]; then
		grep -q 'served [1-9][0-9]* bytes of pages-1.img to the receiver' "$MD_ERR" ||
			fail "the source served no pages of its final set"
		[[ ! -e $T/A/3/pages-1.img ]] || fail "the source kept its final pages-1.img"
		md verify verify -D "$T/B/3" || fail "B's final set is not complete: $(tail -n1 "$MD_ERR")"
	fi
	ms_dest_passes
}
add tls-migrate case_tls_migrate
case_limit tls-migrate 300
add tls-migrate-lazy case_tls_migrate lazy
case_limit tls-migrate-lazy 300

# migrate --tls to a receiver of another CA: refused before the first dump, the
# source untouched (not tracked), nothing on host B.
case_tls_migrate_refused() {
	ps_hosts
	tls_certs
	ps_target t-heartbeat 8
	tls_receiver "$(tls_opts stranger)"
	# shellcheck disable=SC2046
	MEMDUMP=$MDA md migrate migrate -t "$PID" --to "10.77.0.2:$PS_PORT" $(tls_opts host)
	sed 's/^/#   stderr: /' "$MD_ERR"
	expect_md_error
	grep -q 'receiver 10.77.0.2' "$MD_ERR" || fail "the error does not name the receiver"
	grep -qE 'NOT trusted|issuer is unknown' "$MD_ERR" || fail "the error does not say why"
	wait_until "$OP_TIMEOUT" test -s "$T/rx.rc" || fail "the receiver did not exit"
	[[ $(cat "$T/rx.rc") != 0 ]] || fail "the receiver exited 0"
	[[ -z $(ls -A "$T/B") ]] || fail "the receiver left files: $(ls "$T/B")"
	expect_untraced "$PID"
	expect_untracked "$PID"
	check_child_pass
}
add tls-migrate-refused case_tls_migrate_refused
