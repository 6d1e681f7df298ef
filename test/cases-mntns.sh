# Mount namespaces (src/ns/mntns.c, src/ns/mntns_restore.c): a process in a
# mount namespace of its own, made from memdump's: what it mounted (tmpfs
# with its files, bind mounts) and unmounted comes back, in a new namespace;
# memdump's own is never touched.

# mnt_start SETUP: t-pattern in a mount namespace of its own after the shell SETUP
mnt_start() {
	printf '#!/bin/sh\nset -e\n%s\nexec "$@"\n' "$1" > "$T/mnt-setup"
	chmod +x "$T/mnt-setup"
	START_WRAP="unshare --mount --propagation private $T/mnt-setup" start_prog t-pattern
}

MNT_SETUP='mount -t tmpfs -o size=2m,mode=0750 memdump-t /mnt && echo hello > /mnt/f && mkdir /mnt/d /mnt/e && ln -s f /mnt/l && mknod /mnt/null c 1 3 && chmod 640 /mnt/f && mount --bind /etc /mnt/d && mount -o ro --bind /usr /mnt/e'

# mnt_check PID: the namespace holds what MNT_SETUP made
mnt_check() {
	local p=$1
	[[ $(nsenter -t "$p" -m cat /mnt/f) == hello ]] || fail "/mnt/f lost its content"
	[[ $(nsenter -t "$p" -m stat -c %a /mnt/f) == 640 ]] || fail "/mnt/f lost its mode"
	[[ $(nsenter -t "$p" -m readlink /mnt/l) == f ]] || fail "the symlink /mnt/l is gone"
	[[ $(nsenter -t "$p" -m stat -c %t,%T /mnt/null) == 1,3 ]] || fail "the device node is gone"
	[[ $(nsenter -t "$p" -m stat -c %a /mnt) == 750 ]] || fail "the tmpfs root lost its mode"
	nsenter -t "$p" -m grep -q "memdump-t /mnt tmpfs rw,relatime,size=2048k,mode=750" /proc/mounts ||
		fail "the tmpfs mount is not as it was: $(nsenter -t "$p" -m grep /mnt /proc/mounts)"
	nsenter -t "$p" -m test -f /mnt/d/passwd || fail "the bind mount of /etc is gone"
	nsenter -t "$p" -m grep -qE " /mnt/e [a-z0-9]+ ro[, ]" /proc/mounts ||
		fail "the read-only bind mount of /usr is not read-only"
	! grep -q " /mnt/d \| memdump-t " /proc/self/mounts || fail "memdump's own namespace got the mounts"
}

case_mntns_rst() {
	mnt_start "$MNT_SETUP"
	mnt_check "$PID"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit_decodes "$T/d"	# the tmpfs's files are in mountpoints-1.img (field 55)
	[[ -z $(find "$T/d" -name 'tmpfs-*') ]] || fail "the set holds a tmpfs image of memdump's own magic"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	mnt_check "$PID"
	[[ $(readlink /proc/"$PID"/ns/mnt) != "$(readlink /proc/self/ns/mnt)" ]] ||
		fail "the restored process is in memdump's mount namespace"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}

# --join-ns mnt:PATH: restored into another process's mount namespace (a holder
# with a tmpfs of its own at /mnt), not into a new one built from the images;
# --join-ns pid is refused by name
case_mntns_join() {
	mnt_start "$MNT_SETUP"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	unshare --mount --propagation private sh -c \
		'mount -t tmpfs memdump-j /mnt && echo joined > /mnt/f && exec sleep 1000' &
	local holder=$!
	track "$holder"
	wait_until 5 eval '[[ $(nsenter -t '"$holder"' -m cat /mnt/f 2> /dev/null) == joined ]]' ||
		fail "the holder has no /mnt/f"
	md pid restore -D "$T/d" -d --join-ns pid:/proc/"$holder"/ns/pid
	expect_md_error
	grep -q -- "--join-ns pid: memdump restores a process with its own PIDs" "$MD_ERR" ||
		fail "--join-ns pid is not refused by name: $(cat "$MD_ERR")"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1 --join-ns mnt:/proc/"$holder"/ns/mnt
	wait_restored "$PID"
	[[ $(readlink /proc/"$PID"/ns/mnt) == "$(readlink /proc/"$holder"/ns/mnt)" ]] ||
		fail "the restored process is not in the joined mount namespace"
	[[ $(nsenter -t "$PID" -m cat /mnt/f) == joined ]] || fail "it does not see the joined namespace's /mnt"
	[[ $(readlink /proc/self/ns/mnt) != "$(readlink /proc/"$PID"/ns/mnt)" ]] ||
		fail "the restored process is in memdump's mount namespace"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}
add mntns-join case_mntns_join

# a host mount the namespace unmounted stays unmounted
case_mntns_umount() {
	mountpoint -q /run/netns 2> /dev/null || ip netns add memdump-mnt-$$ 2> /dev/null
	mountpoint -q /run/netns || { note "no /run/netns mount to unmount: skipped"; return 0; }
	ip netns del memdump-mnt-$$ 2> /dev/null
	mnt_start "umount -l /run/netns"
	nsenter -t "$PID" -m mountpoint -q /run/netns && fail "the namespace still has /run/netns"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	nsenter -t "$PID" -m mountpoint -q /run/netns && fail "the restored namespace has /run/netns again"
	mountpoint -q /run/netns || fail "memdump's namespace lost /run/netns"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
}

