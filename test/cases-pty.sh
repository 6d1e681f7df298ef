# Pseudo-terminal pairs split across a process tree (issue 28), as a terminal
# multiplexer holds them: the master in one process, the slave in another,
# the slave a session's controlling terminal with another group in the
# foreground. t-ptytree checks both ends after restore (index, raw mode,
# window size, session and foreground group, bytes queued both ways); real
# tmux and script(1) run on. Helpers from cases-tree.sh (tree_pids).

# pty_tree_rst: the tree dumped (killed) and restored twice
case_pty_tree_rst() {
	start_prog t-ptytree
	local p pids; pids=$(tree_pids "$PID")
	for p in $pids; do track "$p"; done
	(( $(wc -w <<< "$pids") == 3 )) || fail "t-ptytree has not 3 processes: $pids"
	dump "$PID" "$T/d"
	for p in $pids; do expect_killed "$p"; done
	crit_decodes "$T/d"
	shows "$T/d" '/dev/ptmx \(pty master\)' 'pty /dev/pts/[0-9]+ master: 10 bytes unread'
	"$MEMDUMP" show -D "$T/d/proc-${READY[3]}" > "$T/show.child" 2>&1 ||
		fail "memdump show of the child's set failed"
	grep -Eq "pty ${READY[2]} slave: .*winsize 100x40, controlling terminal of session ${READY[3]}" \
		"$T/show.child" || fail "show of the child does not show its terminal: $(grep pty "$T/show.child")"
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}
add pty-tree-rst case_pty_tree_rst

# pty_tree_lr: --leave-running puts the queued bytes back; the tree runs on
case_pty_tree_lr() {
	start_prog t-ptytree
	dump "$PID" "$T/d" --leave-running
	check_child_pass
}
add pty-tree-lr case_pty_tree_lr

# A process outside the tree holding the slave too: refused by name, the tree runs on.
add pty-tree-err-outside case_tty_err_shared t-ptytree

# Real tmux: a server on a socket of the case's own, its pane an interactive
# sh. The server's tree is dumped (killed) and restored: the pane shows what
# it showed, same size and tty, and keys typed after it are run.
case_pty_real_tmux() {
	command -v tmux > /dev/null || fail "no tmux (scripts/install-deps installs it)"
	local sock="md-pty-$$-$RANDOM" tp pane
	tmx() { tmux -L "$sock" "$@"; }
	tmx -f /dev/null new-session -d -x 91 -y 27 "exec sh -i" || fail "tmux did not start"
	tp=$(tmx display -p '#{pid}')
	[[ -n $tp ]] || fail "no tmux server pid"
	for p in $(tree_pids "$tp"); do track "$p"; done
	tmx send-keys 'echo before-$((6*7))' Enter
	wait_until 10 eval 'tmx capture-pane -p | grep -q "^before-42"' ||
		fail "the pane did not run the command: $(tmx capture-pane -p | grep .)"
	pane=$(tmx display -p '#{pane_tty} #{pane_width}x#{pane_height}')
	note "tmux server $tp, pane $pane"
	dump "$tp" "$T/d"
	wait_until 10 eval '! alive '"$tp" || fail "the tmux server is alive after the dump"
	tmx ls > /dev/null 2>&1 && fail "tmux still answers after the dump"
	md restore restore -D "$T/d" -d || fail "restore failed: $(tail -n1 "$MD_ERR")"
	[[ $(tmx display -p '#{pid}') == "$tp" ]] || fail "tmux answers with another pid"
	[[ $(tmx display -p '#{pane_tty} #{pane_width}x#{pane_height}') == "$pane" ]] ||
		fail "the pane is $(tmx display -p '#{pane_tty} #{pane_width}x#{pane_height}'), not $pane"
	tmx capture-pane -p | grep -q "^before-42" || fail "the pane lost its screen"
	tmx send-keys 'echo after-$((3*4))' Enter
	wait_until 10 eval 'tmx capture-pane -p | grep -q "^after-12"' ||
		fail "the restored pane does not run new input: $(tmx capture-pane -p | grep . | tail -n 3)"
	tmx kill-server
	wait_until 10 eval '! alive '"$tp" || fail "the restored server does not exit on kill-server"
}
add pty-real-tmux case_pty_real_tmux

