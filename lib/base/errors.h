/*
 * errors: muster's one vocabulary of error codes, as one X-macro table
 * (libuv's UV_ERRNO_MAP): X(name, value, message). Adding a code is one
 * line. docs/errors.md says the convention around it.
 *
 * Code that does I/O (the Kubernetes client, the HTTP server, the
 * controller's loops, the push) returns 0 (MUSTER_OK) or one of these
 * negative codes, with a malloc'd cause through `char **cause`
 * (lib/base/cause.h: cause_err). Each layer translates what it calls
 * (libcurl codes, HTTP statuses, errno) into this vocabulary at the edge
 * where it occurs; nothing above sees another library's raw code. Pure code
 * (decoders, rule checks, cores) returns -1 and a cause: a refusal whose
 * sentence says why, not a code to branch on.
 *
 * The module keeps no state and needs no cleanup.
 */
#ifndef MUSTER_ERRORS_H
#define MUSTER_ERRORS_H

/* X(name, value, message) */
#define MUSTER_ERRORS(X)                                                                                     \
	X(MUSTER_OK, 0, "success")                                                                           \
	X(MUSTER_ENOMEM, -1, "out of memory")                                                                \
	X(MUSTER_EINVAL, -2, "invalid argument")                                                             \
	X(MUSTER_ECONFIG, -3, "invalid or unsupported configuration")                                        \
	X(MUSTER_ETRANSPORT, -4, "connection to the API server failed")                                      \
	X(MUSTER_ETLS, -5, "TLS verification or client credentials failed")                                  \
	X(MUSTER_ETIMEOUT, -6, "request timed out")                                                          \
	X(MUSTER_ETOOBIG, -7, "over a size or count limit")                                                  \
	X(MUSTER_EPARSE, -8, "response could not be parsed")                                                 \
	X(MUSTER_EHTTP, -9, "API server refused the request")                                                \
	X(MUSTER_ENOTFOUND, -10, "object not found (HTTP 404)")                                              \
	X(MUSTER_ECONFLICT, -11, "conflict or already exists (HTTP 409)")                                    \
	X(MUSTER_EGONE, -12, "resource version too old (HTTP 410)")                                          \
	X(MUSTER_EUNAUTHORIZED, -13, "not authenticated or not allowed (HTTP 401/403)")                      \
	X(MUSTER_ETHROTTLED, -14, "too many requests (HTTP 429)")                                            \
	X(MUSTER_ESERVER, -15, "API server error (HTTP 5xx)")                                                \
	X(MUSTER_ESTOPPED, -16, "stopped on request")                                                        \
	X(MUSTER_EIO, -17, "local I/O failed (a file could not be read, a server could not start)")          \
	X(MUSTER_ELOST, -18, "leadership lost: the lease was taken or not renewed in time")

enum muster_err {
#define MUSTER_ERR_ENUM(name, value, message) name = value,
	MUSTER_ERRORS(MUSTER_ERR_ENUM)
#undef MUSTER_ERR_ENUM
};

/* "MUSTER_ENOTFOUND" for a code of the table, "MUSTER_E?" for any other value. */
const char *muster_err_name(int err);

/* The table's sentence for a code, "unknown error" for any other value. */
const char *muster_err_message(int err);

#endif
