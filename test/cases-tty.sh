# Pseudo-terminal pairs held by the process (issue 8): t-tty checks its own
# pair after restore (index, termios, locked termios, window size, packet
# mode, controlling terminal, the bytes queued both ways); the images must
# decode with crit and `memdump show` must print them. A python3 program
# driving its own pty is dumped mid-run and must finish as an uninterrupted
# run does.

# tty_rst MODE: dump (killing), images and show, restore twice (statecmp each time)
case_tty_rst() {
	local mode=${1:-}
	start_prog t-tty ${mode:+"$mode"}
	state_snap "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit_decodes "$T/d"
	shows "$T/d" '/dev/ptmx \(pty master\)' "${READY[2]} \(pty slave\)" \
		'pty /dev/pts/[0-9]+ slave: termios .* winsize 111x33, locked termios' \
		"pty /dev/pts/[0-9]+ master: .*6 bytes unread"
	[[ $mode == ctty ]] && shows "$T/d" 'controlling terminal of session'
	[[ $mode == pkt ]] && shows "$T/d" 'master: packet mode'
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}

# tty_lr MODE: --leave-running puts every queued byte back
case_tty_lr() {
	local mode=${1:-}
	start_prog t-tty ${mode:+"$mode"}
	dump "$PID" "$T/d" --leave-running
	check_child_pass
}

for m in default raw eof pkt ctty; do
	add "tty-rst-$m" case_tty_rst "${m#default}"
	add "tty-lr-$m" case_tty_lr "${m#default}"
done

# A master whose slave is elsewhere is refused by name; the target runs on.
case_tty_err_lone() {
	start_prog t-tty lone
	md dump dump -t "$PID" -D "$T/d" --leave-running
	expect_md_error
	grep -q "a pseudo-terminal master whose slave ${READY[2]} the process does not hold" "$MD_ERR" ||
		fail "the error does not name the master"
	no_inventory "$T/d"
	check_child_pass
}
add tty-err-lone case_tty_err_lone

# A pair another process holds an end of too could not be given back to it.
# case_tty_err_shared [PROG]: t-tty, or t-ptytree (the holder outside its tree)
case_tty_err_shared() {
	start_prog "${1:-t-tty}"
	sleep 60 < "${READY[2]}" &
	local other=$!
	track "$other"
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "a pseudo-terminal (${READY[2]}) that process $other (sleep) holds too" "$MD_ERR" ||
		fail "the error does not name the other holder"
	no_inventory "$T/d"
	kill "$other"
	check_child_pass
}
add tty-err-shared case_tty_err_shared

# A packet-mode status byte waiting for the master's reader would be taken
# with the queue: refused by name before anything is read; the byte stays.
case_tty_err_pktstatus() {
	start_prog t-tty pktstatus
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "has a packet-mode status byte waiting" "$MD_ERR" || fail "the error does not name the status byte"
	no_inventory "$T/d"
	check_child_pass
}
add tty-err-pktstatus case_tty_err_pktstatus

# Restore refuses, before anything starts, when the pty index is taken.
case_tty_err_index() {
	start_prog t-tty
	dump "$PID" "$T/d"
	expect_killed "$PID"
	python3 -c 'import os, sys, time
fds = []
while True:
    m, s = os.openpty()
    fds.append((m, s))
    if os.ttyname(s) == sys.argv[1]:
        break
print("HOLD", flush=True)
time.sleep(60)' "${READY[2]}" > "$T/hold.out" 2>&1 &
	local hold=$!
	track "$hold"
	wait_line "$T/hold.out" '^HOLD' 10 || fail "cannot take ${READY[2]}: $(cat "$T/hold.out")"
	md restore restore -D "$T/d"
	expect_md_error
	grep -q "pty ${READY[2]} is in use" "$MD_ERR" || fail "the error does not name ${READY[2]}"
	alive "$PID" && fail "a process was started"
	kill "$hold"
	wait "$hold" 2> /dev/null
	restore_and_pass "$T/d" 1
}
add tty-err-index case_tty_err_index

