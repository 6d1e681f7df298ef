/* --action-script FILE: CRIU's action scripts, run at every hook point (hooks.h). */
#ifndef MEMDUMP_ACTION_SCRIPT_H
#define MEMDUMP_ACTION_SCRIPT_H

#include "hooks.h"

struct action_scripts {
	const char *const *paths;	/* run in this order at each point */
	int nr;
	const char *image_dir;		/* -D */
	struct hooks hooks;		/* what the pipelines get */
};

/* s->hooks runs every script; NULL when there is none (nr 0). */
const struct hooks *action_scripts_init(struct action_scripts *s, const char *const *paths,
					int nr, const char *image_dir);

#endif
