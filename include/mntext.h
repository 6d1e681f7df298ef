/*
 * --external mnt[KEY]:VALUE (CRIU's external bind mounts, RPC ext_mnt):
 * on a dump KEY is a bind mount's point in the process's mount namespace and
 * VALUE the key the images give it; on a restore KEY is that key (or the
 * mount point) and VALUE the path memdump binds it from.
 */
#ifndef MEMDUMP_MNTEXT_H
#define MEMDUMP_MNTEXT_H

#include <stdbool.h>

#define MNT_EXT_MAX	64

struct mnt_ext {
	const char *key, *val;
	bool optional;		/* a runtime's map (RPC ext_mnt, as CRIU's): a key that names
				 * no mount is passed over; the command line's must name one */
};

#endif
