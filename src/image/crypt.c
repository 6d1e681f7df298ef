/*
 * Sealed (encrypted) image sets: see crypt.h and docs/images.md.
 *
 * A sealed file: a 64-byte head (SEAL_MAGIC, version, chunk size, the set
 * id, the file's random nonce, the key's id, the plaintext size), then the
 * chunks: each CHUNK bytes of plaintext (the last one shorter, an empty file
 * has one empty chunk) encrypted with AES-256-GCM and followed by its 16-byte
 * tag. Chunk i's nonce is the file's nonce and i; its associated data the
 * whole head, i, whether it is the last chunk, and the file's path in its
 * set. The key of every chunk is the set's own (version 2): HKDF-SHA256 of
 * the key, salted with the set id (set_key()), so sets sealed with one key
 * never share a (key, nonce) pair whatever their random nonces; version 1
 * (the key itself) is still read. So a byte changed anywhere, a chunk moved, a file cut at a chunk's
 * end, renamed, or taken from another set (another set id, which the head
 * of the set's inventory.img gives) does not authenticate.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

#include "common.h"
#include "image/compress.h"
#include "image/crypt.h"
#include "image/feed.h"
#include "log.h"

#define SEAL_MAGIC	"MDSEAL01"
#define SEAL_VERSION	2	/* written; 1 (no per-set key) is read too */
#define CHUNK		CRYPT_CHUNK
#define TAG		CRYPT_TAG
#define CHAIN_MAX	64	/* parents of a set, at most */

struct seal_head {
	char magic[8];
	uint32_t version;
	uint32_t chunk;
	uint8_t setid[IMG_SETID_LEN];
	uint8_t nonce[8];
	uint8_t keyid[8];
	uint64_t size;		/* of the plaintext */
	uint64_t zero;
};
_Static_assert(sizeof(struct seal_head) == 64, "seal head layout");

struct img_crypt {
	struct img_key key;
	uint8_t setid[IMG_SETID_LEN];
	uint8_t subkey[IMG_KEY_LEN];	/* the set's: set_key() */
	int realfd, rootfd, stagefd;
	const char *parent_path;	/* the real parent link, for an incremental set */
	char **sealed;			/* paths written in realfd, in order */
	bool *sealed_dir;
	int nr_sealed;
	char **skip;			/* the runtime's files, copied in: not sealed */
	int nr_skip;
	int nr_parents;			/* decrypted into the staging: p0, p1, ... */
	struct crypt_pages **pages;	/* sealed as written, named by crypt_seal() */
	int nr_pages;
};

static int key_id(struct img_key *k)
{
	static const char label[] = "memdump image key id v1";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
		 EVP_DigestUpdate(ctx, label, sizeof(label)) &&
		 EVP_DigestUpdate(ctx, k->key, sizeof(k->key)) && EVP_DigestFinal_ex(ctx, md, &len);

	EVP_MD_CTX_free(ctx);
	if (!ok)
		return fail(-EIO, "cannot hash the image key (OpenSSL)");
	memcpy(k->id, md, sizeof(k->id));
	return 0;
}

int img_key_load(const char *path, int fd, struct img_key *k)
{
	const char *what = path ? path : "the key descriptor";
	uint8_t buf[IMG_KEY_LEN + 1];
	size_t got = 0;
	int own = -1, ret = 0;

	if (path) {
		fd = own = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return fail(-errno, "cannot read the key file %s: %s", path, strerror(errno));
	}
	while (got < sizeof(buf)) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = fail(-errno, "cannot read the key from %s: %s", what, strerror(errno));
			break;
		}
		if (!n)
			break;
		got += (size_t)n;
	}
	if (own >= 0)
		close(own);
	if (!ret && got != IMG_KEY_LEN)
		ret = fail(-EINVAL, "the key in %s is not %d bytes (%s%zu): make one with "
			   "`head -c 32 /dev/urandom`", what, IMG_KEY_LEN,
			   got > IMG_KEY_LEN ? "more than " : "", got > IMG_KEY_LEN ? (size_t)IMG_KEY_LEN : got);
	if (!ret) {
		memcpy(k->key, buf, IMG_KEY_LEN);
		ret = key_id(k);
	}
	memset(buf, 0, sizeof(buf));
	return ret;
}

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -ENODATA;
		done += (size_t)n;
	}
	return 0;
}

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ENOSPC;
		done += (size_t)n;
	}
	return 0;
}

/*
 * The key a set's chunks are sealed with: HKDF-SHA256 (RFC 5869) of the
 * key, the set id as salt, a label as info; version 1: the key itself.
 */
static int set_key(const struct img_key *k, const uint8_t *setid, uint32_t version,
		   uint8_t out[IMG_KEY_LEN])
{
	static const char info[] = "memdump image set key v2";
	EVP_PKEY_CTX *ctx;
	size_t len = IMG_KEY_LEN;
	int ok;

	if (version == 1) {
		memcpy(out, k->key, IMG_KEY_LEN);
		return 0;
	}
	ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
	ok = ctx && EVP_PKEY_derive_init(ctx) > 0 &&
	     EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) > 0 &&
	     EVP_PKEY_CTX_set1_hkdf_salt(ctx, setid, IMG_SETID_LEN) > 0 &&
	     EVP_PKEY_CTX_set1_hkdf_key(ctx, k->key, IMG_KEY_LEN) > 0 &&
	     EVP_PKEY_CTX_add1_hkdf_info(ctx, (const unsigned char *)info, sizeof(info) - 1) > 0 &&
	     EVP_PKEY_derive(ctx, out, &len) > 0 && len == IMG_KEY_LEN;
	EVP_PKEY_CTX_free(ctx);
	return ok ? 0 : fail(-EIO, "cannot derive the image set's key (OpenSSL HKDF)");
}

