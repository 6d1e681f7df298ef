/*
 * The x86-64 signal frame as rt_sigreturn reads it (the kernel's struct
 * rt_sigframe, ucontext and sigcontext_64), shared by the restorer blob,
 * which returns into each restored thread through one, and the dumper,
 * which leaves one for the parasite to return through if the dumper dies.
 * rt_sigreturn takes the frame at %rsp - 8 (past pretcode).
 */
#ifndef MEMDUMP_SIGFRAME_H
#define MEMDUMP_SIGFRAME_H

#define SIGFRAME_SS_DISABLE		2
/* Not a valid sigaltstack mode: rt_sigreturn's sigaltstack() fails, which it
 * ignores, and the thread keeps the alternate stack it has. */
#define SIGFRAME_SS_KEEP		3
#define UC_FP_XSTATE			0x1
#define UC_SIGCONTEXT_SS		0x2
#define UC_STRICT_RESTORE_SS		0x4
#define FP_XSTATE_MAGIC1		0x46505853U
#define FP_XSTATE_MAGIC2		0x46505845U
#define FP_SW_BYTES_OFF			464	/* in the XSAVE area: sw_reserved */
#define FP_XSTATE_MIN			576	/* legacy area + XSAVE header */

struct frame_sigcontext {
	unsigned long r8, r9, r10, r11, r12, r13, r14, r15;
	unsigned long di, si, bp, bx, dx, ax, cx, sp, ip, flags;
	unsigned short cs, gs, fs, ss;
	unsigned long err, trapno, oldmask, cr2, fpstate;
	unsigned long reserved1[8];
};

struct frame_ucontext {
	unsigned long uc_flags;
	unsigned long uc_link;
	unsigned long ss_sp;
	int ss_flags;
	int ss_pad;
	unsigned long ss_size;
	struct frame_sigcontext mc;
	unsigned long sigmask;
};

struct rt_sigframe {
	unsigned long pretcode;
	struct frame_ucontext uc;
	unsigned char info[128];
};

/*
 * Make an XSAVE image (NT_X86_XSTATE) of `size` bytes at fp a valid signal
 * frame FPU state: the software bytes rt_sigreturn checks, and MAGIC2 right
 * after it (fp must have size + 4 bytes). xcr0: the features in use.
 */
static inline void sigframe_xstate_magic(unsigned char *fp, unsigned int size,
					 unsigned long xcr0)
{
	unsigned int *sw = (unsigned int *)(fp + FP_SW_BYTES_OFF);

	sw[0] = FP_XSTATE_MAGIC1;
	sw[1] = size + 4;
	*(unsigned long *)&sw[2] = xcr0;
	sw[4] = size;
	for (int i = 5; i < 12; i++)
		sw[i] = 0;
	*(unsigned int *)(fp + size) = FP_XSTATE_MAGIC2;
}

static inline unsigned long sigframe_xgetbv0(void)
{
	unsigned int lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((unsigned long)hi << 32) | lo;
}

#endif
