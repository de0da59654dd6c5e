/*
 * Benchmark of the real muster-barrier binary, side by side with the KEP-498
 * bash loop it replaces, in one run on one machine:
 *   - latency from the `..data` rename (kubelet's atomic swap) to process exit;
 *   - latency from a pushed release to process exit;
 *   - peak RSS, binary size;
 *   - CPU ticks and context switches while blocked for BENCH_BLOCK_SECONDS.
 * Environment: BENCH_RUNS (default 1000), BENCH_BASELINE_RUNS (default 20),
 * BENCH_BLOCK_SECONDS (default 10), MUSTER_BARRIER_BIN.
 * It prints figures and whether each goal is met; it always exits 0 unless
 * the barrier misbehaves (wrong exit code), because timings are not tests.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "atomic_writer.h"
#include "barrier_testproc.h"

#define TOKEN "bench-token-0123456789abcdef"

/* Peak resident set of the barrier's own image (VmHWM, after exec). The
 * child's ru_maxrss would also count the benchmark's pages it inherited
 * before exec, so it is not used. */
static long vm_hwm_kb(pid_t pid)
{
	return testproc_status_field(pid, "VmHWM:");
}

static long context_switches(pid_t pid)
{
	return testproc_status_field(pid, "ctxt_switches:");
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double percentile(double *sorted, int n, double p)
{
	int index = (int)(p * (n - 1) + 0.5);

	return sorted[index];
}

static double ms_between(const struct timespec *a, double b_ms)
{
	return b_ms - ((double)a->tv_sec * 1e3 + (double)a->tv_nsec / 1e6);
}

static void fresh_dir(const char *root, char *volume, size_t size)
{
	snprintf(volume, size, "%s/volume", root);
	atomic_writer_remove_tree(volume);
	if (mkdir(volume, 0755) != 0) {
		perror("mkdir");
		exit(1);
	}
}

static void start_or_die(struct testproc *proc, char *const argv[], char *const env[])
{
	static const char *const unset[] = { "POD_NAME", "POD_NAMESPACE", NULL };

	if (testproc_start(proc, argv, env, unset) != 0 ||
	    testproc_wait_for(proc, "event=waiting", 5000) != 0) {
		fprintf(stderr, "barrier did not start:\n%s\n", proc->out);
		exit(1);
	}
}

static void expect_exit(struct testproc *proc, int code)
{
	if (proc->exit_code != code) {
		fprintf(stderr, "barrier exited %d, want %d:\n%s\n", proc->exit_code, code, proc->out);
		exit(1);
	}
	testproc_finish(proc);
}

static void report(const char *what, double *samples, int n, double goal_p99)
{
	qsort(samples, (size_t)n, sizeof(double), compare_double);
	printf("%-34s runs=%-5d median=%8.3f ms  p99=%8.3f ms  max=%8.3f ms", what, n,
	       percentile(samples, n, 0.5), percentile(samples, n, 0.99), samples[n - 1]);
	if (goal_p99 > 0)
		printf("  goal p99<%g ms: %s", goal_p99,
		       percentile(samples, n, 0.99) < goal_p99 ? "met" : "MISSED");
	printf("\n");
}

/* Releases by volume: an AtomicWriter write of started=1 to a waiting barrier. */
static double volume_once(const char *root, const char *watch, long *max_rss)
{
	char volume[128];
	char *argv[] = { (char *)testproc_barrier_path(),
			 (char *)"--dir",
			 volume,
			 (char *)"--attempt",
			 (char *)"1",
			 (char *)"--watch",
			 (char *)watch,
			 NULL };
	const struct atomic_writer_file files[] = { { "started", "1" } };
	struct testproc *proc = malloc(sizeof(*proc));
	struct timespec renamed;
	double latency;

	fresh_dir(root, volume, sizeof(volume));
	start_or_die(proc, argv, NULL);
	if (vm_hwm_kb(proc->pid) > *max_rss)
		*max_rss = vm_hwm_kb(proc->pid);
	if (atomic_writer_write(volume, files, 1, ATOMIC_WRITER_LINKS_AFTER_RENAME, &renamed) != 1) {
		perror("atomic_writer_write");
		exit(1);
	}
	testproc_wait_exit_blocking(proc);
	latency = ms_between(&renamed, testproc_now_ms());
	expect_exit(proc, 0);
	free(proc);
	return latency;
}

/* Releases by push over loopback TCP. */
static double push_once(const char *root, const char *watch, long *max_rss)
{
	char volume[128];
	char *argv[] = {
		(char *)testproc_barrier_path(), (char *)"--dir",   volume,	   (char *)"--listen",
		(char *)"127.0.0.1:0",		 (char *)"--watch", (char *)watch, NULL
	};
	char *env[] = { (char *)"MUSTER_BARRIER_TOKEN=" TOKEN, NULL };
	static const char line[] = "MUSTER1 RELEASE 0 " TOKEN "\n";
	struct testproc *proc = malloc(sizeof(*proc));
	struct sockaddr_in addr = { .sin_family = AF_INET };
	const char *port_text;
	double begun, latency;
	int fd;

	fresh_dir(root, volume, sizeof(volume));
	start_or_die(proc, argv, env);
	port_text = strstr(proc->out, "listen=127.0.0.1:");
	if (!port_text) {
		fprintf(stderr, "no port in:\n%s\n", proc->out);
		exit(1);
	}
	addr.sin_port = htons((uint16_t)strtol(port_text + strlen("listen=127.0.0.1:"), NULL, 10));
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (vm_hwm_kb(proc->pid) > *max_rss)
		*max_rss = vm_hwm_kb(proc->pid);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	begun = testproc_now_ms();
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    send(fd, line, sizeof(line) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(line) - 1)) {
		perror("push");
		exit(1);
	}
	testproc_wait_exit_blocking(proc);
	latency = testproc_now_ms() - begun;
	close(fd);
	expect_exit(proc, 0);
	free(proc);
	return latency;
}

