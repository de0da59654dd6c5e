/*
 * topo_record: the placement of record, as the controller writes it into the
 * ConfigMap `<jobset>-placement` (data["placement"], lib/muster/muster_api.h)
 * and as the pod webhook reads it to pin each pod.
 *
 * The text is compact JSON:
 *
 *   {"uid":"<jobset uid>","attempt":N,"replicatedJobs":{"<name>":[<job 0>,<job 1>,...]}}
 *
 * where attempt is the JobSet's restart attempt (status.restarts) the record
 * places: each attempt gets a placement of its own, and a pod is pinned only
 * by the record of its attempt (its label jobset.sigs.k8s.io/restart-attempt).
 * Records written before muster wrote the attempt lack it: such a record
 * places whichever attempt was current (the controller adopts it as the
 * current one, the pod route pins pods of any attempt by it); and
 * where each job is a list of runs [from, to, "key=value,key=value"]: the
 * completion indexes from..to (inclusive, ascending, not overlapping) get
 * that nodeSelector (the domain's labels from the top level down, or the
 * node's hostname where a domain is no label: topo_tree_selector). An empty
 * selector means "anywhere" (a pod the placement left unconstrained).
 * Consecutive ranks with the same selector are one run, so a 5,000-pod
 * JobSet in 40 racks is about 40 runs.
 *
 * Bounds: TOPO_RECORD_BYTES_MAX of text (a ConfigMap holds 1 MiB), at most
 * TOPO_GROUPS_MAX replicated jobs, indexes below 2^31, selectors of at most
 * TOPO_RECORD_SELECTOR_MAX bytes. Pure; errors are -1 and a malloc'd cause
 * naming the field (docs/errors.md).
 */
#ifndef MUSTER_TOPO_RECORD_H
#define MUSTER_TOPO_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "topo_place.h"
#include "topo_tree.h"

#define TOPO_RECORD_BYTES_MAX (900u * 1024u)
#define TOPO_RECORD_SELECTOR_MAX 1024u
#define TOPO_RECORD_ATTEMPT_MAX 2147483647u

/* The record's text for a placement of `request` on `tree`, for restart
 * attempt `attempt` of the JobSet of `uid`; *out is malloc'd
 * (NUL-terminated). */
int topo_record_encode(const struct topo_tree *tree, const struct topo_request *request,
		       const struct topo_placement *placement, const char *uid, uint32_t attempt, char **out,
		       char **cause);

struct topo_record;

/* The record `old` with some of its Jobs placed again (topo_move.h): the
 * runs of every Job of `old` but the moved ones are kept as they are; Job
 * job_map[g][i] of replicated job request->groups[g].name gets the runs of
 * instance i of group g of `placement` (of `request` on `tree`). Same uid
 * and attempt as `old`. */
int topo_record_encode_moved(const struct topo_record *old, const struct topo_tree *tree,
			     const struct topo_request *request, const struct topo_placement *placement,
			     const uint32_t *const *job_map, char **out, char **cause);

/* Parses and checks a record's text (`len` bytes, no NUL needed). */
int topo_record_parse(const char *text, size_t len, struct topo_record **out, char **cause);

void topo_record_free(struct topo_record *record);

/* The bytes a parsed record holds in memory (its arrays, its strings, its
 * own struct): what a cache of records counts against its bound. Runs keep
 * their selectors in one block, a run of the same selector as the one
 * before sharing its copy, so a record costs about 16 bytes a run more
 * than its distinct selectors. */
size_t topo_record_bytes(const struct topo_record *record);

/* The JobSet uid the record was written for. */
const char *topo_record_uid(const struct topo_record *record);

/* The restart attempt it places (0 when the record names none), and
 * whether it names one (0: a record of before attempts were written). */
uint32_t topo_record_attempt(const struct topo_record *record);
int topo_record_has_attempt(const struct topo_record *record);

/* The selector of one pod: 1 and *selector (borrowed, may be "") when the
 * record holds it, else 0.
 *
 * A Job's record places the pods it runs at once, completion indexes
 * 0..span-1 (min(parallelism, completions), as Kueue counts a PodSet). A
 * pod of a later index (completions above parallelism) starts when one of
 * those ends, and takes the slot of its index modulo span: every lookup
 * below answers for it as for that slot (a range that wraps, as for every
 * slot). */
int topo_record_find(const struct topo_record *record, const char *replicated_job, uint32_t job_index,
		     uint32_t completion, const char **selector);

/* The selector of completion indexes from..to of one Job (from <= to):
 * 1 and *selector (borrowed) when one run holds them all (runs of one
 * selector are merged, so the whole range has that selector); 2 and the
 * selector of `from` when the record holds `from` but the range spans
 * several runs (or ends past the Job's last run); 0 when the record does
 * not hold `from`. A Job pinned as a whole (the pod route's Job half)
 * needs 1 for 0..completions-1. */
int topo_record_find_range(const struct topo_record *record, const char *replicated_job, uint32_t job_index,
			   uint32_t from, uint32_t to, const char **selector);

/* The selector a Job pinned pod by pod gets on its pod template (the pin
 * route's Job half, docs/placement-live.md step 4): that of the run holding
 * the most of completion indexes from..to (the first of equal ones), when
 * the record holds all of them and every one of their runs selects the same
 * keys (so that each pod's own selector only changes values). 1 and
 * *selector (borrowed, not ""), else 0: such a Job's pods get their whole
 * selector one by one. */
int topo_record_job_template(const struct topo_record *record, const char *replicated_job, uint32_t job_index,
			     uint32_t from, uint32_t to, const char **selector);

/* Calls fn for every run, in record order; stops when fn returns non-zero
 * (and returns that). */
int topo_record_foreach(const struct topo_record *record,
			int (*fn)(void *arg, const char *replicated_job, uint32_t job_index, uint32_t from,
				  uint32_t to, const char *selector),
			void *arg);

/* 1 when a node's labels satisfy a record selector (every key=value pair;
 * kubernetes.io/hostname against the label of that name). */
int topo_record_selector_matches(const char *selector, const struct topo_node *node);

#endif