# A real interpreter driving its own pty: python3 writes numbers to the slave
# and reads them back from the master (ONLCR turns \n into \r\n), appending
# what it read to a file; a few bytes are always in flight in the pty.
PTYSEQ='import os, sys, time, tty
out, steps, delay = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
m, s = os.openpty()
print("READY", os.getpid(), os.ttyname(s), flush=True)
f = open(out, "ab", buffering=0)
os.write(s, b"0\n")
for i in range(1, steps):
    os.write(s, b"%d\n" % i)
    time.sleep(delay)
    line = b""
    while not line.endswith(b"\r\n"):
        line += os.read(m, 1)
    f.write(line)
rest = b""
while not rest.endswith(b"%d\r\n" % (steps - 1)):
    rest += os.read(m, 1)
f.write(rest)
print("DONE", flush=True)'

case_tty_real_python() {
	case_real_loop python-pty 0.05 kill python3 -c "$PTYSEQ"
}
add tty-real-python case_tty_real_python

# script(1) runs a python3 loop on a pty of its own: script's tree (the
# master in script, the slave the loop's controlling terminal) is dumped
# --leave-running and counts on; the loop alone is dumped as a shell job and
# restored with --shell-job onto memdump's stdout, where it counts on.
PYLOOP='import time
i = 0
while True:
    print(i, flush=True); i += 1; time.sleep(0.05)'

case_tty_real_script() {
	command -v script > /dev/null || { note "no script(1): skipped"; return 0; }
	script -qfc "exec python3 -u -c '$PYLOOP'" /dev/null > "$T/script.out" 2>&1 < /dev/null &
	local sp=$!
	track "$sp"
	wait_until 20 eval '(( $(grep -c . $T/script.out) >= 10 ))' || fail "script did not start"
	PID=$(pgrep -P "$sp" | head -n1)
	[[ -n $PID ]] || fail "script has no child"
	track "$PID"
	dump "$sp" "$T/ds" --leave-running
	local n; n=$(grep -c . "$T/script.out")
	wait_until 20 eval '(( $(grep -c . $T/script.out) >= n + 5 ))' || fail "script's loop stopped after its dump"
	dump "$PID" "$T/d" --shell-job
	wait_until 5 eval '[[ ! -d /proc/'"$PID"' ]]' || fail "the loop is still alive after the dump"
	local last; last=$(tr -d '\r' < "$T/script.out" | grep -E '^[0-9]+$' | tail -n1)
	note "dumped after $last"
	restore_bg "$T/d" 1 --shell-job
	wait_line "$MD_OUT" "^$((last + 20))\$" "$OP_TIMEOUT" || fail "the restored loop does not count on: $(head -c 200 "$MD_OUT")"
	kill "$PID"
	wait_restore_exit
	seq $((last + 1)) $((last + 20)) | cmp -s - <(head -n 20 "$MD_OUT") ||
		fail "after $last the restored loop printed $(head -n 3 "$MD_OUT" | tr '\n' ' ')"
}
add tty-real-script case_tty_real_script

# --leave-running --snapshot: the queues are put back before the target runs
# on; the original killed, the image restored (cases-snapshot.sh).
add tty-snap-rst case_snapshot_rst t-tty

# A pty pair whose slave was given to another user (a terminal program run for
# it): the restored /dev/pts node has that owner and mode again, not root's.
case_tty_owner() {
	start_py ptyown '
import os, pty, signal
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
m, s = pty.openpty()
os.fchown(s, 13333, 44444); os.fchmod(s, 0o620)
print("READY", os.getpid(), flush=True)
while not got:
    signal.pause()
st = os.fstat(s)
ok = (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (13333, 44444, 0o620)
print("PASS" if ok else "FAIL owner %d:%d mode %o" % (st.st_uid, st.st_gid, st.st_mode & 0o7777), flush=True)'
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add tty-owner case_tty_owner
