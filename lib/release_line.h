/*
 * release_line: the wire format of a pushed release, shared by the sender
 * (the controller) and the receiver (the barrier), so the two cannot drift.
 *
 *     MUSTER1 RELEASE <attempt> <token>\n
 *
 * The barrier parses it in initbarrier/barrier_core.c; this module builds it
 * and holds the limits both sides obey.
 */
#ifndef MUSTER_RELEASE_LINE_H
#define MUSTER_RELEASE_LINE_H

#include <stddef.h>
#include <stdint.h>

#define RELEASE_LINE_MAGIC "MUSTER1"
#define RELEASE_LINE_VERB "RELEASE"
/* Longest line, newline included. */
#define RELEASE_LINE_MAX 512
/* Restart attempts are JobSet status.restarts, an int32. */
#define RELEASE_ATTEMPT_MAX 2147483647u
/* A token is TOKEN_MIN..TOKEN_MAX bytes of printable ASCII without spaces. */
#define RELEASE_TOKEN_MIN 16
#define RELEASE_TOKEN_MAX 256

/* Checks a token against the rules above. Returns 0, or -1 with *cause set
 * to a static sentence. */
int release_token_check(const char *token, size_t len, const char **cause);

/* Writes the release line for `attempt` and `token` into buf. Returns its
 * length (newline included), or -1 with *cause set when the token or the
 * attempt break the rules or buf is too small. */
int release_line_format(char *buf, size_t size, uint32_t attempt, const char *token, const char **cause);

#endif
