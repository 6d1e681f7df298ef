/*
 * A socket's sk_err and sk_err_soft, read without taking them (sk_err.h).
 *
 * A BPF iterator program of type task_file, limited to memdump's own
 * process (the link's task filter), picks the file at one descriptor,
 * gets its socket (bpf_sock_from_file) and writes the two ints of its
 * struct sock into the iterator's output, which memdump reads. The offsets
 * of socket.sk, sock.sk_err and sock.sk_err_soft, and the iterator's BTF
 * id, come from the kernel's own BTF (/sys/kernel/btf/vmlinux): the
 * program is built for the running kernel, and the verifier checks every
 * load against that BTF. Needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/btf.h>

#include "log.h"
#include "net/sk_err.h"

#define VMLINUX_BTF	"/sys/kernel/btf/vmlinux"
#define BTF_MAX		(64u << 20)

struct btf_file {
	uint8_t *buf;
	size_t len;
	const struct btf_header *h;
};

struct sk_err_layout {
	uint32_t iter_id;		/* FUNC bpf_iter_task_file */
	int16_t socket_sk, sk_err, sk_err_soft;
};

/* The whole file (its size is not known before it is read: sysfs says 0). */
static int slurp(int fd, struct btf_file *b)
{
	size_t cap = 8u << 20;
	ssize_t n;

	b->buf = malloc(cap);
	while (b->buf && (n = read(fd, b->buf + b->len, cap - b->len)) > 0) {
		uint8_t *p;

		b->len += n;
		if (b->len < cap)
			continue;
		p = cap < BTF_MAX ? realloc(b->buf, cap * 2) : NULL;
		if (!p)
			break;
		b->buf = p;
		cap *= 2;
	}
	return b->buf ? 0 : -ENOMEM;
}

static int read_btf(struct btf_file *b)
{
	int fd = open(VMLINUX_BTF, O_RDONLY | O_CLOEXEC), ret;

	*b = (struct btf_file){ NULL, 0, NULL };
	if (fd < 0)
		return -errno;
	ret = slurp(fd, b);
	close(fd);
	if (ret)
		return ret;
	b->h = (const void *)b->buf;
	if (b->len < sizeof(*b->h) || b->h->magic != BTF_MAGIC ||
	    (uint64_t)b->h->hdr_len + b->h->str_off + b->h->str_len > b->len ||
	    (uint64_t)b->h->hdr_len + b->h->type_off + b->h->type_len > b->len) {
		free(b->buf);
		return -EINVAL;
	}
	return 0;
}

static const char *btf_str(const struct btf_file *b, uint32_t off)
{
	return off < b->h->str_len ? (const char *)b->buf + b->h->hdr_len + b->h->str_off + off : "";
}

/* The bytes that follow a type's btf_type, by its kind. */
static size_t extra_of(const struct btf_type *t)
{
	uint32_t vlen = BTF_INFO_VLEN(t->info);

	switch (BTF_INFO_KIND(t->info)) {
	case BTF_KIND_INT:
	case BTF_KIND_VAR:
	case BTF_KIND_DECL_TAG:
		return 4;
	case BTF_KIND_ARRAY:
		return sizeof(struct btf_array);
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		return vlen * sizeof(struct btf_member);
	case BTF_KIND_ENUM:
		return vlen * sizeof(struct btf_enum);
	case BTF_KIND_FUNC_PROTO:
		return vlen * sizeof(struct btf_param);
	case BTF_KIND_DATASEC:
		return vlen * sizeof(struct btf_var_secinfo);
	case 19:	/* BTF_KIND_ENUM64 */
		return vlen * 12;
	default:
		return 0;
	}
}

/* A struct member's byte offset, or -1. */
static int member_off(const struct btf_file *b, const struct btf_type *t, const char *name)
{
	const struct btf_member *m = (const void *)(t + 1);

	for (uint32_t i = 0; i < BTF_INFO_VLEN(t->info); i++) {
		uint32_t bits = BTF_INFO_KFLAG(t->info) ? BTF_MEMBER_BIT_OFFSET(m[i].offset) :
							  m[i].offset;

		if (!strcmp(btf_str(b, m[i].name_off), name))
			return bits % 8 || bits / 8 > INT16_MAX ? -1 : (int)(bits / 8);
	}
	return -1;
}

static void look_at(const struct btf_file *b, const struct btf_type *t, uint32_t id,
		    struct sk_err_layout *l)
{
	const char *name = btf_str(b, t->name_off);
	int kind = BTF_INFO_KIND(t->info);

	if (kind == BTF_KIND_FUNC && !strcmp(name, "bpf_iter_task_file"))
		l->iter_id = id;
	else if (kind == BTF_KIND_STRUCT && !strcmp(name, "socket") && l->socket_sk < 0)
		l->socket_sk = member_off(b, t, "sk");
	else if (kind == BTF_KIND_STRUCT && !strcmp(name, "sock") && l->sk_err < 0) {
		l->sk_err = member_off(b, t, "sk_err");
		l->sk_err_soft = member_off(b, t, "sk_err_soft");
	}
}

static int find_layout(struct sk_err_layout *l)
{
	struct btf_file b;
	int ret = read_btf(&b);
	size_t off, end;
	uint32_t id = 1;

	if (ret)
		return ret;
	*l = (struct sk_err_layout){ 0, -1, -1, -1 };
	off = b.h->hdr_len + b.h->type_off;
	end = off + b.h->type_len;
	while (off + sizeof(struct btf_type) <= end) {
		const struct btf_type *t = (const void *)(b.buf + off);

		look_at(&b, t, id++, l);
		off += sizeof(*t) + extra_of(t);
	}
	free(b.buf);
	return l->iter_id && l->socket_sk >= 0 && l->sk_err >= 0 && l->sk_err_soft >= 0 ?
	       0 : -ENOENT;
}

