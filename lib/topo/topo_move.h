/*
 * topo_move: places some Jobs of a placed JobSet again, alone, when the pods
 * of those Jobs that are not bound yet lost their room (a node deleted,
 * tainted, cordoned or filled), and every other Job keeps its domain.
 *
 * On Kubernetes 1.20 a pod's nodeSelector is fixed when it is made, so the
 * controller then deletes each moved Job for JobSet to make again; its new
 * pods are pinned by the new record (docs/placement-live.md).
 *
 * A Job moves alone only when nothing ties it to the others: not when the
 * JobSet's own constraint holds its Jobs in one domain (unless the Job's
 * replicated job is outside it), not a Kueue PodSet of several replicas
 * with a level for the whole PodSet or slices across its Jobs (they are
 * placed as one; a PodSet of slices that each hold within one Job, and no
 * PodSet-wide level, moves Job by Job), not replicated jobs co-placed by
 * podset-group-name, and not when every Job of the JobSet would move (that
 * is the whole JobSet placed again). Each moved Job gets its own constraint
 * again (required, preferred, slices, exclusive-topology); the domains of an
 * exclusive Job that stays are closed to it, and an exclusive moved Job
 * takes no domain that holds a staying Job's pods.
 *
 * The tree's cluster must already count the room every other placed JobSet
 * holds and this JobSet's staying Jobs' pods (bound or promised); the moved
 * Jobs' pods that are not bound must not be counted. Pure: no I/O.
 */
#ifndef MUSTER_TOPO_MOVE_H
#define MUSTER_TOPO_MOVE_H

#include <stddef.h>
#include <stdint.h>

#include "topo_jobset.h"
#include "topo_record.h"
#include "topo_tree.h"

struct topo_move_job {
	const char *replicated_job;
	uint32_t job_index;
};

enum {
	TOPO_MOVE_PLACED = 0, /* *record_out is the new record */
	TOPO_MOVE_TIED =
		1, /* the Jobs cannot move alone (*cause says why): the whole JobSet is placed again */
	TOPO_MOVE_NO_ROOM = 2, /* no room for them now (*cause is the core's refusal) */
};

/* Places `jobs` (count > 0, no Job twice) of `jobset`, whose placement of
 * record is `record`, again on `tree`. Returns TOPO_MOVE_PLACED with
 * *record_out (malloc'd) and `where` ("workers/1: block-a/rack-2"), a
 * TOPO_MOVE_* refusal with *cause (malloc'd), or -1 with *cause on bad
 * input or no memory. */
int topo_move(const struct topo_jobset *jobset, const struct topo_tree *tree,
	      const struct topo_record *record, const struct topo_move_job *jobs, size_t count,
	      char **record_out, char *where, size_t where_size, char **cause);

#endif
