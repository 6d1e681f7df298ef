/* The stream of an image set as written (streamw.h). */
#include <errno.h>
#include <string.h>

#include "fdio.h"
#include "image/streamw.h"
#include "log.h"

static int put(struct stream_w *w, const void *buf, size_t len)
{
	int ret = fd_write_full(w->fd, buf, len);

	return ret ? fail(ret, "cannot write the stream: %s", strerror(-ret)) : 0;
}

int stream_w_head(struct stream_w *w, uint32_t version, uint64_t inv_hash, uint64_t inv_size)
{
	struct stream_head s = { .version = version, .inv_hash = inv_hash, .inv_size = inv_size };

	memcpy(s.magic, STREAM_MAGIC, 8);
	w->index = 0;
	hash64_init(&w->chain);
	hash64_update(&w->chain, &s, sizeof(s));
	return put(w, &s, sizeof(s));
}

int stream_w_entry(struct stream_w *w, struct hash64 *h, uint16_t kind, const char *name,
		   uint64_t size)
{
	struct entry_head e = { .magic = STREAM_ENTRY_MAGIC, .index = w->index, .kind = kind,
				.name_len = (uint16_t)strlen(name), .size = size };
	int ret = put(w, &e, sizeof(e));

	hash64_init(h);
	hash64_update(h, &e, sizeof(e));
	hash64_update(h, name, e.name_len);
	return ret ? ret : put(w, name, e.name_len);
}

int stream_w_entry_end(struct stream_w *w, struct hash64 *h)
{
	uint64_t sum = hash64_final(h);

	hash64_update(&w->chain, &sum, sizeof(sum));
	w->index++;
	return put(w, &sum, sizeof(sum));
}

int stream_w_end(struct stream_w *w)
{
	struct hash64 h;
	uint64_t sum;
	int ret = stream_w_entry(w, &h, E_END, "", w->index);

	sum = hash64_final(&w->chain);
	return ret ? ret : put(w, &sum, sizeof(sum));
}
