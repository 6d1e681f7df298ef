/* t-ipcns: a process in UTS and IPC namespaces of its own (run it under
 * `unshare --uts --ipc`). It names its host, makes System V objects with
 * known content and keeps one segment attached twice.
 *   shm A: 3 pages + 100 bytes, key 0x1234, mode 0640, pattern, attached rw
 *          at two addresses (writes through one show through the other)
 *   shm B: IPC_PRIVATE, 1 page, attached read-only
 *   shm C: not attached, pattern kept by the namespace alone
 *   sem:   5 semaphores 0..4 = 7, 0, 32767, 1, 2
 *   msq:   3 messages (types 1, 5, 2, one empty), qbytes kept
 * After SIGUSR1: host and domain name, every id still valid with its key and
 * mode, contents, the two attaches still one segment, sems, messages in order.
 * READY <pid> */
#include "tlib.h"
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/utsname.h>

#define A_SIZE (3 * 4096 + 100)

static int shm_a, shm_b, shm_c, sem_id, msq_id;
static unsigned char *a1, *a2, *b1;

static unsigned char pat(size_t i, int seed) { return (unsigned char)(i * 31 + seed); }

static int mkshm(key_t key, size_t size, int mode, int seed)
{
	int id = shmget(key, size, IPC_CREAT | IPC_EXCL | mode);
	unsigned char *p;

	if (id < 0)
		t_fail("shmget: %s", strerror(errno));
	p = shmat(id, NULL, 0);
	if (p == (void *)-1)
		t_fail("shmat: %s", strerror(errno));
	for (size_t i = 0; i < size; i++)
		p[i] = pat(i, seed);
	shmdt(p);
	return id;
}

static void setup(void)
{
	unsigned short vals[5] = { 7, 0, 32767, 1, 2 };
	struct { long type; char text[64]; } m;
	struct msqid_ds q;

	if (sethostname("ipcns-host", 10) || setdomainname("ipcns.dom", 9))
		t_fail("sethostname: %s", strerror(errno));
	shm_c = mkshm(0x4321, 5000, 0600, 3);	/* ids before and after the attached ones */
	shm_a = mkshm(0x1234, A_SIZE, 0640, 1);
	shm_b = mkshm(IPC_PRIVATE, 4096, 0600, 2);
	a1 = shmat(shm_a, NULL, 0);
	a2 = shmat(shm_a, NULL, 0);
	b1 = shmat(shm_b, NULL, SHM_RDONLY);
	if (a1 == (void *)-1 || a2 == (void *)-1 || b1 == (void *)-1)
		t_fail("shmat: %s", strerror(errno));
	a1[10] = 0xAB;
	sem_id = semget(0x777, 5, IPC_CREAT | 0660);
	if (sem_id < 0 || semctl(sem_id, 0, SETALL, vals))
		t_fail("sem: %s", strerror(errno));
	msq_id = msgget(IPC_PRIVATE, 0600);
	if (msq_id < 0 || msgctl(msq_id, IPC_STAT, &q))
		t_fail("msgget: %s", strerror(errno));
	q.msg_qbytes = 4000;		/* below the default: allowed without privilege */
	if (msgctl(msq_id, IPC_SET, &q))
		t_fail("msgctl IPC_SET: %s", strerror(errno));
	m.type = 1; strcpy(m.text, "first message");
	msgsnd(msq_id, &m, strlen(m.text) + 1, 0);
	m.type = 5;
	msgsnd(msq_id, &m, 0, 0);
	m.type = 2; strcpy(m.text, "third, type 2");
	msgsnd(msq_id, &m, strlen(m.text) + 1, 0);
}

static void check_shm(int id, key_t key, int mode, size_t size, int seed, unsigned char *map)
{
	struct shmid_ds ds;
	unsigned char *p = map;

	if (shmctl(id, IPC_STAT, &ds))
		t_fail("shm %d: %s", id, strerror(errno));
	if (ds.shm_perm.__key != key || (int)(ds.shm_perm.mode & 0777) != mode || ds.shm_segsz != size)
		t_fail("shm %d: key %#x mode %o size %zu", id, ds.shm_perm.__key,
		       ds.shm_perm.mode & 0777, (size_t)ds.shm_segsz);
	if (!p && (p = shmat(id, NULL, SHM_RDONLY)) == (void *)-1)
		t_fail("shmat %d: %s", id, strerror(errno));
	for (size_t i = 0; i < size; i++) {
		unsigned char want = (map == a1 && i == 10) ? 0xAB : pat(i, seed);

		if (p[i] != want)
			t_fail("shm %d byte %zu: %#x, want %#x", id, i, p[i], want);
	}
	if (!map)
		shmdt(p);
}

static void check_msg(long type, const char *text)
{
	struct { long type; char text[64]; } m;
	ssize_t n = msgrcv(msq_id, &m, sizeof(m.text), 0, IPC_NOWAIT);

	if (n < 0 || m.type != type || (size_t)n != (*text ? strlen(text) + 1 : 0) ||
	    (n && strcmp(m.text, text)))
		t_fail("message: n %zd type %ld, want %ld '%s'", n, n < 0 ? 0 : m.type, type, text);
}

static void check(void)
{
	unsigned short vals[5];
	struct utsname u;
	struct msqid_ds q;

	uname(&u);
	if (strcmp(u.nodename, "ipcns-host") || strcmp(u.domainname, "ipcns.dom"))
		t_fail("host name %s, domain %s", u.nodename, u.domainname);
	check_shm(shm_a, 0x1234, 0640, A_SIZE, 1, a1);
	check_shm(shm_b, IPC_PRIVATE, 0600, 4096, 2, b1);
	check_shm(shm_c, 0x4321, 0600, 5000, 3, NULL);
	a1[20] = 0x5A;
	if (a2[20] != 0x5A)
		t_fail("the two attaches of shm %d are no longer one segment", shm_a);
	if (shmget(0x1234, 0, 0) != shm_a)
		t_fail("key 0x1234 no longer finds shm %d", shm_a);
	if (semget(0x777, 0, 0) != sem_id || semctl(sem_id, 0, GETALL, vals))
		t_fail("sem set %d: %s", sem_id, strerror(errno));
	if (vals[0] != 7 || vals[1] || vals[2] != 32767 || vals[3] != 1 || vals[4] != 2)
		t_fail("sems %u %u %u %u %u", vals[0], vals[1], vals[2], vals[3], vals[4]);
	if (msgctl(msq_id, IPC_STAT, &q) || q.msg_qbytes != 4000 || q.msg_qnum != 3)
		t_fail("msq %d: qbytes %lu qnum %lu", msq_id, (unsigned long)q.msg_qbytes,
		       (unsigned long)q.msg_qnum);
	check_msg(1, "first message");
	check_msg(5, "");
	check_msg(2, "third, type 2");
}

int main(int argc, char **argv)
{
	t_init(argc, argv, SA_RESTART);
	setup();
	t_ready("shm %d sem %d msq %d", shm_a, sem_id, msq_id);
	t_wait_usr1();
	check();
	t_pass("");
}
