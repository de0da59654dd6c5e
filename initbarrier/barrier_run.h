/*
 * barrier_run: the barrier's event loop, wiring the volume watch, the push
 * listener, signals and the timeout into one poll().
 *
 * While nothing happens the process sleeps in poll() with no timer shorter
 * than the --timeout deadline: zero wake-ups.
 */
#ifndef MUSTER_BARRIER_RUN_H
#define MUSTER_BARRIER_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "barrier_core.h"
#include "barrier_push.h"
#include "barrier_volume.h"

struct barrier_config {
	const char *dir; /* mount directory of the ConfigMap volume */
	enum barrier_watch watch; /* kernel interface that watches it */
	uint32_t attempt; /* restart attempt this pod belongs to */
	uint32_t generation; /* muster's generation of the JobSet (resumes), 0 by default */
	char jobset_uid[RELEASE_UID_MAX + 1]; /* the JobSet's uid; "": not checked */
	int listen; /* 1 when listen_addr is set */
	const char *listen_spec; /* as given, for the log */
	struct barrier_listen_addr listen_addr;
	char token[BARRIER_TOKEN_MAX + 1];
	size_t token_len;
	uint32_t timeout_seconds; /* 0: wait without limit */
	const char *termination_log; /* written on failure when it exists */
};

/* Blocks until released, timed out, signalled or failed, and returns the
 * process exit code (enum muster_barrier_exit). Logs every state change. */
int barrier_run(const struct barrier_config *config);

/* Writes `message` to the termination-log file when it exists (never creates
 * it), so `kubectl describe pod` shows why the container ended. */
void barrier_write_termination_log(const char *path, const char *message);

#endif
