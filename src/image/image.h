/*
 * The image layer: reading and writing image files in CRIU's on-disk format
 * (image.c) and loading a whole image set (dumpset.c). Used by dump,
 * restore, show and read-mem; it may call only lib (include/).
 *
 *
 * A framed image starts with IMG_COMMON_MAGIC (IMG_SERVICE_MAGIC for stats)
 * and the image's own magic; inventory.img has only its own magic. Then come
 * entries: a little-endian u32 length and a protobuf message of that length.
 * pages-N.img is raw page data with no header.
 */
#ifndef MEMDUMP_IMAGE_H
#define MEMDUMP_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <protobuf-c/protobuf-c.h>

#include "image/hash.h"
#include "inventory.pb-c.h"

#define IMG_COMMON_MAGIC	0x54564319
#define IMG_SERVICE_MAGIC	0x55105940
/* What iproute2 puts first in `ip addr save` and `ip route save` (ifaddr, route images). */
/* The largest entry a reader takes (img_read_msg): a larger one is refused at dump. */
#define IMG_MAX_ENTRY		(64u << 20)

#define IPROUTE_ADDR_MAGIC	0x47361222
#define IPROUTE_ROUTE_MAGIC	0x45311224

enum img_type {
	IMG_INVENTORY,	/* inventory.img */
	IMG_PSTREE,	/* pstree.img */
	IMG_CORE,	/* core-TID.img */
	IMG_IDS,	/* ids-PID.img */
	IMG_MM,		/* mm-PID.img */
	IMG_PAGEMAP,	/* pagemap-PID.img */
	IMG_PAGES,	/* pages-ID.img (raw) */
	IMG_FILES,	/* files.img */
	IMG_FDINFO,	/* fdinfo-ID.img */
	IMG_FS,		/* fs-PID.img */
	IMG_PIPES_DATA,	/* pipes-data.img */
	IMG_FIFO_DATA,	/* fifo-data.img */
	IMG_STATS,	/* stats-dump */
	IMG_SHMEM_PAGEMAP, /* pagemap-shmem-SHMID.img: content of a shmem object */
	IMG_MEMFD_INODE, /* memfd.img */
	IMG_SECCOMP,	/* seccomp.img */
	IMG_REMAP_FPATH, /* remap-fpath.img: deleted files and their ghosts */
	IMG_GHOST_FILE,	/* ghost-file-ID.img: a deleted file's content */
	IMG_FILE_LOCKS,	/* filelocks.img */
	IMG_SK_QUEUES,	/* sk-queues.img: data queued on UNIX sockets */
	IMG_TCP_STREAM,	/* tcp-stream-INO.img: an established connection */
	IMG_UTSNS,	/* utsns-ID.img: host and domain name */
	IMG_IPC_VAR,	/* ipcns-var-ID.img: IPC sysctls */
	IMG_IPCNS_SHM,	/* ipcns-shm-ID.img: System V shm segments and content */
	IMG_IPCNS_SEM,	/* ipcns-sem-ID.img: System V semaphore sets */
	IMG_IPCNS_MSG,	/* ipcns-msg-ID.img: System V message queues */
	IMG_NETDEV,	/* netdev-ID.img: a network namespace's devices */
	IMG_TTY_INFO,	/* tty-info.img: terminals (pty master and slave) */
	IMG_TTY_DATA,	/* tty-data.img: bytes queued in a pty */
	IMG_IFADDR,	/* ifaddr-ID.img (raw, `ip addr save`): a network namespace's addresses */
	IMG_ROUTE,	/* route-ID.img (raw, `ip route save`): its IPv4 routes */
	IMG_ROUTE6,	/* route6-ID.img (raw, `ip -6 route save`): its IPv6 routes */
	IMG_NFTABLES,	/* nftables-ID.img (raw, `nft list table ...`): its nftables tables */
	IMG_IPTABLES,	/* iptables-ID.img (raw, `iptables-legacy-save -c`): its legacy IPv4 tables */
	IMG_IP6TABLES,	/* ip6tables-ID.img (raw, `ip6tables-legacy-save -c`): its legacy IPv6 tables */
	IMG_MNTS,	/* mountpoints-ID.img: a mount namespace */
	IMG_CGROUP,	/* cgroup.img: the process's cgroups and their properties */
	IMG_TIMENS,	/* timens-ID.img: a time namespace's clocks */
	IMG_NETNS,	/* netns-ID.img: a network namespace's sysctls */
	IMG_NR_TYPES
};

/* File name of an image ("core-%u.img" with id). */
void img_name(enum img_type t, unsigned id, char *buf, size_t len);

/*
 * A dump's image directory and every image created in it, with its checksum
 * once known: inventory.img lists them, a failed dump removes them.
 */
struct created_img;
struct img_crypt;
struct img_dir {
	int fd;
	struct img_crypt *crypt;	/* an encrypted dump: fd is its staging (crypt.h) */
	struct created_img *created;
	int nr_created, max_created;
	struct created_img *subsets;	/* proc-PID/: a tree's other processes' sets */
	int nr_subsets;
};

struct image {
	struct img_dir *dir;	/* writing: where it was created */
	enum img_type type;
	int fd;
	FILE *f;		/* framed images are buffered */
	char name[64];
	int idx;		/* in the list of created images */
	struct hash64 hash;	/* of what was written through img_write_raw */
};

/*
 * Writing. Images are created O_EXCL in the dump directory; every created name
 * is remembered so that a failed dump can remove what it wrote.
 * img_close() flushes and reports ENOSPC and friends; img_sync_all() makes
 * the set durable.
 */
