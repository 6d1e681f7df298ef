# SIGKILL of the dump's worker at each step of the infection's first remote
# syscalls, before the parasite area exists (they run on a signal return of
# the target's own code, its cure frame on its stack): memfd_create and
# mmap (memdump sizes the memfd itself), and the close of the memfd (on the
# area's trampoline), with its registers set, stopped at its entry, stopped
# at its exit. The target must run on untraced from where it was (t-threads
# checks its registers, xmm too, in every thread), with no parasite mapping
# and no fd of memdump's left. Uses no_parasite_left and kill_worker from
# cases-faults.sh.

case_worker_killed_remote() { worker_killed_at "$1"; }

for nr in 319 9 3; do
	for step in set entry exit; do
		add "err-worker-killed-remote-$step-$nr" case_worker_killed_remote "remote-$step-$nr"
	done
done
