/* memdump show: what an image set holds, as a table or as one JSON object. */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common.h"
#include "image/dumpset.h"
#include "log.h"
#include "cli/options.h"
#include "files/fd_kinds.h"
#include "ns/ns_show.h"
#include "files/tty_show.h"
#include "evloop/evloop_show.h"
#include "vma_status.h"

/* One VMA, one fd, as both printers need them. */
struct vma_row {
	uint64_t start, end, pages;
	char prot[5];
	char kind[96];
	const char *name;
	uint32_t status;
};

struct fd_row {
	uint32_t fd;
	const char *type;
	char path[4096];
	char flags[128];
	uint64_t pos;
	bool has_pos;
	uint32_t share_pid, share_fd;	/* the description of share_fd of process share_pid */
};

struct totals {
	size_t vmas;
	uint64_t pages;
	uint64_t bytes;
};

/* ---- building rows ---- */

static void prot_str(const VmaEntry *v, char *buf)
{
	buf[0] = v->prot & PROT_READ ? 'r' : '-';
	buf[1] = v->prot & PROT_WRITE ? 'w' : '-';
	buf[2] = v->prot & PROT_EXEC ? 'x' : '-';
	buf[3] = v->flags & MAP_SHARED ? 's' : 'p';
	buf[4] = 0;
}

static void kind_str(uint32_t status, char *buf, size_t len)
{
	static const struct { uint32_t bit; const char *name; } kinds[] = {
		{ VMA_ANON_PRIVATE, "anon-private" }, { VMA_ANON_SHARED, "anon-shared" },
		{ VMA_FILE_PRIVATE, "file-private" }, { VMA_FILE_SHARED, "file-shared" },
		{ VMA_AREA_MEMFD, "memfd" }, { VMA_AREA_HEAP, "heap" },
		{ VMA_AREA_STACK, "stack" }, { VMA_AREA_VDSO, "vdso" },
		{ VMA_AREA_VVAR, "vvar" }, { VMA_AREA_VSYSCALL, "vsyscall" },
		{ VMA_AREA_SYSVIPC, "sysv-shm" },
	};
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
		if ((status & kinds[i].bit) && n < len)
			n += snprintf(buf + n, len - n, "%s%s", n ? "," : "", kinds[i].name);
	if (!(status & VMA_AREA_REGULAR) && n < len)
		snprintf(buf + n, len - n, "%s", n ? ",not-dumped" : "not-dumped");
}

static const char *vma_name(const struct dumpset *ds, const VmaEntry *v)
{
	const char *path;

	if (v->name && v->name[0])
		return v->name;
	if (!(v->status & (VMA_FILE_PRIVATE | VMA_FILE_SHARED | VMA_AREA_MEMFD)))
		return "";
	path = dumpset_file_path(dumpset_file(ds, v->shmid));
	return path ? path : "";
}

static void vma_row(const struct dumpset *ds, const VmaEntry *v, struct vma_row *r)
{
	r->start = v->start;
	r->end = v->end;
	r->status = v->status;
	r->pages = dumpset_vma_pages(ds, v);
	r->name = vma_name(ds, v);
	prot_str(v, r->prot);
	kind_str(v->status, r->kind, sizeof(r->kind));
}

static void open_flags_str(uint32_t flags, bool cloexec, char *buf, size_t len)
{
	static const char *acc[] = { "rdonly", "wronly", "rdwr", "acc3" };
	static const struct { uint32_t bit; const char *name; } bits[] = {
		{ O_APPEND, "append" }, { O_NONBLOCK, "nonblock" }, { O_DIRECT, "direct" },
		{ O_SYNC, "sync" }, { O_NOATIME, "noatime" }, { O_PATH, "path" },
	};
	size_t n = snprintf(buf, len, "%s", acc[flags & O_ACCMODE]);

	for (size_t i = 0; i < ARRAY_SIZE(bits) && n < len; i++)
		if ((flags & bits[i].bit) == bits[i].bit)
			n += snprintf(buf + n, len - n, ",%s", bits[i].name);
	if (cloexec && n < len)
		snprintf(buf + n, len - n, ",cloexec");
}

static const char *fd_type_name(int type)
{
	const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(&fd_types__descriptor,
									   type);

	return v ? v->name : "?";
}

