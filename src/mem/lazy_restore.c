/*
 * memdump restore --lazy-pages, memdump's side (lazy.h). Private anonymous
 * VMAs with dumped pages are mapped by the blob but not filled: it registers
 * them with a userfaultfd and sends that over a socket to the page handler
 * (lazy_handler.c), a process memdump forks before the restored processes,
 * so that it serves their first touch of that memory wherever it happens
 * (in the blob too: the kernel writes the rseq area there).
 *
 * Lazy: MAP_PRIVATE anonymous, readable and writable, not mlocked (mlock
 * populates), no guard pages, not MADV_WIPEONFORK (a child's copy must read
 * zeros, while the handler would give the child the dumped pages still to
 * come). Everything else (shared memory, memfds, file
 * mappings' private copies, read-only or PROT_NONE anonymous memory) is
 * filled by the blob before the process runs, as without --lazy-pages.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "common.h"
#include "fdio.h"
#include "log.h"
#include "ctx/restore_ctx.h"
#include "image/verify.h"
#include "mem/lazy.h"
#include "vma_status.h"

static bool vma_lazy(const struct rst_vma *v)
{
	return v->how == RST_MAP_ANON && (v->flags & MAP_PRIVATE) && v->nr_runs &&
	       !(v->flags & VMA_MAP_HUGETLB) &&	/* the handler copies 4 KiB pages */
	       (v->prot & (PROT_READ | PROT_WRITE)) == (PROT_READ | PROT_WRITE) &&
	       !v->locked && !v->nr_guards && !(v->madv & (1UL << MADV_WIPEONFORK));
}

bool lazy_check_late(void)
{
	const char *c = getenv("MEMDUMP_LAZY_CHECK");

	return c && !strcmp(c, "late");
}

bool lazy_check_first(void)
{
	const char *c = getenv("MEMDUMP_LAZY_CHECK");

	return c && !strcmp(c, "first");
}

/*
 * The handler checks each block of r's lazy runs as it serves it (the set has
 * block marks, of blocks small enough that a piece's blocks fit its buffer,
 * LAZY_BUF: 64 pages and two blocks).
 */
#define LAZY_BLOCK_SHIFT_MAX	19

static bool check_served(const struct rst *r)
{
	return r->ds.pages_sums_deferred && r->ds.block_shift &&
	       r->ds.block_shift <= LAZY_BLOCK_SHIFT_MAX && !r->lazy_remote &&
	       !lazy_check_late() && !lazy_check_first();
}

/* A lazy run the handler can check: of pages-1.img, with its checksum. */
static bool run_checkable(const struct rst *r, const struct dump_run *run)
{
	return run->present && run->has_sum && run->fd == r->ds.pages_fd;
}

/*
 * The blob reads no lazy run, so takes no checksum of it: the handler does
 * (lazy_check_late()), and the parked check (pagecheck_restore.c) finds the
 * dumped checksum in its place. A lazy run the handler cannot check (a
 * chain's, one without a checksum): the image is checked whole, now.
 */
static int plan_chain_checks(struct rst *r, const struct rst_vma *rv);

static int plan_checks(struct rst *r, const struct rst_vma *rv)
{
	struct rst_run *rr = (struct rst_run *)(r->area + r->a->runs_off);
	bool all = true;

	if (r->ds.chain_late)
		return plan_chain_checks(r, rv);
	if (!r->ds.pages_sums_deferred)
		return 0;
	for (size_t i = 0; i < r->a->nr_vmas; i++)
		for (size_t k = rv[i].first_run; rv[i].lazy && k < rv[i].first_run + rv[i].nr_runs; k++)
			all = all && run_checkable(r, &r->ds.runs[k]);
	/* not late: each block as it is served, or all before anything runs */
	all = all && (lazy_check_late() || check_served(r));
	if (!all) {
		r->ds.pages_sums_deferred = false;
		return imgset_verify_pages(r->ds.inv, "pages-1.img", r->ds.pages_fd, r->ds.runs,
					   r->ds.nr_runs);
	}
	for (size_t i = 0; i < r->a->nr_vmas; i++)
		for (size_t k = rv[i].first_run; rv[i].lazy && k < rv[i].first_run + rv[i].nr_runs; k++)
			rr[k].sum = r->ds.runs[k].sum;
	return 0;
}

