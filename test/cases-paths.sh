# Files and directories the restore opened wrong.
#
# A file made with O_TMPFILE (never named: tmpfile(3), fd01 of CRIU's tests):
# its fd's flags carry O_TMPFILE, which includes O_DIRECTORY. The restore opened
# its ghost with those flags ("Not a directory") and then crashed on the failed
# preparation; the file must come back with its content, offset and access mode.

case_tmpfile_rst() {
	start_py tmpfile '
import os, signal, sys
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
fd = os.open(sys.argv[1], os.O_TMPFILE | os.O_RDWR, 0o600)
os.write(fd, b"unnamed file content\n" * 100)
os.lseek(fd, 123, os.SEEK_SET)
print("READY", os.getpid(), fd, flush=True)
while not got:
    signal.pause()
pos = os.lseek(fd, 0, os.SEEK_CUR)
os.lseek(fd, 0, os.SEEK_SET)
data = os.read(fd, 1 << 16)
acc = __import__("fcntl").fcntl(fd, __import__("fcntl").F_GETFL) & os.O_ACCMODE
ok = pos == 123 and data == b"unnamed file content\n" * 100 and acc == os.O_RDWR
print("PASS" if ok else "FAIL pos %d len %d acc %d" % (pos, len(data), acc), flush=True)' "$T"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
	[[ -z $(find "$T" -maxdepth 1 -name '#*') ]] || fail "a recreated ghost file is left in $T"
}
add rst-tmpfile case_tmpfile_rst

# A process that chrooted without a chdir: its cwd stays outside its root. The
# restore changed into the cwd after the chroot ("cannot change directory").
case_chroot_cwd_outside() {
	mkdir -p "$T/root" && echo inside > "$T/root/f"
	start_py chroot '
import os, signal, sys
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
os.chdir(sys.argv[1])
cwd = os.stat(".").st_ino
os.chroot(sys.argv[1] + "/root")
fd = os.open("/f", os.O_RDONLY)
print("READY", os.getpid(), flush=True)
while not got:
    signal.pause()
ok = os.stat(".").st_ino == cwd and open("/f").read() == "inside\n" and os.pread(fd, 6, 0) == b"inside"
print("PASS" if ok else "FAIL cwd %d (was %d)" % (os.stat(".").st_ino, cwd), flush=True)' "$T"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add rst-chroot-cwd-outside case_chroot_cwd_outside

# A /proc file held open (a sysctl, fd01 of CRIU's tests): procfs gives its
# files new inode numbers once their dentries are dropped (after the killing
# dump closed the fd; drop_caches asks for it, the kernel may keep it), so the
# restore's "replaced since the dump" check must not compare them: fd01 was lost.
case_proc_file_rst() {
	start_py procf '
import os, signal
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
fd = os.open("/proc/sys/fs/nr_open", os.O_RDONLY)
want = os.read(fd, 64)
print("READY", os.getpid(), flush=True)
while not got:
    signal.pause()
got = os.pread(fd, 64, 0)
print("PASS" if got == want else "FAIL %r %r" % (got, want), flush=True)'
	dump "$PID" "$T/d"
	expect_killed "$PID"
	echo 2 > /proc/sys/vm/drop_caches	# the sysctl's dentry and inode dropped
	restore_and_pass "$T/d" 1
}
add rst-proc-file case_proc_file_rst

# A cwd in the /proc directory of a process that exited since (zdtm unhashed_proc)
# is restored now: cases-cwd.sh, cwd-proc-gone-*.