/* Path, flags and position of the open file behind one fd (its kind's show). */
static void fd_file(const struct dumpset *ds, const FileEntry *fe, bool cloexec,
		    struct fd_row *r)
{
	const struct fd_kind *k = fd_kind_of_entry(fe);
	struct fd_show s = { .path = "" };

	if (k)
		k->show(ds, fe, &s);
	else
		snprintf(s.path, sizeof(s.path), "(file %u: a kind memdump does not know)", fe->id);
	snprintf(r->path, sizeof(r->path), "%s", s.path);
	r->pos = s.pos;
	r->has_pos = s.has_pos;
	open_flags_str(s.flags, cloexec, r->flags, sizeof(r->flags));
}

static void fd_row(const struct dumpset *ds, const FdinfoEntry *fi, struct fd_row *r)
{
	const FileEntry *fe = dumpset_file(ds, fi->id);

	memset(r, 0, sizeof(*r));
	r->fd = fi->fd;
	r->type = fd_type_name(fi->type);
	if (fe)
		fd_file(ds, fe, fi->flags & FD_CLOEXEC, r);
	else
		snprintf(r->path, sizeof(r->path), "(file %u not in files.img)", fi->id);
	if (fi->has_share_pid) {	/* a tree's process: restore takes that description */
		r->share_pid = fi->share_pid;
		r->share_fd = fi->share_fd;
	}
}

static uint64_t run_pages(const struct dump_run *runs, size_t nr)
{
	return runs_pages_in(runs, nr, 0, UINT64_MAX);
}

/* Pages of the process's pagemap and of each shared object, once. */
static void count_totals(const struct dumpset *ds, struct totals *t)
{
	t->vmas = ds->mm->n_vmas;
	t->pages = run_pages(ds->runs, ds->nr_runs);
	for (size_t i = 0; i < ds->nr_shmems; i++)
		t->pages += run_pages(ds->shmems[i].runs, ds->shmems[i].nr_runs);
	t->bytes = t->pages * PAGE_SIZE;
}

static const char *fs_path(const struct dumpset *ds, uint32_t id)
{
	const char *p = dumpset_file_path(dumpset_file(ds, id));

	return p ? p : "?";
}

static uint64_t bytes_written(const DumpStatsEntry *d)
{
	return d->has_bytes_written ? d->bytes_written : d->pages_written * PAGE_SIZE;
}

/* MB/s (10^6 bytes/s) over us microseconds: bytes per microsecond. */
static double rate(const DumpStatsEntry *d, uint32_t us)
{
	return us ? (double)bytes_written(d) / us : 0;
}

/* ---- the table ---- */

static void human(uint64_t bytes, char *buf, size_t len)
{
	static const char units[] = "KMGTP";
	double v = bytes / 1024.0;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, v < 10 ? "%.1f%c" : "%.0f%c", v, units[u]);
}

/* POSIX timers: id, clock, how they notify, time left and interval. */
static void text_ptimers(const struct dumpset *ds)
{
	const CoreEntry *c = ds->nr_cores ? ds->cores[0] : NULL;
	const TaskTimersEntry *tt = c && c->tc ? c->tc->timers : NULL;

	for (size_t i = 0; tt && i < tt->n_posix; i++) {
		const PosixTimerEntry *e = tt->posix[i];
		const char *how = e->it_sigev_notify == 1 ? "none" : e->it_sigev_notify == 4 ?
				  "signal to thread" : "signal";

		printf("%-10s id %u clock %u, %s %u", i ? "" : "timers", e->it_id, e->clock_id, how,
		       e->si_signo);
		if (e->has_notify_thread_id)
			printf(" (tid %d)", e->notify_thread_id);
		if (e->vsec || e->vnsec)
			printf(", in %" PRIu64 ".%09" PRIu64 " s every %" PRIu64 ".%09" PRIu64 " s\n",
			       e->vsec, e->vnsec, e->isec, e->insec);
		else
			printf(", disarmed\n");
	}
}

/* File locks: kind, mode, fd and range. */
static void text_locks(const struct dumpset *ds)
{
	for (size_t i = 0; i < ds->nr_locks; i++) {
		const FileLockEntry *l = ds->locks[i];

		bool breaking = l->flag == 8 && (l->type & 4);	/* a lease, LEASE_BREAKING */
		uint32_t type = breaking ? (l->has_lease_held ? l->lease_held : 3) : l->type;

		printf("%-10s fd %d %s %s", i ? "" : "locks", l->fd, l->flag == 1 ? "POSIX" :
		       l->flag == 2 ? "flock" : l->flag == 8 ? "lease" : "OFD",
		       type == 0 ? "read" : type == 1 ? "write" : "of the fd's mode");
		if (breaking)	/* to its target */
			printf(", being broken to %s", (l->type & ~4u) == 0 ? "read" : "unlock");
		else if (l->flag == 2 || l->flag == 8)
			;	/* flock and lease: the whole file */
		else if (l->len)
			printf(" from %" PRId64 " for %" PRId64 " bytes", l->start, l->len);
		else
			printf(" from %" PRId64 " to EOF", l->start);
		printf("\n");
	}
}