/* Set `level` of r's chain: r's own (0), its parent (1), ... */
static struct dumpset *chain_set(struct rst *r, size_t level)
{
	return level ? r->ds.chain[level - 1] : &r->ds;
}

/*
 * A chain's (dumpset.h, chain_late): which runs of its sets' pages images
 * its runs are pieces of, and how each is used: in a lazy VMA only, the
 * handler checks it whole (once, however many pieces of it are used); read
 * before anything runs (by the blob), it is checked whole now. The runs of
 * the source's pages-1.img (migrate --lazy-pages) are lazy_remote.c's.
 */
static void mark_chain_uses(struct rst *r, const struct rst_vma *rv)
{
	for (size_t i = 0; i < r->a->nr_vmas; i++)
		for (size_t k = rv[i].first_run; k < rv[i].first_run + rv[i].nr_runs; k++) {
			const struct dump_run *run = &r->ds.runs[k];
			struct dumpset *set;
			struct dump_run *w;
			size_t level;

			if (r->ds.pages_remote && run->fd == r->ds.pages_fd)
				continue;
			w = dumpset_whole_run(&r->ds, run, &set, &level);
			if (w && set->pages_late)
				w->lazy_use |= rv[i].lazy ? DUMP_RUN_USED_LAZY : DUMP_RUN_USED_EARLY;
		}
}

/* A run of set's own pages image (the set's runs list the pieces of its parents' too). */
static bool own_run(const struct dumpset *set, const struct dump_run *w)
{
	return w->present && !w->tparent && w->has_sum && w->fd == set->pages_fd;
}

static int plan_chain_checks(struct rst *r, const struct rst_vma *rv)
{
	uint64_t early = 0, late = 0;
	char name[96];

	mark_chain_uses(r, rv);
	for (size_t level = 0; level <= r->ds.nr_chain; level++) {
		struct dumpset *set = chain_set(r, level);

		if (!set->pages_late)
			continue;
		dumpset_chain_pages_name(set, level, name, sizeof(name));
		for (size_t k = 0; k < set->nr_runs; k++) {
			struct dump_run *w = &set->runs[k];
			uint64_t pages = (w->end - w->start) / PAGE_SIZE;
			int ret;

			if (!own_run(set, w))
				continue;
			if (w->lazy_use & DUMP_RUN_USED_EARLY) {
				ret = imgset_verify_run(name, set->pages_fd, w);
				if (ret)
					return ret;
				w->lazy_use = 0;	/* checked */
				early += pages;
			} else if (w->lazy_use) {
				late += pages;
			}
		}
	}
	pr_info("lazy-pages: the chain's runs: %" PRIu64 " pages checked before anything runs, %"
		PRIu64 " left to the page handler", early, late);
	return 0;
}

int lazy_plan(struct rst *r)
{
	struct rst_vma *rv = (struct rst_vma *)(r->area + r->a->vmas_off);
	int sv[2], idx, ret;

	r->a->lazy_sock = -1;
	if (!r->o->lazy)
		return 0;
	for (size_t i = 0; i < r->a->nr_vmas; i++)
		rv[i].lazy = vma_lazy(&rv[i]);
	ret = plan_checks(r, rv) ?: lazy_remote_plan(r);
	if (ret)
		return ret;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return fail(-errno, "cannot make the socket for the page handler: %s",
			    strerror(errno));
	idx = add_blob_fd(r, sv[0]);
	if (idx < 0) {
		close(sv[0]);
		close(sv[1]);
		return idx;
	}
	r->a->lazy_sock = idx;
	r->lazy_peer = sv[1];
	return 0;
}

