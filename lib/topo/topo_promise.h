/*
 * topo_promise: the room a placed JobSet's record promises to its pods that
 * are not bound yet, and whether that room is still there.
 *
 * The controller places JobSets one after another on a working copy of the
 * cluster; before it does, every placed JobSet's pods that the scheduler has
 * not bound yet take their room on the nodes of their recorded domain (first
 * fit, in node order), so that two JobSets never get the same room. A pod
 * for which no node of its domain has room any more (its nodes deleted, not
 * Ready, cordoned, tainted against it, or filled by other pods since the
 * decision) is "stranded": the scheduler cannot bind it where it is pinned,
 * and the controller places its JobSet again after a grace period (at once
 * when the domain has no node at all). Its room is still taken on the
 * domain's first node, so the promise keeps counting meanwhile.
 *
 * Pure: the caller gives the nodes (mutable: their `used` grows), the
 * record, the JobSet's request (each replicated job's pod shape) and which
 * pods are bound.
 */
#ifndef MUSTER_TOPO_PROMISE_H
#define MUSTER_TOPO_PROMISE_H

#include <stddef.h>
#include <stdint.h>

#include "topo_jobset.h"
#include "topo_record.h"
#include "topo_tree.h"

struct topo_promise {
	uint64_t reserved; /* pods not bound whose room was taken */
	uint64_t stranded; /* of those, pods no node of their domain has room for */
	int gone; /* a stranded pod's domain has no node at all (deleted) */
	char domain[256]; /* the first stranded pod's domain (its record selector) */
	char why[256]; /* that domain's nodes, e.g. "2 nodes: 1 is not Ready, 1 full" */
};

/* 1 when the pod (replicated job, job index, completion index) is bound. */
typedef int (*topo_promise_bound_fn)(void *arg, const char *replicated_job, uint32_t job,
				     uint32_t completion);

/* Takes the room of `record`'s pods that are not bound on `nodes` (the
 * cluster's `cluster->node_count` nodes, in name order, writable copies of
 * cluster->nodes) and fills *out. Pods of a replicated job the request does
 * not name, and pods left unconstrained (empty selector), are skipped. */
void topo_promise_take(const struct topo_cluster *cluster, struct topo_node *nodes,
		       const struct topo_jobset *jobset, const struct topo_record *record,
		       topo_promise_bound_fn bound, void *arg, struct topo_promise *out);

/* Called for each stranded pod (replicated job, job index, completion index). */
typedef void (*topo_promise_stranded_fn)(void *arg, const char *replicated_job, uint32_t job,
					 uint32_t completion);

/* topo_promise_take, naming each stranded pod to `stranded` (may be NULL). */
void topo_promise_take_each(const struct topo_cluster *cluster, struct topo_node *nodes,
			    const struct topo_jobset *jobset, const struct topo_record *record,
			    topo_promise_bound_fn bound, void *arg, topo_promise_stranded_fn stranded,
			    void *stranded_arg, struct topo_promise *out);

#endif
