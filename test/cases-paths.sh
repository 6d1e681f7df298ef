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

# root_own_pivot: $T/nr, a root of its own (/usr bound in, /proc mounted),
# and $T/pivot DIR CMD..., which runs CMD there with /data/in and /data/out
root_own_pivot() {
	local l
	mkdir -p "$T/nr/usr" "$T/nr/data" "$T/nr/proc"
	for l in bin lib lib64 sbin; do [[ -L /$l ]] && ln -s "$(readlink /$l)" "$T/nr/$l"; done
	: > "$T/nr/data/in"
	cat > "$T/pivot" <<'SH'
#!/bin/sh
set -e
mount --bind "$1/nr" "$1/nr"
mount --rbind /usr "$1/nr/usr"
cd "$1/nr"
mkdir -p old
pivot_root . old
cd /
mount -t proc proc /proc
umount -l /old
shift
exec "$@" < /data/in > /data/out 2>&1
SH
	chmod +x "$T/pivot"
	OUT=$T/nr/data/out
}

# root_own_start PYCODE: python3 running PYCODE as the target, in a mount
# namespace of its own pivot_root'ed into $T/nr (/usr bound in, /data its
# own directory; stdin /data/in, stdout and stderr /data/out: $OUT).
root_own_start() {
	root_own_pivot
	unshare --mount --propagation private "$T/pivot" "$T" /usr/bin/python3 -c "$1" \
		2> "$T/rootown.err" &
	PID=$!
	track "$PID"
	wait_line "$OUT" '^READY ' 10 ||
		{ show_file out "$OUT"; show_file err "$T/rootown.err"; fail "the target did not start"; }
	READY_SIZE=$(stat -c %s "$OUT")
	[[ $(readlink /proc/"$PID"/ns/mnt) != "$(readlink /proc/self/ns/mnt)" ]] ||
		fail "the target is not in a mount namespace of its own"
}