/*
 * The handler's pages images: every fd the runs name, read into one buffer
 * whose pages stay mapped (a read into it is a copy from the page cache; a
 * mapping of the image would pay a page-table entry per new page, ~12 us
 * each on this VM, on top of the one UFFDIO_COPY pays in the process).
 */
#define LAZY_BUF	(2UL << 20)

#define LAZY_IMAGES	72

struct images {
	int fd[LAZY_IMAGES];
	unsigned int nr;
	uint8_t *buf;
	/* migrate --lazy-pages: image i's bytes from the source (each process's own set) */
	struct lazy_remote *remote[LAZY_IMAGES];
};

static int image_index(struct images *im, int fd)
{
	for (unsigned int i = 0; i < im->nr; i++)
		if (im->fd[i] == fd)
			return (int)i;
	if (im->nr == sizeof(im->fd) / sizeof(im->fd[0]))
		return -E2BIG;
	im->fd[im->nr] = fd;
	return (int)im->nr++;
}

static int image_buffer(struct images *im)
{
	im->buf = mmap(NULL, LAZY_BUF, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (im->buf == MAP_FAILED)
		return -errno;
	for (unsigned int i = 0; i < im->nr; i++)
		posix_fadvise(im->fd[i], 0, 0, POSIX_FADV_SEQUENTIAL);
	return 0;
}

static const void *image_get(struct lazy_source *s, unsigned int img, uint64_t off, size_t len)
{
	const struct images *im = s->priv;
	size_t got = 0;

	s->why = NULL;
	if (img >= im->nr || len > LAZY_BUF)
		return NULL;
	if (im->remote[img] && lazy_remote_fetch(im->remote[img], off, len)) {
		s->why = lazy_remote_why(im->remote[img]);
		return NULL;
	}
	while (got < len) {
		ssize_t n = pread(im->fd[img], im->buf + got, len - got, (off_t)(off + got));

		if (n <= 0)
			return NULL;	/* shorter than its pagemap says: damaged since */
		got += (size_t)n;
	}
	return im->buf;
}

/* THP "always": any anonymous VMA may have huge pages; "madvise": MADV_HUGEPAGE ones. */
static bool thp_always(void)
{
	char buf[128] = "";
	int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, buf, sizeof(buf) - 1) < 0)
			buf[0] = 0;
		close(fd);
	}
	return strstr(buf, "[always]") != NULL;
}

/*
 * Where the original could have huge pages, the handler collapses each 2 MiB
 * it fills whole into one: a MADV_HUGEPAGE VMA, or any but MADV_NOHUGEPAGE
 * ones when THP is "always"; never with PR_SET_THP_DISABLE. (Not everywhere,
 * as the eager fill does: a collapse holds the process's mmap lock, its
 * faults wait, and it costs more than the 4 KiB copies it replaces.)
 */
static bool vma_huge(const struct rst_vma *v, bool always, bool disabled)
{
	if (disabled || (v->madv & (1UL << MADV_NOHUGEPAGE)))
		return false;
	return always || (v->madv & (1UL << MADV_HUGEPAGE));
}