int img_create(struct img_dir *dir, enum img_type t, unsigned id, struct image **out);
/* The same, as a bare fd for raw data written by its own means (pages). */
int img_create_fd(struct img_dir *dir, enum img_type t, unsigned id);
/* An unnamed file (O_TMPFILE, read-write) in the directory dirfd, which vanishes
 * unless img_link_fd() names it: -errno where the filesystem has none. */
int img_create_unnamed(int dirfd);
/* That file named as image t/id in dir (on the same filesystem), O_EXCL, remembered. */
int img_link_fd(struct img_dir *dir, enum img_type t, unsigned id, int fd);
/* The unnamed file fd (img_create_unnamed) linked over image name of dir, atomically
 * (through .NAME.new); name keeps its remembered checksum. */
int img_replace_fd(struct img_dir *dir, const char *name, int fd);
/* Image t created under the name tmp (a dot name: never listed), remembered; then
 * img_rename_created() renames it over name, which gets its checksum. */
int img_create_as(struct img_dir *dir, enum img_type t, const char *tmp, struct image **out);
int img_rename_created(struct img_dir *dir, const char *tmp, const char *name);
/*
 * The same, but unnamed (O_TMPFILE): nothing shows in the directory; *fd keeps
 * the file for img_replace_fd() once img_close() wrote it, and
 * img_adopt_created() gives name tmp's checksum before that (the inventory
 * written meanwhile lists it).
 */
int img_create_unnamed_as(struct img_dir *dir, enum img_type t, const char *tmp,
			  struct image **out, int *fd);
int img_adopt_created(struct img_dir *dir, const char *tmp, const char *name);
/* Image t/id is written elsewhere (a page server): listed in the inventory with the
 * checksum img_set_sum() gives, never synced nor removed here. */
int img_remember_remote(struct img_dir *dir, enum img_type t, unsigned id);
int img_write_msg(struct image *img, const ProtobufCMessage *msg);
int img_write_raw(struct image *img, const void *buf, size_t len);
int img_close(struct image *img);
void img_abort(struct image *img);	/* close without reporting */
void img_remove_created(struct img_dir *dir);	/* after a failure */
/* Every created image, then inventory.img and the directory, to the disk:
 * img_close() only writes into the page cache. */
int img_sync_all(struct img_dir *dir);
/* inventory.img's content into an unnamed file, *fd, for img_replace_fd() (not sealed). */
int img_write_inventory_unnamed(struct img_dir *dir, InventoryEntry *inv, int *fd);
void img_forget_created(struct img_dir *dir);		/* after success */

/*
 * Reading. img_open() checks the magic. img_read_msg() returns 1 and a message
 * to free with protobuf_c_message_free_unpacked(), 0 at a clean end of file,
 * or -EIO (with fail() naming the image) when an entry is truncated or does not
 * unpack.
 */
/*
 * An image file of the dump directory for reading: never through a symbolic
 * link, and only a regular file (a FIFO would block forever). Returns the fd.
 */
int img_open_file(int dirfd, const char *name, int flags);
int img_open(int dirfd, enum img_type t, unsigned id, struct image **out);
int img_read_msg(struct image *img, const ProtobufCMessageDescriptor *desc, void **msg);
int img_read_one(int dirfd, enum img_type t, unsigned id,
		 const ProtobufCMessageDescriptor *desc, void **msg);
int img_read_raw(struct image *img, void *buf, size_t len);	/* exactly len or -EIO */
void img_free(const ProtobufCMessageDescriptor *desc, void *msg);

/*
 * inventory.img: written through a temporary name and renamed, last. It lists
 * every image created, with size and checksum: framed images are summed as
 * written, pages images (written by splice, the bytes never pass through
 * memdump) are read back here.
 */
int img_write_inventory(struct img_dir *dir, InventoryEntry *inv);
/*
 * A pages image this dump created, read back once: sums[i] gets the checksum
 * of its i-th run of lens[i] bytes, and the inventory its size and the checksum
 * of those (runsum_of_runs).
 */
/* marks: the runs' block marks too (runsum.h), or NULL */
int img_sum_runs(struct img_dir *dir, unsigned pages_id, const uint64_t *lens, size_t nr,
		 uint64_t *sums, uint64_t *marks);
/*
 * A tree dump: the set of one of its other processes, in the directory name
 * (proc-PID) of dir, is listed by dir's inventory with the size and checksum
 * of its own inventory.img, which binds every image of it.
 */
int img_add_subset(struct img_dir *dir, const char *name);
/* The directory of a sub-set listed as name: opened never through a symlink. */
int img_open_subset(int dirfd, const char *name);
/* Is name one of a sub-set (proc-PID)? */
bool img_is_subset(const char *name, unsigned *pid);
/* The checksum of a created image, known without reading it back (of_runs: a pages
 * image's, of its runs' checksums, runsum.h). */
int img_set_sum(struct img_dir *dir, enum img_type type, unsigned id, uint64_t size,
		uint64_t hash, bool of_runs);
/* Size and checksum of an image file as it is on disk. */
int img_sum_file(int dirfd, const char *name, uint64_t *size, uint64_t *hash);

/* replace.c: take apart the dump dirfd (named dir) holds, inventory.img first;
 * files that are not a dump's stay. 0 or <0 after fail(). */
int img_replace_set(int dirfd, const char *dir);

/*
 * runtime_files.c: the files a runtime put in the dump directory (runc's
 * descriptors.json) that ours(arg, name) does not claim, with their sums:
 * how many (at most max), or <0 after fail().
 */
#define RUNTIME_FILES_MAX	8
#define RUNTIME_FILE_SIZE	(1 << 20)
struct runtime_file {
	char name[64];
	uint64_t size, hash;
};
int img_runtime_files(int dirfd, bool (*ours)(void *arg, const char *name), void *arg,
		      struct runtime_file *out, int max);

#endif
