/*
 * push_fanout: release many barriers over TCP at once. See push_fanout.h.
 *
 * A slot table of `parallelism` connections, each walking
 * CONNECTING -> SENDING -> READING -> done, driven by one poll(). Targets are
 * taken in order as slots free up, so the first pods listed are released
 * first; the caller orders them (e.g. by when they started).
 */
#define _GNU_SOURCE
#include "push_fanout.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "release_line.h"

#define PARALLELISM_MAX 4096
#define REPLY_MAX 64

enum slot_state { SLOT_FREE, SLOT_CONNECTING, SLOT_SENDING, SLOT_READING, SLOT_RETRY_WAIT };

/* Pause before another try at a shared address: enough for a released
 * barrier to close its listener, short against the per-target timeout. */
#define RETRY_PAUSE_US 2000u

struct slot {
	enum slot_state state;
	int fd;
	size_t target;
	size_t sent;
	size_t reply_len;
	uint64_t deadline_us;
	uint64_t retry_at_us; /* SLOT_RETRY_WAIT: when to connect again */
	char reply[REPLY_MAX];
};

static const char *const result_names[] = {
	[PUSH_PENDING] = "pending",	    [PUSH_OK] = "ok",		[PUSH_REFUSED] = "refused",
	[PUSH_UNREACHABLE] = "unreachable", [PUSH_TIMEOUT] = "timeout",
};

const char *push_result_name(enum push_result result)
{
	return result_names[result];
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Descriptors this process may still open, so that a large parallelism
 * degrades to fewer connections instead of failing with EMFILE. */
static size_t descriptor_budget(void)
{
	struct rlimit limit;

	if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
		return PARALLELISM_MAX;
	return limit.rlim_cur > 128 ? (size_t)(limit.rlim_cur - 64) : 1;
}

static void finish(struct slot *slot, struct push_target *targets, enum push_result result, uint64_t begun)
{
	uint64_t now = now_us();

	/* A shared address: try again while the target has time (see
	 * push_target.shared); the result is the last try's. */
	if (result != PUSH_OK && result != PUSH_TIMEOUT && targets[slot->target].shared &&
	    now + RETRY_PAUSE_US < slot->deadline_us) {
		if (slot->fd >= 0)
			close(slot->fd);
		slot->fd = -1;
		targets[slot->target].result = result;
		slot->retry_at_us = now + RETRY_PAUSE_US;
		slot->state = SLOT_RETRY_WAIT;
		return;
	}
	if (slot->fd >= 0)
		close(slot->fd);
	targets[slot->target].result = result;
	targets[slot->target].elapsed_us = (uint32_t)(now - begun);
	slot->fd = -1;
	slot->state = SLOT_FREE;
}

/* Starts a non-blocking connect to one target. */
static void start(struct slot *slot, struct push_target *targets, size_t index, uint64_t deadline_us,
		  uint64_t begun)
{
	struct sockaddr_storage addr;
	socklen_t addr_len;
	int fd;

	memset(&addr, 0, sizeof(addr));
	targets[index].tries++;
	slot->target = index;
	slot->sent = 0;
	slot->reply_len = 0;
	slot->deadline_us = deadline_us;
	slot->fd = -1;
	if (inet_pton(AF_INET, targets[index].ip, &((struct sockaddr_in *)&addr)->sin_addr) == 1) {
		struct sockaddr_in *four = (struct sockaddr_in *)&addr;

		four->sin_family = AF_INET;
		four->sin_port = htons(targets[index].port);
		addr_len = sizeof(*four);
	} else if (inet_pton(AF_INET6, targets[index].ip, &((struct sockaddr_in6 *)&addr)->sin6_addr) == 1) {
		struct sockaddr_in6 *six = (struct sockaddr_in6 *)&addr;

		six->sin6_family = AF_INET6;
		six->sin6_port = htons(targets[index].port);
		addr_len = sizeof(*six);
	} else {
		finish(slot, targets, PUSH_UNREACHABLE, begun);
		return;
	}
	fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		finish(slot, targets, PUSH_UNREACHABLE, begun);
		return;
	}
	slot->fd = fd;
	if (connect(fd, (struct sockaddr *)&addr, addr_len) == 0)
		slot->state = SLOT_SENDING;
	else if (errno == EINPROGRESS)
		slot->state = SLOT_CONNECTING;
	else
		finish(slot, targets, PUSH_UNREACHABLE, begun);
}

