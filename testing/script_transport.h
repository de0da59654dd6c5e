/*
 * script_transport: a kube_transport (lib/kube/kube_transport.h) that
 * answers from a script of bytes, for the fuzzers of what an API server
 * sends back. The script is answers separated by NUL bytes; each answer's
 * first byte picks its HTTP status (200, 201, 404, 409, 410, 500, 403,
 * 429, 301 or 0), the rest is its body. When the script runs out, requests
 * fail with MUSTER_ETRANSPORT; streams always do. Its clock only advances
 * when slept on, so retries never wait.
 */
#ifndef MUSTER_SCRIPT_TRANSPORT_H
#define MUSTER_SCRIPT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "kube_client.h"

struct script_transport {
	const uint8_t *at, *end;
	uint64_t now_ns;
};

extern const struct kube_transport script_transport_ops;

/* A client on the script (no rate limit, 2 retries, 4 MiB answers), or NULL. */
struct kube_client *script_transport_client(struct script_transport *script, const uint8_t *data, size_t size,
					    struct kube_clock *clock);

#endif
