/*
 * The infect layer, after CRIU's compel: take hold of a process's threads
 * (seize, interrupt, release), run system calls inside it (remote.c), load
 * the parasite blob into it, run parasite commands and cure it again. It
 * holds no dump policy: what to collect and what to write is dump/'s. It may
 * call only lib (include/).
 *
 * Still to do: the verbs work on dump's struct dump_ctx; they are to get an
 * infect-owned context that dump_ctx embeds (scripts/check-layers lists the
 * edge).
 */
#ifndef MEMDUMP_INFECT_H
#define MEMDUMP_INFECT_H

#include "dump/dump.h"

/* seize.c */
int target_check(pid_t pid);
int seize_all(struct dump_ctx *d);
void release_all(struct dump_ctx *d, bool kill_target);
struct thread *thread_of(struct dump_ctx *d, pid_t tid);
int wait_stop(pid_t tid, int *status);
int interrupt_thread(pid_t tid, bool pass_signal);

/* remote.c: system calls executed by a stopped thread of the target */
int remote_init(struct dump_ctx *d);
int remote_syscall(struct dump_ctx *d, struct thread *t, long nr, long *ret,
		   long a1, long a2, long a3, long a4, long a5, long a6);

/* infect/parasite.c */
int parasite_infect(struct dump_ctx *d);
int parasite_vmsplice(struct dump_ctx *d, const struct page_run *runs, size_t nr,
		      int out_fd);
uint64_t parasite_scratch(struct dump_ctx *d, void **local);
void parasite_cure(struct dump_ctx *d);
int put_thread_regs(struct thread *t);

#endif
