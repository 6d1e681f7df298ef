/* memdump verify -D DIR: check an image set against its inventory. */
#include <stdio.h>

#include "cli/options.h"
#include "image/dumpset.h"
#include "log.h"

static size_t nr_page_runs(const struct dumpset *ds)
{
	size_t n = ds->nr_runs;

	for (size_t i = 0; i < ds->nr_shmems; i++)
		n += ds->shmems[i].nr_runs;
	return n;
}

int cmd_verify(const struct options *o)
{
	struct dumpset ds;
	int ret = dumpset_load(o->dir, &ds);

	if (ret)
		return ret;
	printf("image set %s verified: %zu images, %zu page runs\n", o->dir,
	       ds.inv->n_images + 1, nr_page_runs(&ds));
	dumpset_free(&ds);
	return 0;
}