bool img_set_sealed(int dirfd)
{
	int fd = openat(dirfd, "inventory.img", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	char magic[8];
	bool sealed;

	if (fd < 0)
		return false;
	sealed = pread(fd, magic, sizeof(magic), 0) == sizeof(magic) &&
		 !memcmp(magic, SEAL_MAGIC, sizeof(magic));
	close(fd);
	return sealed;
}

/* ---- one file, in chunks, on both cores ---- */

struct chunk_job {
	const uint8_t *key;	/* the set's (set_key()) */
	const struct seal_head *head;
	const char *name;	/* in the set: associated data */
	bool seal;		/* or open */
	int in, out;
	uint64_t nr;		/* chunks */
	int nr_threads;
};

struct chunk_worker {
	struct chunk_job *j;
	int first;
	int ret;
	uint64_t bad;		/* the chunk that failed */
	pthread_t tid;
};

static uint64_t plain_off(uint64_t i) { return i * CHUNK; }
static uint64_t sealed_off(uint64_t i) { return sizeof(struct seal_head) + i * (CHUNK + TAG); }

static size_t chunk_len(const struct seal_head *h, uint64_t i)
{
	return (size_t)MIN((uint64_t)CHUNK, h->size - plain_off(i));
}

static int chunk_aad(EVP_CIPHER_CTX *ctx, bool seal, const struct chunk_job *j, uint64_t i)
{
	uint8_t idx[9];
	int len;

	memcpy(idx, &i, 8);
	idx[8] = i + 1 == j->nr;
	if (seal)
		return EVP_EncryptUpdate(ctx, NULL, &len, (const uint8_t *)j->head, sizeof(*j->head)) &&
		       EVP_EncryptUpdate(ctx, NULL, &len, idx, sizeof(idx)) &&
		       EVP_EncryptUpdate(ctx, NULL, &len, (const uint8_t *)j->name, (int)strlen(j->name));
	return EVP_DecryptUpdate(ctx, NULL, &len, (const uint8_t *)j->head, sizeof(*j->head)) &&
	       EVP_DecryptUpdate(ctx, NULL, &len, idx, sizeof(idx)) &&
	       EVP_DecryptUpdate(ctx, NULL, &len, (const uint8_t *)j->name, (int)strlen(j->name));
}

/* Chunk i's nonce: the set's 8 bytes, then i */
static void chunk_iv(const struct chunk_job *j, uint64_t i, uint8_t iv[12])
{
	uint32_t i32 = (uint32_t)i;

	memcpy(iv, j->head->nonce, 8);
	memcpy(iv + 8, &i32, 4);
}

/*
 * Sealed chunk i read from j->in and opened into out (its chunk_len() bytes):
 * 0, -EBADMSG when it does not authenticate, or -errno of the read. Nothing
 * of it is to be used unless it returns 0 (GCM's plaintext comes before its
 * tag is checked).
 */
/* Chunk i's ciphertext and tag, in, opened into out: 0 or -EBADMSG. */
static int open_sealed(EVP_CIPHER_CTX *ctx, const struct chunk_job *j, uint64_t i,
		       const uint8_t *in, uint8_t *out)
{
	uint8_t iv[12], tag[TAG];
	size_t len = chunk_len(j->head, i);
	int n;

	chunk_iv(j, i, iv);
	memcpy(tag, in + len, TAG);
	if (!EVP_DecryptInit_ex(ctx, NULL, NULL, NULL, iv) || !chunk_aad(ctx, false, j, i) ||
	    !EVP_DecryptUpdate(ctx, out, &n, in, (int)len) ||
	    !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG, tag) ||
	    EVP_DecryptFinal_ex(ctx, out + n, &n) <= 0)
		return -EBADMSG;
	return 0;
}

static int open_chunk(EVP_CIPHER_CTX *ctx, const struct chunk_job *j, uint64_t i, uint8_t *in,
		      uint8_t *out)
{
	int ret = pread_all(j->in, in, chunk_len(j->head, i) + TAG, sealed_off(i));

	return ret ? ret : open_sealed(ctx, j, i, in, out);
}

/* Chunk i: 0, -EBADMSG when it does not authenticate, or -errno of the I/O. */
static int do_chunk(EVP_CIPHER_CTX *ctx, const struct chunk_job *j, uint64_t i, uint8_t *in,
		    uint8_t *out)
{
	uint8_t iv[12];
	size_t len = chunk_len(j->head, i);
	int n, ret;

	chunk_iv(j, i, iv);
	if (j->seal) {
		ret = pread_all(j->in, in, len, plain_off(i));
		if (ret)
			return ret;
		if (!EVP_EncryptInit_ex(ctx, NULL, NULL, NULL, iv) || !chunk_aad(ctx, true, j, i) ||
		    !EVP_EncryptUpdate(ctx, out, &n, in, (int)len) ||
		    !EVP_EncryptFinal_ex(ctx, out + n, &n) ||
		    !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG, out + len))
			return -EIO;
		return pwrite_all(j->out, out, len + TAG, sealed_off(i));
	}
	ret = open_chunk(ctx, j, i, in, out);
	return ret ? ret : pwrite_all(j->out, out, len, plain_off(i));
}

/* A chunk worker's cipher and buffers gone, the plaintext buffer wiped first. */
static void chunk_bufs_free(EVP_CIPHER_CTX *ctx, uint8_t *in, uint8_t *out, size_t size)
{
	if (out)
		memset(out, 0, size);
	EVP_CIPHER_CTX_free(ctx);
	free(in);
	free(out);
}

static void *chunk_thread(void *arg)
{
	struct chunk_worker *w = arg;
	struct chunk_job *j = w->j;
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	/* a small file's buffers as small: a fresh 1 MiB costs its page faults */
	size_t size = MIN((uint64_t)CHUNK, j->head->size) + TAG;
	uint8_t *in = malloc(size), *out = malloc(size);
	int ok = ctx && in && out;

	if (ok)
		ok = j->seal ? EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, j->key, NULL)
			     : EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, j->key, NULL);
	w->ret = ok ? 0 : -ENOMEM;
	for (uint64_t i = (uint64_t)w->first; i < j->nr && !w->ret; i += (uint64_t)j->nr_threads) {
		w->ret = do_chunk(ctx, j, i, in, out);
		w->bad = i;
	}
	chunk_bufs_free(ctx, in, out, size);
	return NULL;
}

/* Every chunk, on two threads when there are a few: the first failure (lowest chunk). */
static int run_chunks(struct chunk_job *j, uint64_t *bad)
{
	struct chunk_worker w[2] = { { .j = j, .first = 0 }, { .j = j, .first = 1 } };
	int ret = 0;

	j->nr_threads = j->nr >= 4 ? 2 : 1;
	if (j->nr_threads == 2 && pthread_create(&w[1].tid, NULL, chunk_thread, &w[1]))
		j->nr_threads = 1;
	chunk_thread(&w[0]);
	if (j->nr_threads == 2)
		pthread_join(w[1].tid, NULL);
	for (int t = 0; t < j->nr_threads; t++) {
		if (w[t].ret && (!ret || w[t].bad < *bad)) {
			ret = w[t].ret;
			*bad = w[t].bad;
		}
	}
	return ret;
}

static uint64_t nr_chunks(uint64_t size)
{
	return size ? (size + CHUNK - 1) / CHUNK : 1;
}

/* The plaintext in (name in the set) sealed into out. */
static int seal_file(const struct img_crypt *c, int in, int out, const char *name)
{
	struct seal_head h = { .version = SEAL_VERSION, .chunk = CHUNK };
	struct chunk_job j = { .key = c->subkey, .head = &h, .name = name, .seal = true,
			       .in = in, .out = out };
	struct stat st;
	uint64_t bad = 0;
	int ret;

	if (fstat(in, &st))
		return fail(-errno, "cannot read image %s: %s", name, strerror(errno));
	memcpy(h.magic, SEAL_MAGIC, sizeof(h.magic));
	memcpy(h.setid, c->setid, sizeof(h.setid));
	memcpy(h.keyid, c->key.id, sizeof(h.keyid));
	h.size = (uint64_t)st.st_size;
	if (RAND_bytes(h.nonce, sizeof(h.nonce)) != 1)
		return fail(-EIO, "no random bytes for image %s (OpenSSL)", name);
	j.nr = nr_chunks(h.size);
	ret = pwrite_all(out, &h, sizeof(h), 0);
	if (!ret)
		ret = run_chunks(&j, &bad);
	if (ret)
		return fail(ret, "cannot seal image %s: %s", name, strerror(-ret));
	posix_fadvise(in, 0, 0, POSIX_FADV_DONTNEED);
	return 0;
}

