/*
 * Syscall restart. A thread frozen inside a system call shows orig_rax = the
 * syscall and rax = -ERESTART*: the kernel would re-execute the call when the
 * thread resumes from that very stop. Once its registers are put back by
 * hand (after remote execution) or in a new process (restore), memdump must
 * make that decision itself.
 */
#ifndef MEMDUMP_RESTART_H
#define MEMDUMP_RESTART_H

#include <stdbool.h>
#include <sys/user.h>

/* Registers to resume the same thread in the same process (leave-running). */
void regs_for_resume(struct user_regs_struct *r);
/* Registers to resume the thread in a restored process: no kernel restart
 * block survives, so the call is re-executed (a relative sleep for what was
 * left of it when the kernel reported the remaining time). */
void regs_for_image(struct user_regs_struct *r);

#endif
