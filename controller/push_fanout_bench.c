/*
 * Benchmark of the push release path: BENCH_PUSH_TARGETS (default 5,000) real
 * muster-barrier processes wait on distinct loopback addresses, as the pods
 * of a 5,000-pod JobSet wait on their pod IPs; one push_fanout call releases
 * them all with BENCH_PUSH_PARALLELISM connections in flight (default 256).
 *
 * Prints the time from the start of the fan-out to each barrier's OK (p50,
 * p99, max) and to the exit of the last barrier process. This is the
 * controller's share of the release latency; the end-to-end figure on the
 * control plane comes with the controller.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../initbarrier/barrier_testproc.h"
#include "push_fanout.h"

#define TOKEN "bench-fanout-token-0123456789"

static int compare_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

int main(void)
{
	size_t count = (size_t)testproc_env_int("BENCH_PUSH_TARGETS", 5000);
	struct push_fanout_options options = { .parallelism = (size_t)testproc_env_int(
						       "BENCH_PUSH_PARALLELISM", 256),
					       .target_timeout_ms = 2000,
					       .total_timeout_ms = 30000 };
	struct testproc *procs = calloc(count, sizeof(*procs));
	struct push_target *targets = calloc(count, sizeof(*targets));
	uint32_t *elapsed = calloc(count, sizeof(*elapsed));
	char dir[] = "/tmp/muster-fanout-bench-XXXXXX";
	char *env[] = { (char *)"MUSTER_BARRIER_TOKEN=" TOKEN, NULL };
	const char *cause = NULL;
	struct rlimit limit;
	double begun, spawned, all_exited = 0;
	int released, failed = 0;

	if (!procs || !targets || !elapsed || !mkdtemp(dir))
		return 1;
	/* Every barrier holds a pipe to us: make room for them, or measure as
	 * many as the hard limit allows and say so. */
	if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
	    limit.rlim_cur < count + 512) {
		if (limit.rlim_max == RLIM_INFINITY || limit.rlim_max >= count + 512)
			limit.rlim_cur = count + 512;
		else
			limit.rlim_cur = limit.rlim_max;
		setrlimit(RLIMIT_NOFILE, &limit);
		getrlimit(RLIMIT_NOFILE, &limit);
		if (limit.rlim_cur < count + 512) {
			size_t fits = limit.rlim_cur > 576 ? (size_t)limit.rlim_cur - 512 : 64;

			fprintf(stderr, "open-file limit %lu: measuring %zu barriers instead of %zu\n",
				(unsigned long)limit.rlim_cur, fits, count);
			count = fits;
		}
	}
	begun = testproc_now_ms();
	for (size_t i = 0; i < count; i++) {
		char listen[48];
		char *argv[] = { (char *)testproc_barrier_path(),
				 (char *)"--dir",
				 dir,
				 (char *)"--attempt",
				 (char *)"1",
				 (char *)"--listen",
				 listen,
				 NULL };

		snprintf(targets[i].ip, sizeof(targets[i].ip), "127.4.%zu.%zu", i / 250, i % 250 + 1);
		targets[i].port = 9443;
		snprintf(listen, sizeof(listen), "%s:9443", targets[i].ip);
		if (testproc_start(&procs[i], argv, env, NULL) != 0) {
			fprintf(stderr, "cannot start barrier %zu\n", i);
			while (i-- > 0)
				testproc_finish(&procs[i]);
			return 1;
		}
	}
	for (size_t i = 0; i < count; i++) {
		if (testproc_wait_for(&procs[i], "event=waiting", 30000) != 0 ||
		    strstr(procs[i].out, "listen-failed")) {
			fprintf(stderr, "barrier %zu did not start listening:\n%s\n", i, procs[i].out);
			for (size_t k = 0; k < count; k++)
				testproc_finish(&procs[k]);
			return 1;
		}
	}
	spawned = testproc_now_ms() - begun;

	begun = testproc_now_ms();
	released = push_fanout(targets, count, 1, TOKEN, &options, &cause);
	if (released < 0) {
		fprintf(stderr, "push_fanout: %s\n", cause);
		return 1;
	}
	double fanout_ms = testproc_now_ms() - begun;

	for (size_t i = 0; i < count; i++) {
		if (testproc_wait_exit_blocking(&procs[i]) != 0)
			failed++;
		testproc_finish(&procs[i]);
	}
	all_exited = testproc_now_ms() - begun;
	for (size_t i = 0; i < count; i++)
		elapsed[i] = targets[i].elapsed_us;
	qsort(elapsed, count, sizeof(*elapsed), compare_u32);

	printf("push fan-out: %zu barriers on distinct loopback addresses, parallelism %zu (spawned in %.1f s)\n",
	       count, options.parallelism, spawned / 1000);
	printf("  released (OK)                 %d of %zu, %d exited non-zero\n", released, count, failed);
	printf("  fan-out call                  %.1f ms (%.0f releases/s)\n", fanout_ms,
	       fanout_ms > 0 ? count / (fanout_ms / 1000) : 0);
	printf("  time to OK per barrier        p50 %.1f ms  p99 %.1f ms  max %.1f ms\n",
	       elapsed[count / 2] / 1000.0, elapsed[(count * 99) / 100] / 1000.0,
	       elapsed[count - 1] / 1000.0);
	printf("  last barrier process exited   %.1f ms after the fan-out began  goal p99<1000 ms: %s\n",
	       all_exited, all_exited < 1000 ? "met" : "MISSED");
	rmdir(dir);
	free(procs);
	free(targets);
	free(elapsed);
	return released == (int)count && failed == 0 ? 0 : 1;
}
