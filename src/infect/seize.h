/* Within infect/: waiting for and stopping single threads (seize.c). */
#ifndef MEMDUMP_INFECT_SEIZE_H
#define MEMDUMP_INFECT_SEIZE_H

#include "infect/infect.h"

int wait_stop(struct infect_ctx *c, pid_t tid, int *status);
/* registers and signal mask as at the freeze (restart rules applied) */
int put_thread_regs(struct infect_thread *t);
int interrupt_thread(struct infect_ctx *c, pid_t tid, bool pass_signal);

#endif
