/*
 * libFuzzer target for the image loaders: everything `verify`, `show`,
 * `read-mem` and `restore` (up to its last check, nothing started) do with an
 * image set, run on a set built from the input.
 *
 * Input (fuzz/pack.py writes it from a dump directory):
 *   byte 0     flags: FZ_FIX_SUMS rewrites the inventory's list of images
 *              with the sizes and checksums of the files as they are, so the
 *              loaders behind the verification are reached; FZ_ON_BASE starts
 *              from the set in $MEMDUMP_FUZZ_BASE (a packed set) and lets the
 *              input's files replace or add to it (one mutated image);
 *              FZ_JSON has show print JSON.
 *   then files: u8 name length, name, u32 little-endian length, content
 *              (cut short at the end of the input).
 *
 * The set is written into a fresh directory under $TMPDIR (/dev/shm by
 * default). Any crash, sanitizer report, leak or hang is a bug.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/options.h"
#include "image/dumpset.h"
#include "image/hash.h"
#include "image/image.h"
#include "log.h"
#include "restore/restore.h"

#define FZ_FIX_SUMS	0x01
#define FZ_ON_BASE	0x02
#define FZ_JSON		0x04	/* show --json rather than the table */
#define MAX_FILES	64
#define INVENTORY_MAGIC	0x58313116
#define READ_MAX	(64u << 10)	/* bytes per read-mem call */
#define MAX_READS	3

struct fz_file {
	char name[256];
	const uint8_t *data;
	size_t len;
};

struct fz_set {
	struct fz_file f[MAX_FILES];
	size_t nr;
};

/* Set once by LLVMFuzzerInitialize, read-only afterwards. */
struct fz_env {
	char dir[4096];
	uint8_t *base;		/* the packed base set */
	size_t base_len;
};

static struct fz_env env;	/* libFuzzer's entry points take no context */

static uint32_t get32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A name the harness may create in its own directory (the loaders see it as is). */
static bool usable_name(const char *s)
{
	return s[0] && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '/');
}

static struct fz_file *find_file(struct fz_set *set, const char *name)
{
	for (size_t i = 0; i < set->nr; i++)
		if (!strcmp(set->f[i].name, name))
			return &set->f[i];
	return NULL;
}

/* Files of a packed set (after its flags byte) into set, replacing same names. */
static void unpack(const uint8_t *p, size_t len, struct fz_set *set)
{
	while (len) {
		struct fz_file f = { 0 };
		struct fz_file *slot;
		size_t n = p[0];

		if (len < 1 + n + 4)
			return;
		memcpy(f.name, p + 1, n);
		f.len = get32(p + 1 + n);
		p += 1 + n + 4;
		len -= 1 + n + 4;
		f.data = p;
		f.len = f.len < len ? f.len : len;
		p += f.len;
		len -= f.len;
		if (strlen(f.name) != n || !usable_name(f.name))
			continue;
		slot = find_file(set, f.name);
		if (!slot && set->nr < MAX_FILES)
			slot = &set->f[set->nr++];
		if (slot)
			*slot = f;
	}
}

static void clear_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
}

static void write_file(int dfd, const char *name, const void *data, size_t len)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return;
	if (write(fd, data, len) != (ssize_t)len)
		abort();	/* the harness's own disk is full: not a finding */
	close(fd);
}

static uint64_t sum(const struct fz_file *f)
{
	struct hash64 h;

	hash64_init(&h);
	hash64_update(&h, f->data, f->len);
	return hash64_final(&h);
}

/* The input's inventory (or a new one), listing exactly the files of set. */
static void write_fixed_inventory(int dfd, struct fz_set *set)
{
	const struct fz_file *old = find_file(set, "inventory.img");
	InventoryEntry fresh = INVENTORY_ENTRY__INIT, *inv = NULL;
	ImageSumEntry sums[MAX_FILES], *ptrs[MAX_FILES];
	ImageSumEntry **saved;
	size_t saved_n, n = 0;
	uint8_t *buf;
	uint32_t len;

	if (old && old->len >= 8 && get32(old->data) == INVENTORY_MAGIC &&
	    get32(old->data + 4) <= old->len - 8)
		inv = inventory_entry__unpack(NULL, get32(old->data + 4), old->data + 8);
	if (!inv) {
		fresh.img_version = 2;
		inv = &fresh;
	}
	for (size_t i = 0; i < set->nr; i++) {
		if (!strcmp(set->f[i].name, "inventory.img"))
			continue;
		image_sum_entry__init(&sums[n]);
		sums[n].name = set->f[i].name;
		sums[n].size = set->f[i].len;
		sums[n].hash = sum(&set->f[i]);
		ptrs[n] = &sums[n];
		n++;
	}
	saved = inv->images;
	saved_n = inv->n_images;
	inv->images = ptrs;
	inv->n_images = n;
	len = inventory_entry__get_packed_size(inv);
	buf = malloc(8 + len);
	if (buf) {
		memcpy(buf, &(uint32_t){ INVENTORY_MAGIC }, 4);
		memcpy(buf + 4, &len, 4);
		inventory_entry__pack(inv, buf + 8);
		write_file(dfd, "inventory.img", buf, 8 + len);
	}
	free(buf);
	inv->images = saved;
	inv->n_images = saved_n;
	if (inv != &fresh)
		inventory_entry__free_unpacked(inv, NULL);
}

