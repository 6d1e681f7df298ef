# Terminals that are devices and a pty slave whose master is gone (issue 24):
# t-ttydev checks itself after restore. A virtual terminal node the process
# made and opened as a session leader is its controlling terminal: opened
# again by its path with its termios, window size, exclusive mode, and taken
# again by the leader. A console node likewise (never a controlling
# terminal). A pty slave whose master was closed is hung up with its node
# deleted: every fd of it hung up again at the same index (hungtree: its
# descriptions shared with a child). What cannot be
# restored exactly is refused by name, the target running on.

# tty_dev_rst MODE: dump (killing), images and show, restore twice (statecmp each time)
case_tty_dev_rst() {
	local mode=$1
	start_prog t-ttydev "$mode"
	local p pids=$PID
	[[ $mode == hungtree ]] && pids=$(tree_pids "$PID")
	for p in $pids; do track "$p"; done
	state_snap "$PID"
	dump "$PID" "$T/d"
	for p in $pids; do expect_killed "$p"; done
	crit_decodes "$T/d"
	case $mode in
	vt) shows "$T/d" "${READY[2]} \(terminal device\)" \
		'virtual terminal 4:47: .*winsize 77x22, exclusive, its session.s controlling terminal' ;;
	console) shows "$T/d" "${READY[2]} \(terminal device\)" 'console 5:1: termios' ;;
	hung*) shows "$T/d" "${READY[2]} \(deleted\) \(pty slave\)" \
		"pty ${READY[2]} slave: hung up, its master closed" ;;
	esac
	restore_and_pass "$T/d" 1
	note "second restore of the same images"
	restore_and_pass "$T/d" 2
}

# tty_dev_lr MODE: --leave-running: nothing of the terminal is changed
case_tty_dev_lr() {
	start_prog t-ttydev "$1"
	dump "$PID" "$T/d" --leave-running
	check_child_pass
}

for m in vt console hung hungtree; do
	add "tty-dev-rst-$m" case_tty_dev_rst "$m"
	add "tty-dev-lr-$m" case_tty_dev_lr "$m"
done

# tty_dev_err MODE TEXT: refused by name before anything is harmed; the target runs on
case_tty_dev_err() {
	start_prog t-ttydev "$1"
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "$2" "$MD_ERR" || fail "the error does not say '$2': $(cat "$MD_ERR")"
	no_inventory "$T/d"
	check_child_pass
}
add tty-dev-err-deleted case_tty_dev_err vtdeleted \
	'a virtual terminal whose device node was deleted'
add tty-dev-err-input case_tty_dev_err vtinput \
	'a virtual terminal) has 6 bytes of input not read yet'
add tty-dev-err-devtty case_tty_dev_err vtdevtty \
	'/dev/tty of a controlling terminal that is a console, virtual terminal or serial port'
add tty-dev-err-hungopen case_tty_dev_err hungopen \
	'a pseudo-terminal slave hung up (vhangup) while its master is open'
