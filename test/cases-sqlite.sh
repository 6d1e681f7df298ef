# SQLite in WAL mode (browsers, phones, services): its -shm index is both
# mapped and POSIX-locked. Dumped with a read transaction open, restored: the
# process holds its locks on the -shm file again and goes on with its database.

# posix_locks PID INODE: the POSIX lock lines /proc/locks shows for PID on INODE
posix_locks() { grep -E "POSIX .* $1 [0-9a-f]+:[0-9a-f]+:$2 " /proc/locks; }

case_sqlite_wal() {
	command -v python3 > /dev/null || fail "python3 missing"
	OUT=$T/sqlite.out
	python3 -c '
import os, signal, sqlite3, sys
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
c = sqlite3.connect(sys.argv[1], isolation_level=None)
assert c.execute("pragma journal_mode=wal").fetchone()[0] == "wal"
c.execute("create table t(x)")
for i in range(100):
    c.execute("insert into t values (?)", (i,))
c.execute("begin")
c.execute("select count(*) from t").fetchone()   # a read transaction: locks held on -shm
print("READY", os.getpid(), flush=True)
signal.sigwait([signal.SIGUSR1])
c.execute("commit")
c.execute("insert into t values (100)")
n, s = c.execute("select count(*), sum(x) from t").fetchone()
ok = c.execute("pragma integrity_check").fetchone()[0]
print("PASS" if (n, s, ok) == (101, 5050, "ok") else "FAIL %r %r %r" % (n, s, ok), flush=True)' \
		"$T/db.sqlite" > "$OUT" 2>&1 < /dev/null &
	PID=$!; track "$PID"
	wait_line "$OUT" '^READY ' 10 || { show_file sqlite "$OUT"; fail "the SQLite program did not start"; }
	READY_SIZE=$(stat -c %s "$OUT")
	local ino; ino=$(stat -c %i "$T/db.sqlite-shm") || fail "no -shm file"
	posix_locks "$PID" "$ino" > "$T/locks.before" || fail "no POSIX lock on the -shm file before the dump"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	md restore restore -D "$T/d" -d || fail "restore failed: $(tail -n1 "$MD_ERR")"
	track "$PID"
	wait_until 5 untraced "$PID" || fail "restored pid $PID not running"
	posix_locks "$PID" "$ino" | awk '{print $2, $3, $4, $6, $7, $8}' | sort > "$T/locks.after"
	awk '{print $2, $3, $4, $6, $7, $8}' "$T/locks.before" | sort | diff - "$T/locks.after" > "$T/locks.diff" ||
		{ show_file "locks diff" "$T/locks.diff"; fail "the -shm file's POSIX locks differ after the restore"; }
	kill -USR1 "$PID"
	get_result "$OUT"
}
add real-sqlite-wal case_sqlite_wal
