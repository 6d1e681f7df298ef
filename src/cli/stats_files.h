/* stats-dump and stats-restore where runtimes read them (stats_files.c). */
#ifndef MEMDUMP_STATS_FILES_H
#define MEMDUMP_STATS_FILES_H

#include <stdint.h>

/* A copy of images_dir/stats-dump in work_dir (nothing when it is the same
 * directory or NULL); 0 or -errno, warned. */
int stats_dump_to_work_dir(const char *images_dir, const char *work_dir);
/* work_dir/stats-restore with the restore's wall time; 0 or -errno, warned. */
int stats_restore_to_work_dir(const char *work_dir, uint64_t restore_us);

#endif