static void write_set(uint8_t flags, struct fz_set *set)
{
	int dfd = open(env.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		abort();
	for (size_t i = 0; i < set->nr; i++)
		if (!(flags & FZ_FIX_SUMS) || strcmp(set->f[i].name, "inventory.img"))
			write_file(dfd, set->f[i].name, set->f[i].data, set->f[i].len);
	if (flags & FZ_FIX_SUMS)
		write_fixed_inventory(dfd, set);
	close(dfd);
}

/* A few ranges for read-mem: the start of the first VMAs, and across two VMAs. */
struct fz_range {
	uint64_t addr, len;
};

static size_t pick_ranges(struct fz_range *r)
{
	struct dumpset ds;
	size_t n = 0;

	if (dumpset_load(env.dir, &ds))
		return 0;
	for (size_t i = 0; i < ds.mm->n_vmas && n < MAX_READS; i++) {
		const VmaEntry *v = ds.mm->vmas[i];
		uint64_t len = v->end - v->start;

		r[n++] = (struct fz_range){ v->start, len < READ_MAX ? len : READ_MAX };
		if (i + 1 < ds.mm->n_vmas && n < MAX_READS && v->end - 8 > v->start)
			r[n++] = (struct fz_range){ v->end - 8, 16 };
	}
	dumpset_free(&ds);
	return n;
}

static void run_read_mem(struct options *o, const struct fz_range *r)
{
	char addr[32], len[32];
	char *argv[] = { addr, len, NULL };

	snprintf(addr, sizeof(addr), "%#" PRIx64, r->addr);
	snprintf(len, sizeof(len), "%" PRIu64, r->len);
	o->argc = 2;
	o->argv = argv;
	cmd_read_mem(o);
	fail_clear();
}

static void run_commands(uint8_t flags)
{
	struct options o = { .dir = env.dir, .json = flags & FZ_JSON };
	struct restore_opts ro = { .dir = env.dir };
	struct fz_range ranges[MAX_READS];
	size_t n;

	cmd_verify(&o);
	fail_clear();
	cmd_show(&o);
	fail_clear();
	n = pick_ranges(ranges);
	fail_clear();
	for (size_t i = 0; i < n; i++)
		run_read_mem(&o, &ranges[i]);
	restore_check(&ro);
	fail_clear();
	fflush(stdout);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fz_set set;	/* large: not on the stack */

	if (!size)
		return 0;
	set.nr = 0;
	if ((data[0] & FZ_ON_BASE) && env.base)
		unpack(env.base + 1, env.base_len - 1, &set);
	unpack(data + 1, size - 1, &set);
	clear_dir(env.dir);
	write_set(data[0], &set);
	run_commands(data[0]);
	return 0;
}

static void remove_dir(void)
{
	clear_dir(env.dir);
	rmdir(env.dir);
}

static void load_base(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) || st.st_size < 1) {
		fprintf(stderr, "fuzz-images: cannot read MEMDUMP_FUZZ_BASE %s\n", path);
		exit(2);
	}
	env.base = malloc(st.st_size);
	if (!env.base || read(fd, env.base, st.st_size) != st.st_size) {
		fprintf(stderr, "fuzz-images: cannot read MEMDUMP_FUZZ_BASE %s\n", path);
		exit(2);
	}
	env.base_len = st.st_size;
	close(fd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/dev/shm";
	const char *base = getenv("MEMDUMP_FUZZ_BASE");
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	(void)argc;
	(void)argv;
	snprintf(env.dir, sizeof(env.dir), "%s/memdump-fuzz-%d", tmp, getpid());
	if (mkdir(env.dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "fuzz-images: cannot create %s: %s\n", env.dir, strerror(errno));
		exit(2);
	}
	atexit(remove_dir);
	if (base && base[0])
		load_base(base);
	/* what show and read-mem print, and every log line (formatted, then dropped) */
	dup2(null, STDOUT_FILENO);
	close(null);
	log_init(LOG_DEBUG, "/dev/null");
	return 0;
}
