# The command line a newcomer meets first: --version, one command's --help,
# common options before the command, one line and status 2 for a usage error.

# cli_run LABEL ARGS...: run memdump; sets CLI_RC, CLI_OUT, CLI_ERR
cli_run() {
	local label=$1; shift
	CLI_OUT=$T/cli.$label.out CLI_ERR=$T/cli.$label.err
	timeout -k 5 30 "$MEMDUMP" "$@" > "$CLI_OUT" 2> "$CLI_ERR" < /dev/null
	CLI_RC=$?
	note "memdump $* -> $CLI_RC"
}

case_cli_version() {
	cli_run version --version
	(( CLI_RC == 0 )) || fail "--version exit $CLI_RC, want 0"
	grep -qxE 'memdump [0-9]+\.[0-9]+.*' "$CLI_OUT" || fail "--version printed '$(head -c 200 "$CLI_OUT")'"
}

case_cli_subcommand_help() {
	cli_run help-dump dump --help
	(( CLI_RC == 0 )) || fail "dump --help exit $CLI_RC, want 0"
	grep -q '^  dump -t PID' "$CLI_OUT" || fail "dump --help does not show dump's usage"
	grep -qE '^  (restore|show|check|pre-dump) ' "$CLI_OUT" && fail "dump --help shows other commands"
	grep -q '^common options:' "$CLI_OUT" || fail "dump --help does not show the common options"
	cli_run help-show show -h
	grep -q '^  show -D DIR' "$CLI_OUT" || fail "show -h does not show show's usage"
	grep -q '^  dump ' "$CLI_OUT" && fail "show -h shows dump's usage"
	return 0
}

case_cli_common_first() {
	cli_run common check
	local want=$CLI_RC
	cli_run common-first -v 4 --no-progress --log-file "$T/cli.log" check
	(( CLI_RC == want )) || fail "memdump -v 4 ... check exit $CLI_RC, plain check $want"
	grep -q 'unknown command' "$CLI_ERR" && fail "common options before the command: $(head -1 "$CLI_ERR")"
	cli_run common-log -v 4 --log-file "$T/cli.log" show -D "$T/none"
	(( CLI_RC == 1 )) || fail "show of no dump with common options first: exit $CLI_RC, want 1"
	grep -q 'show failed' "$T/cli.log" || fail "--log-file before the command: the log does not say 'show failed'"
}

case_cli_usage_errors() {
	local args
	for args in "show --bogus" "show -x" "frobnicate" "" "dump -t notapid -D $T/d"; do
		# shellcheck disable=SC2086
		cli_run usage $args
		(( CLI_RC == 2 )) || fail "memdump $args exit $CLI_RC, want 2"
		(( $(wc -l < "$CLI_ERR") == 1 )) || fail "memdump $args wrote $(wc -l < "$CLI_ERR") lines: $(head -c 300 "$CLI_ERR")"
		grep -q '^memdump: ' "$CLI_ERR" || fail "memdump $args: '$(head -1 "$CLI_ERR")'"
	done
	cli_run opt show -x
	grep -q "unknown option '-x'" "$CLI_ERR" || fail "show -x said '$(head -1 "$CLI_ERR")'"
}

# dump -t 1: one short line (it listed every process of the machine), nothing written
case_cli_dump_init() {
	cli_run init dump -t 1 -D "$T/d" --leave-running
	(( CLI_RC == 1 )) || fail "dump -t 1 exit $CLI_RC, want 1"
	(( $(wc -l < "$CLI_ERR") == 1 && $(wc -c < "$CLI_ERR") < 200 )) ||
		fail "dump -t 1 said $(wc -c < "$CLI_ERR") bytes: $(head -c 300 "$CLI_ERR")"
	grep -q '^memdump: dump failed: .*PID 1' "$CLI_ERR" || fail "dump -t 1 said '$(head -1 "$CLI_ERR")'"
	[[ -e $T/d/inventory.img ]] && fail "dump -t 1 wrote an inventory"
	return 0
}

add cli-dump-init case_cli_dump_init
add cli-version case_cli_version
add cli-subcommand-help case_cli_subcommand_help
add cli-common-first case_cli_common_first
add cli-usage-errors case_cli_usage_errors

# check --fd-kinds: one line per kind of open file, from the table the dump,
# restore and show use (src/files/fd_kinds.c), each naming its files.img type.
case_cli_fd_kinds() {
	cli_run fd-kinds check --fd-kinds
	(( CLI_RC == 0 )) || fail "check --fd-kinds exit $CLI_RC"
	local k
	for k in 'regular file +REG' 'pipe +PIPE' 'eventfd +EVENTFD' 'epoll set +EVENTPOLL' \
		 'UNIX socket +UNIXSK' 'POSIX message queue +UND'; do
		grep -qE "^$k " "$CLI_OUT" || fail "check --fd-kinds has no line '$k': $(cat "$CLI_OUT")"
	done
}

# The image set of one process: crit x DIR ps lists it (pstree.img's root has ppid 0,
# as CRIU writes it; crit builds its tree from that).
case_cli_crit_ps() {
	command -v crit > /dev/null || fail "crit not installed (scripts/install-deps installs criu)"
	start_prog t-sleeper
	dump "$PID" "$T/d" --leave-running
	crit x "$T/d" ps > "$T/ps.out" 2> "$T/ps.err" || fail "crit x ps: $(tail -n1 "$T/ps.err")"
	grep -qE "^ +$PID +" "$T/ps.out" || fail "crit x ps does not list $PID: $(cat "$T/ps.out")"
	kill "$PID"
}

# a tree: crit finds every process's core (the others' are linked beside the root's)
case_cli_crit_ps_tree() {
	command -v crit > /dev/null || fail "crit not installed (scripts/install-deps installs criu)"
	start_prog t-tree
	local a=${READY[2]} b=${READY[3]} g=${READY[4]} p
	track "$a"; track "$b"; track "$g"
	dump "$PID" "$T/d" --leave-running
	crit x "$T/d" ps > "$T/ps.out" 2> "$T/ps.err" || fail "crit x ps: $(tail -n1 "$T/ps.err")"
	for p in "$PID" "$a" "$b" "$g"; do
		grep -qE "^ +$p +" "$T/ps.out" || fail "crit x ps does not list $p: $(cat "$T/ps.out")"
	done
	crit show "$T/d/core-$g.img" > "$T/core.json" || fail "crit show core-$g.img failed"
	grep -q '"comm": "tree-g"' "$T/core.json" || fail "core-$g.img is not G's core"
	md verify verify -D "$T/d"
	(( MD_RC == 0 )) || fail "verify: $(tail -n1 "$MD_ERR")"
	kill "$PID" "$a" "$b" "$g"
}
add cli-fd-kinds case_cli_fd_kinds
add cli-crit-ps case_cli_crit_ps
add cli-crit-ps-tree case_cli_crit_ps_tree
