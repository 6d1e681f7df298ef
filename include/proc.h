/* Small readers of /proc/PID files. */
#ifndef MEMDUMP_PROC_H
#define MEMDUMP_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_stat {
	char comm[32];
	char state;
	pid_t ppid, pgid, sid;
	unsigned long flags;
	uint64_t start_time;		/* clock ticks after boot: tells a reused PID apart */
	uint64_t start_code, end_code, start_stack;
	uint64_t start_data, end_data, start_brk;
	uint64_t arg_start, arg_end, env_start, env_end;
	int exit_signal;
	unsigned int tty_nr;		/* controlling terminal, the kernel's dev encoding */
	pid_t tpgid;			/* its foreground process group, -1: none */
};

int proc_read_stat(pid_t pid, struct proc_stat *st);
/* The same from a stat file at path (another /proc: pid, ppid... as its namespace sees them). */
int proc_read_stat_path(const char *path, struct proc_stat *st);
pid_t proc_ppid(pid_t pid);
pid_t proc_tgid(pid_t pid);
pid_t proc_tracer(pid_t pid);
/* The process of pidfd has exited (or the poll failed: taken so). */
bool pidfd_exited(int pidfd);
int proc_comm(pid_t pid, char *buf, size_t len);
/* The real uid of pid (from /proc/PID/status), or -errno. */
long proc_uid(pid_t pid);
/* Is cap (CAP_*) in memdump's own effective set? */
bool self_capable(int cap);
int proc_tasks(pid_t pid, pid_t **tids);
/* Value of "Key:" in /proc/PID/status as text; 0 or -ENOENT. */
int proc_status_field(pid_t pid, const char *key, char *buf, size_t len);
/*
 * The same from a status file's text already read (one read for many
 * fields: the file is made afresh at each read, all of it).
 */
int status_text_field(const char *text, const char *key, char *buf, size_t len);
/* The same from the status of thread tid of pid. */
int proc_task_status_field(pid_t pid, pid_t tid, const char *key, char *buf, size_t len);
/* Whole small file into a malloc'ed, NUL-terminated buffer; returns length. */
ssize_t proc_read_file(const char *path, char **out);
/* The same, path relative to directory dirfd (AT_FDCWD: as proc_read_file). */
ssize_t proc_read_file_at(int dirfd, const char *path, char **out);
/* A small file (dirfd-relative, or AT_FDCWD) read into buf, NUL-terminated; 0 or -errno. */
int read_small_at(int dirfd, const char *name, char *buf, size_t len);
/* /proc/PID/fdinfo/FD the same way. */
ssize_t proc_fdinfo(pid_t pid, int fd, char **out);
/* In such a text, what follows "key" at the start of a line, or NULL. */
const char *proc_line_after(const char *text, const char *key);
/* Does fd's open file have any of the open flags in mask (fdinfo "flags:")? false if unreadable. */
bool proc_fd_flag(pid_t pid, int fd, unsigned long mask);
/* Is /proc/PID/fd/FD a link to exactly want? false if unreadable. */
bool proc_fd_link_is(pid_t pid, int fd, const char *want);
/* The first of pid's fds that links to want ("anon_inode:[io_uring]") with inode ino, or -1. */
int proc_fd_of_link(pid_t pid, const char *want, unsigned long ino);
/* How many of pid's fds link to want ("anon_inode:[userfaultfd]"), or -errno. */
int proc_count_fd_links(pid_t pid, const char *want);
/*
 * memdump's own fd's path (/proc/self/fd/FD) into path; whether it ends in
 * " (deleted)" (kept in path), or -errno.
 */
int self_fd_link(int fd, char *path, size_t len);
/*
 * 1 with "START-END NAME" of memdump's first sealed mapping (VmFlags sl:
 * the vDSO of a kernel with CONFIG_MSEAL_SYSTEM_MAPPINGS, the loader's with
 * glibc.rtld.seal) in what, 0 when none is, or -errno.
 */
int self_sealed_mapping(char *what, size_t len);
/*
 * path as process pid sees it (an absolute path of its fd links), opened
 * under its root (/proc/PID/root) with flags (O_CLOEXEC added): no "..",
 * no symlink and no magic link leads out of that root. An fd or -errno.
 */
int proc_root_open(pid_t pid, const char *path, int flags);
/* fd's file at rel below base of pid's root: 0; 1 there only under the mounts on base's; -ENOENT. */
int proc_root_covered(pid_t pid, const char *base, const char *rel, int fd);
/* The same under the directory root (an fd): path resolved as if root were "/". */
int root_open_at(int root, const char *path, int flags);

#endif
