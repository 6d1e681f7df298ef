/*
 * An image set as one stream (pack.h). Layout, little-endian:
 *
 *   head    magic "MDSTRM01", u32 version (1; 2 with parents; 3 below), u32 0,
 *           u64 checksum and u64 size of the set's inventory.img
 *   entries each: u32 "MDSE", u32 index (0, 1, ...), u16 kind (1 file,
 *           2 directory, 3 end), u16 name length, u32 0, u64 size; the name;
 *           size bytes (a file's); u64 checksum of the entry (its header,
 *           name and bytes)
 *   end     kind 3, no name, size = the number of entries before it; then
 *           u64 checksum of the head and every entry's checksum, in order
 *
 * inventory.img is entry 0; the other files follow by name (strcmp), a tree's
 * set (proc-PID) as a directory entry before its files (proc-PID/NAME). The
 * inventory binds the set: unpack checks every image against it, and the
 * head names it, so a stream is of one set and entries cannot be reordered,
 * dropped, repeated or taken from another stream without it showing.
 *
 * Version 3 (a killing dump's pages streamed while frozen, mem/pages.c):
 * pages-1.img is entry 0, its checksum of its head and name only (its bytes
 * are checked against the run checksums by the verification); the others
 * follow by name, inventory.img last; the head holds a random number in
 * place of the inventory's checksum, and 0 for its size.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "common.h"
#include "cli/pack.h"
#include "image/hash.h"
#include "image/image.h"
#include "image/sendfile.h"
#include "image/streamw.h"
#include "log.h"
#include "mem/pages.h"

#define NAME_MAX_LEN	512	/* 64 levels of parent/, proc-PID/, a name */
#define LEVELS_MAX	64	/* parents of a set in a stream, at most (chain.c's) */
#define COPY_BUF	(1u << 20)

/* ---- plain I/O ---- */

static int write_full(int fd, const void *buf, size_t len)
{
	int ret = fd_write_full(fd, buf, len);

	return ret ? fail(ret, "cannot write the stream: %s", strerror(-ret)) : 0;
}

/* Interrupted by SIGINT, SIGTERM, SIGHUP (unpack cleans up): set by on_signal(). */
static volatile sig_atomic_t stream_signal;

static void on_signal(int sig)
{
	stream_signal = sig;
}

/* Exactly len bytes from the stream; what names the part read, for errors. */
static int read_full(int fd, void *buf, size_t len, const char *what)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR && !stream_signal)
			continue;
		if (n < 0 && stream_signal)
			return fail(-EINTR, "interrupted by signal %d", (int)stream_signal);
		if (n < 0)
			return fail(-errno, "cannot read the stream: %s", strerror(errno));
		if (n == 0)
			return fail(-EIO, "the stream is truncated: it ends in %s", what);
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---- the files of a set ---- */

struct set_file {
	char *name;	/* relative path: [parent/...]NAME, proc-PID, proc-PID/NAME */
	uint16_t kind;	/* E_FILE, E_DIR, E_LINK (proc-PID/parent) */
};

struct file_list {
	struct set_file *f;	/* sorted by name, inventory.img first */
	size_t nr, cap;
	bool chain;	/* with its parents: a version 2 stream */
};