#define INSN(c, d, s, o, i)	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), \
						    .off = (o), .imm = (i) })
#define MOV64_X(d, s)		INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define MOV64_K(d, k)		INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, k)
#define ADD64_K(d, k)		INSN(BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, k)
#define LDX(sz, d, s, o)	INSN(BPF_LDX | (sz) | BPF_MEM, d, s, o, 0)
#define STX(sz, d, s, o)	INSN(BPF_STX | (sz) | BPF_MEM, d, s, o, 0)
#define JEQ_K(d, k, o)		INSN(BPF_JMP | BPF_JEQ | BPF_K, d, 0, o, k)
#define JNE_K(d, k, o)		INSN(BPF_JMP | BPF_JNE | BPF_K, d, 0, o, k)
#define CALL(f)			INSN(BPF_JMP | BPF_CALL, 0, 0, 0, f)
#define EXIT()			INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

/*
 * struct bpf_iter__task_file: meta at 0, task at 8, fd (u32) at 16, file at
 * 24. For the file at fd: {sk_err, sk_err_soft} as two ints, through
 * bpf_seq_write into the iterator's output.
 */
static size_t build_prog(const struct sk_err_layout *l, int fd, struct bpf_insn *p)
{
	size_t n = 0, out;

	p[n++] = MOV64_X(6, 1);
	p[n++] = LDX(BPF_W, 2, 6, 16);
	p[n++] = JNE_K(2, fd, 0);		/* patched: to the exit */
	p[n++] = LDX(BPF_DW, 1, 6, 24);
	p[n++] = JEQ_K(1, 0, 0);
	p[n++] = CALL(BPF_FUNC_sock_from_file);
	p[n++] = JEQ_K(0, 0, 0);
	p[n++] = LDX(BPF_DW, 7, 0, l->socket_sk);
	p[n++] = JEQ_K(7, 0, 0);
	p[n++] = LDX(BPF_W, 2, 7, l->sk_err);
	p[n++] = STX(BPF_W, 10, 2, -8);
	p[n++] = LDX(BPF_W, 2, 7, l->sk_err_soft);
	p[n++] = STX(BPF_W, 10, 2, -4);
	p[n++] = LDX(BPF_DW, 1, 6, 0);
	p[n++] = LDX(BPF_DW, 1, 1, 0);
	p[n++] = MOV64_X(2, 10);
	p[n++] = ADD64_K(2, -8);
	p[n++] = MOV64_K(3, 8);
	p[n++] = CALL(BPF_FUNC_seq_write);
	out = n;
	p[n++] = MOV64_K(0, 0);
	p[n++] = EXIT();
	for (size_t i = 0; i < out; i++)
		if (BPF_CLASS(p[i].code) == BPF_JMP && BPF_OP(p[i].code) != BPF_CALL)
			p[i].off = (int16_t)(out - i - 1);
	return n;
}

static int sys_bpf(int cmd, union bpf_attr *a)
{
	return (int)syscall(__NR_bpf, cmd, a, sizeof(*a));
}

static int load_prog(const struct sk_err_layout *l, int fd)
{
	struct bpf_insn insns[32];
	union bpf_attr a;
	char vlog[4096] = "";
	int prog;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_TRACING;
	a.expected_attach_type = BPF_TRACE_ITER;
	a.attach_btf_id = l->iter_id;
	a.insn_cnt = (uint32_t)build_prog(l, fd, insns);
	a.insns = (uintptr_t)insns;
	a.license = (uintptr_t)"GPL";	/* memdump's (bpf_seq_write wants it) */
	a.log_buf = (uintptr_t)vlog;
	a.log_size = sizeof(vlog);
	a.log_level = 1;
	prog = sys_bpf(BPF_PROG_LOAD, &a);
	if (prog < 0) {
		int err = -errno;

		pr_debug("sk_err: the BPF program is refused: %s\n%s\n", strerror(-err), vlog);
		return err;
	}
	return prog;
}

/* The iterator's task filter: the pid at offset 4 of bpf_iter_link_info's task member. */
struct iter_task_filter {
	uint32_t tid, pid, pid_fd;
};

static int run_iter(int prog, struct sk_errs *out)
{
	struct iter_task_filter f = { 0, (uint32_t)getpid(), 0 };
	union bpf_attr a;
	int32_t v[2];
	int link, it, ret = -EIO;
	ssize_t n;

	memset(&a, 0, sizeof(a));
	a.link_create.prog_fd = prog;
	a.link_create.attach_type = BPF_TRACE_ITER;
	a.link_create.iter_info = (uintptr_t)&f;
	a.link_create.iter_info_len = sizeof(f);
	link = sys_bpf(BPF_LINK_CREATE, &a);
	if (link < 0)
		return -errno;
	memset(&a, 0, sizeof(a));
	a.iter_create.link_fd = link;
	it = sys_bpf(BPF_ITER_CREATE, &a);
	if (it < 0)
		ret = -errno;
	else {
		n = read(it, v, sizeof(v));
		ret = n == (ssize_t)sizeof(v) ? 0 : n < 0 ? -errno : -ENOENT;
		close(it);
	}
	close(link);
	if (!ret)
		*out = (struct sk_errs){ v[0], v[1] };
	return ret;
}

int sk_errs_peek(int fd, struct sk_errs *out)
{
	struct sk_err_layout l;
	int ret = find_layout(&l), prog;

	if (ret)
		return ret;
	prog = load_prog(&l, fd);
	if (prog < 0)
		return prog;
	ret = run_iter(prog, out);
	close(prog);
	return ret;
}
