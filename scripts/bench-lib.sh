# shellcheck shell=bash
# bench-lib.sh - helpers shared by scripts/demo, scripts/bench-dump and
# scripts/bench-restore. Source it; it sets no options of its own.
#
# Every process started with start_target (or passed to track_pid) and every
# directory made with make_dir are removed by the EXIT trap, however the
# script ends.

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$TOP/build}
MEMDUMP=${MEMDUMP:-$BUILD/memdump}

_bl_pids=()
_bl_dirs=()

say() { printf '%s\n' "$*"; }
warn() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() { warn "$*"; exit 1; }

need_root() {
	[ "$(id -u)" = 0 ] || die "must run as root (ptrace, drop_caches, restore with the old PID)"
}

need_file() {
	[ -x "$1" ] || die "$1 is missing: run 'make' first"
}

# Kill a PID (our child or not) and wait until it is gone.
kill_wait() {
	local pid=$1 i
	[ -n "$pid" ] || return 0
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	for ((i = 0; i < 200; i++)); do
		[ -e "/proc/$pid" ] || return 0
		# a zombie of someone else's counts as gone
		[ "$(awk '/^State:/ {print $2}' "/proc/$pid/status" 2>/dev/null)" = Z ] && return 0
		sleep 0.05
	done
	warn "process $pid does not go away"
	return 1
}

track_pid() { _bl_pids+=("$1"); }
untrack_pid() {
	local i
	for i in "${!_bl_pids[@]}"; do
		[ "${_bl_pids[$i]}" = "$1" ] && unset '_bl_pids[i]'
	done
	return 0
}

# make_dir VAR [PARENT]: a fresh directory under PARENT (default /var/tmp: a
# disk filesystem, not tmpfs), its path in VAR, removed at exit.
make_dir() {
	local d
	d=$(mktemp -d "${2:-/var/tmp}/memdump-${0##*/}.XXXXXX") || die "cannot create a directory"
	_bl_dirs+=("$d")
	printf -v "$1" '%s' "$d"
}

cleanup() {
	local p d
	for p in "${_bl_pids[@]}"; do
		kill_wait "$p"
	done
	for d in "${_bl_dirs[@]}"; do
		[ -n "$d" ] && rm -rf -- "$d"
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now_ns() { date +%s%N; }

# Milliseconds between two now_ns values, 1 decimal.
ms_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1e6 }'; }

drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches || warn "cannot drop caches"
}

# Median of the numbers given as arguments ("-" if none).
median() {
	[ $# -gt 0 ] || { echo -; return; }
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
		END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# exec "$@" in a new session with only fds 0-2: fds this script inherited
# (a caller's pipes) would otherwise end up in the target and in its dump.
exec_clean() {
	local fd
	for fd in /proc/self/fd/*; do
		fd=${fd##*/}
		[ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null
	done
	exec setsid "$@"
}

# Start "$@" in the background with stdout in $OUT_FILE, wait for its
# "READY <pid>" line (up to $READY_TIMEOUT s); sets TARGET_PID.
start_target() {
	local i
	: >"$OUT_FILE"
	exec_clean "$@" </dev/null >"$OUT_FILE" 2>&1 &
	TARGET_PID=$!
	disown "$TARGET_PID"	# bash still reaps it, without a "Killed" notice
	track_pid "$TARGET_PID"
	for ((i = 0; i < ${READY_TIMEOUT:-120} * 20; i++)); do
		grep -q '^READY' "$OUT_FILE" && return 0
		kill -0 "$TARGET_PID" 2>/dev/null || break
		sleep 0.05
	done
	warn "target $* did not get ready: $(tail -3 "$OUT_FILE")"
	kill_wait "$TARGET_PID"
	untrack_pid "$TARGET_PID"
	return 1
}

# One field of `memdump show --json`'s "stats" object, or empty.
stats_field() {
	"$MEMDUMP" show -D "$1" --json 2>/dev/null | python3 -c '
import json, sys
try:
    s = json.load(sys.stdin).get("stats") or {}
    v = s.get(sys.argv[1])
    print("" if v is None else v)
except Exception:
    print("")' "$2"
}

# The criu run beside memdump: CRIU=/path/to/criu (a CRIU 4.x built by hand
# outside this repository: Debian's 3.17 does not start on this kernel), or
# the criu first on PATH.
CRIU_BIN=${CRIU:-criu}

# A working criu: present and "criu check" passes on this kernel.
criu_usable() {
	command -v "$CRIU_BIN" >/dev/null 2>&1 && timeout 30 "$CRIU_BIN" check >/dev/null 2>&1
}

# Parse "--sizes a,b --runs N --modes x,y" into SIZES (MiB), RUNS and MODES.
# shellcheck disable=SC2034 # MODES is for bench-dump
parse_bench_args() {
	while [ $# -gt 0 ]; do
		case $1 in
		--sizes) [ $# -ge 2 ] || die "--sizes needs a value"; SIZES=${2//,/ }; shift 2 ;;
		--sizes=*) SIZES=${1#--sizes=}; SIZES=${SIZES//,/ }; shift ;;
		--runs) [ $# -ge 2 ] || die "--runs needs a value"; RUNS=$2; shift 2 ;;
		--runs=*) RUNS=${1#--runs=}; shift ;;
		--modes) [ $# -ge 2 ] || die "--modes needs a value"; MODES=${2//,/ }; shift 2 ;;
		-h|--help) say "usage: ${0##*/} [--sizes 256,1024,4096] [--runs N] [--modes splice,read,mem]"; exit 0 ;;
		*) die "unknown argument '$1' (--sizes, --runs, --modes)" ;;
		esac
	done
	[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "bad --runs '$RUNS'"
	local s
	for s in $SIZES; do
		[[ $s =~ ^[1-9][0-9]*$ ]] || die "bad size '$s' (MiB)"
	done
}
