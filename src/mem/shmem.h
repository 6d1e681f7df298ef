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

#include "ctx/restore_ctx.h"

struct dump_ctx;
struct vma;
struct shmem_set;

int shmem_add_vma(struct dump_ctx *d, const struct vma *v);
int shmem_add_memfd_fd(struct dump_ctx *d, int fd, const char *link);
struct stat;
int shmem_anon_fd_id(struct dump_ctx *d, int fd, const char *link, const struct stat *st);
int write_shmem(struct dump_ctx *d);
void shmem_free(struct shmem_set *set);

/* Restore (its _restore.c files) */

/* shmem.c: r->shms */
int shm_collect(struct rst *r);
bool vma_shm_private(const VmaEntry *v);
int shm_check(struct rst *r);
int shm_create_all(struct rst *r);
struct shm_obj *shm_find(struct rst *r, uint64_t shmid);
int shm_blob_fd(struct rst *r, struct shm_obj *s);
/* The seals left for the blob to add once mapped; returns how many. */
size_t shm_blob_seals(struct rst *r, struct rst_seal *d);
struct shm_obj *shm_of_memfd(struct rst *r, const MemfdFileEntry *mf);
int shm_open_memfd(struct rst *r, const FileEntry *fe);
void shm_close_all(struct rst *r);

#endif
