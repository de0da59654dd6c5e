/*
 * Tests of push_fanout against real muster-barrier processes listening on
 * distinct loopback addresses (as pods do on their pod IPs), and against
 * peers that refuse, stay silent or do not exist.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "barrier_testproc.h"
#include "push_fanout.h"

#define TOKEN "fanout-token-0123456789"
#define PORT 9443

struct fleet {
	char dir[64];
	size_t count;
	struct testproc *procs;
};

static void barrier_ip(size_t index, char *ip, size_t size)
{
	snprintf(ip, size, "127.3.%zu.%zu", index / 250, index % 250 + 1);
}

/* Starts `count` barriers of attempt `attempt` on 127.3.x.y:9443. */
static void fleet_start(struct fleet *fleet, size_t count, const char *attempt, const char *token)
{
	char env_token[300];
	char *env[] = { env_token, NULL };

	snprintf(fleet->dir, sizeof(fleet->dir), "/tmp/muster-fanout-test-XXXXXX");
	assert_non_null(mkdtemp(fleet->dir));
	snprintf(env_token, sizeof(env_token), "MUSTER_BARRIER_TOKEN=%s", token);
	fleet->count = count;
	fleet->procs = calloc(count, sizeof(*fleet->procs));
	assert_non_null(fleet->procs);
	for (size_t i = 0; i < count; i++) {
		char ip[32], listen[48];
		char *argv[] = { (char *)testproc_barrier_path(),
				 (char *)"--dir",
				 fleet->dir,
				 (char *)"--attempt",
				 (char *)attempt,
				 (char *)"--listen",
				 listen,
				 NULL };

		barrier_ip(i, ip, sizeof(ip));
		snprintf(listen, sizeof(listen), "%s:%d", ip, PORT);
		assert_int_equal(testproc_start(&fleet->procs[i], argv, env, NULL), 0);
	}
	for (size_t i = 0; i < count; i++)
		assert_int_equal(testproc_wait_for(&fleet->procs[i], "event=waiting", 10000), 0);
}

static void fleet_stop(struct fleet *fleet)
{
	for (size_t i = 0; i < fleet->count; i++)
		testproc_finish(&fleet->procs[i]);
	free(fleet->procs);
	rmdir(fleet->dir);
}

static struct push_target *targets_for(size_t count)
{
	struct push_target *targets = calloc(count, sizeof(*targets));

	assert_non_null(targets);
	for (size_t i = 0; i < count; i++) {
		barrier_ip(i, targets[i].ip, sizeof(targets[i].ip));
		targets[i].port = PORT;
	}
	return targets;
}

static void releases_every_barrier(void **state)
{
	const struct push_fanout_options options = { .parallelism = 8,
						     .target_timeout_ms = 2000,
						     .total_timeout_ms = 10000 };
	struct push_target *targets = targets_for(64);
	struct fleet fleet;
	const char *cause = NULL;

	(void)state;
	fleet_start(&fleet, 64, "2", TOKEN);
	assert_int_equal(push_fanout(targets, 64, 2, TOKEN, &options, &cause), 64);
	for (size_t i = 0; i < 64; i++) {
		assert_int_equal(targets[i].result, PUSH_OK);
		/* Each answered OK: released. What is left is the exit, which
		 * under LeakSanitizer (a scan of every process at exit) on a busy
		 * machine takes seconds per batch; how fast is make bench's
		 * question, this test only needs it to happen. */
		assert_int_equal(testproc_wait_exit(&fleet.procs[i], 60000), 0);
		assert_non_null(strstr(fleet.procs[i].out, "event=released via=push attempt=2"));
	}
	fleet_stop(&fleet);
	free(targets);
}

/* hostNetwork: the pods of one node share its address, so their barriers
 * all listen on one port (SO_REUSEPORT) and the kernel hands each
 * connection to one of them. Four barriers on one address, plus one alone:
 * the fan-out keeps connecting to the shared address until each of its
 * targets was answered OK by some barrier, so all five are released. */
static void releases_barriers_sharing_one_address(void **state)
{
	const struct push_fanout_options options = { .parallelism = 8,
						     .target_timeout_ms = 5000,
						     .total_timeout_ms = 20000 };
	struct push_target targets[5];
	struct testproc procs[5];
	char dir[64], env_token[300], listen[64];
	char *env[] = { env_token, NULL };
	const char *cause = NULL;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/muster-fanout-test-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(env_token, sizeof(env_token), "MUSTER_BARRIER_TOKEN=%s", TOKEN);
	memset(targets, 0, sizeof(targets));
	for (size_t i = 0; i < 5; i++) {
		char *argv[] = { (char *)testproc_barrier_path(),
				 (char *)"--dir",
				 dir,
				 (char *)"--attempt",
				 (char *)"1",
				 (char *)"--listen",
				 listen,
				 NULL };

		snprintf(targets[i].ip, sizeof(targets[i].ip), i < 4 ? "127.3.201.1" : "127.3.201.2");
		targets[i].port = PORT;
		snprintf(listen, sizeof(listen), "%.40s:%d", targets[i].ip, PORT);
		assert_int_equal(testproc_start(&procs[i], argv, env, NULL), 0);
		assert_int_equal(testproc_wait_for(&procs[i], "event=waiting", 10000), 0);
		/* Every one of them bound the port. */
		assert_null(strstr(procs[i].out, "listen-failed"));
	}
	assert_int_equal(push_fanout(targets, 5, 1, TOKEN, &options, &cause), 5);
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(targets[i].result, PUSH_OK);
		assert_int_equal(targets[i].shared, i < 4);
		assert_int_equal(testproc_wait_exit(&procs[i], 60000), 0);
		testproc_finish(&procs[i]);
	}
	rmdir(dir);
}

