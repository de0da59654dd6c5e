/*
 * release_line: the wire format of a pushed release, shared by the sender
 * (the controller) and the receiver (the barrier), so the two cannot drift.
 *
 *     MUSTER1 RELEASE <attempt> <token>\n
 *     MUSTER1 RELEASE <attempt> <token> <generation>\n
 *
 * and the names of the release of record, the ConfigMap
 * `<jobset>-group-scheduling` that kubelet projects into the barrier's
 * volume: key `started` (the attempt), `jobset-uid` (the JobSet whose release
 * it is) and `generation` (muster's count of the JobSet's resumes, see
 * docs/barrier.md). A release counts for a barrier only when it names the
 * barrier's own JobSet, a generation at least its own and an attempt at
 * least its own.
 *
 * The barrier parses both in initbarrier/barrier_core.c; this module builds
 * the line and holds the names and limits both sides obey.
 */
#ifndef MUSTER_RELEASE_LINE_H
#define MUSTER_RELEASE_LINE_H

#include <stddef.h>
#include <stdint.h>

#include "muster_api.h"

#define RELEASE_LINE_MAGIC "MUSTER1"
#define RELEASE_LINE_VERB "RELEASE"
/* Longest line, newline included. */
#define RELEASE_LINE_MAX 512
/* Restart attempts are JobSet status.restarts, an int32. */
#define RELEASE_ATTEMPT_MAX 2147483647u
/* muster's generation (the label muster.dev/gang-generation), an int32 too. */
#define RELEASE_GENERATION_MAX 2147483647u
/* A JobSet's metadata.uid: a UUID (36 bytes); up to 64 accepted. */
#define RELEASE_UID_MAX 64
/* A token is TOKEN_MIN..TOKEN_MAX bytes of printable ASCII without spaces. */
#define RELEASE_TOKEN_MIN 16
#define RELEASE_TOKEN_MAX 256

/* Checks a token against the rules above. Returns 0, or -1 with *cause set
 * to a static sentence. */
int release_token_check(const char *token, size_t len, const char **cause);

/* Writes the release line for `attempt`, `generation` and `token` into buf;
 * the generation field is written only when it is above 0 (the line of a
 * JobSet never resumed is the original four-field one). Returns its length
 * (newline included), or -1 with *cause set when the token, the attempt or
 * the generation break the rules or buf is too small. */
int release_line_format(char *buf, size_t size, uint32_t attempt, uint32_t generation, const char *token,
			const char **cause);

#endif
