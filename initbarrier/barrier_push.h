/*
 * barrier_push: the TCP listener through which the controller releases the
 * barrier at once, instead of waiting up to 90 s for kubelet to refresh the
 * ConfigMap volume.
 *
 * Protocol: the client sends one line, `MUSTER1 RELEASE <attempt> <token>[ <generation>]\n`,
 * and gets one line back, `OK\n` or `ERR <reason>\n`, then the barrier closes
 * the connection. Everything a client can do is bounded: at most
 * BARRIER_PUSH_CONNS connections at once (a new one evicts the oldest), at most
 * BARRIER_PUSH_MAX bytes per line, and BARRIER_PUSH_READ_MS to finish it.
 * A bad client is logged and dropped; it never stops the barrier nor the
 * volume path. Rejection log lines are rate-limited.
 *
 * Lifecycle: barrier_push_init() makes an idle listener; barrier_push_listen()
 * binds it (or fails, leaving it idle); barrier_push_close() releases
 * everything and is safe in any state.
 */
#ifndef MUSTER_BARRIER_PUSH_H
#define MUSTER_BARRIER_PUSH_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "barrier_core.h"

#define BARRIER_PUSH_CONNS 8
#define BARRIER_PUSH_READ_MS 2000

/* A parsed --listen value. */
struct barrier_listen_addr {
	struct sockaddr_storage addr;
	socklen_t addr_len;
	int any; /* only a port was given: listen on every address */
};

struct barrier_push_conn {
	int fd;
	int poll_index;
	uint64_t deadline_ms;
	size_t len;
	char peer[64];
	char buf[BARRIER_PUSH_MAX];
};

struct barrier_push {
	int listen_fd;
	int listen_poll_index;
	char bound[72]; /* "addr:port" actually bound, for the log */
	const char *token;
	size_t token_len;
	struct barrier_identity own; /* jobset_uid unused: the token names the JobSet */
	unsigned long rejected;
	unsigned long suppressed;
	struct barrier_push_conn conns[BARRIER_PUSH_CONNS];
};

/* Parses "PORT", "IPV4:PORT" or "[IPV6]:PORT" (port 0 picks a free port).
 * Returns 0, or -1 with *cause set to a static sentence. */
int barrier_listen_parse(const char *spec, struct barrier_listen_addr *out, const char **cause);

/* Prepares an idle listener that accepts `token` for generations and
 * attempts >= own's. The token is borrowed and must outlive the listener. */
void barrier_push_init(struct barrier_push *push, const char *token, size_t token_len,
		       const struct barrier_identity *own);

/* Binds and listens. Returns 0, or -1 with err set (the caller logs it and
 * relies on the volume: with hostNetwork the port may be taken). */
int barrier_push_listen(struct barrier_push *push, const struct barrier_listen_addr *addr, char *err,
			size_t err_size);

/* Adds the listener's and the connections' descriptors to fds (which must
 * have room for 1 + BARRIER_PUSH_CONNS entries) and returns how many. */
size_t barrier_push_pollfds(struct barrier_push *push, struct pollfd *fds);

/* Earliest connection deadline, or UINT64_MAX when none. */
uint64_t barrier_push_next_deadline(const struct barrier_push *push);

/* Handles what poll() reported for the descriptors added last, and drops
 * connections past their deadline. Returns 1 and sets *released when a valid
 * release arrived (the client has been answered OK), else 0. */
int barrier_push_handle(struct barrier_push *push, const struct pollfd *fds, uint64_t now_ms,
			struct barrier_release *released);

/* Closes every connection and the listener. */
void barrier_push_close(struct barrier_push *push);

#endif
