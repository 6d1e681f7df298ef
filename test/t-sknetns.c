/* t-sknetns: a UNIX datagram socket made in a network namespace the process
 * entered (unshare) and left (setns back), bound to an abstract name there;
 * memdump refuses it by name (zdtm netns_sub). After SIGUSR1: the socket is
 * still of the other namespace and a datagram it sends to its own name comes
 * back.  READY <pid> */
#include "tlib.h"
#include <fcntl.h>
#include <stddef.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <linux/sockios.h>

static socklen_t name_of(struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "memdump-sknetns-%d", getpid());
	return offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a->sun_path + 1);
}

static ino_t netns_of(int sk)
{
	struct stat st;
	int ns = sk >= 0 ? ioctl(sk, SIOCGSKNS) : open("/proc/self/ns/net", O_RDONLY);

	if (ns < 0 || fstat(ns, &st))
		t_fail("netns of %d: %s", sk, strerror(errno));
	close(ns);
	return st.st_ino;
}

int main(int argc, char **argv)
{
	int home, sk;
	struct sockaddr_un a;
	socklen_t len;
	char buf[8];

	t_init(argc, argv, 0);
	home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (home < 0 || unshare(CLONE_NEWNET))
		t_fail("unshare: %s", strerror(errno));
	sk = socket(AF_UNIX, SOCK_DGRAM, 0);
	len = name_of(&a);
	if (sk < 0 || bind(sk, (struct sockaddr *)&a, len))
		t_fail("socket/bind: %s", strerror(errno));
	if (setns(home, CLONE_NEWNET))
		t_fail("setns back: %s", strerror(errno));
	close(home);
	t_ready("%d", sk);
	t_wait_usr1();
	if (netns_of(sk) == netns_of(-1))
		t_fail("the socket is of the process's network namespace now");
	if (sendto(sk, "hi", 2, 0, (struct sockaddr *)&a, len) != 2 ||
	    recv(sk, buf, sizeof(buf), MSG_DONTWAIT) != 2)
		t_fail("a datagram to its own name: %s", strerror(errno));
	t_pass(NULL);
}
