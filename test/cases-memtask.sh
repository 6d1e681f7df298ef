# Memory and task states of zdtm and issue 24 (Beyond CRIU): each restored
# exactly, or refused by name before the target is harmed.

# mseal()ed mappings (VmFlags sl): sealed again by the restorer, last, with
# their bytes; the unsealed rest of a split VMA stays unsealed; file mappings
# sealed; mlock2(MLOCK_ONFAULT) memory locked on fault again (lf) (t-mseal).
add vma-mseal case_rst default t-mseal
# The same with the process's vDSO sealed (as CONFIG_MSEAL_SYSTEM_MAPPINGS or
# glibc.rtld.seal would): mapped again where it was, then sealed.
add vma-mseal-vdso case_rst default t-mseal vdso
# A --leave-running snapshot (userfaultfd write-protection of the target's
# memory) of sealed memory: the dump changes no sealed range (cases-snapshot.sh).
add vma-mseal-snap case_snapshot_rst t-mseal

# A restore of sealed memory refused in its checks, one line, nothing started:
# without mseal() (a kernel before 6.10, here a seccomp filter that answers
# ENOSYS), naming the VMA; with a mapping of memdump's own sealed (its vDSO,
# as CONFIG_MSEAL_SYSTEM_MAPPINGS would; here sealed by an LD_PRELOAD), which
# the restorer could not unmap. The same images restore without either.
case_vma_mseal_refused() {
	start_prog t-mseal
	dump "$PID" "$T/d"
	expect_killed "$PID"
	cat > "$T/noseal" <<-'PY'
	import ctypes, os, struct, sys
	f = [(0x20, 0, 0, 0), (0x15, 0, 1, 462), (0x06, 0, 0, 0x50000 | 38), (0x06, 0, 0, 0x7fff0000)]
	buf = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *i) for i in f))
	prog = struct.pack("HxxxxxxQ", len(f), ctypes.addressof(buf))
	libc = ctypes.CDLL(None, use_errno=True)
	if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.c_char_p(prog), 0, 0):
	    sys.exit("seccomp: %s" % os.strerror(ctypes.get_errno()))
	os.execv(sys.argv[1], sys.argv[1:])
	PY
	printf '#!/bin/sh\nexec python3 %s %s "$@"\n' "$T/noseal" "$MEMDUMP" > "$T/noseal.sh"
	chmod +x "$T/noseal.sh"
	MEMDUMP=$T/noseal.sh md noseal restore -D "$T/d"
	expect_md_error
	grep -q 'is sealed (mseal), which this kernel cannot do' "$MD_ERR" ||
		fail "restore without mseal(): '$(cat "$MD_ERR")'"
	alive "$PID" && fail "pid $PID runs after a refused restore"
	cat > "$T/sealvdso.c" <<-'C'
	#define _GNU_SOURCE
	#include <stdio.h>
	#include <string.h>
	#include <unistd.h>
	__attribute__((constructor)) static void seal_vdso(void)
	{
		char l[512]; unsigned long s, e; FILE *f = fopen("/proc/self/maps", "r");
		while (f && fgets(l, sizeof(l), f))
			if (strstr(l, "[vdso]") && sscanf(l, "%lx-%lx", &s, &e) == 2)
				syscall(462, s, e - s, 0);
		if (f)
			fclose(f);
	}
	C
	gcc -shared -fPIC -o "$T/sealvdso.so" "$T/sealvdso.c" 2> "$T/cc.err" ||
		{ show_file cc "$T/cc.err"; fail "cannot build sealvdso.so"; }
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
		LD_PRELOAD=$T/sealvdso.so md ownseal restore -D "$T/d"
	expect_md_error
	grep -q "memdump's own mapping .* \[vdso\] is sealed" "$MD_ERR" ||
		fail "restore with memdump's vDSO sealed: '$(cat "$MD_ERR")'"
	alive "$PID" && fail "pid $PID runs after a refused restore"
	restore_and_pass "$T/d" 1
}
add vma-mseal-refused case_vma_mseal_refused

# MAP_DROPPABLE memory (VmFlags dp): mapped droppable again, empty, as the
# kernel may leave it at any time; wipe-on-fork memory beside it intact.
add vma-droppable case_rst default t-droppable