/* The lazy VMAs of r, with where each page's bytes are. */
static int build_segs(struct rst *r, struct images *im, struct lazy_proc *p)
{
	bool always = thp_always(), chain = dumpset_has_parent_pages(&r->ds);

	const struct rst_vma *rv = (const struct rst_vma *)(r->area + r->a->vmas_off);
	const struct dump_run *runs = r->ds.runs;

	p->pid = r->pid;
	p->sock = r->lazy_peer;
	p->segs = calloc(r->a->nr_vmas + 1, sizeof(*p->segs));
	if (!p->segs)
		return -ENOMEM;
	for (size_t i = 0; i < r->a->nr_vmas; i++) {
		const struct rst_vma *v = &rv[i];
		struct lazy_seg *s = &p->segs[p->nr_segs];
		size_t n = (v->end - v->start) / PAGE_SIZE;

		if (!v->lazy)
			continue;
		s->start = v->start;
		s->end = v->end;
		s->huge = vma_huge(v, always, r->a->thp_disabled);
		s->pg = malloc(n * sizeof(*s->pg));
		if (!s->pg)
			return -ENOMEM;
		memset(s->pg, 0xff, n * sizeof(*s->pg));	/* LAZY_NONE */
		for (size_t k = v->first_run; k < v->first_run + v->nr_runs; k++) {
			int img = image_index(im, runs[k].fd);
			/* a chain's pages written since its last pre-dump: filled first */
			uint64_t hot = chain && dumpset_run_hot(&r->ds, k) ? LAZY_HOT : 0;

			if (img < 0)
				return img;
			for (uint64_t a = runs[k].start; a < runs[k].end; a += PAGE_SIZE)
				s->pg[(a - v->start) / PAGE_SIZE] = hot |
					LAZY_PAGE(img, runs[k].off + (a - runs[k].start));
			p->hot_pages += hot ? (runs[k].end - runs[k].start) / PAGE_SIZE : 0;
		}
		p->nr_segs++;
	}
	return 0;
}

/* A chain's runs the handler checks whole (plan_chain_checks()), after those of build_checks(). */
static int build_chain_checks(struct rst *r, struct images *im, struct lazy_proc *p)
{
	for (size_t level = 0; r->ds.chain_late && level <= r->ds.nr_chain; level++) {
		struct dumpset *set = chain_set(r, level);
		char *name = set->pages_late ? malloc(96) : NULL;	/* the handler's till it exits */
		int img;

		if (!set->pages_late)
			continue;
		if (!name)
			return -ENOMEM;
		dumpset_chain_pages_name(set, level, name, 96);
		for (size_t k = 0; k < set->nr_runs; k++) {
			const struct dump_run *w = &set->runs[k];

			if (!own_run(set, w) || w->lazy_use != DUMP_RUN_USED_LAZY)
				continue;
			img = image_index(im, set->pages_fd);
			if (img < 0)
				return img;
			p->checks[p->nr_checks++] = (struct lazy_check){ (unsigned int)img, w->off,
				w->end - w->start, w->sum, w->start, false, name, NULL, 0, 0 };
		}
	}
	return 0;
}

/* The lazy runs whose blocks the handler checks as it serves them (check_served()). */
static int build_blocks(struct rst *r, struct images *im, struct lazy_proc *p)
{
	const struct rst_vma *rv = (const struct rst_vma *)(r->area + r->a->vmas_off);
	const struct dump_run *runs = r->ds.runs;

	p->blocks = calloc(r->ds.nr_runs + 1, sizeof(*p->blocks));
	if (!p->blocks)
		return -ENOMEM;
	for (size_t i = 0; i < r->a->nr_vmas; i++) {
		for (size_t k = rv[i].first_run; rv[i].lazy && k < rv[i].first_run + rv[i].nr_runs; k++) {
			int img = image_index(im, runs[k].fd);

			if (img < 0)
				return img;
			p->blocks[p->nr_blocks++] = (struct lazy_check){ (unsigned int)img,
				runs[k].off, runs[k].end - runs[k].start, runs[k].sum,
				runs[k].start, false, "pages-1.img",
				r->ds.marks + runs[k].marks_at, runs[k].nr_marks,
				r->ds.block_shift };
		}
	}
	pr_debug("lazy-pages: %d: %zu runs checked block by block as served", r->pid, p->nr_blocks);
	return 0;
}

