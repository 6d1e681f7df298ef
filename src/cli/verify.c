/*
 * memdump verify -D DIR: check an image set against its inventory; a
 * process tree's: every process's set (DIR/proc-PID) as well.
 */
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

int verify_image_set(const char *dir, size_t *procs, size_t *images, size_t *runs)
{
	struct dumpset ds;
	int ret = dumpset_load(dir, &ds);

	if (ret)
		return ret;
	*procs = ds.nr_members + 1;
	*images = ds.inv->n_images + 1;
	*runs = nr_page_runs(&ds);
	for (size_t i = 0; i < ds.nr_members && !ret; i++) {
		struct dumpset m;

		ret = dumpset_load_member(&ds, (pid_t)ds.members[i]->pid, &m);
		if (ret)
			break;
		*images += m.inv->n_images + 1;
		*runs += nr_page_runs(&m);
		dumpset_free(&m);
	}
	dumpset_free(&ds);
	return ret;
}

int cmd_verify(const struct options *o)
{
	size_t procs, images, runs;
	int ret = verify_image_set(o->dir, &procs, &images, &runs);

	if (!ret && procs > 1)
		printf("image set %s verified: %zu processes, %zu images, %zu page runs\n",
		       o->shown_dir ? o->shown_dir : o->dir,
		       procs, images, runs);
	else if (!ret)
		printf("image set %s verified: %zu images, %zu page runs\n",
		       o->shown_dir ? o->shown_dir : o->dir, images, runs);
	return ret;
}