/* pstree.img's entries after the process: its zombie children. */
static void text_zombies(const struct dumpset *ds)
{
	for (size_t i = 1; i < ds->nr_procs; i++) {
		const TaskCoreEntry *tc = ds->zombie_cores[i - 1]->tc;
		int st = (int)tc->exit_code;

		printf("zombie     %u \"%s\"  ", ds->procs[i]->pid, tc->comm);
		if (WIFSIGNALED(st))
			printf("killed by signal %d\n", WTERMSIG(st));
		else
			printf("exit status %d\n", WEXITSTATUS(st));
	}
}

/* mm_entry.mlock_future (MCL_FUTURE 2, MCL_ONFAULT 4) as mlockall's flags, or NULL */
static const char *mlock_future(const struct dumpset *ds)
{
	if (!ds->mm || !ds->mm->has_mlock_future || !ds->mm->mlock_future)
		return NULL;
	return ds->mm->mlock_future & 4 ? "MCL_FUTURE|MCL_ONFAULT" : "MCL_FUTURE";
}

static void text_process(const struct dumpset *ds, const char *dir)
{
	const PstreeEntry *p = ds->pstree;
	const InventoryEntry *inv = ds->inv;

	printf("image set  %s (%s, kernel %s)\n", dir, inv->tool ? inv->tool : "?",
	       inv->kernel ? inv->kernel : "?");
	printf("process    %u \"%s\"  ppid %u  pgid %u  sid %u\n", p->pid, dumpset_comm(ds),
	       p->ppid, p->pgid, p->sid);
	printf("threads    %zu:", p->n_threads);
	for (size_t i = 0; i < p->n_threads; i++)
		printf(" %u", p->threads[i]);
	printf("\n");
	text_zombies(ds);
	for (size_t i = 0; i < ds->nr_members; i++)	/* a tree's other processes */
		printf("process    %u  ppid %u  pgid %u  sid %u  %zu thread(s)  (in %s/proc-%u)\n",
		       ds->members[i]->pid, ds->members[i]->ppid, ds->members[i]->pgid,
		       ds->members[i]->sid, ds->members[i]->n_threads, dir, ds->members[i]->pid);
	if (ds->fs)
		printf("cwd        %s  root %s\n", fs_path(ds, ds->fs->cwd_id),
		       fs_path(ds, ds->fs->root_id));
	if (mlock_future(ds))
		printf("mlockall   %s: every new mapping locked\n", mlock_future(ds));
	if (ds->mm && ds->mm->uffd) {
		char buf[1024];

		show_uffd(ds->mm->uffd, buf, sizeof(buf));
		printf("userfaultfd %s\n", buf);
	}
	for (size_t i = 0; ds->mm && i < ds->mm->n_iourings; i++) {
		char buf[1024];

		show_iouring(ds->mm->iourings[i], buf, sizeof(buf));
		printf("io_uring   %s\n", buf);
	}
	text_ptimers(ds);
	text_locks(ds);
	show_namespaces(ds);
	show_ttys(ds);
}

static void text_vmas(const struct dumpset *ds)
{
	struct vma_row r;
	char size[16];

	printf("\n%-33s %7s %-4s  %-24s %8s  %s\n", "VMA", "SIZE", "PROT", "KIND", "PAGES",
	       "NAME");
	for (size_t i = 0; i < ds->mm->n_vmas; i++) {
		vma_row(ds, ds->mm->vmas[i], &r);
		human(r.end - r.start, size, sizeof(size));
		printf("%016" PRIx64 "-%016" PRIx64 " %7s %-4s  %-24s %8" PRIu64 "  %s\n",
		       r.start, r.end, size, r.prot, r.kind, r.pages, r.name);
	}
}

