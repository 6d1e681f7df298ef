/* t-shmpart: System V attaches split in pieces (run it under `unshare --ipc`).
 *   P: 6 pages attached rw; page 1 mprotected read-only, page 3 unmapped,
 *      page 5 PROT_NONE: pieces rw, r, rw, (hole), rw, none
 *   Q: 3 pages attached rw, its first page unmapped: one piece at offset 1
 *   R: 2 pages attached SHM_RDONLY, whole
 * After SIGUSR1: every piece at its address with its protection and bytes,
 * the hole still unmapped, each piece still the segment (a write shows in a
 * new attach), nattch the number of pieces, the read-only page of P may be
 * made writable again and R may not (its attach mode), and shmdt of P's
 * base detaches all of P's pieces.  READY <pid> */
#include "tlib.h"
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>

#define PG 4096

static unsigned char pat(int seg, size_t i) { return (unsigned char)(i * 7 + seg * 41 + i / PG); }

static int mkseg(int seg, int pages, int flags, unsigned char **at)
{
	int id = shmget(IPC_PRIVATE, pages * PG, IPC_CREAT | 0600);
	unsigned char *p;

	if (id < 0)
		t_fail("shmget: %s", strerror(errno));
	p = shmat(id, NULL, 0);
	if (p == (void *)-1)
		t_fail("shmat: %s", strerror(errno));
	for (size_t i = 0; i < (size_t)pages * PG; i++)
		p[i] = pat(seg, i);
	if (flags) {
		shmdt(p);
		p = shmat(id, NULL, flags);
		if (p == (void *)-1)
			t_fail("shmat read-only: %s", strerror(errno));
	}
	*at = p;
	return id;
}

/* The piece of n pages at page: one mapping, its protection, its bytes. */
static void check_piece(int seg, unsigned char *base, int page, int n, const char *perms)
{
	char got[5];

	if (t_maps_perms(base + page * PG, got))
		t_fail("segment %d: no mapping at page %d", seg, page);
	if (strcmp(got, perms))
		t_fail("segment %d page %d: %s, not %s", seg, page, got, perms);
	if (perms[0] != 'r')
		return;
	for (size_t i = 0; i < (size_t)n * PG; i++)
		if (base[page * PG + i] != pat(seg, page * PG + i))
			t_fail("segment %d page %d: byte %zu changed", seg, page, i);
}

static void check_unmapped(int seg, unsigned char *base, int page)
{
	unsigned char vec;

	if (mincore(base + page * PG, PG, &vec) == 0 || errno != ENOMEM)
		t_fail("segment %d: page %d is mapped again", seg, page);
}

static int nattch(int id)
{
	struct shmid_ds ds;

	if (shmctl(id, IPC_STAT, &ds))
		t_fail("shmctl IPC_STAT %d: %s", id, strerror(errno));
	return (int)ds.shm_nattch;
}

/* A write through the piece at page shows in a new attach of the segment. */
static void check_shared(int seg, int id, unsigned char *base, int page)
{
	unsigned char *n = shmat(id, NULL, 0);

	if (n == (void *)-1)
		t_fail("shmat %d: %s", id, strerror(errno));
	base[page * PG + 9] ^= 0xff;
	if (n[page * PG + 9] != base[page * PG + 9])
		t_fail("segment %d page %d: a write does not show in the segment", seg, page);
	base[page * PG + 9] ^= 0xff;
	shmdt(n);
}

int main(int argc, char **argv)
{
	unsigned char *p, *q, *r;
	int pid_, qid, rid;

	t_init(argc, argv, 0);
	pid_ = mkseg(0, 6, 0, &p);
	qid = mkseg(1, 3, 0, &q);
	rid = mkseg(2, 2, SHM_RDONLY, &r);
	if (mprotect(p + PG, PG, PROT_READ) || munmap(p + 3 * PG, PG) ||
	    mprotect(p + 5 * PG, PG, PROT_NONE) || munmap(q, PG))
		t_fail("mprotect/munmap: %s", strerror(errno));
	if (nattch(pid_) != 5 || nattch(qid) != 1 || nattch(rid) != 1)
		t_fail("nattch %d %d %d before the dump", nattch(pid_), nattch(qid), nattch(rid));
	t_ready("%d", pid_);
	t_wait_usr1();

	check_piece(0, p, 0, 1, "rw-s");
	check_piece(0, p, 1, 1, "r--s");
	check_piece(0, p, 2, 1, "rw-s");
	check_unmapped(0, p, 3);
	check_piece(0, p, 4, 1, "rw-s");
	check_piece(0, p, 5, 1, "---s");
	check_unmapped(1, q, 0);
	check_piece(1, q, 1, 2, "rw-s");
	check_piece(2, r, 0, 2, "r--s");
	check_shared(0, pid_, p, 4);
	check_shared(1, qid, q, 1);
	if (nattch(pid_) != 5 || nattch(qid) != 1 || nattch(rid) != 1)
		t_fail("nattch %d %d %d after the restore (5 1 1 before)", nattch(pid_), nattch(qid),
		       nattch(rid));
	if (mprotect(p + PG, PG, PROT_READ | PROT_WRITE))
		t_fail("the read-only piece of a rw attach cannot be made writable: %s",
		       strerror(errno));
	p[PG] ^= 1;
	if (mprotect(r, PG, PROT_READ | PROT_WRITE) == 0 || errno != EACCES)
		t_fail("a SHM_RDONLY attach can be made writable");
	if (shmdt(p))
		t_fail("shmdt of segment 0: %s", strerror(errno));
	for (int i = 0; i < 6; i++)
		check_unmapped(0, p, i);
	if (nattch(pid_) != 0)
		t_fail("segment 0 still has %d attaches after shmdt", nattch(pid_));
	t_pass(NULL);
}