# A thread in seccomp strict mode (zdtm seccomp_strict): memdump suspends it
# while it traces it (PTRACE_O_SUSPEND_SECCOMP); the restorer enters strict
# mode last, just before the thread's rt_sigreturn (t-seccompstrict).
add seccomp-strict case_rst default t-seccompstrict

# Strict mode with a memdump that cannot suspend it (no CAP_SYS_ADMIN, so no
# PTRACE_O_SUSPEND_SECCOMP): refused by name before the seize, target unharmed.
case_seccomp_strict_nocap() {
	start_prog t-seccompstrict
	printf '#!/bin/sh\nexec setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin %s "$@"\n' \
		"$MEMDUMP" > "$T/md-nocap"
	chmod +x "$T/md-nocap"
	MEMDUMP=$T/md-nocap md dump dump -t "$PID" -D "$T/d" --leave-running
	expect_md_error
	local want="thread ${READY[2]} is in seccomp strict mode, which memdump cannot suspend without CAP_SYS_ADMIN"
	grep -qF "$want" "$MD_ERR" || fail "the error does not say '$want'"
	no_inventory "$T/d"
	expect_untraced "$PID"
	check_child_pass
}
add err-seccomp-strict-nocap case_seccomp_strict_nocap

# A process without a vDSO (zdtm vdso02: it unmapped [vdso] and [vvar]): the
# parasite finds its memfd's empty name elsewhere, the restore maps none.
add vma-novdso case_rst default t-novdso

# A vDSO moved apart from its data pages (mremap of [vdso] alone): the restore
# maps this kernel's vDSO as one block, so the dump refuses it by name, the
# target untouched (before, the restore failed after a killing dump).
case_vdso_moved_refused() {
	start_prog t-novdso moved
	md dump dump -t "$PID" -D "$T/d"
	expect_md_error
	grep -q "its vDSO (\[vdso\] at .*) is not laid out as this kernel's" "$MD_ERR" ||
		fail "the refusal does not name the vDSO: $(cat "$MD_ERR")"
	no_inventory "$T/d"
	expect_untraced "$PID"
	check_child_pass
}
add err-vdso-moved case_vdso_moved_refused

# A process's own userfaultfd (issue 24) with a range registered MISSING and
# no handler, none of its pages populated: made again by the restorer blob at
# its number, the range registered (VmFlags um), the data intact. show names the
# userfaultfd, its number and its range, in text and in --json.
case_uffd_own() {
	start_prog t-uffd
	dump "$PID" "$T/d"
	expect_killed "$PID"
	md show show -D "$T/d" || fail "show failed: $(tail -n1 "$MD_ERR")"
	grep -q "^userfaultfd fd ${READY[2]} flags .*: 1 range(s) ${READY[3]}-0x[0-9a-f]* MISSING;" \
		"$MD_OUT" || { show_file show "$MD_OUT"; fail "show does not name the userfaultfd and its range"; }
	md show.json show --json -D "$T/d" || fail "show --json failed: $(tail -n1 "$MD_ERR")"
	python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["process"]
assert p["userfaultfd"].startswith("fd " + sys.argv[2] + " "), p' "$MD_OUT" "${READY[2]}" ||
		fail "show --json has no userfaultfd of fd ${READY[2]}"
	restore_and_pass "$T/d" 1
}
add uffd-own case_uffd_own

# Seccomp filters installed without no_new_privs by root, which then dropped
# its ids and capabilities, a filter denying setresuid (zdtm seccomp_filter):
# the restorer installs them once the ids are set, before the capabilities.
add seccomp-filter-uid case_rst default t-seccompuid

# Threads with credentials of their own (a thread changed its uids, gids and
# groups with raw system calls; the main thread root with 100 groups): each
# thread comes back with its own, as /proc/self/task/TID/status shows them.
add thread-creds case_rst default t-threadcreds many
# securebits of each thread its own (PR_SET_SECUREBITS in one thread), read by
# each thread in the parasite, set again by each in the blob
add thread-secbits case_rst default t-threadsecbits