# script(1)'s tree dumped (killed) and restored: the loop on its pty prints on
# through script into the same file, every number once, in order.
case_pty_real_script() {
	command -v script > /dev/null || fail "no script(1)"
	script -qfc "exec python3 -u -c '$PYLOOP'" /dev/null > "$T/script.out" 2>&1 < /dev/null &
	local sp=$! last p
	for p in $sp; do track "$p"; done
	wait_until 20 eval '(( $(grep -c . $T/script.out) >= 10 ))' || fail "script did not start"
	for p in $(tree_pids "$sp"); do track "$p"; done
	dump "$sp" "$T/d"
	for p in $(tree_pids "$sp"); do expect_killed "$p"; done
	expect_killed "$sp"
	last=$(tr -d '\r' < "$T/script.out" | grep -E '^[0-9]+$' | tail -n1)
	note "dumped after $last"
	md restore restore -D "$T/d" -d || fail "restore failed: $(tail -n1 "$MD_ERR")"
	wait_until "$OP_TIMEOUT" eval '[[ $(tr -d "\r" < $T/script.out | grep -E "^[0-9]+$" | tail -n1) -ge $((last + 20)) ]]' ||
		fail "the restored loop does not count on: $(tail -n 3 "$T/script.out")"
	kill "$sp"
	tr -d '\r' < "$T/script.out" | grep -E '^[0-9]+$' | head -n $((last + 21)) | cmp -s - <(seq 0 $((last + 20))) ||
		fail "the numbers are not 0..$((last + 20)) once each"
}
add pty-real-script case_pty_real_script

# --shell-job: a raw-mode program (t-rawjob) run as the foreground job of a
# shell on a pty the case makes (pty-shell.py). After the dump the shell takes
# its terminal back in cooked mode with echo and the window is resized; the
# job restored by `memdump restore --shell-job` run from that shell finds its
# terminal raw and silent again, 120x50, its group in the foreground, and
# reads a key without echoing it.
case_pty_shell_job_raw() {
	python3 "$TESTSRC/pty-shell.py" "$T" "$TESTBIN/t-rawjob" "$T" > "$T/shell.out" 2>&1 < /dev/null &
	track $!
	wait_line "$T/pty.log" '^READY ' "$OP_TIMEOUT" || { show_file shell "$T/shell.out"; fail "t-rawjob did not start"; }
	PID=$(awk '/^READY/ { print $2; exit }' "$T/pty.log"); track "$PID"
	grep -q "^READY $PID 50x120" "$T/pty.log" || fail "t-rawjob did not start on a 50x120 window"
	dump "$PID" "$T/d" --shell-job
	wait_until 10 eval '! alive '"$PID" || fail "the job is alive after the dump"
	shows "$T/d" "the job's terminal \(--shell-job\): termios lflag [0-7]+, winsize 120x50, foreground group $PID"
	echo "$MEMDUMP restore --shell-job -D $T/d" > "$T/restore.tmp"
	mv "$T/restore.tmp" "$T/restore.cmd"
	wait_until "$OP_TIMEOUT" untraced "$PID" || fail "the job was not restored: $(tail -c 300 "$T/pty.log")"
	kill -USR1 "$PID"
	wait_line "$T/pty.log" '^(KEY\?|FAIL)' "$OP_TIMEOUT" || fail "no KEY? from the restored job: $(tail -c 300 "$T/pty.log")"
	grep -a -q '^FAIL' "$T/pty.log" && fail "the restored job: $(grep -a -m1 '^FAIL' "$T/pty.log")"
	printf k > "$T/keys.tmp"
	mv "$T/keys.tmp" "$T/keys"
	wait_line "$T/pty.log" '^(PASS|FAIL)' "$OP_TIMEOUT" || fail "the restored job does not read a key"
	grep -a -q '^PASS got=6b' "$T/pty.log" || fail "the restored job: $(grep -a -E -m1 '^(PASS|FAIL)' "$T/pty.log")"
	sed -n '/^KEY?/,/^PASS/p' "$T/pty.log" | grep -a -v '^PASS' | grep -a -q k && fail "the key was echoed"
	wait_until "$OP_TIMEOUT" eval '[[ -s $T/restore.status ]]' || fail "memdump restore did not exit"
	[[ $(cat "$T/restore.status") == 0 ]] || fail "memdump restore exited with $(cat "$T/restore.status")"
}
add pty-shell-job-raw case_pty_shell_job_raw