# a mount memdump cannot make: refused by name, the process left running
case_mntns_refuse() {
	mnt_start "mount -t ramfs memdump-r /mnt"
	md refuse dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "the ramfs mount at /mnt (memdump-r), which memdump cannot make" "$MD_ERR" ||
		fail "the refusal does not name the ramfs: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	check_child_pass
}

# a tmpfs file with an extended attribute: refused by name (restore makes none)
case_mntns_refuse_xattr() {
	mnt_start "mount -t tmpfs memdump-x /mnt && echo a > /mnt/f && /usr/bin/python3 -c \"import os; os.setxattr('/mnt/f', 'user.k', b'v')\""
	md refuse dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "tmpfs at /mnt: f has extended attributes" "$MD_ERR" ||
		fail "the refusal does not name the file: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	check_child_pass
}

add mntns-rst case_mntns_rst
add mntns-refuse-xattr case_mntns_refuse_xattr
add mntns-umount case_mntns_umount
add mntns-refuse case_mntns_refuse

# --root is for a dump whose mount namespace has a root of its own
case_mntns_root_bad() {
	start_prog t-pattern
	dump "$PID" "$T/d"
	expect_killed "$PID"
	md rst restore -D "$T/d" --root /tmp
	expect_md_error
	grep -q -- "--root /tmp: the dump has no mount namespace of its own" "$MD_ERR" ||
		fail "the error does not say why: $(cat "$MD_ERR")"
	alive "$PID" && fail "process $PID was started"
	return 0
}
add mntns-root-bad case_mntns_root_bad

# an external bind mount (CRIU's --external mnt[POINT]:KEY on the dump,
# mnt[KEY]:PATH on the restore): bound back from another path
case_mntns_external() {
	mkdir -p "$T/vol1" "$T/vol2"
	echo one > "$T/vol1/f"
	echo two > "$T/vol2/f"
	mnt_start "mount --bind $T/vol1 /mnt"
	[[ $(nsenter -t "$PID" -m cat /mnt/f) == one ]] || fail "the bind mount is not there"
	md dump-bad dump -t "$PID" -D "$T/dx" --external "mnt[/nowhere]:vol" --leave-running
	expect_md_error
	grep -q "mnt\[/nowhere\]: the process's mount namespace mounted nothing there" "$MD_ERR" ||
		fail "a key for no mount was not refused: $(cat "$MD_ERR")"
	dump "$PID" "$T/d" --external "mnt[/mnt]:vol"
	expect_killed "$PID"
	md rst-bad restore -D "$T/d" --external "mnt[other]:$T/vol2"
	expect_md_error
	grep -q "mnt\[other\]: the dump has no bind mount with that key" "$MD_ERR" ||
		fail "an unknown key was not refused: $(cat "$MD_ERR")"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1 --external "mnt[vol]:$T/vol2"
	wait_restored "$PID"
	[[ $(nsenter -t "$PID" -m cat /mnt/f) == two ]] ||
		fail "the external mount is not bound from the path given: $(nsenter -t "$PID" -m cat /mnt/f)"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
}
add mntns-external case_mntns_external

# One tmpfs mounted twice (the second a bind of the first, whole, read-only):
# restored as one tmpfs again, what is written through one seen through the
# other, the second still read-only (zdtm mnt_ro_bind)
case_mntns_tmpfs_twice() {
	mnt_start "mount -t tmpfs memdump-t /mnt && mkdir /mnt/a /mnt/b && mount -t tmpfs memdump-u /mnt/a && echo x > /mnt/a/f && mount --bind /mnt/a /mnt/b && mount -o remount,bind,ro /mnt/b"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	[[ $(nsenter -t "$PID" -m cat /mnt/b/f) == x ]] || fail "/mnt/b lost the file"
	nsenter -t "$PID" -m sh -c 'echo y > /mnt/a/g' || fail "cannot write into /mnt/a"
	[[ $(nsenter -t "$PID" -m cat /mnt/b/g 2> /dev/null) == y ]] ||
		fail "/mnt/b is another tmpfs than /mnt/a: it does not show what /mnt/a got"
	nsenter -t "$PID" -m sh -c 'echo z > /mnt/b/h' 2> /dev/null && fail "/mnt/b is writable"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
}
add mntns-tmpfs-twice case_mntns_tmpfs_twice

# A tmpfs made read-only after its files were written: restored with its
# files, read-only again (zdtm tempfs_ro)
case_mntns_tmpfs_ro() {
	mnt_start "mount -t tmpfs memdump-ro /mnt && echo a > /mnt/f && mount -o remount,ro /mnt"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	[[ $(nsenter -t "$PID" -m cat /mnt/f) == a ]] || fail "/mnt/f lost its content"
	nsenter -t "$PID" -m sh -c 'echo b > /mnt/g' 2> /dev/null && fail "/mnt is writable"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
}
add mntns-tmpfs-ro case_mntns_tmpfs_ro

