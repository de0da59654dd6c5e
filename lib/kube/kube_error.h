/*
 * kube_error: the Kubernetes client's side of muster's one error vocabulary
 * (lib/base/errors.h).
 *
 * Every kube_* function that can fail returns an `int` that is 0 (MUSTER_OK) or
 * one of the table's negative codes, and, where a sentence helps the log, a
 * malloc'd cause through a `char **cause` argument that the caller frees
 * (cause_err, lib/base/cause.h). HTTP statuses, libcurl codes and parse
 * failures are translated into the vocabulary here, at the edge where they
 * occur; this module says which codes a retry may heal.
 *
 * The module keeps no state and needs no cleanup.
 */
#ifndef MUSTER_KUBE_ERROR_H
#define MUSTER_KUBE_ERROR_H

#include "cause.h"
#include "errors.h"

/* Maps an HTTP status to a code: 2xx -> MUSTER_OK, 401/403, 404, 409, 410, 429
 * and 5xx to their own codes, anything else (including 1xx/3xx) -> MUSTER_EHTTP. */
int kube_err_from_http(long status);

/* Whether retrying the same request later may succeed: connection errors,
 * timeouts, 429 and 5xx. */
int kube_err_is_transient(int err);

/* Transient, or a TLS verification failure: what a loop that keeps a watch
 * or takes part in an election waits out with backoff (a certificate being
 * rotated, a CA bundle not updated yet) instead of giving up, reporting it
 * meanwhile. One-shot requests do not retry a TLS failure. */
int kube_err_may_heal(int err);

#endif