/* The lazy runs whose checksums the handler takes (plan_checks()). */
static int build_checks(struct rst *r, struct images *im, struct lazy_proc *p)
{
	const struct rst_vma *rv = (const struct rst_vma *)(r->area + r->a->vmas_off);
	const struct dump_run *runs = r->ds.runs;
	size_t cap = r->ds.nr_runs + 1;

	if (r->ds.pages_sums_deferred && check_served(r))
		return build_blocks(r, im, p);
	if (!r->ds.pages_sums_deferred && !r->lazy_remote && !r->ds.chain_late)
		return 0;
	for (size_t level = 1; r->ds.chain_late && level <= r->ds.nr_chain; level++)
		cap += chain_set(r, level)->nr_runs;
	p->checks = calloc(cap, sizeof(*p->checks));
	if (!p->checks)
		return -ENOMEM;
	for (size_t i = 0; (r->ds.pages_sums_deferred || r->lazy_remote) && i < r->a->nr_vmas; i++) {
		for (size_t k = rv[i].first_run; rv[i].lazy && k < rv[i].first_run + rv[i].nr_runs; k++) {
			int img;

			if (r->lazy_remote && (!runs[k].present || runs[k].fd != r->ds.pages_fd))
				continue;	/* only the source's bytes: fetched as checked */
			img = image_index(im, runs[k].fd);
			if (img < 0)
				return img;
			p->checks[p->nr_checks++] = (struct lazy_check){ (unsigned int)img, runs[k].off,
				runs[k].end - runs[k].start, runs[k].sum, runs[k].start,
				!runs[k].has_sum, "pages-1.img", NULL, 0, 0 };
		}
	}
	return build_chain_checks(r, im, p);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/*
 * Nothing of memdump's fds but what the handler needs: the sockets, the
 * pages images and the log; no copy of a restored process's pipe or socket
 * may outlive memdump here. stdin and stdout on /dev/null (a caller reading
 * memdump's output to its end must not wait for the handler).
 */
static void keep_only(struct lazy_proc *procs, size_t n, const struct images *im, int daemon)
{
	int keep[n + 3 * im->nr + 7], nk = 0, nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	int from = 3, rfd[2];

	if (nul >= 0) {
		dup2(nul, 0);
		dup2(nul, 1);
		close(nul);
	}
	for (size_t i = 0; i < n; i++)
		keep[nk++] = procs[i].sock;
	for (unsigned int i = 0; i < im->nr; i++) {
		keep[nk++] = im->fd[i];
		lazy_remote_fds(im->remote[i], rfd);
		for (int k = 0; k < 2; k++)
			if (rfd[k] >= 0)
				keep[nk++] = rfd[k];
	}
	if (log_fileno() >= 0)
		keep[nk++] = log_fileno();
	if (daemon >= 0)
		keep[nk++] = daemon;
	qsort(keep, nk, sizeof(int), cmp_int);
	for (int i = 0; i < nk; i++) {
		if (keep[i] > from)
			syscall(SYS_close_range, from, keep[i] - 1, 0);
		if (keep[i] >= from)
			from = keep[i] + 1;
	}
	syscall(SYS_close_range, from, ~0U, 0);
}

static void handler_signals(void)
{
	sigset_t none;

	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* migrate --lazy-pages: which of the images r's is, fetched from the source. */
static int remote_image(struct rst *r, struct images *im)
{
	int img;

	if (!r->lazy_remote)
		return 0;
	img = image_index(im, r->ds.pages_fd);
	if (img < 0)
		return img;
	im->remote[img] = r->lazy_remote;
	return 0;
}

/*
 * migrate-receive's restore: the handler logs to MEMDUMP_LAZY_LOG_FD (the
 * receiver's own stderr) instead of the restore's stderr, a pipe whose
 * reader may be gone while the handler still has something to say.
 */
static void handler_log(void)
{
	const char *s = getenv("MEMDUMP_LAZY_LOG_FD");
	int fd = s ? atoi(s) : -1;

	if (fd > 2 && dup2(fd, STDERR_FILENO) == STDERR_FILENO)
		close(fd);
	unsetenv("MEMDUMP_LAZY_LOG_FD");
}

/* The daemon's GREET within LAZY_DAEMON_GREET_MS. */
static bool greeted(int fd, bool *remote)
{
	struct pollfd p = { fd, POLLIN, 0 };
	struct lazy_daemon_msg m;

	if (poll(&p, 1, LAZY_DAEMON_GREET_MS) != 1 || read(fd, &m, sizeof(m)) != sizeof(m) ||
	    m.magic != LAZY_DAEMON_MAGIC || m.kind != LAZY_DAEMON_GREET || m.len)
		return false;
	*remote = m.value == 1;
	return true;
}

int lazy_daemon_connect(const char *path, bool *remote)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return fail(-ENAMETOOLONG, "the lazy-pages daemon's socket %s: name too long", path);
	if (lstat(path, &st))
		return fail(-errno, "no lazy-pages daemon at %s: %s", path, strerror(errno));
	if (!S_ISSOCK(st.st_mode))
		return fail(-ENOTSOCK, "the lazy-pages daemon's socket %s is not a socket", path);
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(-errno, "cannot make a socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		int err = errno;

		close(fd);
		return fail(-err, "cannot reach the lazy-pages daemon at %s: %s", path,
			    strerror(err));
	}
	if (!greeted(fd, remote)) {
		close(fd);
		return fail(-EPROTO, "the lazy-pages daemon at %s is not memdump's (no greeting "
			    "in %d s)", path, LAZY_DAEMON_GREET_MS / 1000);
	}
	return fd;
}

int lazy_daemon_send(int fd, enum lazy_daemon_kind kind, int value, const char *text)
{
	size_t len = text ? MIN(strlen(text), (size_t)LAZY_DAEMON_TEXT) : 0;
	struct lazy_daemon_msg m = { LAZY_DAEMON_MAGIC, kind, value, (uint32_t)len };

	return fd_write_full(fd, &m, sizeof(m)) ?: (len ? fd_write_full(fd, text, len) : 0);
}

/* The daemon (if any) told how the handler ended; its exit status. */
static int __attribute__((noreturn)) handler_exit(int daemon, int status, const char *why)
{
	if (daemon >= 0)
		lazy_daemon_send(daemon, LAZY_DAEMON_DONE, status, why);
	_exit(status);
}

static int __attribute__((noreturn)) handler_main(struct rst *const *all, size_t n, int daemon)
{
	static struct images im;
	struct lazy_proc *procs = calloc(n, sizeof(*procs));
	struct lazy_source src = { image_get, &im, NULL };
	char why[300];
	int ret = procs ? 0 : -ENOMEM;

	handler_signals();
	setsid();	/* not in memdump's process group: a ^C of memdump leaves it serving */
	handler_log();
	if (daemon >= 0)
		lazy_daemon_send(daemon, LAZY_DAEMON_HELLO, getpid(), NULL);
	for (size_t i = 0; i < n && !ret; i++)
		ret = build_segs(all[i], &im, &procs[i]) ?: build_checks(all[i], &im, &procs[i]) ?:
		      remote_image(all[i], &im);
	if (!ret) {
		keep_only(procs, n, &im, daemon);
		ret = image_buffer(&im);
	}
	if (ret) {
		snprintf(why, sizeof(why), "cannot start the page handler: %s", strerror(-ret));
		pr_err("lazy-pages: %s", why);
		handler_exit(daemon, 1, why);
	}
	ret = lazy_handler_run(procs, n, &src);
	handler_exit(daemon, ret, ret ? "the page handler failed: the restore's log says why" :
			 "every page is in");
}

int lazy_start(struct rst *const *all, size_t n)
{
	int daemon;
	pid_t pid;

	if (!n || !all[0]->o->lazy)
		return 0;
	daemon = all[0]->o->lazy_daemon - 1;
	pid = fork();
	if (pid < 0)
		return fail(-errno, "cannot start the page handler: %s", strerror(errno));
	if (pid == 0)
		handler_main(all, n, daemon);
	pr_info("lazy-pages: page handler %d", pid);
	if (daemon >= 0)
		pr_info("lazy-pages: the handler reports to the lazy-pages daemon");
	for (size_t i = 0; i < n; i++) {
		close(all[i]->lazy_peer);
		all[i]->lazy_peer = -1;
		lazy_remote_free(all[i]->lazy_remote);	/* the handler's now */
		all[i]->lazy_remote = NULL;
	}
	return 0;
}