/* What is wrong with a sealed file's head, if anything: a sentence, or NULL. */
static const char *head_problem(const struct seal_head *h, const struct img_key *k,
				const uint8_t *setid, uint64_t file_size)
{
	if (memcmp(h->magic, SEAL_MAGIC, sizeof(h->magic)))
		return "it is not encrypted (no sealed head)";
	if ((h->version != SEAL_VERSION && h->version != 1) || h->chunk != CHUNK || h->zero)
		return "its sealed head is corrupt or of another version";
	if (memcmp(h->keyid, k->id, sizeof(h->keyid)))
		return "wrong key (it was encrypted with another key)";
	if (setid && memcmp(h->setid, setid, IMG_SETID_LEN))
		return "it is from another image set";
	if (h->size > (1ull << 50) ||
	    file_size != sizeof(*h) + h->size + nr_chunks(h->size) * TAG)
		return file_size < sizeof(*h) + h->size + nr_chunks(h->size) * TAG ?
		       "it is truncated" : "it has bytes past its end";
	return NULL;
}

/* What opening chunks of image show ended with: 0, or fail() naming the chunk. */
static int open_failed(int ret, const char *show, uint64_t bad, uint64_t nr)
{
	if (ret == -EBADMSG)
		return fail(ret, "image %s is refused: its chunk %" PRIu64 " of %" PRIu64 " does not "
			    "authenticate (a changed, moved or cut chunk, or renamed)", show, bad + 1, nr);
	if (ret)
		return fail(ret, "cannot decrypt image %s: %s", show, strerror(-ret));
	return 0;
}

/* The sealed in's head read and checked (against setid): 0 or fail(). */
static int read_head(const struct img_key *k, int in, const char *show, const uint8_t *setid,
		     struct seal_head *h)
{
	const char *why;
	struct stat st;
	int ret;

	if (fstat(in, &st))
		return fail(-errno, "cannot read image %s: %s", show, strerror(errno));
	if ((uint64_t)st.st_size < sizeof(*h))
		return fail(-EBADMSG, "image %s is refused: %s", show,
			    st.st_size ? "it is truncated" : "it is empty");
	ret = pread_all(in, h, sizeof(*h), 0);
	if (ret)
		return fail(ret, "cannot read image %s: %s", show, strerror(-ret));
	why = head_problem(h, k, setid, (uint64_t)st.st_size);
	return why ? fail(-EBADMSG, "image %s is refused: %s", show, why) : 0;
}

/*
 * The sealed in (name in the set; shown as show) opened into out, every chunk
 * authenticated. setid: the set's, or NULL (an inventory: taken from it, into got).
 */
static int open_file(const struct img_key *k, int in, int out, const char *name,
		     const char *show, const uint8_t *setid, uint8_t *got)
{
	struct seal_head h;
	uint8_t sk[IMG_KEY_LEN];
	struct chunk_job j = { .key = sk, .head = &h, .name = name, .in = in, .out = out };
	uint64_t bad = 0;
	int ret = read_head(k, in, show, setid, &h);

	if (ret)
		return ret;
	if (got)
		memcpy(got, h.setid, IMG_SETID_LEN);
	j.nr = nr_chunks(h.size);
	ret = set_key(k, h.setid, h.version, sk);
	if (ret)
		return ret;
	ret = run_chunks(&j, &bad);
	memset(sk, 0, sizeof(sk));
	posix_fadvise(in, 0, 0, POSIX_FADV_DONTNEED);
	return open_failed(ret, show, bad, j.nr);
}

/* ---- the private tmpfs ---- */

static int private_tmpfs(void)
{
	int fs = fsopen("tmpfs", FSOPEN_CLOEXEC), mnt;

	if (fs < 0)
		return fail(-errno, "cannot make a private tmpfs for the plaintext images: %s",
			    strerror(errno));
	/* huge pages where the kernel has them: fewer page faults filling it (best effort) */
	if (fsconfig(fs, FSCONFIG_SET_STRING, "huge", "within_size", 0))
		pr_debug("private tmpfs without huge pages: %s", strerror(errno));
	/* its pages never written to swap: no plaintext on any disk (Linux 6.4) */
	if (fsconfig(fs, FSCONFIG_SET_FLAG, "noswap", NULL, 0)) {
		close(fs);
		return fail(-errno, "cannot make a private tmpfs that is never swapped out "
			    "(noswap) for the plaintext images: %s", strerror(errno));
	}
	if (fsconfig(fs, FSCONFIG_SET_STRING, "size", "0", 0) ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "nr_inodes", "0", 0) ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0700", 0) ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0)) {
		close(fs);
		return fail(-errno, "cannot make a private tmpfs for the plaintext images: %s",
			    strerror(errno));
	}
	mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
	close(fs);
	if (mnt < 0)
		return fail(-errno, "cannot mount a private tmpfs for the plaintext images: %s",
			    strerror(errno));
	return mnt;
}

static int make_dir(int parent, const char *name)
{
	int fd;

	if (mkdirat(parent, name, 0700))
		return fail(-errno, "cannot create directory %s: %s", name, strerror(errno));
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? fail(-errno, "cannot open directory %s: %s", name, strerror(errno)) : fd;
}

static int copy_plain(int in, int out)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(out, buf, (size_t)n) != n)
			return -errno ?: -EIO;
	}
	return 0;
}

/* ---- opening a sealed set ---- */

struct opening {
	const struct img_key *key;
	uint8_t setid[IMG_SETID_LEN];
	char show[(CHAIN_MAX + 1) * 7 + 1];	/* prefix for messages: parent/ ... */
	struct page_feed **feed;	/* pages-1.img kept sealed (image/feed.h), or NULL */
	int level;			/* the set's place in the chain: set<level> */
	char top_link[PATH_MAX];	/* the set's own parent link, "" if it has none */
};

static int defer_pages(struct opening *op, int in, int out, const char *show);
static bool one_set(int realfd);

/* Our images must be sealed; a runtime's files and logs are copied as they are. */
static bool must_be_sealed(const char *name)
{
	size_t n = strlen(name);

	return (n > 4 && !strcmp(name + n - 4, ".img")) || !strcmp(name, "stats-dump");
}

static bool file_sealed(int fd)
{
	char magic[8];

	return pread(fd, magic, sizeof(magic), 0) == sizeof(magic) &&
	       !memcmp(magic, SEAL_MAGIC, sizeof(magic));
}

static int open_dir(struct opening *op, int src, int dst, const char *prefix, bool top);

/*
 * A tree's process set proc-PID/ whose parent link names the same process's
 * set in its top set's parent (treedump.c: "../" PARENT "/proc-PID"): linked
 * to that set in the chain's layout, set<level + 1>/proc-PID; any other link
 * is refused (it would lead out of the opened chain).
 */
static int subset_parent(const struct opening *op, int dst, const char *prefix, const char *link,
			 const char *show)
{
	size_t sub = strlen(prefix) - 1;	/* prefix: "proc-PID/" */
	char want[PATH_MAX + 64], in_chain[64];

	snprintf(want, sizeof(want), "%s%s/%.*s", op->top_link[0] == '/' ? "" : "../",
		 op->top_link, (int)sub, prefix);
	if (!op->top_link[0] || strchr(prefix, '/') != prefix + sub || strcmp(link, want))
		return fail(-EINVAL, "image set: link %s (%s) does not name the process's set in "
			    "its set's parent", show, link);
	snprintf(in_chain, sizeof(in_chain), "../../set%d/%.*s", op->level + 1, (int)sub, prefix);
	return symlinkat(in_chain, dst, "parent") ? fail(-errno, "cannot copy link %s", show) : 0;
}

