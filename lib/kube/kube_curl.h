/*
 * kube_curl: the libcurl implementation of kube_transport.
 *
 * One CURL easy handle per kube_curl, reused for every request so that the
 * TLS connection to the API server is kept alive (HTTP/1.1 keep-alive) and
 * not renegotiated per call. TLS peer and host verification are always on;
 * only https is allowed and redirects are not followed. Trust comes from the
 * configured CA file or in-memory CA data (else the system store); a client
 * certificate and key may be files or in-memory PEM.
 *
 * The bearer token, when it comes from a file, is re-read whenever the file's
 * identity, size or mtime changes (checked with one stat per request), so a
 * service-account token rotated by the kubelet is picked up without a
 * restart; if a re-read fails the last good token is kept. The token is never
 * logged nor put in a cause.
 *
 * Bounds: connect timeout and total timeout per request; response bodies are
 * limited by the request's max_response (enforced while receiving, not after);
 * stream lines by max_line; a stream with no bytes for idle_timeout_s is cut.
 *
 * Lifecycle: if kube_curl_new fails there is nothing to free; after success,
 * kube_curl_free (which accepts NULL). A kube_curl is used by one thread at a
 * time. The config may be freed once kube_curl_new returns: what is needed is
 * copied.
 */
#ifndef MUSTER_KUBE_CURL_H
#define MUSTER_KUBE_CURL_H

#include "kube_config.h"
#include "kube_transport.h"

struct kube_curl;

/* The operations to pass with a struct kube_curl * as ctx. */
extern const struct kube_transport kube_curl_transport;

/* Returns 0 and *out, or MUSTER_ECONFIG / MUSTER_EIO (token file unreadable) /
 * MUSTER_ENOMEM with a cause. */
int kube_curl_new(const struct kube_config *cfg, struct kube_curl **out, char **cause);

void kube_curl_free(struct kube_curl *curl);

struct kube_client;

/* The everyday client: a kube_client on a kube_curl of its own, which it
 * owns (kube_client_free frees both). 0, or a kube_err with *cause and
 * nothing to free. */
int kube_client_open(const struct kube_config *cfg, struct kube_client **out, char **cause);

#endif
