/*
 * barrier_core: every decision the barrier makes, with no I/O.
 *
 * The barrier belongs to one JobSet (its uid), one generation G (muster's
 * count of the JobSet's resumes) and one restart attempt N. It may pass only
 * when a release of that JobSet for a generation >= G and an attempt >= N
 * arrives, by either path:
 *   - the volume: the ConfigMap keys `started` (the decimal attempt that the
 *     controller released), `jobset-uid` (whose release it is) and
 *     `generation` (absent means 0); a release that names another JobSet, or
 *     none while the barrier knows its own, is FOREIGN and never counts;
 *   - a push: one line on a TCP connection,
 *         MUSTER1 RELEASE <attempt> <token>[ <generation>]\n
 *     carrying the per-JobSet token (which names the JobSet).
 * This module parses both inputs and judges them; it does not read files,
 * sockets or clocks, so it is fully unit-tested and fuzzed. It also owns the
 * table of exit codes, which --help and the docs print.
 */
#ifndef MUSTER_BARRIER_CORE_H
#define MUSTER_BARRIER_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "muster_api.h"
#include "release_line.h"

struct barrier_exit_info {
	int code;
	const char *name;
	const char *meaning;
};

/* The exit codes with a name and a sentence each, ended by a NULL name. */
extern const struct barrier_exit_info barrier_exit_table[];

/* The attempt is JobSet status.restarts, an int32 upstream. */
#define BARRIER_ATTEMPT_MAX RELEASE_ATTEMPT_MAX

/* Longest content of a key of the release that is read at all. */
#define BARRIER_KEY_MAX 80

/* Who this barrier waits for. */
struct barrier_identity {
	uint32_t attempt; /* the label jobset.sigs.k8s.io/restart-attempt */
	uint32_t generation; /* the label muster.dev/gang-generation, 0 when absent */
	const char *jobset_uid; /* the label jobset.sigs.k8s.io/jobset-uid; "" or NULL: not checked */
};

/* The keys of the release as read from the volume, from one projection.
 * `*_present` is 0 when the key does not exist (its content is then ignored). */
struct barrier_volume_keys {
	int started_present;
	const char *started;
	size_t started_len;
	int uid_present;
	const char *uid;
	size_t uid_len;
	int generation_present;
	const char *generation;
	size_t generation_len;
};

/* What a release says: set for the verdicts STALE and RELEASED. */
struct barrier_release {
	uint32_t attempt;
	uint32_t generation;
};

/* Longest push line, newline included; a longer one is refused unread.
 * The wire format and its limits live in lib/muster/release_line.h, shared with the
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
	BARRIER_VOLUME_INVALID, /* `started` or `generation` holds no decimal number */
	BARRIER_VOLUME_FOREIGN, /* the release names another JobSet, or none */
	BARRIER_VOLUME_STALE, /* released for an earlier generation or attempt only */
	BARRIER_VOLUME_RELEASED, /* released for this generation and attempt or later ones */
};

/* Judges the release keys against the barrier's identity, in this order:
 * no `started` is EMPTY; a `started` or `generation` that is not a decimal
 * number is INVALID; when own->jobset_uid is set, a `jobset-uid` that is
 * absent or differs is FOREIGN; a generation or an attempt below the
 * barrier's is STALE; else RELEASED. Sets *seen on STALE and RELEASED. */
enum barrier_volume_verdict barrier_judge_volume(const struct barrier_volume_keys *keys,
						 const struct barrier_identity *own,
						 struct barrier_release *seen);

/* Name of a volume verdict for the log ("empty", "invalid", "foreign", "stale", "released"). */
const char *barrier_volume_verdict_name(enum barrier_volume_verdict verdict);

/* A parsed push line. `token` points into the parsed buffer. */
struct barrier_push_msg {
	uint32_t attempt;
	uint32_t generation; /* 0 when the line has no generation field */
	const char *token;
	size_t token_len;
};

/* The outcome of one push, which is also the reply word sent back. */
enum barrier_push_verdict {
	BARRIER_PUSH_RELEASE, /* valid token, attempt >= own: pass */
	BARRIER_PUSH_MALFORMED, /* not a release line */
	BARRIER_PUSH_TOO_LONG, /* no newline within BARRIER_PUSH_MAX bytes */
	BARRIER_PUSH_BAD_TOKEN, /* token differs */
	BARRIER_PUSH_STALE, /* valid token, generation or attempt below own */
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

/* Judges a parsed push against the barrier's token, generation and attempt.
 * The token is compared in time that depends only on the lengths. */
enum barrier_push_verdict barrier_judge_push(const struct barrier_push_msg *msg, const char *token,
					     size_t token_len, const struct barrier_identity *own);

/* Checks a configured token: BARRIER_TOKEN_MIN..BARRIER_TOKEN_MAX bytes of
 * printable ASCII without spaces. Returns 0, or -1 with *cause set. */
int barrier_token_check(const char *token, size_t len, const char **cause);

/* Compares two byte strings in time that does not depend on where they
 * differ. Returns 1 when equal. */
int barrier_token_equal(const char *a, size_t a_len, const char *b, size_t b_len);

#endif