static int open_entry(struct opening *op, int src, int dst, const char *prefix,
		      const struct dirent *e)
{
	char name[512], show[sizeof(op->show) + sizeof(name)];
	int in, out, ret;
	struct stat st;

	snprintf(name, sizeof(name), "%s%s", prefix, e->d_name);
	snprintf(show, sizeof(show), "%s%s", op->show, name);
	if (fstatat(src, e->d_name, &st, AT_SYMLINK_NOFOLLOW))
		return fail(-errno, "cannot read image %s: %s", show, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		int s = openat(src, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int d = s < 0 ? -1 : make_dir(dst, e->d_name);

		snprintf(name, sizeof(name), "%s%s/", prefix, e->d_name);
		ret = s < 0 ? fail(-errno, "cannot open %s: %s", show, strerror(errno)) :
		      d < 0 ? d : open_dir(op, s, d, name, false);
		if (s >= 0)
			close(s);
		if (d >= 0)
			close(d);
		return ret;
	}
	if (S_ISLNK(st.st_mode)) {	/* copied: the set's checks refuse what is not theirs */
		char link[4096];
		ssize_t n = readlinkat(src, e->d_name, link, sizeof(link) - 1);

		if (n < 0)
			return fail(-errno, "cannot read link %s: %s", show, strerror(errno));
		link[n] = 0;
		if (*prefix && !strcmp(e->d_name, "parent"))
			return subset_parent(op, dst, prefix, link, show);
		return symlinkat(link, dst, e->d_name) ? fail(-errno, "cannot copy link %s", show) : 0;
	}
	if (!S_ISREG(st.st_mode))
		return fail(-EIO, "image %s is not a regular file", show);
	in = openat(src, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return fail(-errno, "cannot open image %s: %s", show, strerror(errno));
	out = openat(dst, e->d_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0)
		ret = fail(-errno, "cannot create %s in memory: %s", show, strerror(errno));
	else if (op->feed && !*prefix && !strcmp(e->d_name, "pages-1.img"))
		ret = defer_pages(op, in, out, show);
	else if (must_be_sealed(e->d_name) || file_sealed(in))
		ret = open_file(op->key, in, out, name, show, op->setid, NULL);
	else
		ret = copy_plain(in, out) ? fail(-EIO, "cannot copy %s", show) : 0;
	close(in);
	if (out >= 0)
		close(out);
	return ret;
}

/* A stream of dirfd's entries, on a copy of it (closedir leaves dirfd open); NULL */
static DIR *opendir_dup(int dirfd)
{
	int fd = dup(dirfd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);

	if (!d && fd >= 0)
		close(fd);
	return d;
}

/* Every entry of src opened into dst; the top's parent link is the chain's business. */
static int open_dir(struct opening *op, int src, int dst, const char *prefix, bool top)
{
	DIR *d = opendir_dup(src);
	struct dirent *e;
	int ret = 0;

	if (!d)
		return -ENOMEM;
	rewinddir(d);
	while (!ret && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (top && (!strcmp(e->d_name, "parent") || !strcmp(e->d_name, "inventory.img")))
			continue;
		ret = open_entry(op, src, dst, prefix, e);
	}
	closedir(d);
	return ret;
}

/* The set realfd's inventory first (it gives the set id), then the rest. */
static int open_one_set(struct opening *op, int realfd, int dst)
{
	int in = openat(realfd, "inventory.img", O_RDONLY | O_NOFOLLOW | O_CLOEXEC), out, ret;
	char show[sizeof(op->show) + sizeof("inventory.img")];

	snprintf(show, sizeof(show), "%sinventory.img", op->show);
	if (in < 0)
		return fail(-errno, "cannot open image %s: %s", show, strerror(errno));
	out = openat(dst, "inventory.img", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ret = out < 0 ? fail(-errno, "cannot create %s in memory: %s", show, strerror(errno))
		      : open_file(op->key, in, out, "inventory.img", show, NULL, op->setid);
	close(in);
	if (out >= 0)
		close(out);
	return ret ? ret : open_dir(op, realfd, dst, "", true);
}

/* The set's parent link ("parent" for a parent directory in the set), "" if none. */
static void top_link(int realfd, char *buf, size_t len)
{
	ssize_t n = readlinkat(realfd, "parent", buf, len - 1);
	struct stat st;

	if (n < 0 && !fstatat(realfd, "parent", &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode))
		n = snprintf(buf, len, "parent");
	buf[n < 0 ? 0 : n] = 0;
}

static int open_chain(const struct img_key *k, int realfd, int root, int level,
		      struct page_feed **feed)
{
	struct opening op = { .key = k, .feed = level ? NULL : feed, .level = level };
	char name[32], link[32];
	int dst, pfd, ret;

	if (level > CHAIN_MAX)
		return fail(-ELOOP, "image set: more than %d parents", CHAIN_MAX);
	top_link(realfd, op.top_link, sizeof(op.top_link));
	for (int i = 0; i < level; i++)
		strcat(op.show, "parent/");
	snprintf(name, sizeof(name), "set%d", level);
	dst = make_dir(root, name);
	if (dst < 0)
		return dst;
	ret = open_one_set(&op, realfd, dst);
	pfd = ret ? -1 : openat(realfd, "parent", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!ret && pfd < 0 && errno != ENOENT)
		ret = fail(-errno, "cannot open the parent set %s: %s", op.show, strerror(errno));
	if (!ret && pfd >= 0) {
		snprintf(link, sizeof(link), "../set%d", level + 1);
		ret = symlinkat(link, dst, "parent") ? -errno : 0;
		if (!ret)
			ret = open_chain(k, pfd, root, level + 1, NULL);
	}
	if (pfd >= 0)
		close(pfd);
	close(dst);
	return ret;
}

int crypt_open_set(const struct img_key *k, const char *dir, int *dirfd, char *path, size_t len,
		   struct page_feed **feed)
{
	int realfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), root, ret;

	if (feed)
		*feed = NULL;
	if (realfd < 0)
		return fail(-errno, "cannot open directory %s: %s", dir, strerror(errno));
	root = private_tmpfs();
	ret = root < 0 ? root : open_chain(k, realfd, root, 0, feed && one_set(realfd) ? feed : NULL);
	close(realfd);
	if (ret && feed) {
		feed_free(*feed);
		*feed = NULL;
	}
	if (!ret) {
		*dirfd = openat(root, "set0", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ret = *dirfd < 0 ? -errno : 0;
	}
	if (root >= 0)
		close(root);
	if (!ret)
		snprintf(path, len, "/proc/self/fd/%d", *dirfd);
	return ret;
}

/* ---- a restore's pages image fed as it is decrypted (image/feed.h) ---- */

/* The sealed pages-1.img of a restore's set: the source of its feed. */
struct crypt_feed {
	struct seal_head head;
	uint8_t sk[IMG_KEY_LEN];	/* the set's key */
	char show[sizeof("pages-1.img")];	/* its name in messages: at the top of its set */
	int sealed, plain;		/* the sealed file; its stand-in in the tmpfs */
	int direct;			/* the sealed file opened O_DIRECT, or -1 */
};

/* A set with no parent and no processes' sets (no directory): one process's. */
static bool one_set(int realfd)
{
	DIR *d = opendir_dup(realfd);
	struct dirent *e;
	bool one = d != NULL;

	if (d)
		rewinddir(d);
	while (one && (e = readdir(d))) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!strcmp(e->d_name, "parent") ||
		    fstatat(realfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || S_ISDIR(st.st_mode))
			one = false;
	}
	if (d)
		closedir(d);
	return one;
}

static struct chunk_job feed_job(struct crypt_feed *f)
{
	return (struct chunk_job){ .key = f->sk, .head = &f->head, .name = "pages-1.img",
				   .in = f->sealed, .out = f->plain, .nr = nr_chunks(f->head.size) };
}

/*
 * Is the feed's pages image compressed (its first chunk, opened, says so)?
 * A compressed one is read by the restore's loading (compress.c): opened
 * whole first. A process's memory that starts like one is opened so too.
 */
static int feed_compressed(struct crypt_feed *f)
{
	struct chunk_job j = feed_job(f);
	size_t size = chunk_len(&f->head, 0) + TAG;
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	uint8_t *in = malloc(size), *out = malloc(size);
	int ret = ctx && in && out &&
		  EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, f->sk, NULL) ? 0 : -ENOMEM;

	if (!ret)
		ret = open_chunk(ctx, &j, 0, in, out);
	if (!ret)
		ret = pz_is_compressed(out, chunk_len(&f->head, 0));
	chunk_bufs_free(ctx, in, out, size);
	return ret < 0 ? open_failed(ret, f->show, 0, nr_chunks(f->head.size)) : ret;
}

static void cfeed_free(void *src)
{
	struct crypt_feed *f = src;

	if (!f)
		return;
	if (f->sealed >= 0)
		close(f->sealed);
	if (f->plain >= 0)
		close(f->plain);
	if (f->direct >= 0)
		close(f->direct);
	memset(f->sk, 0, sizeof(f->sk));
	free(f);
}

static int cfeed_fill(void *src)
{
	struct crypt_feed *f = src;
	struct chunk_job j = feed_job(f);
	uint64_t bad = 0;

	return open_failed(run_chunks(&j, &bad), f->show, bad, j.nr);
}

static int cfeed_failed(void *src, int err, uint64_t bad)
{
	struct crypt_feed *f = src;

	return open_failed(err, f->show, bad, nr_chunks(f->head.size));
}

/*
 * A feeding thread's: its cipher, the buffer its chunks' ciphertext is read
 * into (a copy: the file may change under a mapping; page-aligned for
 * O_DIRECT), its two buffers of plaintext in turn (feed_ops.produce).
 */
struct cfeed_thread {
	struct crypt_feed *f;
	struct chunk_job j;
	EVP_CIPHER_CTX *ctx;
	uint8_t *in;
	struct feed_bufs out;
	size_t size, in_size;
	bool cached;		/* O_DIRECT refused: through the page cache */
};

static void cfeed_thread_free(void *ts)
{
	struct cfeed_thread *t = ts;

	/* not wiped: the pipe may still hold their pages for its reader; unmapped,
	 * the kernel clears them before they serve anyone else */
	feed_bufs_free(&t->out);
	feed_buf_free(t->in, t->in_size);
	EVP_CIPHER_CTX_free(t->ctx);
	free(t);
}

static void *cfeed_thread_new(void *src)
{
	struct crypt_feed *f = src;
	struct cfeed_thread *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->f = f;
	t->j = feed_job(f);
	t->size = MIN((uint64_t)CHUNK, f->head.size) + TAG;
	/* a chunk and its tag from the page before it to the page after it */
	t->in_size = (t->size + 2 * PAGE_SIZE - 1) & PAGE_MASK;
	t->ctx = EVP_CIPHER_CTX_new();
	t->in = feed_buf(t->in_size);
	t->cached = f->direct < 0;
	if (feed_bufs_init(&t->out, t->size) || !t->ctx || !t->in ||
	    !EVP_DecryptInit_ex(t->ctx, EVP_aes_256_gcm(), NULL, f->sk, NULL)) {
		cfeed_thread_free(t);
		return NULL;
	}
	return t;
}

/*
 * Chunk i's ciphertext and tag read with O_DIRECT (the disk writes into the
 * buffer: no page cache to fill and copy from, as the blob reads a raw
 * image): the pages holding it, *in where it starts. 0, -EINVAL (O_DIRECT
 * refused: read through the cache), or -errno.
 */
static int read_direct(struct cfeed_thread *t, uint64_t i, const uint8_t **in)
{
	uint64_t off = sealed_off(i), need = chunk_len(t->j.head, i) + TAG;
	uint64_t a = off & PAGE_MASK, e = (off + need + PAGE_SIZE - 1) & PAGE_MASK, got = 0;

	while (a + got < e) {
		ssize_t n = pread(t->f->direct, t->in + got, (size_t)(e - a - got), (off_t)(a + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			break;	/* the file's end: its last page is short */
		got += (uint64_t)n;
	}
	if (a + got < off + need)
		return -ENODATA;
	*in = t->in + (off - a);
	return 0;
}

static int cfeed_produce(void *ts, uint64_t i, const uint8_t **out, size_t *len)
{
	struct cfeed_thread *t = ts;
	uint8_t *o = feed_bufs_next(&t->out);
	const uint8_t *in = t->in;
	int ret = t->cached ? 1 : read_direct(t, i, &in);

	*out = o;
	*len = chunk_len(t->j.head, i);
	if (ret == -EINVAL) {
		t->cached = true;
		pr_debug("%s", "pages-1.img: O_DIRECT refused, read through the page cache");
	}
	if (ret == 1 || ret == -EINVAL)
		return open_chunk(t->ctx, &t->j, i, t->in, o);
	return ret ? ret : open_sealed(t->ctx, &t->j, i, in, o);
}

static const struct feed_ops crypt_feed_ops = {
	.made = "decrypted",
	.authenticated = true,
	.threads = 4,
	.thread_new = cfeed_thread_new,
	.thread_free = cfeed_thread_free,
	.produce = cfeed_produce,
	.fill = cfeed_fill,
	.failed = cfeed_failed,
	.free = cfeed_free,
};

/*
 * The sealed file opened again O_DIRECT for the feed (through memdump's own
 * fd, /proc/self/fd), where its filesystem allows it: no page cache filled
 * and copied from (a cold 1 GiB image reads in a fraction of the CPU).
 * Otherwise its ciphertext is read from the disk into the page cache while
 * the restore prepares: the feed then waits for the AES, not the disk.
 */
static void open_direct(struct crypt_feed *f)
{
	char path[32];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", f->sealed);
	f->direct = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (f->direct >= 0 && f->direct < 3) {
		int high = fcntl(f->direct, F_DUPFD_CLOEXEC, 3);

		close(f->direct);
		f->direct = high;
	}
	if (f->direct >= 0)
		return;
	posix_fadvise(f->sealed, 0, 0, POSIX_FADV_SEQUENTIAL);
	posix_fadvise(f->sealed, 0, 0, POSIX_FADV_WILLNEED);
}

/*
 * The sealed pages image in kept sealed, out (in the tmpfs) an empty file of
 * its size; a compressed one opened into out as ever.
 */
static int defer_pages(struct opening *op, int in, int out, const char *show)
{
	struct crypt_feed *f = calloc(1, sizeof(*f));
	int ret;

	if (!f)
		return -ENOMEM;
	f->sealed = f->plain = f->direct = -1;
	snprintf(f->show, sizeof(f->show), "pages-1.img");
	ret = read_head(op->key, in, show, op->setid, &f->head);
	if (!ret)
		ret = set_key(op->key, f->head.setid, f->head.version, f->sk);
	if (!ret) {
		f->sealed = in;
		ret = feed_compressed(f);
		f->sealed = -1;
		if (ret > 0) {
			cfeed_free(f);
			return open_file(op->key, in, out, "pages-1.img", show, op->setid, NULL);
		}
	}
	if (!ret && ftruncate(out, (off_t)f->head.size))
		ret = fail(-errno, "cannot make %s in memory: %s", show, strerror(errno));
	if (!ret) {
		f->sealed = fcntl(in, F_DUPFD_CLOEXEC, 3);
		f->plain = fcntl(out, F_DUPFD_CLOEXEC, 3);
		if (f->sealed < 0 || f->plain < 0)
			ret = fail(-errno, "cannot keep %s open: %s", show, strerror(errno));
	}
	if (!ret)
		open_direct(f);

	if (ret) {
		cfeed_free(f);
		return ret;
	}
	*op->feed = feed_new(&crypt_feed_ops, f, nr_chunks(f->head.size), CHUNK, out);
	return *op->feed ? 0 : -ENOMEM;
}


static int remember(char ***list, int *nr, const char *name, bool **dirs, bool dir);

/*
 * The page writer's threads hand over whole chunks, in any order; each is
 * sealed in place (a chunk's ciphertext is as long as its plaintext) and
 * written at its place in the sealed layout, its tag after its last byte.
 * The file is the real directory's (unnamed until crypt_seal() names it),
 * so the pages are copied once, and only ciphertext reaches its page cache.
 */
struct crypt_pages {
	struct img_crypt *c;
	struct seal_head head;
	struct chunk_job job;		/* the associated data's parts */
	char name[64];
	EVP_CIPHER_CTX *ctx;
	int fd;				/* a copy of the writer's */
	bool named;			/* no O_TMPFILE here: created under its name */
	bool in_chunk;			/* a chunk begun, its tag not written yet */
	bool done;			/* every chunk sealed */
	uint64_t plain;			/* bytes sealed */
	uint64_t off;			/* where the next sealed byte goes */
};

int crypt_pages_dir(const struct img_crypt *c)
{
	return c->realfd;
}

static int pages_file(struct img_crypt *c, struct crypt_pages *p, int fd)
{
	if (fd >= 0) {
		p->fd = dup(fd);
		return p->fd < 0 ? -errno : 0;
	}
	p->fd = openat(c->realfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (p->fd >= 0)
		return 0;
	/* a filesystem without O_TMPFILE: named now, removed if the dump fails */
	p->fd = openat(c->realfd, p->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (p->fd < 0)
		return -errno;
	p->named = true;
	return remember(&c->sealed, &c->nr_sealed, p->name, &c->sealed_dir, false);
}

static void pages_free(struct crypt_pages *p)
{
	if (p->fd >= 0)
		close(p->fd);
	EVP_CIPHER_CTX_free(p->ctx);
	memset(p, 0, sizeof(*p));
	free(p);
}

int crypt_pages_open(struct img_crypt *c, const char *name, uint64_t size, int *fd,
		     struct crypt_pages **out)
{
	struct crypt_pages *p = calloc(1, sizeof(*p));
	struct crypt_pages **l = realloc(c->pages, (size_t)(c->nr_pages + 1) * sizeof(*l));
	int ret;

	if (l)
		c->pages = l;
	if (!p || !l) {
		free(p);
		return -ENOMEM;
	}
	p->c = c;
	p->fd = -1;
	snprintf(p->name, sizeof(p->name), "%s", name);
	memcpy(p->head.magic, SEAL_MAGIC, sizeof(p->head.magic));
	p->head.version = SEAL_VERSION;
	p->head.chunk = CHUNK;
	memcpy(p->head.setid, c->setid, sizeof(p->head.setid));
	memcpy(p->head.keyid, c->key.id, sizeof(p->head.keyid));
	p->head.size = size;
	p->job = (struct chunk_job){ .key = c->subkey, .head = &p->head, .name = p->name,
				     .seal = true, .nr = nr_chunks(size) };
	p->off = sizeof(p->head);
	ret = pages_file(c, p, *fd);
	if (ret)
		ret = fail(ret, "cannot create image %s: %s", name, strerror(-ret));
	if (!ret && RAND_bytes(p->head.nonce, sizeof(p->head.nonce)) != 1)
		ret = fail(-EIO, "no random bytes for image %s (OpenSSL)", name);
	p->ctx = ret ? NULL : EVP_CIPHER_CTX_new();
	if (!ret && (!p->ctx || !EVP_EncryptInit_ex(p->ctx, EVP_aes_256_gcm(), NULL, c->subkey, NULL)))
		ret = fail(-ENOMEM, "cannot seal image %s (OpenSSL)", name);
	if (!ret && *fd < 0) {
		*fd = dup(p->fd);
		if (*fd < 0)
			ret = fail(-errno, "cannot create image %s: %s", name, strerror(errno));
	}
	if (ret) {
		pages_free(p);
		return ret;
	}
	c->pages[c->nr_pages++] = p;
	*out = p;
	return 0;
}

/* Chunk i begun: its nonce and associated data. */
static int pages_begin(struct crypt_pages *p, uint64_t i)
{
	uint8_t iv[12];
	uint32_t i32 = (uint32_t)i;

	memcpy(iv, p->head.nonce, 8);
	memcpy(iv + 8, &i32, 4);
	if (!EVP_EncryptInit_ex(p->ctx, NULL, NULL, NULL, iv) || !chunk_aad(p->ctx, true, &p->job, i))
		return -EIO;
	p->in_chunk = true;
	return 0;
}

/* The chunk begun ended: its tag written after it. */
static int pages_end(struct crypt_pages *p)
{
	uint8_t tag[TAG];
	int n, ret;

	if (!EVP_EncryptFinal_ex(p->ctx, tag, &n) ||
	    !EVP_CIPHER_CTX_ctrl(p->ctx, EVP_CTRL_GCM_GET_TAG, TAG, tag))
		return -EIO;
	ret = pwrite_all(p->fd, tag, TAG, p->off);
	p->off += TAG;
	p->in_chunk = false;
	p->done = p->plain == p->head.size;
	return ret;
}

/* ---- the same, chunk by chunk, on several threads (each its own sealer) ---- */

struct crypt_sealer {
	struct crypt_pages *p;
	EVP_CIPHER_CTX *ctx;
};

int crypt_sealer_new(struct crypt_pages *p, struct crypt_sealer **out)
{
	struct crypt_sealer *s = calloc(1, sizeof(*s));

	if (s)
		s->ctx = EVP_CIPHER_CTX_new();
	if (!s || !s->ctx ||
	    !EVP_EncryptInit_ex(s->ctx, EVP_aes_256_gcm(), NULL, p->c->subkey, NULL)) {
		crypt_sealer_free(s);
		return fail(-ENOMEM, "cannot seal image %s (OpenSSL)", p->name);
	}
	s->p = p;
	*out = s;
	return 0;
}

void crypt_sealer_free(struct crypt_sealer *s)
{
	if (!s)
		return;
	EVP_CIPHER_CTX_free(s->ctx);
	free(s);
}

uint64_t crypt_pages_nr_chunks(const struct crypt_pages *p)
{
	return p->head.size ? nr_chunks(p->head.size) : 0;
}

/* Chunk i sealed in place, its tag after it: the sealed chunk written at its place. */
int crypt_pages_chunk(struct crypt_sealer *s, uint64_t i, uint8_t *buf, size_t len)
{
	struct crypt_pages *p = s->p;
	uint8_t iv[12];
	uint32_t i32 = (uint32_t)i;
	int n;

	if (i >= crypt_pages_nr_chunks(p) || len != chunk_len(&p->head, i))
		return -EFBIG;
	memcpy(iv, p->head.nonce, 8);
	memcpy(iv + 8, &i32, 4);
	if (!EVP_EncryptInit_ex(s->ctx, NULL, NULL, NULL, iv) || !chunk_aad(s->ctx, true, &p->job, i) ||
	    !EVP_EncryptUpdate(s->ctx, buf, &n, buf, (int)len) ||
	    !EVP_EncryptFinal_ex(s->ctx, buf + len, &n) ||
	    !EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_GCM_GET_TAG, TAG, buf + len))
		return -EIO;
	int ret = pwrite_all(p->fd, buf, len + TAG, sealed_off(i));

	if (!ret)
		__atomic_add_fetch(&p->plain, (uint64_t)len, __ATOMIC_RELAXED);
	return ret;
}

/* Chunks sealed by crypt_pages_chunk(): where the file ends, whether all are. */
static void pages_chunked_end(struct crypt_pages *p)
{
	if (p->in_chunk || p->off != sizeof(p->head) || !p->head.size)
		return;		/* nothing sealed, or the empty chunk */
	p->off = sizeof(p->head) + p->head.size + nr_chunks(p->head.size) * TAG;
	p->done = p->plain == p->head.size;
}

int crypt_pages_close(struct crypt_pages *p)
{
	int ret = 0;

	pages_chunked_end(p);

	if (!p->head.size && !p->done)		/* one empty chunk */
		ret = pages_begin(p, 0) ?: pages_end(p);
	if (!ret && p->plain != p->head.size)
		return fail(-EIO, "cannot seal image %s: %" PRIu64 " bytes written of %" PRIu64,
			    p->name, p->plain, p->head.size);
	if (!ret)
		ret = pwrite_all(p->fd, &p->head, sizeof(p->head), 0);
	if (!ret && ftruncate(p->fd, (off_t)p->off))	/* a warmed file was larger */
		ret = -errno;
	return ret ? fail(ret, "cannot write image %s: %s", p->name, strerror(-ret)) : 0;
}

/* The pages images sealed as written named in the real directory. */
static int name_pages(struct img_crypt *c)
{
	char path[64];
	int ret = 0;

	for (int i = 0; i < c->nr_pages && !ret; i++) {
		struct crypt_pages *p = c->pages[i];

		if (!p->done || p->named)
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", p->fd);
		if (linkat(AT_FDCWD, path, c->realfd, p->name, AT_SYMLINK_FOLLOW))
			return fail(-errno, "cannot create image %s: %s", p->name, strerror(errno));
		p->named = true;
		ret = remember(&c->sealed, &c->nr_sealed, p->name, &c->sealed_dir, false);
	}
	return ret;
}

/* ---- a dump's staging ---- */

static int remember(char ***list, int *nr, const char *name, bool **dirs, bool dir)
{
	char **l = realloc(*list, (size_t)(*nr + 1) * sizeof(*l));

	if (!l)
		return -ENOMEM;
	*list = l;
	if (dirs) {
		bool *d = realloc(*dirs, (size_t)(*nr + 1) * sizeof(*d));

		if (!d)
			return -ENOMEM;
		*dirs = d;
		d[*nr] = dir;
	}
	l[*nr] = strdup(name);
	return l[*nr] ? (*nr)++, 0 : -ENOMEM;
}

/* A runtime's files in the dump directory (runc's descriptors.json) go into the
 * staging as they are, so that the inventory lists them; they stay unsealed. */
static int copy_runtime_files(struct img_crypt *c)
{
	DIR *d = opendir_dup(c->realfd);
	struct dirent *e;
	int ret = 0;

	if (!d)
		return -ENOMEM;
	while (!ret && (e = readdir(d))) {
		struct stat st;
		int in, out;

		if (e->d_name[0] == '.' || must_be_sealed(e->d_name) ||
		    fstatat(c->realfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		in = openat(c->realfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		out = openat(c->stagefd, e->d_name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		ret = in < 0 || out < 0 ? -errno : copy_plain(in, out);
		if (!ret)
			ret = remember(&c->skip, &c->nr_skip, e->d_name, NULL, false);
		if (in >= 0)
			close(in);
		if (out >= 0)
			close(out);
	}
	closedir(d);
	return ret ? fail(ret, "cannot copy the runtime's files of the dump directory: %s",
			  strerror(-ret)) : 0;
}

int crypt_stage(const struct img_key *k, int realfd, struct img_crypt **out, int *stagefd)
{
	struct img_crypt *c = calloc(1, sizeof(*c));
	int ret;

	if (!c) {
		close(realfd);
		return -ENOMEM;
	}
	c->key = *k;
	c->realfd = realfd;
	c->stagefd = -1;
	c->rootfd = private_tmpfs();
	ret = c->rootfd < 0 ? c->rootfd : 0;
	if (!ret && RAND_bytes(c->setid, sizeof(c->setid)) != 1)
		ret = fail(-EIO, "no random bytes for the set id (OpenSSL)");
	if (!ret)
		ret = set_key(&c->key, c->setid, SEAL_VERSION, c->subkey);
	if (!ret)
		ret = c->stagefd = make_dir(c->rootfd, "set");
	if (ret >= 0)
		ret = copy_runtime_files(c);
	if (ret < 0) {
		crypt_free(c);
		return ret;
	}
	*out = c;
	*stagefd = dup(c->stagefd);
	return *stagefd < 0 ? -errno : 0;
}

int crypt_stage_parent(struct img_crypt *c, const char *path, int *dirfd, const char **link)
{
	int realp = openat(c->realfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret;

	if (realp < 0)
		return fail(-errno, "cannot open the previous images %s: %s", path, strerror(errno));
	if (!img_set_sealed(realp)) {
		close(realp);
		return fail(-EINVAL, "the previous images %s are not encrypted: an encrypted "
			    "incremental set needs an encrypted parent", path);
	}
	/* p0 is the parent, its own parents p0's set1, ...: open_chain's layout */
	ret = c->nr_parents ? fail(-EINVAL, "one previous set only") : make_dir(c->rootfd, "p0");
	if (ret >= 0) {
		int p0 = ret;

		ret = open_chain(&c->key, realp, p0, 0, NULL);
		close(p0);
	}
	close(realp);
	if (ret)
		return ret;
	c->nr_parents = 1;
	c->parent_path = path;
	*dirfd = openat(c->rootfd, "p0/set0", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*link = "../p0/set0";
	return *dirfd < 0 ? -errno : 0;
}

static bool skipped(const struct img_crypt *c, const char *name)
{
	for (int i = 0; i < c->nr_skip; i++)
		if (!strcmp(c->skip[i], name))
			return true;
	return false;
}

static int seal_dir(struct img_crypt *c, int src, int dst, const char *prefix);

/*
 * The real parent link of the staging's link name: the set's is the option's
 * path; a tree's process set proc-PID/ links the same process's set in it,
 * as a plain tree dump does (treedump.c), where the staging links the
 * decrypted parent's proc-PID (crypt_stage_parent(): p0/set0).
 */
static int real_link(const struct img_crypt *c, int src, const char *prefix, const char *name,
		     char *real, size_t len)
{
	size_t sub = strlen(prefix);
	char link[PATH_MAX], want[PATH_MAX];
	ssize_t n;

	if (!c->parent_path || strcmp(name + sub, "parent"))
		return fail(-EIO, "cannot seal %s: a symbolic link", name);
	if (!sub) {
		snprintf(real, len, "%s", c->parent_path);
		return 0;
	}
	sub--;	/* prefix: "proc-PID/" */
	n = readlinkat(src, "parent", link, sizeof(link) - 1);
	link[n < 0 ? 0 : n] = 0;
	snprintf(want, sizeof(want), "../../p0/set0/%.*s", (int)sub, prefix);
	if (strchr(prefix, '/') != prefix + sub || strcmp(link, want))
		return fail(-EIO, "cannot seal %s: a symbolic link to %s", name, link);
	snprintf(real, len, "%s%s/%.*s", c->parent_path[0] == '/' ? "" : "../", c->parent_path,
		 (int)sub, prefix);
	return 0;
}

static int seal_link(struct img_crypt *c, int src, int dst, const char *prefix, const char *name)
{
	char real[PATH_MAX + 64];
	int ret = real_link(c, src, prefix, name, real, sizeof(real));

	if (ret)
		return ret;
	if (symlinkat(real, dst, "parent"))
		return fail(-errno, "cannot create the parent link to %s: %s", real, strerror(errno));
	return remember(&c->sealed, &c->nr_sealed, name, &c->sealed_dir, false);
}

static int seal_one(struct img_crypt *c, int src, int dst, const char *prefix, const char *ent,
		    const char *as)
{
	char name[512];
	struct stat st;
	int in, out, ret;

	snprintf(name, sizeof(name), "%s%s", prefix, ent);
	if (fstatat(src, ent, &st, AT_SYMLINK_NOFOLLOW))
		return fail(-errno, "cannot read image %s: %s", name, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		int s = openat(src, ent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), d = -1;

		ret = s < 0 ? -errno : remember(&c->sealed, &c->nr_sealed, name, &c->sealed_dir, true);
		if (!ret)
			ret = d = make_dir(dst, ent);
		if (ret >= 0) {
			snprintf(name, sizeof(name), "%s%s/", prefix, ent);
			ret = seal_dir(c, s, d, name);
		}
		if (s >= 0)
			close(s);
		if (d >= 0)
			close(d);
		return ret;
	}
	if (S_ISLNK(st.st_mode))
		return seal_link(c, src, dst, prefix, name);
	in = openat(src, ent, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return fail(-errno, "cannot open image %s: %s", name, strerror(errno));
	out = openat(dst, as, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		ret = fail(-errno, "cannot create image %s: %s", name, strerror(errno));
		close(in);
		return ret;
	}
	ret = remember(&c->sealed, &c->nr_sealed, as == ent ? name : as, &c->sealed_dir, false);
	if (!ret)
		ret = seal_file(c, in, out, name);
	close(in);
	close(out);
	return ret;
}

static int seal_dir(struct img_crypt *c, int src, int dst, const char *prefix)
{
	DIR *d = opendir_dup(src);
	struct dirent *e;
	int ret = 0;

	if (!d)
		return -ENOMEM;
	while (!ret && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (e->d_name[0] == '.' || (!prefix[0] && (!strcmp(e->d_name, "inventory.img") ||
							       skipped(c, e->d_name))))
			continue;
		ret = seal_one(c, src, dst, prefix, e->d_name, e->d_name);
	}
	closedir(d);
	return ret;
}

int crypt_seal(struct img_crypt *c)
{
	static const char tmp[] = ".inventory.img.sealing";
	int ret = name_pages(c) ?: seal_dir(c, c->stagefd, c->realfd, "");

	if (ret)
		return ret;
	unlinkat(c->realfd, tmp, 0);
	ret = seal_one(c, c->stagefd, c->realfd, "", "inventory.img", tmp);
	if (ret)
		return ret;
	if (renameat(c->realfd, tmp, c->realfd, "inventory.img"))
		return fail(-errno, "cannot rename inventory image: %s", strerror(errno));
	free(c->sealed[c->nr_sealed - 1]);
	c->sealed[c->nr_sealed - 1] = strdup("inventory.img");
	return c->sealed[c->nr_sealed - 1] ? 0 : -ENOMEM;
}

static int sync_path(int dirfd, const char *name, bool dir)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (dir ? O_DIRECTORY : 0));
	int ret = 0;

	if (fd < 0)
		return errno == ELOOP ? 0 : fail(-errno, "cannot sync image %s: %s", name,
						 strerror(errno));
	if ((dir ? fsync(fd) : fdatasync(fd)) && errno != EINVAL)
		ret = fail(-errno, "cannot sync image %s: %s", name, strerror(errno));
	close(fd);
	return ret;
}

int crypt_sync(struct img_crypt *c)
{
	int ret = 0;

	for (int i = 0; i < c->nr_sealed && !ret; i++)
		ret = sync_path(c->realfd, c->sealed[i], c->sealed_dir[i]);
	if (!ret && fsync(c->realfd))
		ret = fail(-errno, "cannot sync the dump directory: %s", strerror(errno));
	if (ret) {
		unlinkat(c->realfd, "inventory.img", 0);
		fsync(c->realfd);
	}
	return ret;
}

void crypt_remove_sealed(struct img_crypt *c)
{
	for (int i = c->nr_sealed - 1; i >= 0; i--) {
		unlinkat(c->realfd, c->sealed[i], c->sealed_dir[i] ? AT_REMOVEDIR : 0);
		free(c->sealed[i]);
	}
	c->nr_sealed = 0;
}

void crypt_free(struct img_crypt *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->nr_sealed; i++)
		free(c->sealed[i]);
	for (int i = 0; i < c->nr_skip; i++)
		free(c->skip[i]);
	for (int i = 0; i < c->nr_pages; i++)
		pages_free(c->pages[i]);
	free(c->pages);
	free(c->sealed);
	free(c->sealed_dir);
	free(c->skip);
	if (c->stagefd >= 0)
		close(c->stagefd);
	if (c->rootfd >= 0)
		close(c->rootfd);
	close(c->realfd);
	memset(&c->key, 0, sizeof(c->key));
	memset(c->subkey, 0, sizeof(c->subkey));
	free(c);
}