/* Sends what is left of the line. */
static void send_line(struct slot *slot, struct push_target *targets, const char *line, size_t line_len,
		      uint64_t begun)
{
	while (slot->sent < line_len) {
		ssize_t n = send(slot->fd, line + slot->sent, line_len - slot->sent, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			finish(slot, targets, PUSH_UNREACHABLE, begun);
			return;
		}
		slot->sent += (size_t)n;
	}
	slot->state = SLOT_READING;
}

/* Reads the reply; a full line (or the end of the stream) decides. */
static void read_reply(struct slot *slot, struct push_target *targets, uint64_t begun)
{
	for (;;) {
		ssize_t n = recv(slot->fd, slot->reply + slot->reply_len,
				 sizeof(slot->reply) - 1 - slot->reply_len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			/* Closed without an answer: not released by this path. */
			finish(slot, targets, PUSH_UNREACHABLE, begun);
			return;
		}
		slot->reply_len += (size_t)n;
		slot->reply[slot->reply_len] = '\0';
		if (memchr(slot->reply, '\n', slot->reply_len) ||
		    slot->reply_len == sizeof(slot->reply) - 1) {
			finish(slot, targets, strncmp(slot->reply, "OK\n", 3) == 0 ? PUSH_OK : PUSH_REFUSED,
			       begun);
			return;
		}
	}
}