# A deleted file mapped by a process with a root of its own (its mount namespace
# pivot_root'ed into a directory: zdtm's unlink_mmap00 in the ns flavour): the
# restore recreated the file under the new root, then looked for it under that
# root twice over ("cannot open ROOT/ROOT/... for its mapping") and lost the process.
case_root_own_unlinked_map() {
	root_own_start '
import ctypes, os, signal
os.closerange(3, 256)
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
path = "/data/unlinked"
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
os.write(fd, b"mapped then unlinked\n" * 400)
a = libc.mmap(None, 8192, 3, 1, fd, 0)	# PROT_READ|PROT_WRITE, MAP_SHARED
os.close(fd)
os.unlink(path)
m = (ctypes.c_char * 8192).from_address(a)
m[0:5] = b"DIRTY"
print("READY", os.getpid(), flush=True)
while not got:
    signal.pause()
ok = m[0:5] == b"DIRTY" and m[5:21] == b"d then unlinked\n" and not os.path.exists(path)
print("PASS" if ok else "FAIL %r" % m[0:21], flush=True)'
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add rst-root-own-unlinked-map case_root_own_unlinked_map

# One description of a /proc file held by a parent and its child (opened before
# the fork). A sysctl's (zdtm fd01) memdump opens again and shares; one of a
# process of the tree the restored process opens itself, so a second holder is
# refused by name, not lost at restore ("the fd it shares was not prepared").
proc_shared_py='
import os, signal, sys
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
fd = os.open(sys.argv[1], os.O_RDONLY)
want = os.pread(fd, 64, 0)
child = os.fork()
if child == 0:
    while True:
        signal.pause()
print("READY", os.getpid(), child, flush=True)
while not got:
    signal.pause()
ok = os.pread(fd, 64, 0) == want
os.kill(child, 9)
print("PASS" if ok else "FAIL", flush=True)'

case_proc_shared_sysctl() {
	start_py procsh "$proc_shared_py" /proc/sys/fs/nr_open
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add rst-proc-shared-sysctl case_proc_shared_sysctl

case_proc_shared_own() {
	start_py procsh "$proc_shared_py" /proc/self/stat
	md d dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "is a /proc file of a process of the tree that process $PID holds too" "$MD_ERR" ||
		fail "the refusal does not name the shared /proc file: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	expect_untraced "$PID"
}
add err-proc-shared-own case_proc_shared_own

# Open deleted files and memfds of a process with a root of its own (zdtm's
# ghost_holes00, memfd00 and kin in the ns flavour) were refused ("in a root of
# its own"): the deleted file is made again under the restored root, the memfd
# is shared memory with no path. After restore: the fds name the same paths,
# the sparse ghost keeps its bytes and its hole, the memfd its bytes, and
# nothing of the ghost is left in the root's directory.
case_root_own_ghost_fd() {
	root_own_start '
import os, signal
os.closerange(3, 256)
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
path = "/data/ghost"
g = os.open(path, os.O_RDWR | os.O_CREAT, 0o640)
os.write(g, b"head of the ghost\n")
os.pwrite(g, b"tail after a hole\n", 1 << 20)
os.unlink(path)
m = os.memfd_create("rootown-mfd", 0)
os.write(m, b"memfd bytes\n" * 100)
print("READY", os.getpid(), flush=True)
while not got:
    signal.pause()
def link(fd):
    return os.readlink("/proc/self/fd/%d" % fd)
st = os.fstat(g)
ok = (link(g) == path + " (deleted)" and st.st_nlink == 0 and
      st.st_size == (1 << 20) + 18 and st.st_blocks * 512 < (1 << 19) and
      os.pread(g, 18, 0) == b"head of the ghost\n" and
      os.pread(g, 18, 1 << 20) == b"tail after a hole\n" and
      link(m) == "/memfd:rootown-mfd (deleted)" and
      os.pread(m, 1200, 0) == b"memfd bytes\n" * 100 and not os.path.exists(path))
print("PASS" if ok else "FAIL %s %r" % (link(g), st), flush=True)'
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
	[[ -z $(ls -A "$T/nr/data" | grep -v '^\(in\|out\)$') ]] ||
		fail "the ghost left files in the root's /data: $(ls -A "$T/nr/data")"
}
add rst-root-own-ghost-fd case_root_own_ghost_fd

# UNIX sockets bound to paths by a process with a root of its own (zdtm's
# sockets00, sk-unix-rel, del_standalone_un and kin in the ns flavour) were
# refused ("in a root of its own"): they are bound again under the restored
# root, as the process sees it. After restore: a listener at its absolute name
# with its file's mode and owner, reachable by name, its accepted end and
# client with data queued both ways, a datagram socket bound by a relative
# name connected to one whose name was removed (still removed, its datagram
# queued), the names getsockname() shows; nothing left in the root's /data.
case_root_own_unix() {
	root_own_start '
import os, signal, socket, stat
os.closerange(3, 256)
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
os.mkdir("/data/sk")
ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
ls.bind("/data/sk/listen")
os.chmod("/data/sk/listen", 0o640)
os.chown("/data/sk/listen", 1, 2)
ls.listen(5)
cl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
cl.connect("/data/sk/listen")
ac, _ = ls.accept()
cl.sendall(b"to the accepted end")
ac.sendall(b"to the client")
gone = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
gone.bind("/data/sk/gone")
os.chdir("/data/sk")
rel = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
rel.bind("rel")
os.chdir("/")
rel.connect("/data/sk/gone")
gone.connect("/data/sk/rel")
os.unlink("/data/sk/gone")
rel.send(b"to the removed name")
gone.send(b"to the relative name")
print("READY", os.getpid(), flush=True)
while not got:
    signal.pause()
st = os.stat("/data/sk/listen")
new = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
new.connect("/data/sk/listen")
bad = []
def check(what, ok):
    if not ok:
        bad.append(what)
check("listener name", ls.getsockname() == "/data/sk/listen")
check("listener file", stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o640 and
      (st.st_uid, st.st_gid) == (1, 2))
check("accepted name", ac.getsockname() == "/data/sk/listen" and cl.getpeername() == "/data/sk/listen")
check("accepted data", ac.recv(64) == b"to the accepted end")
check("client data", cl.recv(64) == b"to the client")
check("new connection", ls.accept()[0].getpeername() in ("", b"", None))
check("relative name", rel.getsockname() == "rel" and gone.getpeername() == "rel")
check("removed name", gone.getsockname() == "/data/sk/gone" and not os.path.lexists("/data/sk/gone"))
check("datagram to the removed name", gone.recv(64) == b"to the removed name")
check("datagram to the relative name", rel.recv(64) == b"to the relative name")
check("data dir", sorted(os.listdir("/data/sk")) == ["listen", "rel"])
print("PASS" if not bad else "FAIL %s" % bad, flush=True)'
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
	[[ $(ls -A "$T/nr/data/sk" | tr '\n' ' ') == "listen rel " ]] ||
		fail "the restore left files in the root's /data/sk: $(ls -A "$T/nr/data/sk")"
}
add rst-root-own-unix case_root_own_unix

# UNIX listeners and the connections they accepted, their names' files
# covered by a mount made since the bind (zdtm overmount_sock in the ns
# flavour), one absolute name, one relative: restore once bound them on the
# covering mount, another file; now it binds them in a clone of their
# directory's mount alone (the file under the mount, where it was) and
# connects through the listener's file. Checked: the names, the data both
# ways, and, the mount gone, each name's file the socket's own, a new
# connection by the name accepted.
case_root_own_unix_covered_rst() {
	root_own_start '
import fcntl, os, signal, socket, stat, subprocess
os.closerange(3, 256)
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
os.mkdir("/data/cov")
def pair(name):
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(name)
    ls.listen(1)
    cl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    cl.connect(name)
    ac, _ = ls.accept()
    return ls, ac, cl
abl, ab, abc = pair("/data/cov/abs")
os.chdir("/data")
rll, rl, rlc = pair("cov/rel")
os.chdir("/")
subprocess.run(["mount", "-t", "tmpfs", "rootown-cov", "/data/cov"], check=True)
abc.sendall(b"absolute")
rl.sendall(b"relative")
print("READY", os.getpid(), flush=True)
while not got:
    signal.pause()
bad = []
def check(what, ok):
    if not ok:
        bad.append(what)
check("names", ab.getsockname() == "/data/cov/abs" and rl.getsockname() == "cov/rel" and
      abc.getpeername() == "/data/cov/abs" and rlc.getpeername() == "cov/rel")
check("data in", ab.recv(64) == b"absolute" and rlc.recv(64) == b"relative")
ab.sendall(b"back")
check("data out", abc.recv(64) == b"back")
check("still covered", os.listdir("/data/cov") == [])
subprocess.run(["umount", "/data/cov"], check=True)
for s, path in ((ab, "/data/cov/abs"), (rl, "/data/cov/rel")):
    f = fcntl.ioctl(s.fileno(), 0x89E0, 0)	# SIOCUNIXFILE
    st, at = os.fstat(f), os.stat(path)
    check("file of " + path, stat.S_ISSOCK(at.st_mode) and (st.st_dev, st.st_ino) == (at.st_dev, at.st_ino))
for ls, path in ((abl, "/data/cov/abs"), (rll, "/data/cov/rel")):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(path)
    c.sendall(b"new")
    check("new connection to " + path, ls.accept()[0].recv(8) == b"new")
check("listener names", abl.getsockname() == "/data/cov/abs" and rll.getsockname() == "cov/rel")
print("PASS" if not bad else "FAIL %s" % bad, flush=True)'
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add rst-root-own-unix-covered case_root_own_unix_covered_rst

# A UNIX datagram socket of a process with a root of its own whose file a
# mount covers since the bind: restore would send to its name through the
# mount on top. Refused by name, the target unharmed.
case_root_own_unix_covered() {
	root_own_start '
import os, signal, socket, subprocess
os.closerange(3, 256)
os.mkdir("/data/cov")
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/data/cov/sk")
subprocess.run(["mount", "-t", "tmpfs", "rootown-cov", "/data/cov"], check=True)
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
print("READY", os.getpid(), s.fileno(), flush=True)
while not got:
    signal.pause()
print("PASS" if s.getsockname() == "/data/cov/sk" else "FAIL", flush=True)'
	local fd; fd=$(awk '/^READY/ { print $3 }' "$OUT")
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qF "fd $fd (socket:[" "$MD_ERR" && grep -qF "a UNIX socket named /data/cov/sk) in a root of its own, a datagram socket whose file a mount covers since" "$MD_ERR" ||
		fail "the error does not name the covered socket: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	expect_untraced "$PID"
	kill -USR1 "$PID"
	get_result "$OUT"
}
add err-root-own-unix-covered case_root_own_unix_covered

# A deleted file on a tmpfs made read-only at its mount (a bind remount)
# under a root of its own (zdtm ghost_on_rofs in the ns flavour): once
# refused, the restore lost the process ("Read-only file system"). Now the
# ghost is made through a writable clone of the mount and the tmpfs is
# read-only at the mount again, its superblock writable (CRIU's sb_flags).
case_root_own_ghost_ro() {
	root_own_start '
import os, signal, subprocess
os.closerange(3, 256)
os.mkdir("/data/ro")
subprocess.run(["mount", "-t", "tmpfs", "rootown-ro", "/data/ro"], check=True)
w = os.open("/data/ro/ghost", os.O_WRONLY | os.O_CREAT, 0o600)
os.write(w, b"on a read-only mount\n")
os.close(w)
g = os.open("/data/ro/ghost", os.O_RDONLY)
os.unlink("/data/ro/ghost")
subprocess.run(["mount", "-o", "remount,bind,ro", "/data/ro"], check=True)
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
print("READY", os.getpid(), g, flush=True)
while not got:
    signal.pause()
mi = [l.split() for l in open("/proc/self/mountinfo") if l.split()[4] == "/data/ro"]
ok = (os.pread(g, 21, 0) == b"on a read-only mount\n" and len(mi) == 1 and
      mi[0][5].split(",")[0] == "ro" and mi[0][-1].split(",")[0] == "rw")
print("PASS" if ok else "FAIL %r" % mi, flush=True)'
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add rst-root-own-ghost-ro case_root_own_ghost_ro

# A deleted file whose directory under a root of its own was replaced by a
# symlink to an absolute path: as the process sees it, that path is not there
# and the ghost is made in the directory above; memdump, following the link
# from the staged root, would have made it in the host's directory the link
# names. The restore fails by name instead, and writes nothing there.
case_root_own_ghost_symlink() {
	mkdir -p "$T/escape"
	root_own_start '
import os, signal, sys
os.closerange(3, 256)
os.mkdir("/data/esc")
g = os.open("/data/esc/x", os.O_RDWR | os.O_CREAT, 0o600)
os.write(g, b"ghost behind a symlink\n")
os.unlink("/data/esc/x")
os.rmdir("/data/esc")
os.symlink("'"$T/escape"'", "/data/esc")
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
print("READY", os.getpid(), flush=True)
while not got:
    signal.pause()
ok = os.readlink("/proc/self/fd/%d" % g) == "/data/esc/x (deleted)"
print("PASS" if ok else "FAIL", flush=True)'
	dump "$PID" "$T/d"
	expect_killed "$PID"
	md restore.esc restore -D "$T/d" --pidfile "$T/esc.pid"
	expect_md_error
	grep -qF "deleted file /data/esc/x: its directory /data/esc leads out of the restored root (a symlink)" "$MD_ERR" ||
		fail "the restore does not name the symlink"
	[[ -z $(ls -A "$T/escape") ]] || fail "the restore wrote into $T/escape: $(ls -A "$T/escape")"
	alive "$PID" && fail "a process $PID runs after the failed restore"
	true
}
add rst-root-own-ghost-symlink case_root_own_ghost_symlink

# An inotify instance of a process with a root of its own (zdtm inotify00 in
# the ns flavour) was refused: its watches are found through the process's
# mounts (its paths as it sees them) and added again under the restored root.
# After restore the same wds report a write to the watched file and a file
# made in the watched directory; a watch that went to memdump's /data instead
# would report neither.
case_root_own_inotify() {
	root_own_start '
import ctypes, os, signal, struct
os.closerange(3, 256)
libc = ctypes.CDLL(None, use_errno=True)
open("/data/watched", "w").close()
ify = libc.inotify_init1(os.O_NONBLOCK)
wf = libc.inotify_add_watch(ify, b"/data/watched", 0x2)		# IN_MODIFY
wd = libc.inotify_add_watch(ify, b"/data", 0x100)		# IN_CREATE
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
print("READY", os.getpid(), flush=True)
while not got:
    signal.pause()
with open("/data/watched", "a") as f:
    f.write("more\n")
open("/data/made", "w").close()
ev, buf = [], os.read(ify, 4096)
while buf:
    w, mask, cookie, n = struct.unpack("iIII", buf[:16])
    ev.append((w, mask, buf[16:16 + n].rstrip(b"\0")))
    buf = buf[16 + n:]
ok = (wf, 0x2, b"") in ev and (wd, 0x100, b"made") in ev and wf > 0 and wd > 0
print("PASS" if ok else "FAIL %r %d %d" % (ev, wf, wd), flush=True)'
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add rst-root-own-inotify case_root_own_inotify

# A /proc file other than a process's, and a fanotify group, held by a process with
# a root of its own: the first was opened under the built root before the restored
# init mounted its /proc there, the second's marks by memdump's paths (zdtm fd01 and
# fanotify00 in the ns flavour, dumped and then lost). Refused by name, both.
case_root_own_proc_fanotify() {
	root_own_start '
import ctypes, os, signal
os.closerange(3, 256)
libc = ctypes.CDLL(None, use_errno=True)
s = os.open("/proc/sys/fs/nr_open", os.O_RDONLY)
fan = libc.fanotify_init(0, 0)
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
print("READY", os.getpid(), s, fan, flush=True)
while not got:
    signal.pause()
print("PASS" if fan >= 0 and os.pread(s, 8, 0) else "FAIL", flush=True)'
	local s fan; read -r _ _ s fan < <(grep -m1 '^READY' "$OUT")
	(( fan >= 0 )) || fail "fanotify_init failed in the target"
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qF "fd $s (/proc/sys/fs/nr_open), a /proc file in a root of its own" "$MD_ERR" ||
		fail "the error does not name the /proc file: $(cat "$MD_ERR")"
	grep -qF "fd $fan (anon_inode:[fanotify]) in a root of its own" "$MD_ERR" ||
		fail "the error does not name the fanotify group: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	expect_untraced "$PID"
	kill -USR1 "$PID"
	get_result "$OUT"
}
add err-root-own-proc-fanotify case_root_own_proc_fanotify

# root_own_pidns_start MODE: as root_own_start, with a PID namespace of its own
# whose proc its init (python, PID 1) mounts; it opens /proc/sys/fs/nr_open,
# reads 3 bytes; MODE shared: a child (fork) holds the description too,
# siblings: two children do, and it closes it
root_own_pidns_start() {
	local u
	root_own_pivot
	unshare --pid --fork --kill-child unshare --mount --propagation private "$T/pivot" "$T" \
		/usr/bin/python3 -c '
import os, signal, sys
os.closerange(3, 256)
mode = sys.argv[1]
s = os.open("/proc/sys/fs/nr_open", os.O_RDONLY)
want = os.pread(s, 64, 0)
os.read(s, 3)
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
def same(at):
    mnt = [l.split()[1] for l in open("/proc/self/fdinfo/%d" % s) if l.startswith("mnt_id:")]
    procs = [l.split()[0] for l in open("/proc/self/mountinfo") if l.split()[4] == "/proc"]
    return (os.readlink("/proc/self/fd/%d" % s) == "/proc/sys/fs/nr_open" and
            os.lseek(s, 0, os.SEEK_CUR) == at and os.pread(s, 64, 0) == want and
            mnt == procs[-1:])
kids = []
for k in range({"alone": 0, "shared": 1, "siblings": 2}[mode]):
    c = os.fork()
    if c == 0:
        while not got:
            signal.pause()
        ok = same(3 + k)
        os.lseek(s, 4 + k, os.SEEK_SET)	# the parent sees it: one description
        os._exit(0 if ok else 1)
    kids.append(c)
if mode == "siblings":
    os.close(s)
print("READY", os.getpid(), s, flush=True)
while not got:
    signal.pause()
bad = 0
for c in kids:
    os.kill(c, signal.SIGUSR1)
    bad += os.waitpid(c, 0)[1] != 0
ok = not bad and (mode == "siblings" or same(3 + len(kids)))
print("PASS" if ok else "FAIL %d" % bad, flush=True)' \
		"$1" 2> "$T/rootown.err" &
	u=$!
	track "$u"
	wait_line "$OUT" '^READY ' 10 ||
		{ show_file out "$OUT"; show_file err "$T/rootown.err"; fail "the target did not start"; }
	READY_SIZE=$(stat -c %s "$OUT")
	PID=$(cat /proc/"$u"/task/*/children | tr ' ' '\n' | grep -m1 .)
	track "$PID"
}

# A /proc file that is no process's (zdtm fd01 in the ns flavour) held by a
# process with a root and a PID namespace of its own: its init mounts that
# /proc once forked, so the restored process opens the file itself then, at its
# offset, on its own /proc mount
case_root_own_proc_sys() {
	root_own_pidns_start alone
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add rst-root-own-proc-sys case_root_own_proc_sys

# The same file held by a child too (forked after the open): one description,
# which the parent opens once forked and its child inherits; the child's lseek
# moves the parent's offset after restore
case_root_own_proc_sys_shared() {
	root_own_pidns_start shared
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add rst-root-own-proc-sys-shared case_root_own_proc_sys_shared

# Held by two siblings (their parent closed it): the second's description is
# the first's, which it cannot inherit: refused, naming the first
case_root_own_proc_sys_siblings() {
	root_own_pidns_start siblings
	local s; read -r _ _ s < <(grep -m1 '^READY' "$OUT")
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -qE "fd $s \(/proc/sys/fs/nr_open\), a /proc file in a root of its own that process [0-9]+ holds too, which is not its ancestor" "$MD_ERR" ||
		fail "the error does not name the /proc file of a sibling: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	expect_untraced "$PID"
	kill -USR1 "$PID"
	get_result "$OUT"
}
add err-root-own-proc-sys-siblings case_root_own_proc_sys_siblings