# A pty pair in a root of its own with a devpts instance of its own (zdtm's ns
# flavour: newinstance, /dev/ptmx a link to pts/ptmx), the slave the session's
# controlling terminal, raw, 33x77, bytes queued both ways: the pair is found
# in the process's devpts (not memdump's), made again at its index in the
# restored devpts, every setting and byte back.
PTY_OWN_PY='
import os, signal, fcntl, termios, struct, tty
os.closerange(3, 256)
os.setsid()
TIOCGPTN = 0x80045430
m, s = os.openpty()
fcntl.ioctl(s, termios.TIOCSCTTY, 0)
n = struct.unpack("I", fcntl.ioctl(m, TIOCGPTN, b"\0" * 4))[0]
name = "/dev/pts/%d" % n
tty.setraw(s)
fcntl.ioctl(s, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 77, 0, 0))
os.write(m, b"typed")
os.write(s, b"shown")
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
print("READY", os.getpid(), name, os.stat(name).st_dev == os.stat("/dev/pts").st_dev, flush=True)
while not got:
    signal.pause()
bad = []
def check(what, ok):
    ok or bad.append(what)
check("own devpts", os.stat("/dev/pts").st_dev == os.fstat(s).st_dev)
check("index", os.ttyname(s) == name and struct.unpack("I", fcntl.ioctl(m, TIOCGPTN, b"\0" * 4))[0] == n)
check("raw", not termios.tcgetattr(s)[3] & termios.ICANON)
check("winsize", struct.unpack("HHHH", fcntl.ioctl(m, termios.TIOCGWINSZ, b"\0" * 8))[:2] == (33, 77))
check("session", os.getsid(0) == os.getpid() and os.tcgetpgrp(s) == os.getpgrp())
os.set_blocking(s, False)
os.set_blocking(m, False)
check("input", os.read(s, 64) == b"typed")
check("output", os.read(m, 64) == b"shown")
os.write(m, b"more")
check("pair", os.read(s, 64) == b"more")
try:
    t = os.open("/dev/tty", os.O_RDWR)
    check("/dev/tty", os.tcgetpgrp(t) == os.getpgrp())
except OSError as e:
    check("/dev/tty: %s" % e, False)
print("FAIL " + " ".join(bad) if bad else "PASS", flush=True)'
PTY_OWN_SETUP='mkdir -p /dev/pts && mknod -m 666 /dev/tty c 5 0 && mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts /dev/pts && ln -sf pts/ptmx /dev/ptmx'

case_pty_own_devpts() {
	ROOT_PY=$PTY_OWN_PY root_start private "$PTY_OWN_SETUP"
	grep -q "^READY $PID /dev/pts/[0-9]* True" "$OUT" || fail "the pty is not of a devpts of its own: $(head -n1 "$OUT")"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit_decodes "$T/d"
	restore_and_pass "$T/d" 1
}
add pty-own-devpts case_pty_own_devpts

# The same pair, its devpts then detached (umount -l /dev/pts): the master's
# path no longer leads to its ptmx, restore could not make it: refused by
# name, the target unharmed (its input still queued, the pair joined).
PTY_DETACHED_PY='
import os, signal, ctypes
os.closerange(3, 256)
m, s = os.openpty()
if ctypes.CDLL(None).umount2(b"/dev/pts", 2):
    raise SystemExit("umount2: %d" % ctypes.get_errno())
os.write(m, b"typed\n")
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
print("READY", os.getpid(), os.readlink("/proc/self/fd/%d" % m), flush=True)
while not got:
    signal.pause()
os.set_blocking(s, False)
first = os.read(s, 64)
os.write(m, b"more\n")
print("PASS" if first == b"typed\n" and os.read(s, 64) == b"more\n" else "FAIL %r" % first, flush=True)'

case_pty_own_devpts_err_detached() {
	ROOT_PY=$PTY_DETACHED_PY root_start private "$PTY_OWN_SETUP"
	md refuse dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qE "fd [0-9]+ \(/ptmx: a pseudo-terminal master whose path does not lead to the ptmx of its devpts" "$MD_ERR" ||
		fail "the refusal does not name the pty: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	expect_untraced "$PID"
	kill -USR1 "$PID"
	get_result "$OUT"
}
add pty-own-devpts-err-detached case_pty_own_devpts_err_detached