static void text_fds(const struct dumpset *ds)
{
	struct fd_row r;

	printf("\n%4s  %-9s %-24s %10s  %s\n", "FD", "TYPE", "FLAGS", "POS", "PATH");
	for (size_t i = 0; i < ds->nr_fds; i++) {
		fd_row(ds, ds->fds[i], &r);
		if (r.has_pos)
			printf("%4u  %-9s %-24s %10" PRIu64 "  %s", r.fd, r.type, r.flags, r.pos,
			       r.path);
		else
			printf("%4u  %-9s %-24s %10s  %s", r.fd, r.type, r.flags, "-", r.path);
		if (r.share_pid)
			printf(" (shared with fd %u of process %u)", r.share_fd, r.share_pid);
		printf("\n");
	}
}

static void text_totals(const struct dumpset *ds)
{
	const DumpStatsEntry *d = ds->stats ? ds->stats->dump : NULL;
	struct totals t;

	count_totals(ds, &t);
	printf("\ntotal      %zu VMAs, %" PRIu64 " pages dumped, %" PRIu64 " bytes (%.1f MiB)\n",
	       t.vmas, t.pages, t.bytes, t.bytes / 1048576.0);
	if (dumpset_has_parent_pages(ds))
		printf("hot        %" PRIu64 " pages written since the parent set (a lazy restore "
		       "fills them first)\n", dumpset_hot_pages(ds));
	if (!d) {
		printf("stats      none (no stats-dump)\n");
		return;
	}
	printf("dump       mode %s, frozen %.1f ms, %.1f MB written in %.1f ms: %.0f MB/s "
	       "(%.0f MB/s over the frozen time)\n", d->mode ? d->mode : "?",
	       d->frozen_time / 1000.0, bytes_written(d) / 1e6, d->memdump_time / 1000.0,
	       rate(d, d->memdump_time), rate(d, d->frozen_time));
	printf("pages      %" PRIu64 " scanned, %" PRIu64 " written\n", d->pages_scanned,
	       d->pages_written);
}

static void show_text(const struct dumpset *ds, const char *dir)
{
	text_process(ds, dir);
	text_vmas(ds);
	text_fds(ds);
	text_totals(ds);
}

/* ---- JSON ---- */

