# Shared memory objects (MAP_SHARED|MAP_ANONYMOUS memory, memfds) as more
# than plain shared mappings: private mappings of them, fds on them, exec of
# a memfd; and the files behind shared mappings (issue 31).

# A private mapping of shared anonymous memory (through map_files) and of a
# memfd: untouched pages show the object, COW copies kept (zdtm shmemfd-priv).
add rst-t-shmpriv case_rst default t-shmpriv
add lr-t-shmpriv case_lr splice t-shmpriv
add snap-rst-t-shmpriv case_snapshot_rst t-shmpriv

# A memfd run with execveat() after the restore: its read-write fd is
# memfd_create's own description, which the kernel does not count as a
# writer (zdtm memfd04, memfd05: with a private and a shared mapping).
add rst-t-memfdrun case_rst default t-memfdrun
add rst-t-memfdrun-maps case_rst default t-memfdrun maps
