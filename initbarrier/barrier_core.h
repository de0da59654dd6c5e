/*
 * barrier_core: every decision the barrier makes, with no I/O.
 *
 * The barrier belongs to one restart attempt N of its JobSet. It may pass only
 * when a release for an attempt >= N arrives, by either path:
 *   - the volume: the ConfigMap key `started` holds the decimal attempt that
 *     the controller released;
 *   - a push: one line on a TCP connection,
 *         MUSTER1 RELEASE <attempt> <token>\n
 *     carrying the per-JobSet token.
 * This module parses both inputs and judges them; it does not read files,
 * sockets or clocks, so it is fully unit-tested and fuzzed. It also owns the
 * table of exit codes, which --help and the docs print.
 */
#ifndef MUSTER_BARRIER_CORE_H
#define MUSTER_BARRIER_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "release_line.h"

/* Exit codes of muster-barrier. Signals follow the shell's 128+signal rule so
 * that kubelet and `kubectl describe` read them the usual way. */
enum barrier_exit {
	BARRIER_EXIT_RELEASED = 0,
	BARRIER_EXIT_USAGE = 2,
	BARRIER_EXIT_TIMEOUT = 3,
	BARRIER_EXIT_FAILURE = 4,
	BARRIER_EXIT_SIGINT = 130,
	BARRIER_EXIT_SIGTERM = 143,
};

struct barrier_exit_info {
	int code;
	const char *name;
	const char *meaning;
};

/* The exit codes with a name and a sentence each, ended by a NULL name. */
extern const struct barrier_exit_info barrier_exit_table[];

/* The attempt is JobSet status.restarts, an int32 upstream. */
#define BARRIER_ATTEMPT_MAX RELEASE_ATTEMPT_MAX

/* Longest content of the `started` key that is read at all. */
#define BARRIER_KEY_MAX 64

/* Longest push line, newline included; a longer one is refused unread.
 * The wire format and its limits live in lib/release_line.h, shared with the
 * controller that sends the line. */
#define BARRIER_PUSH_MAX RELEASE_LINE_MAX

/* Bounds on the shared token: printable ASCII without spaces. */
#define BARRIER_TOKEN_MIN RELEASE_TOKEN_MIN
#define BARRIER_TOKEN_MAX RELEASE_TOKEN_MAX

/* Parses a decimal attempt: ASCII digits (at most 10, value at most
 * BARRIER_ATTEMPT_MAX), optionally surrounded by ASCII white space (a
 * ConfigMap value written by hand often ends in a newline). No sign, no
 * other bytes. Returns 0 and sets *attempt, or -1. */
int barrier_parse_attempt(const char *text, size_t len, uint32_t *attempt);

/* What the volume says about this barrier. */
enum barrier_volume_verdict {
	BARRIER_VOLUME_EMPTY, /* no `started` key (yet) */
	BARRIER_VOLUME_INVALID, /* the key holds no decimal attempt */
	BARRIER_VOLUME_STALE, /* released for an earlier attempt only */
	BARRIER_VOLUME_RELEASED, /* released for this attempt or a later one */
};

/* Judges the `started` key: `present` is 0 when the key does not exist
 * (content is then ignored). Sets *released to the attempt found when the
 * verdict is STALE or RELEASED. */
enum barrier_volume_verdict barrier_judge_volume(int present, const char *content, size_t len,
						 uint32_t own_attempt, uint32_t *released);

/* Name of a volume verdict for the log ("empty", "invalid", "stale", "released"). */
const char *barrier_volume_verdict_name(enum barrier_volume_verdict verdict);

/* A parsed push line. `token` points into the parsed buffer. */
struct barrier_push_msg {
	uint32_t attempt;
	const char *token;
	size_t token_len;
};

/* The outcome of one push, which is also the reply word sent back. */
enum barrier_push_verdict {
	BARRIER_PUSH_RELEASE, /* valid token, attempt >= own: pass */
	BARRIER_PUSH_MALFORMED, /* not a release line */
	BARRIER_PUSH_TOO_LONG, /* no newline within BARRIER_PUSH_MAX bytes */
	BARRIER_PUSH_BAD_TOKEN, /* token differs */
	BARRIER_PUSH_STALE, /* valid token, attempt < own */
	BARRIER_PUSH_TIMEOUT, /* the client did not finish its line in time */
};

/* Reply line for a verdict, newline included: "OK\n", "ERR bad-token\n", ... */
const char *barrier_push_reply(enum barrier_push_verdict verdict);

/* Short name of a verdict for the log ("release", "bad-token", ...). */
const char *barrier_push_verdict_name(enum barrier_push_verdict verdict);

/* Parses one push line (`line` without its newline, `len` bytes, which may
 * hold any byte including NUL). Returns 0 and fills *msg, or -1 and sets
 * *cause to a static sentence saying what is wrong. */
int barrier_push_parse(const char *line, size_t len, struct barrier_push_msg *msg, const char **cause);

/* Judges a parsed push against the barrier's token and attempt. The token is
 * compared in time that depends only on the lengths. */
enum barrier_push_verdict barrier_judge_push(const struct barrier_push_msg *msg, const char *token,
					     size_t token_len, uint32_t own_attempt);

/* Checks a configured token: BARRIER_TOKEN_MIN..BARRIER_TOKEN_MAX bytes of
 * printable ASCII without spaces. Returns 0, or -1 with *cause set. */
int barrier_token_check(const char *token, size_t len, const char **cause);

/* Compares two byte strings in time that does not depend on where they
 * differ. Returns 1 when equal. */
int barrier_token_equal(const char *a, size_t a_len, const char *b, size_t b_len);

#endif