/* Length of the well-formed UTF-8 sequence at p (2-4 bytes), 0 if none. */
static int utf8_len(const unsigned char *p)
{
	int n = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
	uint32_t cp;

	if (!n || p[0] > 0xf4)
		return 0;
	cp = p[0] & (0x7f >> n);
	for (int i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* A JSON string: quotes, backslash and controls escaped, bytes that are not UTF-8 as \u00XX. */
static void json_str(const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	int n;

	putchar('"');
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			printf("\\u%04x", *p);
		else if (*p < 0x80)
			putchar(*p);
		else if ((n = utf8_len(p)) > 0) {
			fwrite(p, 1, n, stdout);
			p += n - 1;
		} else
			printf("\\u%04x", *p);
	}
	putchar('"');
}

static void json_key_str(const char *key, const char *val, const char *after)
{
	printf("\"%s\": ", key);
	json_str(val);
	fputs(after, stdout);
}

static void json_process(const struct dumpset *ds)
{
	const PstreeEntry *p = ds->pstree;

	printf("\"process\": {\"pid\": %u, \"ppid\": %u, \"pgid\": %u, \"sid\": %u, ", p->pid,
	       p->ppid, p->pgid, p->sid);
	json_key_str("comm", dumpset_comm(ds), ", \"threads\": [");
	for (size_t i = 0; i < p->n_threads; i++)
		printf("%s%u", i ? ", " : "", p->threads[i]);
	printf("], \"zombies\": [");
	for (size_t i = 1; i < ds->nr_procs; i++) {
		printf("%s{\"pid\": %u, ", i > 1 ? ", " : "", ds->procs[i]->pid);
		json_key_str("comm", ds->zombie_cores[i - 1]->tc->comm, "");
		printf(", \"wait_status\": %u}", ds->zombie_cores[i - 1]->tc->exit_code);
	}
	printf("]");
	if (ds->fs) {
		printf(", ");
		json_key_str("cwd", fs_path(ds, ds->fs->cwd_id), ", ");
		json_key_str("root", fs_path(ds, ds->fs->root_id), "");
	}
	if (mlock_future(ds)) {
		printf(", ");
		json_key_str("mlockall", mlock_future(ds), "");
	}
	if (ds->mm && ds->mm->uffd) {
		char buf[1024];

		show_uffd(ds->mm->uffd, buf, sizeof(buf));
		printf(", ");
		json_key_str("userfaultfd", buf, "");
	}
	for (size_t i = 0; ds->mm && i < ds->mm->n_iourings; i++) {
		char buf[1024], key[32];

		show_iouring(ds->mm->iourings[i], buf, sizeof(buf));
		snprintf(key, sizeof(key), "io_uring_%zu", i);
		printf(", ");
		json_key_str(key, buf, "");
	}
	printf("},\n");
}

static void json_vma(const struct vma_row *r, bool last)
{
	printf("  {\"start\": \"0x%" PRIx64 "\", \"end\": \"0x%" PRIx64 "\", \"size\": %" PRIu64
	       ", \"prot\": \"%s\", \"status\": %u, ", r->start, r->end, r->end - r->start,
	       r->prot, r->status);
	json_key_str("kind", r->kind, ", ");
	json_key_str("name", r->name, "");
	printf(", \"pages\": %" PRIu64 "}%s\n", r->pages, last ? "" : ",");
}

static void json_vmas(const struct dumpset *ds)
{
	struct vma_row r;

	printf("\"vmas\": [\n");
	for (size_t i = 0; i < ds->mm->n_vmas; i++) {
		vma_row(ds, ds->mm->vmas[i], &r);
		json_vma(&r, i + 1 == ds->mm->n_vmas);
	}
	printf("],\n");
}

static void json_fds(const struct dumpset *ds)
{
	struct fd_row r;

	printf("\"fds\": [\n");
	for (size_t i = 0; i < ds->nr_fds; i++) {
		fd_row(ds, ds->fds[i], &r);
		printf("  {\"fd\": %u, ", r.fd);
		json_key_str("type", r.type, ", ");
		json_key_str("path", r.path, ", ");
		json_key_str("flags", r.flags, "");
		if (r.has_pos)
			printf(", \"pos\": %" PRIu64, r.pos);
		if (r.share_pid)
			printf(", \"shared_with\": {\"pid\": %u, \"fd\": %u}", r.share_pid,
			       r.share_fd);
		printf("}%s\n", i + 1 == ds->nr_fds ? "" : ",");
	}
	printf("],\n");
}

static void json_stats(const DumpStatsEntry *d)
{
	printf("\"stats\": {");
	json_key_str("mode", d->mode ? d->mode : "", ", ");
	printf("\"freezing_time_us\": %u, \"frozen_time_us\": %u, \"memdump_time_us\": %u, "
	       "\"memwrite_time_us\": %u, \"pages_scanned\": %" PRIu64 ", \"pages_written\": %"
	       PRIu64 ", \"bytes_written\": %" PRIu64 ", \"mb_per_s\": %.1f, "
	       "\"frozen_mb_per_s\": %.1f}\n",
	       d->freezing_time, d->frozen_time, d->memdump_time, d->memwrite_time,
	       d->pages_scanned, d->pages_written, bytes_written(d), rate(d, d->memdump_time),
	       rate(d, d->frozen_time));
}

static void json_totals(const struct dumpset *ds)
{
	struct totals t;

	count_totals(ds, &t);
	printf("\"totals\": {\"vmas\": %zu, \"pages\": %" PRIu64 ", \"bytes\": %" PRIu64 "},\n",
	       t.vmas, t.pages, t.bytes);
	if (ds->stats && ds->stats->dump)
		json_stats(ds->stats->dump);
	else
		printf("\"stats\": null\n");
}

static void show_json(const struct dumpset *ds, const char *dir)
{
	printf("{\n");
	json_key_str("dir", dir, ",\n");
	json_key_str("tool", ds->inv->tool, ",\n");
	json_key_str("kernel", ds->inv->kernel, ",\n");
	json_process(ds);
	json_vmas(ds);
	json_fds(ds);
	json_totals(ds);
	printf("}\n");
}

int cmd_show(const struct options *o)
{
	struct dumpset ds;
	int ret = dumpset_load(o->dir, &ds);

	if (ret)
		return ret;
	if (o->json)
		show_json(&ds, o->shown_dir ? o->shown_dir : o->dir);
	else
		show_text(&ds, o->shown_dir ? o->shown_dir : o->dir);
	dumpset_free(&ds);
	if (fflush(stdout) || ferror(stdout))
		return fail(-EIO, "cannot write to stdout: %s", strerror(errno));
	return 0;
}