static void on_connected(struct slot *slot, struct push_target *targets, const char *line, size_t line_len,
			 uint64_t begun)
{
	int error = 0;
	socklen_t len = sizeof(error);

	if (getsockopt(slot->fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0 || error != 0) {
		finish(slot, targets, PUSH_UNREACHABLE, begun);
		return;
	}
	slot->state = SLOT_SENDING;
	send_line(slot, targets, line, line_len, begun);
}

static int compare_address(const void *a, const void *b, void *arg)
{
	const struct push_target *targets = arg;
	const struct push_target *x = &targets[*(const size_t *)a], *y = &targets[*(const size_t *)b];
	int c = strcmp(x->ip, y->ip);

	return c ? c : (x->port > y->port) - (x->port < y->port);
}

/* Marks the targets whose address and port another target has too. */
static int mark_shared(struct push_target *targets, size_t count)
{
	size_t *order;

	for (size_t i = 0; i < count; i++)
		targets[i].shared = 0;
	if (count < 2)
		return 0;
	order = malloc(count * sizeof(*order));
	if (!order)
		return -1;
	for (size_t i = 0; i < count; i++)
		order[i] = i;
	qsort_r(order, count, sizeof(*order), compare_address, targets);
	for (size_t i = 1; i < count; i++) {
		if (compare_address(&order[i - 1], &order[i], targets) == 0)
			targets[order[i - 1]].shared = targets[order[i]].shared = 1;
	}
	free(order);
	return 0;
}

int push_fanout(struct push_target *targets, size_t count, uint32_t attempt, const char *token,
		const struct push_fanout_options *options, const char **cause)
{
	char line[RELEASE_LINE_MAX];
	size_t parallelism = options->parallelism, next = 0, active = 0;
	struct slot *slots = NULL;
	struct pollfd *fds = NULL;
	uint64_t begun = now_us();
	uint64_t total_deadline = begun + (uint64_t)options->total_timeout_ms * 1000u;
	int line_len, released = -1;

	line_len = release_line_format(line, sizeof(line), attempt, options->generation, token, cause);
	if (line_len < 0)
		return -1;
	if (parallelism < 1)
		parallelism = 1;
	if (parallelism > PARALLELISM_MAX)
		parallelism = PARALLELISM_MAX;
	if (parallelism > descriptor_budget())
		parallelism = descriptor_budget();
	if (parallelism > count)
		parallelism = count ? count : 1;
	slots = calloc(parallelism, sizeof(*slots));
	fds = calloc(parallelism, sizeof(*fds));
	if (!slots || !fds) {
		*cause = "out of memory";
		goto out;
	}
	for (size_t i = 0; i < count; i++) {
		targets[i].result = PUSH_PENDING;
		targets[i].tries = 0;
	}
	if (mark_shared(targets, count) != 0) {
		*cause = "out of memory";
		goto out;
	}
	for (size_t i = 0; i < parallelism; i++)
		slots[i].fd = -1;

	for (;;) {
		uint64_t now = now_us(), wake = total_deadline;
		size_t polled = 0;
		int ready;

		/* Fill free slots while there is time left. */
		for (size_t i = 0; i < parallelism && next < count && now < total_deadline; i++) {
			if (slots[i].state != SLOT_FREE)
				continue;
			uint64_t deadline = now + (uint64_t)options->target_timeout_ms * 1000u;

			start(&slots[i], targets, next++,
			      deadline < total_deadline ? deadline : total_deadline, begun);
			if (slots[i].state == SLOT_SENDING)
				send_line(&slots[i], targets, line, (size_t)line_len, begun);
		}
		active = 0;
		for (size_t i = 0; i < parallelism; i++) {
			struct slot *slot = &slots[i];

			if (slot->state == SLOT_FREE)
				continue;
			if (slot->deadline_us <= now) {
				finish(slot, targets, PUSH_TIMEOUT, begun);
				continue;
			}
			if (slot->state == SLOT_RETRY_WAIT && slot->retry_at_us <= now) {
				start(slot, targets, slot->target, slot->deadline_us, begun);
				if (slot->state == SLOT_SENDING)
					send_line(slot, targets, line, (size_t)line_len, begun);
				if (slot->state == SLOT_FREE)
					continue;
			}
			active++;
			if (slot->state == SLOT_RETRY_WAIT) {
				/* No descriptor until the pause is over. */
				if (slot->retry_at_us < wake)
					wake = slot->retry_at_us;
				continue;
			}
			if (slot->deadline_us < wake)
				wake = slot->deadline_us;
			fds[polled].fd = slot->fd;
			fds[polled].events = slot->state == SLOT_READING ? POLLIN : POLLOUT;
			fds[polled].revents = 0;
			polled++;
		}
		if (active == 0 && (next >= count || now >= total_deadline))
			break;
		if (active == 0)
			continue; /* every started target finished at once: refill */
		ready = poll(fds, (nfds_t)polled, wake > now ? (int)((wake - now + 999) / 1000) : 0);
		if (ready == 0)
			continue;
		if (ready < 0 && errno != EINTR) {
			*cause = "poll failed";
			goto out;
		}
		/* Slots and pollfds were filled in the same order. */
		for (size_t i = 0, k = 0; i < parallelism && ready > 0; i++) {
			struct slot *slot = &slots[i];

			if (slot->state == SLOT_FREE || slot->state == SLOT_RETRY_WAIT ||
			    slot->deadline_us <= now)
				continue;
			short revents = fds[k++].revents;

			if (!revents)
				continue;
			if (slot->state == SLOT_CONNECTING)
				on_connected(slot, targets, line, (size_t)line_len, begun);
			else if (slot->state == SLOT_SENDING)
				send_line(slot, targets, line, (size_t)line_len, begun);
			else
				read_reply(slot, targets, begun);
		}
	}
	released = 0;
	for (size_t i = 0; i < count; i++)
		released += targets[i].result == PUSH_OK;
out:
	if (slots) {
		for (size_t i = 0; i < parallelism; i++) {
			if (slots[i].fd >= 0)
				close(slots[i].fd);
		}
	}
	free(slots);
	free(fds);
	return released;
}
