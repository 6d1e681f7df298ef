/* t-mqueue: a POSIX message queue held open (mq_open), a message in it.
 * memdump refuses it by name; on SIGUSR1 the message is still there.
 * READY <pid> <mqd> */
#include "tlib.h"
#include <fcntl.h>
#include <mqueue.h>

int main(int argc, char **argv)
{
	char name[64], buf[8192];
	mqd_t q;

	t_init(argc, argv, SA_RESTART);
	snprintf(name, sizeof(name), "/memdump-t%d", (int)getpid());
	q = mq_open(name, O_CREAT | O_EXCL | O_RDWR, 0600, NULL);
	if (q < 0)
		t_fail("mq_open: %s", strerror(errno));
	mq_unlink(name);
	if (mq_send(q, "queued", 6, 1))
		t_fail("mq_send: %s", strerror(errno));
	t_ready("%d", (int)q);
	t_wait_usr1();
	if (mq_receive(q, buf, sizeof(buf), NULL) != 6 || memcmp(buf, "queued", 6))
		t_fail("the queued message is gone");
	t_pass(NULL);
}