# A whole tmpfs of the host bound in (zdtm's ns flavour gives its /dev so),
# named external: bound again from the path the restore is given, its files
# neither saved nor made; a restore given no path for it is refused by name
case_mntns_external_tmpfs() {
	mkdir -p "$T/tmp1" "$T/tmp2"
	mount -t tmpfs memdump-ext1 "$T/tmp1" && mount -t tmpfs memdump-ext2 "$T/tmp2" ||
		fail "cannot mount the tmpfs"
	trap 'umount -l "$T/tmp1" "$T/tmp2" 2> /dev/null' EXIT
	echo one > "$T/tmp1/f"
	echo two > "$T/tmp2/f"
	mnt_start "mount --bind $T/tmp1 /mnt"
	dump "$PID" "$T/d" --external "mnt[/mnt]:vol"
	expect_killed "$PID"
	md rst-none restore -D "$T/d"
	expect_md_error
	grep -q "the mount at /mnt is external (key vol): give it with --external mnt\[vol\]:PATH" \
		"$MD_ERR" || fail "a restore without the external mount was not refused: $(cat "$MD_ERR")"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1 --external "mnt[vol]:$T/tmp2"
	wait_restored "$PID"
	[[ $(nsenter -t "$PID" -m cat /mnt/f) == two ]] ||
		fail "the external tmpfs is not bound from the path given: $(nsenter -t "$PID" -m cat /mnt/f)"
	echo three > "$T/tmp2/f"
	[[ $(nsenter -t "$PID" -m cat /mnt/f) == three ]] || fail "/mnt is a copy, not the tmpfs given"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
}
add mntns-external-tmpfs case_mntns_external_tmpfs

ROOT_PY_IDLE='
import os, signal
os.closerange(3, 256)
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
print("READY", os.getpid(), flush=True)
while not got:
    signal.pause()
print("PASS", flush=True)'

# root_start PIVOT_OPTS SETUP: a python target (ROOT_PY, else ROOT_PY_IDLE) in a
# mount namespace of its own (unshare --propagation PIVOT_OPTS) pivot_root'ed
# into $T/nr (a private bind of it, /usr bound in), after the shell SETUP run
# there; OUT is its /data/out
root_start() {
	local l
	mkdir -p "$T/nr/usr" "$T/nr/data" "$T/nr/proc"
	for l in bin lib lib64 sbin; do [[ -L /$l ]] && ln -s "$(readlink /$l)" "$T/nr/$l"; done
	: > "$T/nr/data/in"
	printf '#!/bin/sh\nset -e\nmount --bind "$1/nr" "$1/nr"\nmount --make-private "$1/nr"\n%s\nmount --rbind /usr "$1/nr/usr"\ncd "$1/nr"\nmkdir -p old\npivot_root . old\ncd /\nmount -t proc proc /proc\numount -l /old\n%s\nshift\nexec "$@" < /data/in > /data/out 2>&1\n' \
		"${ROOT_PRE:-}" "$2" > "$T/pivot"
	chmod +x "$T/pivot"
	OUT=$T/nr/data/out
	unshare --mount --propagation "$1" "$T/pivot" "$T" /usr/bin/python3 -c "${ROOT_PY:-$ROOT_PY_IDLE}" \
		2> "$T/root.err" &
	PID=$!
	track "$PID"
	wait_line "$OUT" '^READY ' 10 || { show_file out "$OUT"; show_file err "$T/root.err"; fail "the target did not start"; }
	READY_SIZE=$(stat -c %s "$OUT")
}

# mounts_of PID PREFIX: its mounts under PREFIX (point, root, propagation), peer
# group ids renamed in order of appearance (restore makes new ones)
mounts_of() {
	awk -v pre="$2" '$5 ~ "^" pre {
		tags = ""
		for (i = 7; $i != "-"; i++) {
			split($i, kv, ":")
			if (kv[1] != "shared" && kv[1] != "master") continue
			if (!(kv[2] in g)) g[kv[2]] = "G" (++n)
			tags = tags " " kv[1] ":" g[kv[2]]
		}
		print $5, $4 tags
	}' /proc/"$1"/mountinfo
}

# Propagation among the mounts of a root of its own (zdtm
# shared_mount_propagation, mntns_shared_bind03): a shared tmpfs, a peer bound
# from a directory of it, a slave, a slave shared in a group of its own, a
# private bind; restored alike, and a mount on the tmpfs still reaches its peer
# and slaves but not the private one
MNT_PROP='mkdir -p "$1/nr/p" && mount -t tmpfs memdump-p "$1/nr/p" && cd "$1/nr/p" && mkdir -p a/q b c d e && mount --make-shared . && mount --bind a b && mount --bind a c && mount --make-slave c && mount --bind a d && mount --make-private d && mount --bind a e && mount --make-slave e && mount --make-shared e && cd /'
case_mntns_propagation() {
	local before after
	ROOT_PRE=$MNT_PROP root_start private ""
	before=$(mounts_of "$PID" /p)
	[[ $before == *master:* && $before == *shared:* ]] || fail "the setup made no propagation: $before"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	after=$(mounts_of "$PID" /p)
	[[ $after == "$before" ]] || fail "propagation differs after restore: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')"
	nsenter -t "$PID" -m mount -t tmpfs memdump-q /p/a/q || fail "cannot mount on /p/a/q"
	after=$(mounts_of "$PID" /p)
	local m
	for m in /p/b/q /p/c/q /p/e/q; do
		grep -q "^$m " <<< "$after" || fail "a mount on /p/a/q did not reach $m: $after"
	done
	grep -q "^/p/d/q " <<< "$after" && fail "a mount on /p/a/q reached the private /p/d"
	grep -q memdump-p /proc/self/mountinfo && fail "memdump's namespace got the mounts"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}
