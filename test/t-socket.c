/* t-socket: holds a listening TCP socket on 127.0.0.1 (fd 3); after a restore
 * it is bound to the same address and port and still listening.
 * usage: t-socket DIR
 * READY <pid> <port> */
#include "tlib.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int s;

	t_init(argc, argv, SA_RESTART);
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 1) ||
	    getsockname(s, (struct sockaddr *)&a, &alen))
		t_fail("socket: %s", strerror(errno));
	t_ready("%u", ntohs(a.sin_port));
	t_wait_usr1();
	t_check_common();
	if (getsockname(s, (struct sockaddr *)&a, &alen))
		t_fail("the socket is gone: %s", strerror(errno));
	t_pass(NULL);
}
