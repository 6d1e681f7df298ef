/*
 * The stream of an image set (layout in docs/images.md, "Streams"): its
 * head, entries and end as written, for memdump pack (cli/pack.c) and for a
 * dump whose pages go into the stream while it is frozen (mem/pages.c).
 */
#ifndef MEMDUMP_IMAGE_STREAMW_H
#define MEMDUMP_IMAGE_STREAMW_H

#include <stdbool.h>
#include <stdint.h>

#include "image/hash.h"

#define STREAM_MAGIC	"MDSTRM01"
#define STREAM_ENTRY_MAGIC	0x4553444du	/* "MDSE" */
/* 1: a set; 2: a set with its parents; 3: pages-1.img first, inventory.img last */
#define STREAM_V_DIRECT	3

enum { E_FILE = 1, E_DIR = 2, E_END = 3, E_LINK = 4 };

struct stream_head {
	char magic[8];
	uint32_t version, zero;
	uint64_t inv_hash, inv_size;	/* version 3 (the inventory last): a random number
					 * naming the stream, and 0 */
};

struct entry_head {
	uint32_t magic, index;
	uint16_t kind, name_len;
	uint32_t zero;
	uint64_t size;
};

_Static_assert(sizeof(struct stream_head) == 32, "stream head");
_Static_assert(sizeof(struct entry_head) == 24, "entry head");

struct stream_w {
	int fd;
	uint32_t index;		/* the next entry's */
	struct hash64 chain;	/* the head and every entry's checksum */
};

/*
 * A killing dump's stream written while the target is frozen (version 3):
 * mem/pages.c writes the head and pages-1.img spliced from the page pipes;
 * rest(), given by the command (cli/pack.c), the other files of the staged
 * set and inventory.img, then the end, before the kill.
 */
struct stream_direct {
	struct stream_w w;
	struct hash64 pages_h;		/* pages-1.img's entry: its head and name */
	bool started;			/* the head is written: the staged set is not packed again */
	bool done;			/* the end is written */
	int (*rest)(struct stream_direct *s, int dirfd);
};

/* Each 0 or <0 after fail() ("cannot write the stream: ..."). */
int stream_w_head(struct stream_w *w, uint32_t version, uint64_t inv_hash, uint64_t inv_size);
/* An entry's head and name, begun in h (the caller adds the bytes it writes, if hashed). */
int stream_w_entry(struct stream_w *w, struct hash64 *h, uint16_t kind, const char *name,
		   uint64_t size);
/* The entry's checksum after its bytes. */
int stream_w_entry_end(struct stream_w *w, struct hash64 *h);
/* The end: the entries' count and the checksum of the head and every entry. */
int stream_w_end(struct stream_w *w);

#endif
