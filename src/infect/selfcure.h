/* Within infect/: the frames threads return home through if the dumper dies. */
#ifndef MEMDUMP_INFECT_SELFCURE_H
#define MEMDUMP_INFECT_SELFCURE_H

#include <stddef.h>
#include <stdint.h>

#include "infect/infect.h"
#include "sigframe.h"

/* The FPU state follows the frame, 64-byte aligned as rt_sigreturn wants. */
#define SELFCURE_FP_OFF	((sizeof(struct rt_sigframe) + 63) & ~63UL)

/* How many bytes thread tid's frame takes. */
int selfcure_frame_len(pid_t tid, size_t *len);
/* Build thread t's frame at local (room bytes), read there at remote (64-byte
 * aligned); *len: its size with the FPU state. */
int selfcure_frame(const struct infect_thread *t, uint8_t *local, uint64_t remote, size_t room,
		   size_t *len);

#endif
