/*
 * A socket's pending errors (sk_err, then sk_err_soft), read without taking
 * them: SO_ERROR hands them over to whoever asks, poll() tells only that one
 * is there. A BPF iterator over memdump's own files (task_file) reads both
 * from the struct sock behind one of memdump's descriptors (sk_err.c).
 */
#ifndef MEMDUMP_NET_SK_ERR_H
#define MEMDUMP_NET_SK_ERR_H

struct sk_errs {
	int err;	/* sk_err: what SO_ERROR, read or write return next */
	int soft;	/* sk_err_soft: what SO_ERROR returns after it */
};

/* 0, or -errno (no BPF, no BTF: the caller refuses what needed them). */
int sk_errs_peek(int fd, struct sk_errs *out);

#endif
