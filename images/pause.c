/* pause - the sandbox ("infra") container of the real nodes' pods: it holds
 * the pod's namespaces and does nothing else. containerd's sandbox_image on
 * the local cluster's nodes (e2e/cluster/node.sh), since no registry can be
 * reached. Like Kubernetes' own pause: exits 0 on SIGINT or SIGTERM, reaps
 * children (it is PID 1 of a pod that shares its PID namespace). Built
 * static with musl (images/images.sh). */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig)
{
	(void)sig;
	_exit(0);
}

static void reap(int sig)
{
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(void)
{
	struct sigaction quit = { .sa_handler = stop },
			 child = { .sa_handler = reap, .sa_flags = SA_NOCLDSTOP };

	if (getpid() != 1)
		(void)write(2, "pause: warning: not pid 1\n", 26);
	sigaction(SIGINT, &quit, NULL);
	sigaction(SIGTERM, &quit, NULL);
	sigaction(SIGCHLD, &child, NULL);
	for (;;)
		pause();
}