/* The KEP-498 prototype's init container, run as the same kind of child. */
static double bash_loop_once(const char *root)
{
	char volume[128], script[256];
	char *argv[] = { (char *)"/bin/bash", (char *)"-c", script, NULL };
	const struct atomic_writer_file files[] = { { "started", "1" } };
	struct testproc *proc = malloc(sizeof(*proc));
	struct timespec renamed;
	double latency;

	fresh_dir(root, volume, sizeof(volume));
	snprintf(script, sizeof(script),
		 "echo event=waiting >&2; while true; do if [ -f %s/started ]; then break; fi; sleep 1; done",
		 volume);
	start_or_die(proc, argv, NULL);
	/* A random phase against the loop's one-second sleep. */
	usleep((useconds_t)(rand() % 1000) * 1000);
	atomic_writer_write(volume, files, 1, ATOMIC_WRITER_LINKS_AFTER_RENAME, &renamed);
	testproc_wait_exit_blocking(proc);
	latency = ms_between(&renamed, testproc_now_ms());
	expect_exit(proc, 0);
	free(proc);
	return latency;
}

static void blocked_cost(const char *what, const char *root, char *const argv[], char *const env[],
			 int seconds, int goal_zero)
{
	char volume[128];
	struct testproc *proc = malloc(sizeof(*proc));
	long ticks, switches;

	fresh_dir(root, volume, sizeof(volume));
	start_or_die(proc, argv, env);
	usleep(200 * 1000);
	ticks = testproc_cpu_ticks(proc->pid);
	switches = context_switches(proc->pid);
	sleep((unsigned)seconds);
	ticks = testproc_cpu_ticks(proc->pid) - ticks;
	switches = context_switches(proc->pid) - switches;
	printf("%-34s blocked %d s: cpu=%ld ticks (%ld ms)  wake-ups (context switches)=%ld  VmHWM=%ld KB",
	       what, seconds, ticks, ticks * 1000 / sysconf(_SC_CLK_TCK), switches, vm_hwm_kb(proc->pid));
	if (goal_zero)
		printf("  goal 0 ticks: %s", ticks == 0 ? "met" : "MISSED");
	printf("\n");
	kill(proc->pid, SIGTERM);
	testproc_finish(proc);
	free(proc);
}

