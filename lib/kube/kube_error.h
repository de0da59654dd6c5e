/*
 * kube_error: the one error vocabulary of the Kubernetes client (kube_*).
 *
 * Every kube_* function that can fail returns an `int` that is 0 (KUBE_OK) or
 * one of the negative codes below, and, where a sentence helps the log, a
 * malloc'd cause through a `char **cause` argument that the caller frees. The
 * codes, their names and their messages live in one X-macro table, so adding a
 * code is one line. libcurl codes, HTTP statuses and parse failures are
 * translated into this vocabulary at the edge where they occur.
 *
 * The module keeps no state and needs no cleanup.
 */
#ifndef MUSTER_KUBE_ERROR_H
#define MUSTER_KUBE_ERROR_H

/* X(name, value, message) */
#define KUBE_ERRORS(X)                                                                                       \
	X(KUBE_OK, 0, "success")                                                                             \
	X(KUBE_ENOMEM, -1, "out of memory")                                                                  \
	X(KUBE_EINVAL, -2, "invalid argument")                                                               \
	X(KUBE_ECONFIG, -3, "invalid or unsupported client configuration")                                   \
	X(KUBE_ETRANSPORT, -4, "connection to the API server failed")                                        \
	X(KUBE_ETLS, -5, "TLS verification or client credentials failed")                                    \
	X(KUBE_ETIMEOUT, -6, "request timed out")                                                            \
	X(KUBE_ETOOBIG, -7, "response exceeds the size limit")                                               \
	X(KUBE_EPARSE, -8, "response could not be parsed")                                                   \
	X(KUBE_EHTTP, -9, "API server refused the request")                                                  \
	X(KUBE_ENOTFOUND, -10, "object not found (HTTP 404)")                                                \
	X(KUBE_ECONFLICT, -11, "conflict or already exists (HTTP 409)")                                      \
	X(KUBE_EGONE, -12, "resource version too old (HTTP 410)")                                            \
	X(KUBE_EUNAUTHORIZED, -13, "not authenticated or not allowed (HTTP 401/403)")                        \
	X(KUBE_ETHROTTLED, -14, "too many requests (HTTP 429)")                                              \
	X(KUBE_ESERVER, -15, "API server error (HTTP 5xx)")                                                  \
	X(KUBE_ESTOPPED, -16, "stopped on request")                                                          \
	X(KUBE_EIO, -17, "local file could not be read")                                                     \
	X(KUBE_ELOST, -18, "leadership lost: the lease was taken or not renewed in time")

enum kube_err {
#define KUBE_ERR_ENUM(name, value, message) name = value,
	KUBE_ERRORS(KUBE_ERR_ENUM)
#undef KUBE_ERR_ENUM
};

/* "KUBE_ENOTFOUND" for a code of the table, "KUBE_E?" for any other value. */
const char *kube_err_name(int err);

/* The table's sentence for a code, "unknown error" for any other value. */
const char *kube_err_message(int err);

/* Maps an HTTP status to a code: 2xx -> KUBE_OK, 401/403, 404, 409, 410, 429
 * and 5xx to their own codes, anything else (including 1xx/3xx) -> KUBE_EHTTP. */
int kube_err_from_http(long status);

/* Whether retrying the same request later may succeed: connection errors,
 * timeouts, 429 and 5xx. */
int kube_err_is_transient(int err);

/* Transient, or a TLS verification failure: what a loop that keeps a watch
 * or takes part in an election waits out with backoff (a certificate being
 * rotated, a CA bundle not updated yet) instead of giving up, reporting it
 * meanwhile. One-shot requests do not retry a TLS failure. */
int kube_err_may_heal(int err);

/* Sets *cause to a malloc'd, formatted sentence unless cause is NULL or
 * *cause is already set (the first, most specific cause wins). Allocation
 * failure leaves *cause NULL. Returns `err` so that callers can write
 * `return kube_cause(cause, KUBE_EPARSE, "...")`. */
int kube_cause(char **cause, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
