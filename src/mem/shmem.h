/*
 * Shared memory objects (MAP_SHARED|MAP_ANONYMOUS regions and memfds): their
 * content is dumped once per object, from the object itself rather than
 * through one mapping of it, so pages written by others or never mapped are
 * kept too. pagemap-shmem-<shmid>.img lists runs by offset in the object;
 * the bytes are in the pages-N.img named by its head. memfd.img describes the
 * memfds (name, size, seals), and the anonymous objects an fd or a private
 * mapping reaches (anon: their size).
 */
#ifndef MEMDUMP_SHMEM_H
#define MEMDUMP_SHMEM_H

#include <stdint.h>

struct dump_ctx;
struct vma;
struct shmem_set;

int shmem_add_vma(struct dump_ctx *d, const struct vma *v);
int shmem_add_memfd_fd(struct dump_ctx *d, int fd, const char *link);
struct stat;
int shmem_anon_fd_id(struct dump_ctx *d, int fd, const char *link, const struct stat *st);
int write_shmem(struct dump_ctx *d);
void shmem_free(struct shmem_set *set);

#endif