static int list_add(struct file_list *l, const char *name, uint16_t kind)
{
	if (l->nr == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct set_file *n = realloc(l->f, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		l->f = n;
		l->cap = cap;
	}
	l->f[l->nr].name = strdup(name);
	if (!l->f[l->nr].name)
		return -ENOMEM;
	l->f[l->nr++].kind = kind;
	return 0;
}

static void list_free(struct file_list *l)
{
	for (size_t i = 0; i < l->nr; i++)
		free(l->f[i].name);
	free(l->f);
}

static int list_dir(int dirfd, const char *dir, const char *prefix, struct file_list *l);

/* A set's own directory in the stream: "", "parent/", "parent/parent/", ... */
static bool level_top(const char *prefix)
{
	size_t n = strlen(prefix);

	return !n || (n >= 7 && !strcmp(prefix + n - 7, "parent/"));
}

/* The set's parent (a link or a directory), listed as directory PREFIXparent. */
static int list_parent(int dirfd, const char *dir, const char *prefix, struct file_list *l)
{
	int fd = openat(dirfd, "parent", O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret;
	char path[NAME_MAX_LEN + 16];

	if (fd < 0)
		return fail(-errno, "cannot open %s/%sparent: %s", dir, prefix, strerror(errno));
	snprintf(path, sizeof(path), "%sparent", prefix);
	ret = strlen(prefix) / 7 >= LEVELS_MAX ?
		fail(-ELOOP, "%s: more than %d parents to stream", dir, LEVELS_MAX) :
		list_add(l, path, E_DIR);
	if (!ret) {
		l->chain = true;
		strcat(path, "/");
		ret = list_dir(fd, dir, path, l);
	}
	close(fd);
	return ret;
}

/*
 * A tree's process set's link to its own set in the parent (prefix
 * "[parent/...]proc-PID/"): streamed as a link entry, made again as
 * ../parent/proc-PID; one leading anywhere else is not streamed.
 */
static int list_subset_link(int dirfd, const char *dir, const char *prefix, const char *path,
			    struct file_list *l)
{
	const char *sub = strrchr(prefix, '/'), *start = sub;
	char there[NAME_MAX_LEN + 16];
	struct stat a, b;

	while (start > prefix && start[-1] != '/')
		start--;
	snprintf(there, sizeof(there), "../parent/%.*s", (int)(sub - start), start);
	if (fstatat(dirfd, "parent", &a, 0) || fstatat(dirfd, there, &b, 0) ||
	    a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return fail(-EOPNOTSUPP, "%s/%s does not link the parent set's %.*s: not streamed",
			    dir, path, (int)(sub - start), start);
	return list_add(l, path, E_LINK);
}

/* One entry of a set's directory (or of a tree's set in it, prefix "proc-PID/"). */
static int list_one(int dirfd, const char *dir, const char *prefix, const char *name,
		    struct file_list *l)
{
	char path[NAME_MAX_LEN + 64];
	struct stat st;
	unsigned pid;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return fail(-errno, "cannot read %s/%s%s: %s", dir, prefix, name, strerror(errno));
	if (snprintf(path, sizeof(path), "%s%s", prefix, name) >= NAME_MAX_LEN)
		return fail(-ENAMETOOLONG, "%s/%s%s: name too long for a stream", dir, prefix, name);
	if (!strcmp(name, "parent") && level_top(prefix))
		return list_parent(dirfd, dir, prefix, l);
	if (!strcmp(name, "parent") && S_ISLNK(st.st_mode))
		return list_subset_link(dirfd, dir, prefix, path, l);
	if (S_ISREG(st.st_mode))
		return list_add(l, path, E_FILE);
	if (S_ISDIR(st.st_mode) && level_top(prefix) && img_is_subset(name, &pid)) {
		int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int ret = fd < 0 ? fail(-errno, "cannot open %s/%s: %s", dir, name, strerror(errno))
				 : list_add(l, path, E_DIR);

		if (!ret) {
			char sub[NAME_MAX_LEN + 66];

			snprintf(sub, sizeof(sub), "%s/", path);
			ret = list_dir(fd, dir, sub, l);
		}
		if (fd >= 0)
			close(fd);
		return ret;
	}
	return fail(-EINVAL, "%s/%s%s is not a file of an image set", dir, prefix, name);
}

static int list_dir(int dirfd, const char *dir, const char *prefix, struct file_list *l)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	int ret = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return fail(-errno, "cannot list %s: %s", dir, strerror(errno));
	}
	while (!ret && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			ret = list_one(dirfd, dir, prefix, de->d_name, l);
	closedir(d);
	return ret;
}

static int cmp_file(const void *a, const void *b)
{
	const char *x = ((const struct set_file *)a)->name, *y = ((const struct set_file *)b)->name;
	bool xi = !strcmp(x, "inventory.img"), yi = !strcmp(y, "inventory.img");

	if (xi != yi)
		return xi ? -1 : 1;
	return strcmp(x, y);
}

/* The set's files, inventory.img first, the rest sorted (directories before their files). */
static int list_set(int dirfd, const char *dir, struct file_list *l)
{
	int ret = list_dir(dirfd, dir, "", l);

	if (ret)
		return ret;
	if (l->nr)
		qsort(l->f, l->nr, sizeof(*l->f), cmp_file);
	if (!l->nr || strcmp(l->f[0].name, "inventory.img"))
		return fail(-ENOENT, "%s holds no complete dump (no inventory.img)", dir);
	return 0;
}

/* ---- pack ---- */

struct packer {
	struct stream_w w;
	uint8_t *buf;
	const char *skip;	/* a file already in the stream (version 3: pages-1.img), or NULL */
};

static int put_file(struct packer *p, int dirfd, const char *dir, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	const char *what = "read";
	struct hash64 h;
	struct stat st;
	uint64_t size;
	int ret;

	if (fd < 0 || fstat(fd, &st))
		return fail(-errno, "cannot read %s/%s: %s", dir, name, strerror(errno));
	size = (uint64_t)st.st_size;
	ret = stream_w_entry(&p->w, &h, E_FILE, name, size);
	if (!ret) {
		ret = img_send_file(fd, size, p->w.fd, &h, p->buf, COPY_BUF, &what);
		if (ret && !strcmp(what, "write"))
			ret = fail(ret, "cannot write the stream: %s", strerror(-ret));
		else if (ret)
			ret = fail(ret, "cannot read %s/%s: %s", dir, name,
				   ret == -EIO ? "it shrank while packed" : strerror(-ret));
	}
	close(fd);
	return ret ? ret : stream_w_entry_end(&p->w, &h);
}

static int put_head(struct packer *p, int dirfd, bool chain)
{
	uint64_t size, sum;
	int ret = img_sum_file(dirfd, "inventory.img", &size, &sum);

	return ret ? ret : stream_w_head(&p->w, chain ? 2 : 1, sum, size);
}

/* One entry of l, but a skipped file. */
static int put_one(struct packer *p, int dirfd, const char *dir, const struct set_file *f)
{
	struct hash64 h;
	int ret;

	if (p->skip && !strcmp(f->name, p->skip))
		return 0;
	if (f->kind == E_FILE)
		return put_file(p, dirfd, dir, f->name);
	ret = stream_w_entry(&p->w, &h, f->kind, f->name, 0);	/* a directory, a link: a name */
	return ret ? ret : stream_w_entry_end(&p->w, &h);
}

int pack_set(const char *dir, int fd)
{
	struct packer p = { .w = { .fd = fd }, .buf = malloc(COPY_BUF) };
	struct file_list l = { 0 };
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret;

	if (dirfd < 0)
		ret = fail(-errno, "cannot open %s: %s", dir, strerror(errno));
	else
		ret = p.buf ? list_set(dirfd, dir, &l) : -ENOMEM;
	if (!ret) {
		img_send_grow_pipe(fd);
		ret = put_head(&p, dirfd, l.chain);
	}
	for (size_t i = 0; !ret && i < l.nr; i++)
		ret = put_one(&p, dirfd, dir, &l.f[i]);
	if (!ret)
		ret = stream_w_end(&p.w);
	list_free(&l);
	free(p.buf);
	if (dirfd >= 0)
		close(dirfd);
	return ret;
}

/* ---- unpack ---- */

struct unpacker {
	int in, dirfd;
	uint32_t index;
	struct hash64 chain;
	struct stream_head head;
	char prev[NAME_MAX_LEN + 1];	/* the last name, for the order */
	char subdir[NAME_MAX_LEN + 1];	/* the last directory made */
	int levels;			/* parent sets' directories made (version 2) */
	bool got_inv;			/* version 3: inventory.img came, the last file */
	uint8_t *buf;
};

/* Version 3: pages-1.img first (its bytes checked by the set's run checksums), inventory last */
static bool direct(const struct unpacker *u)
{
	return u->head.version == STREAM_V_DIRECT;
}

/* name past its leading "parent/"s (a parent set's, version 2), *levels of them */
static const char *strip_levels(const char *name, int *levels)
{
	*levels = 0;
	while (!strncmp(name, "parent/", 7)) {
		name += 7;
		(*levels)++;
	}
	return name;
}

/* A parent set's directory ("parent/"... "parent"), the next level down: 1; 0 if not one */
static int check_level(const struct unpacker *u, const char *rest, int levels, uint16_t kind)
{
	if (kind != E_DIR || strcmp(rest, "parent"))
		return 0;
	if (u->head.version != 2 || levels != u->levels || levels >= LEVELS_MAX)
		return fail(-EIO, "the stream is corrupt: a parent set's directory at level %d", levels);
	return 1;
}

/* Version 3's order: pages-1.img, the others by name, inventory.img last. */
static int check_direct_order(struct unpacker *u, const char *name, uint16_t kind)
{
	if (u->index == 0 && (kind != E_FILE || strcmp(name, "pages-1.img")))
		return fail(-EIO, "the stream is corrupt: it does not start with pages-1.img");
	if (u->got_inv)
		return fail(-EIO, "the stream is corrupt: %.64s after inventory.img", name);
	u->got_inv = !strcmp(name, "inventory.img");
	if (u->index > 1 && !u->got_inv && strcmp(name, u->prev) <= 0)
		return fail(-EIO, "the stream is corrupt: %.64s comes after %.64s (reordered?)", name,
			    u->prev);
	return 0;
}

/* A name as pack writes them: inventory.img first, then in order, only a set's files. */
static int check_name(struct unpacker *u, const char *name, uint16_t kind)
{
	int levels, ret = direct(u) ? check_direct_order(u, name, kind) : 0;
	const char *rest = strip_levels(name, &levels), *slash = strchr(rest, '/');
	unsigned pid;
	char top[NAME_MAX_LEN + 1];

	if (ret)
		return ret;
	if (direct(u))
		;	/* its order checked above */
	else if (u->index == 0 && (kind != E_FILE || strcmp(name, "inventory.img")))
		return fail(-EIO, "the stream is corrupt: it does not start with inventory.img");
	else if (u->index && !strcmp(name, "inventory.img"))
		return fail(-EIO, "the stream is corrupt: a second inventory.img");
	else if (u->index > 1 && strcmp(name, u->prev) <= 0)
		return fail(-EIO, "the stream is corrupt: %s comes after %s (reordered?)", name,
			    u->prev);
	if (!*rest || rest[0] == '.' || strstr(name, "..") || strchr(name, '\\') ||
	    (slash && strchr(slash + 1, '/')) || (slash && kind == E_DIR) ||
	    (!slash && kind != E_DIR && !strcmp(rest, "parent")) ||
	    (slash && kind == E_FILE && !strcmp(slash + 1, "parent")))
		return fail(-EIO, "the stream is corrupt: it names a file \"%.64s\"", name);
	if (levels > u->levels || (kind == E_LINK && (u->head.version != 2 || !slash ||
						      strcmp(slash + 1, "parent"))))
		return fail(-EIO, "the stream is corrupt: %.64s is not in a directory it made", name);
	ret = check_level(u, rest, levels, kind);
	if (ret)
		return ret < 0 ? ret : 0;
	snprintf(top, sizeof(top), "%.*s", slash ? (int)(slash - rest) : (int)strlen(rest), rest);
	if (kind == E_DIR && !img_is_subset(top, &pid))
		return fail(-EIO, "the stream is corrupt: directory \"%.64s\"", name);
	if (slash && (strlen(u->subdir) != (size_t)(slash - name) ||
		      strncmp(name, u->subdir, (size_t)(slash - name))))
		return fail(-EIO, "the stream is corrupt: %.64s is not in a directory it made", name);
	return 0;
}

static int get_entry_end(struct unpacker *u, struct hash64 *h, const char *name)
{
	uint64_t sum;
	int ret = read_full(u->in, &sum, sizeof(sum), name);

	if (ret)
		return ret;
	if (sum != hash64_final(h))
		return fail(-EIO, "the stream is corrupt: the checksum of %s does not match", name);
	hash64_update(&u->chain, &sum, sizeof(sum));
	u->index++;
	return 0;
}

static int get_file_bytes(struct unpacker *u, int fd, const char *name, uint64_t size,
			  struct hash64 *h, struct hash64 *whole)
{
	while (size) {
		size_t n = (size_t)MIN(size, (uint64_t)COPY_BUF);
		int ret = read_full(u->in, u->buf, n, name);

		if (ret)
			return ret;
		if (h)
			hash64_update(h, u->buf, n);
		if (whole)
			hash64_update(whole, u->buf, n);
		ret = write_full(fd, u->buf, n);
		if (ret)
			return fail(ret, "cannot write %s: %s", name, strerror(-ret));
		size -= n;
	}
	return 0;
}

/* The inventory the head names (its size and checksum). */
static int check_inventory(struct unpacker *u, uint64_t size, struct hash64 *whole)
{
	if (size != u->head.inv_size || hash64_final(whole) != u->head.inv_hash)
		return fail(-EIO, "the stream is corrupt: its inventory.img is not the one its head "
			    "names (a stream of another set?)");
	return 0;
}

static int get_file(struct unpacker *u, const char *name, uint64_t size, struct hash64 *h)
{
	int fd = openat(u->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	bool head_inv = !u->index && !direct(u);	/* the inventory its head names */
	struct hash64 whole;
	int ret;

	if (fd < 0)
		return fail(-errno, "cannot create %s: %s", name, strerror(errno));
	hash64_init(&whole);
	/* version 3's pages: in its entry's checksum by name and size only (direct()) */
	ret = get_file_bytes(u, fd, name, size, direct(u) && !u->index ? NULL : h,
			     head_inv ? &whole : NULL);
	if (close(fd) && !ret)
		ret = fail(-errno, "cannot write %s: %s", name, strerror(errno));
	if (!ret && head_inv)
		ret = check_inventory(u, size, &whole);
	return ret;
}

static int make_dir(struct unpacker *u, const char *name)
{
	int levels;
	const char *rest = strip_levels(name, &levels);

	if (mkdirat(u->dirfd, name, 0700))
		return fail(-errno, "cannot make %s: %s", name, strerror(errno));
	if (!strcmp(rest, "parent"))
		u->levels++;
	else
		snprintf(u->subdir, sizeof(u->subdir), "%s", name);
	return 0;
}

/* [parent/...]proc-PID/parent: linked to the parent set's proc-PID, made before */
static int make_link(struct unpacker *u, const char *name)
{
	const char *slash = strrchr(name, '/'), *sub = slash;
	char target[NAME_MAX_LEN + 16], there[NAME_MAX_LEN + 16];
	struct stat st;

	while (sub > name && sub[-1] != '/')
		sub--;
	snprintf(target, sizeof(target), "../parent/%.*s", (int)(slash - sub), sub);
	snprintf(there, sizeof(there), "%.*sparent/%.*s", (int)(sub - name), name,
		 (int)(slash - sub), sub);
	if (fstatat(u->dirfd, there, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
		return fail(-EIO, "the stream is corrupt: %s links %s, which it did not make", name,
			    there);
	if (symlinkat(target, u->dirfd, name))
		return fail(-errno, "cannot make the link %s: %s", name, strerror(errno));
	return 0;
}

/* One entry: 1 when it was the end, 0 for any other, <0 after fail(). */
static int get_entry(struct unpacker *u)
{
	struct entry_head e;
	char name[NAME_MAX_LEN + 1];
	struct hash64 h;
	int ret = read_full(u->in, &e, sizeof(e), "an entry's head");

	if (ret)
		return ret;
	if (e.magic != STREAM_ENTRY_MAGIC || e.zero || e.kind < E_FILE || e.kind > E_LINK ||
	    e.name_len > NAME_MAX_LEN)
		return fail(-EIO, "the stream is corrupt: entry %u has a bad head", u->index);
	if (e.index != u->index)
		return fail(-EIO, "the stream is corrupt: entry %u where %u was due (reordered?)",
			    e.index, u->index);
	ret = read_full(u->in, name, e.name_len, "an entry's name");
	if (ret)
		return ret;
	name[e.name_len] = 0;
	if (e.kind == E_END && direct(u) && !u->got_inv)
		return fail(-EIO, "the stream is corrupt: it ends before its inventory.img");
	if (e.kind == E_END)
		return e.name_len || e.size != u->index ?
			fail(-EIO, "the stream is corrupt: its end counts %" PRIu64 " entries, %u came",
			     e.size, u->index) : 1;
	ret = check_name(u, name, e.kind);
	if (ret)
		return ret;
	hash64_init(&h);
	hash64_update(&h, &e, sizeof(e));
	hash64_update(&h, name, e.name_len);
	if (e.kind != E_FILE && e.size)
		return fail(-EIO, "the stream is corrupt: %s has bytes", name);
	if (e.kind == E_DIR) {
		ret = make_dir(u, name);
	} else if (e.kind == E_LINK) {
		ret = make_link(u, name);
	} else {
		ret = get_file(u, name, e.size, &h);
	}
	snprintf(u->prev, sizeof(u->prev), "%s", name);
	return ret ? ret : get_entry_end(u, &h, name);
}

static int get_head(struct unpacker *u)
{
	int ret = read_full(u->in, &u->head, sizeof(u->head), "its head");

	if (ret)
		return ret;
	if (memcmp(u->head.magic, STREAM_MAGIC, 8) || u->head.version < 1 ||
	    u->head.version > STREAM_V_DIRECT || u->head.zero ||
	    (direct(u) && u->head.inv_size))
		return fail(-EIO, "not a memdump image stream (no MDSTRM01 head)");
	hash64_init(&u->chain);
	hash64_update(&u->chain, &u->head, sizeof(u->head));
	return 0;
}

/* The end's checksum, and nothing after it. */
static int get_end(struct unpacker *u)
{
	uint64_t sum;
	char extra;
	ssize_t n;
	int ret = read_full(u->in, &sum, sizeof(sum), "its end");

	if (ret)
		return ret;
	if (sum != hash64_final(&u->chain))
		return fail(-EIO, "the stream is corrupt: its entries are not the ones it was "
			    "written with");
	do
		n = read(u->in, &extra, 1);
	while (n < 0 && errno == EINTR && !stream_signal);
	if (n != 0)
		return fail(-EIO, "the stream is corrupt: bytes after its end");
	return 0;
}

static int unpack_into(int fd, int dirfd)
{
	struct unpacker u = { .in = fd, .dirfd = dirfd, .buf = malloc(COPY_BUF) };
	int ret = u.buf ? get_head(&u) : -ENOMEM;

	while (!ret)
		ret = get_entry(&u);
	if (ret == 1)
		ret = get_end(&u);
	free(u.buf);
	return ret;
}

/* dir and everything in it (a set: files, and directories of files). */
static void remove_tree(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		rmdir(dir);
		return;
	}
	while ((de = readdir(d))) {
		char path[PATH_MAX];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (unlinkat(fd, de->d_name, 0) && errno == EISDIR) {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			remove_tree(path);
		}
	}
	closedir(d);
	rmdir(dir);
}

static void catch_signals(struct sigaction *old)
{
	struct sigaction sa = { .sa_handler = on_signal };	/* no SA_RESTART: reads end */
	int sigs[] = { SIGINT, SIGTERM, SIGHUP };

	stream_signal = 0;
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &sa, &old[i]);
}

static void restore_signals(const struct sigaction *old)
{
	int sigs[] = { SIGINT, SIGTERM, SIGHUP };

	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &old[i], NULL);
}

/* A private directory beside dir (so that a rename moves it there). */
static int make_beside(const char *dir, char *tmp, size_t len)
{
	if ((size_t)snprintf(tmp, len, "%s.unpack-XXXXXX", dir) >= len)
		return fail(-ENAMETOOLONG, "%s: name too long", dir);
	if (!mkdtemp(tmp))
		return fail(-errno, "cannot make a directory beside %s: %s", dir, strerror(errno));
	return 0;
}

/* The unpacked set checked whole; a sealed one opened with key first (crypt.h). */
static int verify_unpacked(const char *tmp, const struct img_key *key)
{
	size_t procs, images, runs;
	int dirfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret;
	bool sealed = dirfd >= 0 && img_set_sealed(dirfd);
	char path[64];

	if (dirfd >= 0)
		close(dirfd);
	if (!sealed)
		return verify_image_set(tmp, &procs, &images, &runs);
	if (!key) {
		pr_info("%s", "the set is encrypted: checked by the stream's checksums only");
		return 0;
	}
	ret = crypt_open_set(key, tmp, &dirfd, path, sizeof(path), NULL);
	if (!ret) {
		ret = verify_image_set(path, &procs, &images, &runs);
		close(dirfd);
	}
	return ret;
}

int unpack_set(int fd, const char *dir, const struct img_key *key)
{
	char tmp[PATH_MAX];
	struct sigaction old[3];
	int ret = make_beside(dir, tmp, sizeof(tmp)), dirfd = -1;

	if (ret)
		return ret;
	catch_signals(old);
	dirfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ret = dirfd < 0 ? fail(-errno, "cannot open %s: %s", tmp, strerror(errno))
			: unpack_into(fd, dirfd);
	if (dirfd >= 0)
		close(dirfd);
	if (!ret)
		ret = verify_unpacked(tmp, key);
	if (!ret && rename(tmp, dir))
		ret = fail(-errno, "cannot move the unpacked set to %s: %s", dir,
			   errno == ENOTEMPTY || errno == EEXIST ? "it exists and is not empty" :
			   strerror(errno));
	if (ret)
		remove_tree(tmp);
	restore_signals(old);
	return ret;
}

/* ---- commands ---- */

int cmd_pack(const struct options *o)
{
	const char *dir = o->dir ? o->dir : o->argc == 1 ? o->argv[0] : NULL;

	if (!dir || (o->dir && o->argc))
		return fail(-EINVAL, "usage: memdump pack DIR > FILE");
	if (isatty(STDOUT_FILENO))
		return fail(-EINVAL, "pack writes the stream to stdout: not to a terminal");
	signal(SIGPIPE, SIG_IGN);	/* a reader gone: EPIPE, reported once */
	return pack_set(dir, STDOUT_FILENO);
}

int cmd_unpack(const struct options *o)
{
	const char *dir = o->dir ? o->dir : o->argc == 1 ? o->argv[0] : NULL;

	if (!dir || (o->dir && o->argc))
		return fail(-EINVAL, "usage: memdump unpack DIR < FILE");
	return unpack_set(STDIN_FILENO, dir, o->decrypt ? &o->key : NULL);
}

/* ---- dump and restore --stream ---- */

/* "-": stdin or stdout; else an fd number the caller gave. */
static int stream_fd(const char *s, int std, bool *own)
{
	char *end;
	long n;

	*own = false;
	if (!strcmp(s, "-"))
		return std;
	errno = 0;
	n = strtol(s, &end, 10);
	if (errno || *end || n < 0 || n > INT_MAX || fcntl((int)n, F_GETFD) < 0)
		return fail(-EBADF, "--stream %s: not an open fd (or -)", s);
	return (int)n;
}

static int private_dir(struct stream_job *j)
{
	const char *t = getenv("TMPDIR");

	snprintf(j->dir, sizeof(j->dir), "%s/memdump-stream-XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(j->dir)) {
		j->dir[0] = 0;
		return fail(-errno, "cannot make a private directory for the stream: %s",
			    strerror(errno));
	}
	return 0;
}

/*
 * --prev-images-dir with --stream: there is no -D to be relative to, so a
 * relative path is the current directory's; the parent chain is streamed
 * with the set, and checked for it before the dump (a killing dump whose
 * stream would be refused after the kill keeps the process from nothing).
 */
static int stream_parent(struct options *o, struct stream_job *j)
{
	struct file_list l = { 0 };
	int dirfd, ret;

	if (!o->prev_dir)
		return 0;
	if (!realpath(o->prev_dir, j->prev))
		return fail(-errno, "cannot open the previous images %s: %s", o->prev_dir,
			    strerror(errno));
	o->prev_dir = j->prev;
	dirfd = open(j->prev, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return fail(-errno, "cannot open the previous images %s: %s", j->prev,
			    strerror(errno));
	ret = list_set(dirfd, j->prev, &l);	/* what pack_set() will stream of it */
	list_free(&l);
	close(dirfd);
	return ret;
}

/*
 * Version 3, the rest after the pages (dump.c, before the kill, in the
 * dump's worker): the staged set's other files in name order, inventory.img
 * last, then the end.
 */
static int pack_rest(struct stream_direct *s, int dirfd)
{
	struct packer p = { .w = s->w, .buf = malloc(COPY_BUF), .skip = "pages-1.img" };
	struct file_list l = { 0 };
	int ret = p.buf ? list_set(dirfd, "the staged set", &l) : -ENOMEM;

	for (size_t i = 1; !ret && i <= l.nr; i++)	/* l.f[0], inventory.img, last */
		ret = put_one(&p, dirfd, "the staged set", &l.f[i % l.nr]);
	if (!ret)
		ret = stream_w_end(&p.w);
	s->w = p.w;
	s->done = !ret;
	list_free(&l);
	free(p.buf);
	return ret;
}

/*
 * A killing dump of one process into a pipe, raw and unsealed, with no
 * parent and no hooks: its pages go into the stream while it is frozen
 * (version 3). MEMDUMP_STREAM_STAGED=1: staged whole, then packed, as any
 * other (benchmarks: before and after).
 */
static int stream_direct_begin(struct options *o, struct stream_job *j)
{
	const char *env = getenv("MEMDUMP_STREAM_STAGED");
	struct stat st;

	if (o->leave_running || o->compress.algo != PZ_NONE || o->encrypt || o->prev_dir ||
	    o->nr_action_scripts || o->page_server || o->track_mem || (env && *env == '1') ||
	    fstat(j->fd, &st) || !S_ISFIFO(st.st_mode))
		return 0;
	j->direct = mmap(NULL, sizeof(*j->direct), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);	/* the worker tells what it wrote */
	if (j->direct == MAP_FAILED) {
		j->direct = NULL;
		return fail(-errno, "cannot share the stream's state: %s", strerror(errno));
	}
	*j->direct = (struct stream_direct){ .w = { .fd = j->fd }, .rest = pack_rest };
	o->stream_direct = j->direct;
	img_send_grow_pipe(j->fd);
	return 0;
}

int stream_dump_begin(struct options *o, struct stream_job *j)
{
	bool own;
	int fd;

	*j = (struct stream_job){ .fd = -1 };
	if (o->dir)
		return fail(-EINVAL, "--stream and -D: the set goes to the stream");
	if (stream_parent(o, j))
		return -EINVAL;
	fd = stream_fd(o->stream, STDOUT_FILENO, &own);
	if (fd < 0)
		return fd;
	if (fd == STDOUT_FILENO) {	/* the stream keeps stdout; what memdump prints goes to stderr */
		fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		if (fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
			return fail(-errno, "cannot keep stdout for the stream: %s", strerror(errno));
		own = true;
	}
	if (isatty(fd))
		return fail(-EINVAL, "--stream: the stream would go to a terminal");
	j->fd = fd;
	j->own_fd = own;
	signal(SIGPIPE, SIG_IGN);
	if (private_dir(j))
		return -EIO;
	o->dir = j->dir;
	return stream_direct_begin(o, j);
}

int stream_dump_end(struct stream_job *j, int ret, bool killed_target)
{
	if (!ret && j->direct && j->direct->started && !j->direct->done)
		ret = fail(-EIO, "the stream was left unfinished");
	if (!ret && (!j->direct || !j->direct->started))
		ret = pack_set(j->dir, j->fd);	/* staged whole: a tree, or pages never reached */
	/* streamed while frozen: whole before the kill, or the target was not killed */
	if (ret && killed_target && j->dir[0] && !(j->direct && j->direct->started)) {
		/* the process is gone: its images must not be */
		pr_err("the images of the killed process are kept in %s", j->dir);
		j->dir[0] = 0;
	}
	stream_end(j);
	return ret;
}

int stream_restore_begin(struct options *o, struct stream_job *j)
{
	char set[sizeof(j->dir)];
	bool own;
	int fd, ret;

	*j = (struct stream_job){ .fd = -1 };
	if (o->dir)
		return fail(-EINVAL, "--stream and -D: the set comes from the stream");
	fd = stream_fd(o->stream, STDIN_FILENO, &own);
	if (fd < 0)
		return fd;
	j->fd = fd;
	ret = private_dir(j);
	if (ret)
		return ret;
	if ((size_t)snprintf(set, sizeof(set), "%.240s/set", j->dir) >= sizeof(set))
		return fail(-ENAMETOOLONG, "TMPDIR is too long a path");
	ret = unpack_set(fd, set, NULL);	/* the restore opens a sealed set */
	if (ret)
		return ret;
	snprintf(j->dir, sizeof(j->dir), "%s", set);
	o->dir = j->dir;
	return 0;
}

void stream_end(struct stream_job *j)
{
	if (j->dir[0]) {
		char *slash;

		remove_tree(j->dir);
		slash = strrchr(j->dir, '/');	/* restore: the private directory above set/ */
		if (slash && !strcmp(slash, "/set")) {
			*slash = 0;
			rmdir(j->dir);
		}
		j->dir[0] = 0;
	}
	if (j->own_fd && j->fd >= 0)
		close(j->fd);
	j->fd = -1;
	if (j->direct)
		munmap(j->direct, sizeof(*j->direct));
	j->direct = NULL;
}
