/*
 * Running a helper program of the system (nft, iptables-legacy-save ...) and
 * taking its output: the child is spawned from the calling thread, so it is
 * in that thread's namespaces (a dump's thread in the target's network
 * namespace, a restore's in the one it made).
 */
#ifndef MEMDUMP_SPAWN_CMD_H
#define MEMDUMP_SPAWN_CMD_H

#include <stdbool.h>
#include <stddef.h>

#define SPAWN_MAX_OUT	(16u << 20)	/* more output than this fails with -EFBIG */

/*
 * argv[0] looked up on PATH; stdin from in (or /dev/null when -1); stdout
 * into *out (malloc'd, NUL-terminated, *len bytes; out NULL: dropped); the
 * last line of stderr into err. 0 when it exited 0, -ENOENT when it could
 * not be run, -EIO when it failed (err says how), another -errno otherwise.
 */
int spawn_capture(char *const argv[], int in, char **out, size_t *len, char *err, size_t err_len);

/* Is prog an executable file in one of PATH's directories? */
bool spawn_found(const char *prog);

#endif