static void classifies_refused_and_unreachable(void **state)
{
	const struct push_fanout_options options = { .parallelism = 4,
						     .target_timeout_ms = 2000,
						     .total_timeout_ms = 10000 };
	struct push_target targets[4];
	struct fleet fleet;
	const char *cause = NULL;

	(void)state;
	/* Barriers 0 and 1 wait for attempt 3; 2 has no listener; 3 is no address. */
	fleet_start(&fleet, 2, "3", TOKEN);
	memset(targets, 0, sizeof(targets));
	for (size_t i = 0; i < 3; i++) {
		barrier_ip(i, targets[i].ip, sizeof(targets[i].ip));
		targets[i].port = PORT;
	}
	snprintf(targets[3].ip, sizeof(targets[3].ip), "not-an-ip");
	/* A release of attempt 2 is refused as stale by barriers of attempt 3. */
	assert_int_equal(push_fanout(targets, 4, 2, TOKEN, &options, &cause), 0);
	assert_int_equal(targets[0].result, PUSH_REFUSED);
	assert_int_equal(targets[1].result, PUSH_REFUSED);
	assert_int_equal(targets[2].result, PUSH_UNREACHABLE);
	assert_int_equal(targets[3].result, PUSH_UNREACHABLE);
	/* A wrong token is refused too. */
	assert_int_equal(push_fanout(targets, 1, 3, "another-token-0123456789", &options, &cause), 0);
	assert_int_equal(targets[0].result, PUSH_REFUSED);
	assert_int_equal(testproc_wait_exit(&fleet.procs[0], 200), -1);
	/* The right one releases both. */
	assert_int_equal(push_fanout(targets, 2, 3, TOKEN, &options, &cause), 2);
	assert_string_equal(push_result_name(targets[0].result), "ok");
	fleet_stop(&fleet);
}

/* A listener that accepts connections (in its backlog) and never answers. */
static int silent_listener(const char *ip, uint16_t port)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(inet_pton(AF_INET, ip, &addr.sin_addr), 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(listen(fd, 16), 0);
	return fd;
}

static void silent_peers_time_out_and_total_time_is_bounded(void **state)
{
	const struct push_fanout_options options = { .parallelism = 1,
						     .target_timeout_ms = 300,
						     .total_timeout_ms = 500 };
	struct push_target targets[3];
	int listeners[3];
	const char *cause = NULL;
	double begun;

	(void)state;
	memset(targets, 0, sizeof(targets));
	for (size_t i = 0; i < 3; i++) {
		snprintf(targets[i].ip, sizeof(targets[i].ip), "127.3.200.%zu", i + 1);
		targets[i].port = PORT;
		listeners[i] = silent_listener(targets[i].ip, PORT);
	}
	begun = testproc_now_ms();
	assert_int_equal(push_fanout(targets, 3, 0, TOKEN, &options, &cause), 0);
	assert_true(testproc_now_ms() - begun < 800);
	/* One at a time: the first waits its 300 ms, the second is cut by the
	 * 500 ms total, the third never starts. */
	assert_int_equal(targets[0].result, PUSH_TIMEOUT);
	assert_int_equal(targets[1].result, PUSH_TIMEOUT);
	assert_int_equal(targets[2].result, PUSH_PENDING);
	assert_true(targets[0].elapsed_us >= 290000);
	for (size_t i = 0; i < 3; i++)
		close(listeners[i]);
}

static void bad_arguments_are_refused(void **state)
{
	const struct push_fanout_options options = { .parallelism = 4,
						     .target_timeout_ms = 100,
						     .total_timeout_ms = 100 };
	struct push_target target = { .ip = "127.0.0.1", .port = 1 };
	const char *cause = NULL;

	(void)state;
	assert_int_equal(push_fanout(&target, 1, 0, "short", &options, &cause), -1);
	assert_string_equal(cause, "token is shorter than 16 bytes");
	assert_int_equal(push_fanout(&target, 1, 0, "has a space in it!!", &options, &cause), -1);
	assert_int_equal(push_fanout(&target, 1, 2147483648u, TOKEN, &options, &cause), -1);
	/* Nothing to do is not an error. */
	assert_int_equal(push_fanout(&target, 0, 0, TOKEN, &options, &cause), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(releases_every_barrier),
		cmocka_unit_test(releases_barriers_sharing_one_address),
		cmocka_unit_test(classifies_refused_and_unreachable),
		cmocka_unit_test(silent_peers_time_out_and_total_time_is_bounded),
		cmocka_unit_test(bad_arguments_are_refused),
	};

	return cmocka_run_group_tests_name("push_fanout", tests, NULL, NULL);
}