int main(void)
{
	int runs = testproc_env_int("BENCH_RUNS", 1000);
	int baseline_runs = testproc_env_int("BENCH_BASELINE_RUNS", 20);
	int block_seconds = testproc_env_int("BENCH_BLOCK_SECONDS", 10);
	double *samples = calloc((size_t)(runs > baseline_runs ? runs : baseline_runs), sizeof(double));
	char root[] = "/tmp/muster-barrier-bench-XXXXXX";
	char volume[128];
	long max_rss = 0;
	struct stat st;
	struct utsname uts;
	char *barrier_blocked[] = {
		(char *)testproc_barrier_path(), (char *)"--dir",     volume,	     (char *)"--listen",
		(char *)"127.0.0.1:0",		 (char *)"--timeout", (char *)"600", NULL
	};
	char *env[] = { (char *)"MUSTER_BARRIER_TOKEN=" TOKEN, NULL };
	char bash_script[256];
	char *bash_blocked[] = { (char *)"/bin/bash", (char *)"-c", bash_script, NULL };

	if (!samples || !mkdtemp(root))
		return 1;
	snprintf(volume, sizeof(volume), "%s/volume", root);
	snprintf(bash_script, sizeof(bash_script),
		 "echo event=waiting >&2; while true; do if [ -f %s/started ]; then break; fi; sleep 1; done",
		 volume);
	uname(&uts);
	srand(1);
	printf("muster-barrier benchmark: %s, %ld cores, %s %s\n", testproc_barrier_path(),
	       sysconf(_SC_NPROCESSORS_ONLN), uts.sysname, uts.release);
	if (stat(testproc_barrier_path(), &st) != 0) {
		perror("stat barrier");
		return 1;
	}
	printf("%-34s %lld bytes  goal <=131072: %s\n", "binary size", (long long)st.st_size,
	       st.st_size <= 131072 ? "met" : "MISSED");

	/* Both watch kinds, interleaved run by run so that machine noise hits
	 * them alike. */
	for (int kind = 0; kind < 2; kind++) {
		static const char *const watches[] = { "dnotify", "inotify" };
		static const char *const volume_titles[] = { "release by volume, dnotify",
							     "release by volume, inotify" };
		static const char *const push_titles[] = { "release by push, dnotify",
							   "release by push, inotify" };
		double *other = calloc((size_t)runs, sizeof(double));

		for (int i = 0; i < runs; i++) {
			samples[i] = volume_once(root, watches[kind], &max_rss);
			other[i] = push_once(root, watches[kind], &max_rss);
		}
		report(volume_titles[kind], samples, runs, 5.0);
		report(push_titles[kind], other, runs, 5.0);
		free(other);
	}
	for (int i = 0; i < baseline_runs; i++)
		samples[i] = bash_loop_once(root);
	report("KEP-498 bash loop (baseline)", samples, baseline_runs, 0);
	printf("%-34s %ld KB  goal <1024 KB: %s\n", "peak RSS (VmHWM, max of all runs)", max_rss,
	       max_rss < 1024 ? "met" : "MISSED");

	blocked_cost("muster-barrier (volume+push)", root, barrier_blocked, env, block_seconds, 1);
	blocked_cost("KEP-498 bash loop (baseline)", root, bash_blocked, NULL, block_seconds, 0);
	atomic_writer_remove_tree(root);
	free(samples);
	return 0;
}
