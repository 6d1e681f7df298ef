/* t-sysvshm: a System V shm segment attached in the host's IPC namespace
 * (marked for removal at once, so that it goes with the process). memdump
 * refuses it and says how to make such a program dumpable.  READY <pid> */
#include "tlib.h"
#include <sys/ipc.h>
#include <sys/shm.h>

int main(int argc, char **argv)
{
	int id;
	char *p;

	t_init(argc, argv, 0);
	id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	if (id < 0)
		t_fail("shmget: %s", strerror(errno));
	p = shmat(id, NULL, 0);
	if (p == (void *)-1)
		t_fail("shmat: %s", strerror(errno));
	shmctl(id, IPC_RMID, NULL);
	memset(p, 0x5a, 4096);
	t_ready("%d", id);
	t_wait_usr1();
	for (int i = 0; i < 4096; i++)
		if (p[i] != 0x5a)
			t_fail("byte %d changed", i);
	t_pass(NULL);
}
