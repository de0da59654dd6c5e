/*
 * push_fanout: the controller's fast release path. It connects to every
 * waiting barrier (pod IP and port) and sends the one-line release,
 *
 *     MUSTER1 RELEASE <attempt> <token>[ <generation>]\n
 *
 * with at most `parallelism` connections open at once, and records per
 * target whether the barrier answered OK, refused (ERR ...), could not be
 * reached, or did not answer in time. A barrier that is not reached here is
 * still released by the ConfigMap volume, only later; so a failure is a
 * slower release, never a lost one.
 *
 * One poll() loop, non-blocking sockets, no threads. Everything is bounded:
 * connections in flight, time per target, total time, reply length.
 * The module keeps no state between calls and allocates only the slot table.
 */
#ifndef MUSTER_PUSH_FANOUT_H
#define MUSTER_PUSH_FANOUT_H

#include <stddef.h>
#include <stdint.h>

enum push_result {
	PUSH_PENDING = 0, /* not tried (the total time ran out first) */
	PUSH_OK, /* the barrier answered OK: it is released */
	PUSH_REFUSED, /* the barrier answered ERR (token, attempt) */
	PUSH_UNREACHABLE, /* connection refused, no route, bad address */
	PUSH_TIMEOUT, /* connected or connecting, no answer in time */
};

struct push_target {
	char ip[48]; /* IPv4 or IPv6 text, as in status.podIP */
	uint16_t port;
	enum push_result result; /* set by push_fanout */
	/* Set by push_fanout: another target of this call has the same address
	 * and port (hostNetwork pods of one node, whose barriers share the
	 * port). A failed try at such a target is repeated until its time is
	 * up: the kernel may have handed the connection to a sibling that was
	 * just released, or to another JobSet's barrier. A target alone in the
	 * call is tried once, even if another JobSet's barriers share its
	 * node's port: refused, it is left to the volume. */
	int shared;
	unsigned tries; /* connections made to it */
	uint32_t elapsed_us; /* from the fan-out's start to this target's answer */
};

struct push_fanout_options {
	size_t parallelism; /* connections in flight, 1..4096 */
	int target_timeout_ms; /* per target, from connect() to the reply */
	int total_timeout_ms; /* for the whole fan-out */
	uint32_t generation; /* the release's generation (lib/muster/release_line.h); 0 for none */
};

/* Name of a result for logs and metrics ("ok", "refused", ...). */
const char *push_result_name(enum push_result result);

/* Releases every target; fills result and elapsed_us of each. The token is
 * sent but never logged. Returns the number of targets that answered OK, or
 * -1 with *cause (static text) when the arguments are unusable (no memory,
 * a token or attempt that would not make a valid line). */
int push_fanout(struct push_target *targets, size_t count, uint32_t attempt, const char *token,
		const struct push_fanout_options *options, const char **cause);

#endif