add mntns-propagation case_mntns_propagation

# A mount hidden under a sibling on a shared parent (zdtm
# overmount_with_shared_parent: a/b bound on a, d then on a/c, which
# propagation put at a/b/c of the parent, under a): made again, hidden
case_mntns_hidden() {
	local before after
	ROOT_PRE='mkdir -p "$1/nr/h/a/b/c" "$1/nr/h/d" && mount --bind "$1/nr/h" "$1/nr/h" && mount --make-shared "$1/nr/h" && mount --bind "$1/nr/h/a/b" "$1/nr/h/a" && mount --bind "$1/nr/h/d" "$1/nr/h/a/c"' \
		root_start private ""
	before=$(mounts_of "$PID" /h | sort)
	grep -q "^/h/a/b/c " <<< "$before" || fail "the setup made no hidden mount: $before"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	after=$(mounts_of "$PID" /h | sort)	# a restore makes the hidden one first
	[[ $after == "$before" ]] || fail "the mounts differ after restore: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}
add mntns-hidden case_mntns_hidden

# A mount of a root of its own bound from a shared mount of memdump's
# namespace, a slave of its peer group (zdtm mnt_ext_master): bound again
# from there, a slave of that group still (what the host mounts there reaches
# it); made shared too, it is refused by name, the target unharmed, and so is
# a whole tmpfs bound so (restore would make a tmpfs of its own, no slave)
prop_host_start() {
	mkdir -p "$T/ext"
	mount -t tmpfs memdump-ext "$T/ext" && mount --make-shared "$T/ext" && mkdir -p "$T/ext/s/q" ||
		fail "cannot mount $T/ext"
	trap 'umount -l "$T/ext/s/q" 2> /dev/null; umount -l "$T/ext" 2> /dev/null' EXIT
	ROOT_PRE='mkdir -p "$1/nr/ext" && mount --bind "$1/ext/s" "$1/nr/ext"'"$1" root_start slave ""
	grep -q " /ext .*master:" /proc/"$PID"/mountinfo || fail "/ext is no slave: $(grep /ext /proc/"$PID"/mountinfo)"
}

case_mntns_prop_host() {
	local g
	prop_host_start ""
	g=$(awk '$5 == "/ext" { for (i = 7; $i != "-"; i++) if ($i ~ /^master:/) print $i }' /proc/"$PID"/mountinfo)
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	grep -q " /ext .* $g " /proc/"$PID"/mountinfo ||
		fail "/ext is not a slave of $g: $(grep /ext /proc/"$PID"/mountinfo)"
	mount -t tmpfs memdump-extq "$T/ext/s/q" || fail "cannot mount on $T/ext/s/q"
	grep -q " /ext/q " /proc/"$PID"/mountinfo || fail "a mount on the master did not reach /ext/q"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}
add mntns-prop-host case_mntns_prop_host

case_mntns_prop_refuse() {
	prop_host_start ' && mount --make-shared "$1/nr/ext"'
	md refuse dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "the tmpfs mount at /ext (shared:[0-9]* master:[0-9]*): a slave of a peer group outside its mount namespace" "$MD_ERR" ||
		fail "the refusal does not name /ext: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	check_child_pass
}

case_mntns_prop_refuse_whole() {
	mkdir -p "$T/ext"
	mount -t tmpfs memdump-ext "$T/ext" && mount --make-shared "$T/ext" || fail "cannot mount $T/ext"
	trap 'umount -l "$T/ext" 2> /dev/null' EXIT
	ROOT_PRE='mkdir -p "$1/nr/ext" && mount --bind "$1/ext" "$1/nr/ext"' root_start slave ""
	md refuse dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "the tmpfs mount at /ext (shared:0 master:[0-9]*): a slave of a peer group outside its mount namespace" "$MD_ERR" ||
		fail "the refusal does not name /ext: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	check_child_pass
}
add mntns-prop-refuse-whole case_mntns_prop_refuse_whole
add mntns-prop-refuse case_mntns_prop_refuse

# Files of a tmpfs under another mount (zdtm tempfs: a tmpfs on a directory
# holding a file): dumped from the tmpfs itself, there again under the mount
case_mntns_tmpfs_under() {
	mnt_start "mount -t tmpfs memdump-t /mnt && mkdir /mnt/u && echo under > /mnt/u/f && echo top > /mnt/g && mount -t tmpfs memdump-u /mnt/u && echo over > /mnt/u/o"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	[[ $(nsenter -t "$PID" -m cat /mnt/u/o) == over ]] || fail "the upper tmpfs lost /mnt/u/o"
	nsenter -t "$PID" -m test -e /mnt/u/f && fail "the file under the mount shows through it"
	[[ $(nsenter -t "$PID" -m sh -c 'umount /mnt/u && cat /mnt/u/f') == under ]] ||
		fail "the file under /mnt/u was not restored"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
}
add mntns-tmpfs-under case_mntns_tmpfs_under

# An unbindable tmpfs (it cannot be cloned: read through the process's root):
# its files restored; with a mount on a directory of it (what that hides
# cannot be read so) refused by name, the target unharmed
case_mntns_tmpfs_unbindable() {
	mnt_start "mount -t tmpfs memdump-n /mnt && echo n > /mnt/f && mount --make-unbindable /mnt"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	[[ $(nsenter -t "$PID" -m cat /mnt/f) == n ]] || fail "/mnt/f lost its content"
	nsenter -t "$PID" -m awk '$5 == "/mnt"' /proc/self/mountinfo | grep -q " unbindable " ||
		fail "/mnt is not unbindable: $(nsenter -t "$PID" -m awk '$5 == "/mnt"' /proc/self/mountinfo)"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
}
add mntns-tmpfs-unbindable case_mntns_tmpfs_unbindable

case_mntns_tmpfs_unbindable_refuse() {
	mnt_start "mount -t tmpfs memdump-n /mnt && mkdir /mnt/u && echo n > /mnt/u/f && mount --make-unbindable /mnt && mount -t tmpfs memdump-o /mnt/u"
	md refuse dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "tmpfs at /mnt: unbindable (memdump cannot clone it), with a mount on u that hides what is under it" "$MD_ERR" ||
		fail "the refusal does not name /mnt/u: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	check_child_pass
}
add mntns-tmpfs-unbindable-refuse case_mntns_tmpfs_unbindable_refuse

# A tree in two mount namespaces: the child of t-mntnest unshared its own
# and mounted a tmpfs only it sees, a file of it open; memdump's namespace
# (mntns-nest) or one of the parent's own (mntns-nest-own, with a grandchild
# in the child's): each process comes back into its own namespace, the
# child's built from mountpoints-2.img of its set.
mntnest_check() {
	local parent=$1 kid=$2
	[[ $(readlink /proc/"$kid"/ns/mnt) != "$(readlink /proc/"$parent"/ns/mnt)" ]] ||
		fail "the child is in its parent's mount namespace"
	[[ $(nsenter -t "$kid" -m cat "$T/mntnest/f") == "nested mount namespace" ]] ||
		fail "the child's tmpfs lost its file"
	nsenter -t "$parent" -m test -e "$T/mntnest/f" && fail "the parent sees the child's tmpfs"
	! grep -q " memdump-nest " /proc/self/mounts || fail "memdump's own namespace got the tmpfs"
	return 0
}

# the pivot modes' child: its own namespace, its root not its parent's
# (pivot: $T/mntnest-root; pivottmp: a tmpfs holding its file f)
mntnest_pivot_check() {
	[[ $(readlink /proc/"$2"/ns/mnt) != "$(readlink /proc/"$1"/ns/mnt)" ]] ||
		fail "the child is in its parent's mount namespace"
	if [[ $3 == pivottmp ]]; then
		[[ $(stat -f -L -c %T /proc/"$2"/root) == tmpfs && $(cat /proc/"$2"/root/f) == \
		   "nested mount namespace" ]] || fail "the child's root is not its tmpfs with f"
	else
		[[ $(stat -L -c %i /proc/"$2"/root) == "$(stat -c %i "$T/mntnest-root")" ]] ||
			fail "the child's root is not $T/mntnest-root"
	fi
}

mntnest_run() {
	START_WRAP=$1 start_prog t-mntnest "${@:2}"
	local kid=${READY[2]} check=mntnest_check
	[[ ${2:-} == pivot* ]] && check=mntnest_pivot_check
	$check "$PID" "$kid" "${2:-}"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	[[ -s $T/d/proc-$kid/mountpoints-2.img ]] || fail "no mountpoints-2.img in the child's set"
	[[ $(crit show "$T/d/proc-$kid/ids-$kid.img" | grep -c '"mnt_ns_id": 2') == 1 ]] ||
		fail "the child's ids do not name its mount namespace 2"
	crit_decodes "$T/d"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	$check "$PID" "$kid" "${2:-}"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}

case_mntns_nest() { mntnest_run ""; }
# (what other tests mount in /run/netns and their /tmp/memdump-test.*
# for a while unmounted first: restore would look for them in memdump's)
case_mntns_nest_own() {
	printf '#!/bin/sh\nfor m in $(awk '"'"'$2 ~ "^(/run/netns/|/tmp/memdump-test[.])" {print $2}'"'"' /proc/self/mounts | sort -r); do umount -l "$m"; done\nexec "$@"\n' > "$T/mnt-setup"
	chmod +x "$T/mnt-setup"
	mntnest_run "unshare --mount --propagation private $T/mnt-setup" grand
}

# the child alone holds a file the parent opened in its namespace (zdtm
# mntns_open): opened there again (root_mntns), on the parent's mount
case_mntns_nest_open() { mntnest_run "" open; }

# the child pivoted into a root of its own (a bind) holding a file its
# parent opened and holds too (inherited stdio, zdtm mntns_pivot_root):
# one description again, opened where the parent is
case_mntns_nest_pivot() { mntnest_run "" pivot; }
# the same into a fresh tmpfs (zdtm mntns_pivot_root): made again in its
# namespace under memdump's run directory, which is removed after
case_mntns_nest_pivottmp() {
	mntnest_run "" pivottmp
	! compgen -G "/run/memdump/root-*" > /dev/null || fail "a stage is left in /run/memdump"
}

# the same file deleted: refused by name, the tree left running
case_mntns_nest_refuse() {
	start_prog t-mntnest opendel
	md refuse dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "($T/mntnest-p (deleted)), a file of another mount namespace than its process's" \
		"$MD_ERR" || fail "the refusal does not name the file: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	check_child_pass
}
add mntns-nest case_mntns_nest
add mntns-nest-own case_mntns_nest_own
add mntns-nest-open case_mntns_nest_open
add mntns-nest-pivot case_mntns_nest_pivot
add mntns-nest-pivottmp case_mntns_nest_pivottmp
add mntns-nest-refuse case_mntns_nest_refuse

# mounts_same BEFORE: the restored $PID's mounts under /h (mounts_of, sorted) are BEFORE
mounts_same() {
	local after
	after=$(mounts_of "$PID" /h | sort)
	[[ $after == "$1" ]] || fail "the mounts differ after restore: $(diff <(echo "$1") <(echo "$after") | tr '\n' ' ')"
}

# root_cycle: dump $PID (killed), restore it, its mounts under /h as before, PASS
root_cycle() {
	local before
	before=$(mounts_of "$PID" /h | sort)
	dump "$PID" "$T/d"
	expect_killed "$PID"
	crit_decodes "$T/d"	# mountpoints-1.img with memdump's field 57 (bind_mnt)
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	mounts_same "$before"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}

# tmpfs hidden under other mounts (zdtm tempfs_overmounted): one under a tmpfs at
# the same point, one under a tmpfs on a directory above it; each one's files
# read from it, restored, still hidden, there again once the upper ones go
case_mntns_tmpfs_stacked() {
	mnt_start "mkdir -p /mnt && mount -t tmpfs memdump-l /mnt && mkdir /mnt/u && echo low > /mnt/u/f && mount -t tmpfs memdump-v /mnt/u && echo v > /mnt/u/v && mount -t tmpfs memdump-h /mnt && echo high > /mnt/g"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	[[ $(nsenter -t "$PID" -m cat /mnt/g) == high ]] || fail "the upper tmpfs lost /mnt/g"
	nsenter -t "$PID" -m test -e /mnt/u && fail "the lower tmpfs shows through the upper one"
	[[ $(nsenter -t "$PID" -m sh -c 'umount /mnt && cat /mnt/u/v') == v ]] ||
		fail "the tmpfs at /mnt/u, under the upper /mnt, lost its file"
	[[ $(nsenter -t "$PID" -m sh -c 'umount /mnt/u && cat /mnt/u/f') == low ]] ||
		fail "the lower tmpfs at /mnt lost /mnt/u/f"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
}
add mntns-tmpfs-stacked case_mntns_tmpfs_stacked

# A bind mount whose source a mount moved over it hides (zdtm
# tempfs_overmounted01: b bound from a, a covered by a bind of a/b, b moved to
# a/c): bound again from the hidden tmpfs, mounts alike
case_mntns_hidden_source() {
	ROOT_PRE='mkdir -p "$1/nr/h" && mount -t tmpfs memdump-h "$1/nr/h" && cd "$1/nr/h" && mkdir a b && mount -t tmpfs memdump-z a && mount --bind a b && mkdir -p a/b/c && echo z > a/f && mount --bind a/b a && mount --move b a/c && cd /' \
		root_start private ""
	grep -q " / /h/a/c " /proc/"$PID"/mountinfo || fail "the setup made no moved bind: $(mounts_of "$PID" /h)"
	root_cycle
}
add mntns-hidden-source case_mntns_hidden_source

# Copies mount propagation made (zdtm private_bind_propagation,
# shared_slave_mount_children): a bind on one of two peers, copied on the
# other, the original made private, the copy a peer of its source's group;
# each restored as its own mount, in its group
case_mntns_prop_copy() {
	ROOT_PRE='mkdir -p "$1/nr/h" && mount -t tmpfs memdump-h "$1/nr/h" && mount --make-shared "$1/nr/h" && cd "$1/nr/h" && mkdir s1 s2 src && mount -t tmpfs memdump-s s1 && mount --make-shared s1 && mount --bind s1 s2 && mkdir s1/c && mount --bind src s1/c && mount --make-private s1/c && cd /' \
		root_start private ""
	grep -q " /src /h/s2/c .*shared:" /proc/"$PID"/mountinfo || fail "the setup made no copy: $(mounts_of "$PID" /h)"
	root_cycle
}
add mntns-prop-copy case_mntns_prop_copy

# An fd on shared anonymous memory (opened through /proc/self/map_files, its
# link "/dev/zero (deleted)", the mapping gone: zdtm shmemfd, shmemfd-priv in
# the ns flavour) in a root of its own: memory, not a deleted file to make
# again under that root. Restored, the fd is the same object: its content,
# size, offset and flags.
ROOT_PY_SHMFD='
import mmap, os, signal, fcntl
os.closerange(3, 256)
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
import ctypes
m = mmap.mmap(-1, 4096, mmap.MAP_SHARED)
base = ctypes.addressof(ctypes.c_char.from_buffer(m))
fd = os.open("/proc/self/map_files/%x-%x" % (base, base + 4096), os.O_RDWR)
os.ftruncate(fd, 0)
ctypes.CDLL(None).munmap(ctypes.c_void_p(base), ctypes.c_size_t(4096))	# the fd alone holds it
fcntl.fcntl(fd, fcntl.F_SETFL, os.O_APPEND)
os.write(fd, b"hello"); os.lseek(fd, 3, os.SEEK_SET)
before = (os.readlink("/proc/self/fd/%d" % fd), fcntl.fcntl(fd, fcntl.F_GETFL), os.fstat(fd).st_size)
print("READY", os.getpid(), fd, flush=True)
while not got:
    signal.pause()
after = (os.readlink("/proc/self/fd/%d" % fd), fcntl.fcntl(fd, fcntl.F_GETFL), os.fstat(fd).st_size)
pos = os.lseek(fd, 0, os.SEEK_CUR)
data = os.pread(fd, 16, 0)
print("PASS" if (after, pos, data) == (before, 3, b"hello") else "FAIL %r" % ((after, pos, data, before),), flush=True)'
case_mntns_shmfd() {
	ROOT_PY=$ROOT_PY_SHMFD root_start private ""
	grep -q "^READY $PID " "$OUT" || fail "the target: $(cat "$OUT")"
	[[ $(stat -Lc %d:%i /proc/"$PID"/root) != $(stat -Lc %d:%i /) ]] || fail "the target has memdump's root"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	restore_and_pass "$T/d" 1
}
add mntns-shmfd case_mntns_shmfd

# A process that chrooted after opening files outside its new root, its
# parent at the namespace's root (zdtm chroot, chroot-file): those files opened
# from the namespace's root, then the chroot; its cwd stays outside it
ROOT_PY_CHROOT='
import os, signal, sys
os.closerange(3, 256)
fd = os.open("/data/x", os.O_RDWR | os.O_CREAT, 0o600)
os.write(fd, b"outside")
os.makedirs("/data/c/inside", exist_ok=True)
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
pid = os.fork()
if pid == 0:
    os.chroot("/data/c")
    print("READY", os.getppid(), flush=True)
    while not got:
        signal.pause()
    ok = os.pread(fd, 7, 0) == b"outside" and os.listdir("/") == ["inside"] and not os.path.samestat(os.stat("."), os.stat("/"))
    sys.exit(0 if ok else 1)
while not got:
    signal.pause()
os.kill(pid, signal.SIGUSR1)
_, st = os.waitpid(pid, 0)
print("PASS" if st == 0 else "FAIL child %d" % st, flush=True)'
case_mntns_chroot() {
	ROOT_PY=$ROOT_PY_CHROOT root_start private ""
	[[ $(readlink /proc/"$(pgrep -P "$PID")"/root) == */data/c ]] || fail "the child did not chroot"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	local child
	child=$(pgrep -P "$PID")
	[[ $(readlink /proc/"$child"/root) == */data/c ]] ||
		fail "the restored child's root is $(readlink /proc/"$child"/root), not /data/c"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}
add mntns-chroot case_mntns_chroot

# An fd on a file of a mount hidden under another (zdtm overmounted_file: the
# tmpfs bound onto itself): restore would open it through the mount on top;
# refused by name, the target unharmed
case_mntns_refuse_hidden_fd() {
	mnt_start "mount -t tmpfs memdump-o /mnt && echo o > /mnt/f && exec 7< /mnt/f && mount --bind /mnt /mnt"
	md refuse dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "fd 7 (/mnt/f), on the tmpfs mount at /mnt, hidden under another mount" "$MD_ERR" ||
		fail "the refusal does not name fd 7: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	check_child_pass
}
add mntns-refuse-hidden-fd case_mntns_refuse_hidden_fd

# Peer groups across the tree's mount namespaces and a root shared with other
# mounts (zdtm mntns_root_bind, mntns_shared_bind, mntns_shared_vs_private):
# the target, pivoted into a root of its own, makes it shared; its child
# unshares its mount namespace (a copy: its root a peer of the parent's) and
# binds /s/a at /s/b, which propagates back to the parent's; the parent then
# mounts a tmpfs at /s/a/t, which propagates to the child's root and to both
# /s/b (/s/b/t). Restored with the same groups across both namespaces (ids
# renamed), and a mount on the parent's root still reaches the child's.
MNT_PEERS_PY='
import ctypes, os, signal, sys
os.closerange(3, 256)
libc = ctypes.CDLL(None, use_errno=True)
def mnt(src, at, fs, fl):
    if libc.mount(src, at, fs, fl, None):
        sys.exit("mount %s: %s" % (at, os.strerror(ctypes.get_errno())))
if os.path.exists("/s/tmpfs"):	# /s/a a tmpfs (shared: on the shared root)
    mnt(b"memdump-pa", b"/s/a", b"tmpfs", 0)
    os.mkdir("/s/a/t")
    os.mkdir("/s/a/u")
r, w = os.pipe()
kid = os.fork()
if kid == 0:
    if libc.unshare(0x20000):
        sys.exit("unshare: " + os.strerror(ctypes.get_errno()))
    mnt(b"/s/a", b"/s/b", None, 4096)	# MS_BIND
    os.write(w, b"x")
    while True:
        signal.pause()
os.read(r, 1)
mnt(b"memdump-peers", b"/s/a/t", b"tmpfs", 0)
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
print("READY", os.getpid(), kid, flush=True)
while not got:
    signal.pause()
mnt(b"memdump-peers2", b"/s/a/u", b"tmpfs", 0)
seen = open("/proc/%d/mountinfo" % kid).read()
libc.umount(b"/s/a/u")
os.kill(kid, signal.SIGKILL)
print("PASS" if " /s/a/u " in seen and " /s/b/u " in seen else "FAIL: the child got no /s/a/u, /s/b/u: " + seen, flush=True)'

# peers_of PID...: the mounts under /s and at / of each (its order in the
# list, point, root, propagation), peer group ids renamed in that order
peers_of() {
	local p n=0
	for p in "$@"; do
		n=$((n + 1))
		awk -v ns="$n" '$5 == "/" || $5 ~ "^/s/" { t = ""; for (i = 7; $i != "-"; i++) if ($i ~ /^(shared|master):/) t = t " " $i; print ns, $5, $4 t }' /proc/"$p"/mountinfo | sort
	done | awk '{ out = $1 " " $2 " " $3; for (i = 4; i <= NF; i++) { split($i, kv, ":"); if (!(kv[2] in g)) g[kv[2]] = "G" (++n); out = out " " kv[1] ":" g[kv[2]] } print out }'
}

# peers_run MODE COUNTS: COUNTS the members of groups G1 G2 ... before the dump
peers_run() {
	local before after kid
	mkdir -p "$T/nr/s/a/t" "$T/nr/s/a/u" "$T/nr/s/b"
	[[ $1 == tmpfs ]] && : > "$T/nr/s/tmpfs"
	ROOT_PY=$MNT_PEERS_PY root_start private "mount --make-shared /"
	kid=$(awk '/^READY/ {print $3; exit}' "$OUT")
	track "$kid"
	before=$(peers_of "$PID" "$kid")
	[[ $(for g in 1 2 3; do grep -c "shared:G$g\b" <<< "$before"; done | tr '\n' ' ') == "$2" ]] ||
		fail "the setup made other groups: $before"
	dump "$PID" "$T/d"
	expect_killed "$PID"
	truncate -s "$READY_SIZE" "$OUT"
	restore_bg "$T/d" 1
	wait_restored "$PID"
	after=$(peers_of "$PID" "$kid")
	[[ $after == "$before" ]] || fail "the peer groups differ after restore: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')"
	[[ $(readlink /proc/"$kid"/ns/mnt) != "$(readlink /proc/"$PID"/ns/mnt)" ]] ||
		fail "the child is in its parent's mount namespace"
	grep -q memdump-peers /proc/self/mountinfo && fail "memdump's namespace got the mounts"
	kill -USR1 "$PID"
	get_result "$OUT"
	wait_restore_exit
	(( MD_RC == 0 )) || fail "restore exited with $MD_RC"
}
case_mntns_peers() { peers_run "" "4 4 0 "; }
# the same with /s/a a shared tmpfs the parent mounted before the fork (zdtm
# mntns_shared_bind02, mntns_remap): the child's namespace attaches a clone of
# the parent's restored one, which takes no mounts of the child's while it is
# built (they propagated back to the parent's before)
case_mntns_peers_tmpfs() { peers_run tmpfs "2 4 4 "; }
add mntns-peers case_mntns_peers
add mntns-peers-tmpfs case_mntns_peers_tmpfs

# What stays refused: the parent made its shared tmpfs /s/x a slave once its
# child's namespace had a copy, so the group's only mount is the child's, in a
# namespace restore builds after the parent's (which would need it first):
# refused by name, the tree left running
MNT_PEERS_SLAVE_PY='
import ctypes, os, signal, sys
os.closerange(3, 256)
libc = ctypes.CDLL(None, use_errno=True)
def mnt(src, at, fs, fl):
    if libc.mount(src, at, fs, fl, None):
        sys.exit("mount %s: %s" % (at, os.strerror(ctypes.get_errno())))
mnt(b"memdump-px", b"/s/x", b"tmpfs", 0)
mnt(None, b"/s/x", None, 1 << 20)	# MS_SHARED
r, w = os.pipe()
kid = os.fork()
if kid == 0:
    if libc.unshare(0x20000):
        sys.exit("unshare: " + os.strerror(ctypes.get_errno()))
    os.write(w, b"x")
    while True:
        signal.pause()
os.read(r, 1)
mnt(None, b"/s/x", None, 1 << 19)	# MS_SLAVE
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
print("READY", os.getpid(), kid, flush=True)
while not got:
    signal.pause()
os.kill(kid, signal.SIGKILL)
print("PASS", flush=True)'

case_mntns_peers_refuse() {
	mkdir -p "$T/nr/s/x"
	ROOT_PY=$MNT_PEERS_SLAVE_PY root_start private ""
	track "$(awk '/^READY/ {print $3; exit}' "$OUT")"
	md refuse dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "the tmpfs mount at /s/x (shared:0 master:[0-9]*): a slave of a peer group none of whose mounts in its namespace (or in the tree's namespace that has it first) holds its root" "$MD_ERR" ||
		fail "the refusal does not name /s/x: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	check_child_pass
}
add mntns-peers-refuse case_mntns_peers_refuse
