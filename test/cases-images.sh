# Image sets are evidence: every mutation of every image must make `verify`
# and `restore` fail with one error line, quickly, and restore nothing.

# mutate_img HOW DIR FILE: damage one image of the set in DIR
mutate_img() {
	local how=$1 dir=$2 f=$3 other
	case $how in
	trunc)   truncate -s $(( $(stat -c %s "$dir/$f") / 2 )) "$dir/$f" ;;
	flip)    local s; s=$(stat -c %s "$dir/$f")
		 local b; b=$(od -An -tu1 -j $((s / 2)) -N1 "$dir/$f")
		 printf "\\x$(printf %02x $(( (b ^ 0x5a) & 0xff )))" |
			dd of="$dir/$f" bs=1 seek=$((s / 2)) conv=notrunc status=none ;;
	delete)  rm -f "$dir/$f" ;;
	swap)    other=$(ls "$dir" | grep -vx "$f" | grep -vx inventory.img | head -n1)
		 mv "$dir/$f" "$dir/.swap" && mv "$dir/$other" "$dir/$f" && mv "$dir/.swap" "$dir/$other" ;;
	fifo)    rm -f "$dir/$f" && mkfifo "$dir/$f" ;;
	symlink) mv "$dir/$f" "$dir/$f.real" && ln -s "$f.real" "$dir/$f" ;;
	esac
}

# expect_refused LABEL PID: the last md call failed cleanly and nothing was restored
expect_refused() {
	(( MD_RC != 0 )) || fail "$1: memdump exited 0"
	(( MD_RC < 128 )) || fail "$1: memdump died from signal $((MD_RC - 128))"
	(( $(grep -c . "$MD_ERR") == 1 )) || fail "$1: stderr is not one line: $(head -c 300 "$MD_ERR")"
	grep -q '^memdump: ' "$MD_ERR" || fail "$1: no 'memdump: ' line"
	alive "$2" && fail "$1: a process with pid $2 was restored"
	return 0
}

case_img_mutate() {
	local prog=$1 how f n=0
	local OP_TIMEOUT=10
	start_prog "$prog" 1
	dump "$PID" "$T/good"
	expect_killed "$PID"
	md verify-good verify -D "$T/good" || fail "verify of the pristine set failed: $(cat "$MD_ERR")"
	grep -q "^image set $T/good verified: [0-9]* images, [0-9]* page runs$" "$MD_OUT" ||
		fail "verify printed: $(cat "$MD_OUT")"
	for f in $(ls "$T/good" | grep -vx inventory.img); do
		for how in trunc flip delete swap fifo symlink; do
			rm -rf "$T/m"; cp -a "$T/good" "$T/m"
			mutate_img "$how" "$T/m" "$f"
			md "v.$how.$f" verify -D "$T/m" > /dev/null
			expect_refused "verify, $how $f" "$PID"
			md "r.$how.$f" restore -D "$T/m" > /dev/null
			expect_refused "restore, $how $f" "$PID"
			n=$((n + 1))
		done
	done
	note "$n mutated sets refused by verify and restore"
	(( n >= 30 )) || fail "only $n mutations tried"
	restore_and_pass "$T/good" good
}
add img-mutate-t-pattern case_img_mutate t-pattern
add img-mutate-t-fds case_img_mutate t-fds

case_img_unlisted() {
	start_prog t-pattern 1
	dump "$PID" "$T/d"
	expect_killed "$PID"
	echo extra > "$T/d/core-1.img"
	md verify verify -D "$T/d"
	expect_refused "an unlisted image" "$PID"
	grep -q "core-1.img is not listed" "$MD_ERR" || fail "error does not name core-1.img: $(cat "$MD_ERR")"
}
add img-unlisted case_img_unlisted

# Records no restore reads (CRIU's test runner writes ACTION.cropt before each action; an earlier
# restore's stats-restore) are let be; a name that could be an image is not.
case_img_records() {
	start_prog t-pattern 1
	dump "$PID" "$T/d"
	expect_killed "$PID"
	echo "--images-dir $T/d" > "$T/d/restore.cropt"
	echo x > "$T/d/stats-restore"
	md verify verify -D "$T/d" || fail "verify refused the records: $(cat "$MD_ERR")"
	echo x > "$T/d/restore.cropt.img"
	md verify2 verify -D "$T/d"
	expect_md_error
	grep -q "restore.cropt.img is not listed" "$MD_ERR" || fail "error does not name it: $(cat "$MD_ERR")"
	rm "$T/d/restore.cropt.img"
	restore_and_pass "$T/d" records
}
add img-records case_img_records

case_img_planted_links() {
	start_prog t-pattern 1
	dump "$PID" "$T/d"
	expect_killed "$PID"
	echo keep > "$T/victim"
	ln -s "$T/victim" "$T/pidfile"
	ln -s "$T/victim" "$T/planted-log"
	md restore restore -D "$T/d" -d --pidfile "$T/pidfile"
	(( MD_RC == 0 )) || fail "restore failed: $(cat "$MD_ERR")"
	local pid; pid=$(cat "$T/pidfile")
	track "$pid"
	[[ $(cat "$T/victim") == keep ]] || fail "the pid file was written through a symlink"
	[[ -L $T/pidfile ]] && fail "the pid file is still a symlink"
	[[ $pid == "$PID" ]] || fail "pid file holds $pid, not $PID"
	kill -9 "$pid"
	md verify verify -D "$T/d" --log-file "$T/planted-log"
	(( MD_RC != 0 )) || fail "--log-file through a symlink was accepted"
	[[ $(cat "$T/victim") == keep ]] || fail "the log was written through a symlink"
	md verify2 verify -D "$T/d" --log-file "$T/newlog" -v 3
	[[ $(stat -c %a "$T/newlog") == 600 ]] || fail "log file mode $(stat -c %a "$T/newlog")"
}
add img-planted-links case_img_planted_links

# A file name with a control byte, a quote, a backslash, a byte that is not
# UTF-8 and a UTF-8 letter: show --json stays valid JSON, error lines carry
# no raw bytes.
case_img_weird_name() {
	local w; w=$(printf '%s/we\001ird"\\\xff\xc3\xa9' "$T")
	echo data > "$w"
	sleep 1000 7< "$w" > /dev/null 2>&1 < /dev/null &
	local pid=$!
	track "$pid"
	sleep 0.2
	dump "$pid" "$T/d"
	md show show -D "$T/d" --json || fail "show --json failed: $(cat "$MD_ERR")"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert any("\u00e9" in f["path"] for f in d["fds"])' \
		"$MD_OUT" 2> "$T/json.err" || fail "show --json is not valid JSON: $(tail -n1 "$T/json.err")"
	rm -f "$w"
	wait_until 5 bash -c "! kill -0 $pid 2>/dev/null" || fail "target still alive"
	md restore restore -D "$T/d"
	expect_refused "restore without the file" "$pid"
	LC_ALL=C grep -q $'[\x01\xff\xc3]' "$MD_ERR" && fail "raw bytes in the error line: $(cat -v "$MD_ERR")"
	grep -q 'we\\x01ird' "$MD_ERR" || fail "error does not name the file escaped: $(cat "$MD_ERR")"
}
add img-weird-name case_img_weird_name
