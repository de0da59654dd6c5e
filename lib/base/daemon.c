/*
 * daemon: signals and waiting (daemon.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "daemon.h"

#include <signal.h>
#include <string.h>
#include <time.h>

static atomic_int *stop_flag;

static void on_signal(int signal_number)
{
	(void)signal_number;
	if (stop_flag)
		atomic_store(stop_flag, 1);
}

void daemon_signals(atomic_int *stop)
{
	struct sigaction action;

	stop_flag = stop;
	memset(&action, 0, sizeof(action));
	action.sa_handler = on_signal;
	sigemptyset(&action.sa_mask);
	sigaction(SIGTERM, &action, NULL);
	sigaction(SIGINT, &action, NULL);
	signal(SIGPIPE, SIG_IGN);
}

void daemon_wait(const atomic_int *stop)
{
	const struct timespec tick = { .tv_sec = 0, .tv_nsec = 100 * 1000 * 1000 };

	while (!atomic_load(stop))
		nanosleep(&tick, NULL);
}

int daemon_exit_code(int flag_parse_result)
{
	switch (flag_parse_result) {
	case 0:
		return -1;
	case 1:
		return 0;
	default:
		return 2;
	}
}
