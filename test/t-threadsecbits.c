/* t-threadsecbits: securebits that differ between the threads of one process
 * (they are a thread's credentials: prctl(PR_SET_SECUREBITS) sets the
 * calling thread's only). Once the threads run, the main thread sets
 * SECBIT_KEEP_CAPS, worker 1 SECBIT_NOROOT|SECBIT_NOROOT_LOCKED|
 * SECBIT_NO_SETUID_FIXUP, worker 2 none. After restore each thread reads
 * its own securebits again: the same. READY <pid> <tid1> <tid2> */
#include <linux/securebits.h>
#include <pthread.h>
#include <sys/prctl.h>

#include "tlib.h"

#define NW 2

static const long want[NW + 1] = {
	SECBIT_KEEP_CAPS,
	SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP,
	0,
};

struct worker {
	int i;
	pid_t tid;		/* set once its bits are */
	long bits;		/* what it read on request */
	int asked, answered;
};

static struct worker w[NW + 1];

static long own_bits(void)
{
	return prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
}

static void *worker(void *arg)
{
	struct worker *me = arg;

	if (want[me->i] && prctl(PR_SET_SECUREBITS, want[me->i], 0, 0, 0))
		t_fail("worker %d: PR_SET_SECUREBITS: %s", me->i, strerror(errno));
	__atomic_store_n(&me->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	for (;;) {
		if (__atomic_load_n(&me->asked, __ATOMIC_SEQ_CST) &&
		    !__atomic_load_n(&me->answered, __ATOMIC_SEQ_CST)) {
			me->bits = own_bits();
			__atomic_store_n(&me->answered, 1, __ATOMIC_SEQ_CST);
		}
		t_sleep_ms(5);
	}
	return NULL;
}

/* each thread's own bits, as it reads them */
static void check(const char *when)
{
	long bits = own_bits();

	if (bits != want[0])
		t_fail("%s: main thread's securebits %#lx, want %#lx", when, bits, want[0]);
	for (int i = 1; i <= NW; i++) {
		__atomic_store_n(&w[i].answered, 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&w[i].asked, 1, __ATOMIC_SEQ_CST);
		while (!__atomic_load_n(&w[i].answered, __ATOMIC_SEQ_CST))
			t_sleep_ms(1);
		__atomic_store_n(&w[i].asked, 0, __ATOMIC_SEQ_CST);
		if (w[i].bits != want[i])
			t_fail("%s: worker %d (tid %d) securebits %#lx, want %#lx", when, i,
			       (int)w[i].tid, w[i].bits, want[i]);
	}
}

int main(int argc, char **argv)
{
	pthread_t th;

	t_init(argc, argv, SA_RESTART);
	for (int i = 1; i <= NW; i++) {
		w[i].i = i;
		if (pthread_create(&th, NULL, worker, &w[i]))
			t_fail("pthread_create");
		while (!__atomic_load_n(&w[i].tid, __ATOMIC_SEQ_CST))
			t_sleep_ms(1);
	}
	if (prctl(PR_SET_SECUREBITS, want[0], 0, 0, 0))
		t_fail("main: PR_SET_SECUREBITS: %s", strerror(errno));
	check("before");
	t_ready("%d %d", (int)w[1].tid, (int)w[2].tid);
	t_wait_usr1();
	t_check_common();
	check("after restore");
	t_pass("each thread's own securebits");
}
