/*
 * barrier_testproc: child process handling for tests. See barrier_testproc.h.
 */
#define _GNU_SOURCE
#include "barrier_testproc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

double testproc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int testproc_env_int(const char *name, int fallback)
{
	const char *value = getenv(name);

	return value && value[0] ? (int)strtol(value, NULL, 10) : fallback;
}

const char *testproc_barrier_path(void)
{
	const char *path = getenv("MUSTER_BARRIER_BIN");

	return path && path[0] ? path : "bin/muster-barrier";
}

/* In the child: execs argv, under $MUSTER_BARRIER_EMULATOR when it is set
 * (qemu-user runs another architecture's barrier without binfmt_misc; a
 * program it starts through a plain execv would not run). Returns only on
 * failure. */
static void exec_program(char *const argv[])
{
	const char *emulator = getenv("MUSTER_BARRIER_EMULATOR");
	char *with_emulator[TESTPROC_ARGS_MAX + 2];
	size_t count = 0;

	if (!emulator || !emulator[0]) {
		execv(argv[0], argv);
		return;
	}
	while (argv[count])
		if (++count > TESTPROC_ARGS_MAX)
			return;
	with_emulator[0] = (char *)emulator;
	for (size_t i = 0; i <= count; i++) /* argv's NULL too */
		with_emulator[i + 1] = argv[i];
	execvp(emulator, with_emulator);
}

int testproc_start(struct testproc *proc, char *const argv[], char *const env[], const char *const unset[])
{
	int pipe_fds[2];

	memset(proc, 0, sizeof(*proc));
	proc->out_fd = -1;
	if (pipe2(pipe_fds, O_CLOEXEC) != 0)
		return -1;
	proc->pid = fork();
	if (proc->pid < 0) {
		close(pipe_fds[0]);
		close(pipe_fds[1]);
		return -1;
	}
	if (proc->pid == 0) {
		dup2(pipe_fds[1], STDOUT_FILENO);
		dup2(pipe_fds[1], STDERR_FILENO);
		for (size_t i = 0; unset && unset[i]; i++)
			unsetenv(unset[i]);
		for (size_t i = 0; env && env[i]; i++)
			putenv(env[i]);
		exec_program(argv);
		_exit(127);
	}
	close(pipe_fds[1]);
	proc->out_fd = pipe_fds[0];
	fcntl(proc->out_fd, F_SETFL, O_NONBLOCK);
	return 0;
}

/* Reads what the child wrote. Returns 0 at EOF, 1 otherwise. */
static int drain(struct testproc *proc)
{
	char scratch[4096];

	for (;;) {
		size_t room = TESTPROC_OUT_MAX - 1 - proc->out_len;
		char *into = room ? proc->out + proc->out_len : scratch;
		ssize_t n = read(proc->out_fd, into, room ? room : sizeof(scratch));

		if (n > 0) {
			if (room)
				proc->out_len += (size_t)n;
			proc->out[proc->out_len] = '\0';
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n == 0 ? 0 : 1;
	}
}

int testproc_wait_for(struct testproc *proc, const char *needle, int timeout_ms)
{
	double end = testproc_now_ms() + timeout_ms;

	for (;;) {
		struct pollfd pfd = { .fd = proc->out_fd, .events = POLLIN };
		double left = end - testproc_now_ms();
		int open_pipe;

		open_pipe = drain(proc);
		if (strstr(proc->out, needle))
			return 0;
		if (!open_pipe || left <= 0)
			return -1;
		poll(&pfd, 1, (int)left + 1);
	}
}

static void record_exit(struct testproc *proc, int status)
{
	proc->exited = 1;
	proc->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	drain(proc);
}

int testproc_wait_exit(struct testproc *proc, int timeout_ms)
{
	double end = testproc_now_ms() + timeout_ms;

	while (!proc->exited) {
		int status;
		pid_t got = wait4(proc->pid, &status, WNOHANG, &proc->usage);

		if (got == proc->pid) {
			record_exit(proc, status);
			break;
		}
		if (testproc_now_ms() >= end)
			return -1;
		drain(proc);
		usleep(2000);
	}
	return proc->exit_code;
}

int testproc_wait_exit_blocking(struct testproc *proc)
{
	int status;

	while (!proc->exited) {
		if (wait4(proc->pid, &status, 0, &proc->usage) == proc->pid)
			record_exit(proc, status);
		else if (errno != EINTR)
			return -1;
	}
	return proc->exit_code;
}

void testproc_finish(struct testproc *proc)
{
	if (proc->pid > 0 && !proc->exited) {
		kill(proc->pid, SIGKILL);
		testproc_wait_exit_blocking(proc);
	}
	if (proc->out_fd >= 0)
		close(proc->out_fd);
	proc->out_fd = -1;
}

/* Reads /proc/PID/NAME into buf (NUL-terminated). Returns 0, or -1. */
static int read_proc(pid_t pid, const char *name, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

long testproc_status_field(pid_t pid, const char *field)
{
	char buf[4096];
	long total = 0;

	if (read_proc(pid, "status", buf, sizeof(buf)) != 0)
		return -1;
	for (const char *p = buf; (p = strstr(p, field)) != NULL; p++)
		total += strtol(p + strlen(field), NULL, 10);
	return total;
}

long testproc_cpu_ticks(pid_t pid)
{
	char buf[1024], *p;
	unsigned long utime = 0, stime = 0;
	long cutime = 0, cstime = 0;

	if (read_proc(pid, "stat", buf, sizeof(buf)) != 0)
		return -1;
	/* The command name may hold spaces: fields are counted after its ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %ld %ld", &utime, &stime,
			 &cutime, &cstime) != 4)
		return -1;
	return (long)(utime + stime) + cutime + cstime;
}
