/* h-leaderexit: its main thread exits (pthread_exit) while another thread
 * sleeps on: /proc shows the process as a zombie ('Z'), yet it is alive.
 * Prints READY <pid> once the leader is about to exit. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static void *sleeper(void *arg)
{
	(void)arg;
	sleep(300);
	return NULL;
}

int main(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, sleeper, NULL))
		return 2;
	printf("READY %d\n", (int)getpid());
	fflush(stdout);
	pthread_exit(NULL);
}
