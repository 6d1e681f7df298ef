/*
 * Encrypted image sets (docs/images.md, "Encrypted images"): every file of a
 * set sealed with AES-256-GCM (OpenSSL) in chunks, each chunk's associated
 * data naming the set (a random id), the file and the chunk's place.
 *
 * Plaintext images never reach a file: a dump writes its set into a private
 * tmpfs mounted nowhere (fsmount(): no path reaches it, it goes with
 * memdump's last descriptor of it, a killed dump's too), and seals it into
 * the directory when the inventory is written; readers open the sealed set
 * into such a tmpfs, every file authenticated before anything else reads it.
 * A killing dump's or pre-dump's pages image is not staged: the page writer
 * seals it as it writes it into the real directory (crypt_pages_*); nor is a
 * one-process set's at restore: it is fed to the blob as it is decrypted
 * (crypt_feed_*).
 * Every set is sealed with its own key, derived from the key and its id.
 */
#ifndef MEMDUMP_CRYPT_H
#define MEMDUMP_CRYPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IMG_KEY_LEN	32
#define IMG_SETID_LEN	16

struct img_key {
	uint8_t key[IMG_KEY_LEN];
	uint8_t id[8];		/* SHA-256 of a label and the key: tells a wrong key */
};

/* A key from the file path, or (path NULL) from fd: exactly 32 bytes. 0 or <0 after fail(). */
int img_key_load(const char *path, int fd, struct img_key *k);
/* Does the directory fd hold a sealed set (its inventory.img is sealed)? */
bool img_set_sealed(int dirfd);

/* A dump's staging: the plaintext set in a private tmpfs, sealed into realfd. */
struct img_crypt;
/*
 * The staging of a dump into the directory realfd (taken over): *stagefd the
 * directory the dump writes into. 0 or <0 after fail().
 */
int crypt_stage(const struct img_key *k, int realfd, struct img_crypt **out, int *stagefd);
/* The previous set path (relative to the real directory) opened for an incremental
 * dump: decrypted into the staging, *dirfd it; *link what the staging's parent link
 * names meanwhile. 0 or <0 after fail(). */
int crypt_stage_parent(struct img_crypt *c, const char *path, int *dirfd, const char **link);
/*
 * A pages image sealed as the page writer writes it (no staging copy): name
 * its path in the set, size its plaintext bytes (exactly), *fd the file to
 * write (in crypt_pages_dir(), a warmed unnamed one) or -1: then one made
 * there, *fd a copy of it. crypt_seal() names it. 0 or <0 after fail().
 */
struct crypt_pages;
int crypt_pages_dir(const struct img_crypt *c);
int crypt_pages_open(struct img_crypt *c, const char *name, uint64_t size, int *fd,
		     struct crypt_pages **out);
/*
 * Its chunks, on several threads: chunk i (of crypt_pages_nr_chunks(),
 * CRYPT_CHUNK bytes of plaintext each, the last one shorter) sealed in place
 * in buf, which has CRYPT_TAG bytes of room after its len, and written at its
 * place. Each thread its own sealer (new: 0 or <0 after fail()); a chunk:
 * 0 or -errno, reported by the caller.
 */
#define CRYPT_CHUNK	(1u << 20)
#define CRYPT_TAG	16
struct crypt_sealer;
int crypt_sealer_new(struct crypt_pages *p, struct crypt_sealer **out);
void crypt_sealer_free(struct crypt_sealer *s);
uint64_t crypt_pages_nr_chunks(const struct crypt_pages *p);
int crypt_pages_chunk(struct crypt_sealer *s, uint64_t i, uint8_t *buf, size_t len);
/* Every byte written: the last tag, the head. 0 or <0 after fail(). */
int crypt_pages_close(struct crypt_pages *p);
/* The staging sealed into the real directory, inventory.img last. */
int crypt_seal(struct img_crypt *c);
/* The sealed files to the disk. */
int crypt_sync(struct img_crypt *c);
/* A failed dump: what crypt_seal() wrote removed. */
void crypt_remove_sealed(struct img_crypt *c);
void crypt_free(struct img_crypt *c);

/*
 * A sealed set (dir, with its chain of parents and its processes' sets)
 * opened into a private tmpfs, every byte authenticated: *dirfd its
 * directory there, path "/proc/self/fd/N" (len >= 32) naming it. 0 or <0
 * after fail() naming the image that is wrong.
 *
 * feed (a restore's), not NULL: a one-process set with no parent keeps its
 * pages-1.img sealed, its head checked (key, set, size): the tmpfs holds an
 * empty file of its size, *feed (or NULL) the way to its bytes (image/feed.h),
 * which the restore gets either fed as they are decrypted (feed_open), every
 * chunk authenticated before a byte of it is written, or decrypted into that
 * file (feed_fill) before anything reads it.
 */
struct page_feed;
int crypt_open_set(const struct img_key *k, const char *dir, int *dirfd, char *path, size_t len,
		   struct page_feed **feed);

#endif
