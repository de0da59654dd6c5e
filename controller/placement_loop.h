/*
 * placement_loop: the controller's placement in the cluster
 * (docs/placement-live.md). Beside the gang loop, it places the JobSets the
 * webhook gated (annotation muster.dev/placement: waiting), writes each
 * placement of record (ConfigMap `<jobset>-placement`, owned by the JobSet,
 * lib/topo/topo_record.h) and resumes the JobSet; the webhook's pod route
 * then pins every pod to its domain and the stock kube-scheduler binds it.
 *
 * What it keeps, from three watches (each its own thread and client; the
 * Node and pod watches start only once a JobSet asks for a placement, so a
 * cluster that uses the gang start alone does not pay for them):
 * every Node and the requests of every bound pod (lib/topo/topo_cache.h:
 * free = allocatable - requests, as the scheduler counts), which pods of
 * placed JobSets are bound, and the JobSets carrying the annotation (their
 * placement request decoded, lib/topo/topo_jobset.h).
 *
 * One pass (level-triggered: a change of Nodes, pods or JobSets marks it
 * due; passes are coalesced, at most one per PLACEMENT_COALESCE_MS, and one
 * every PLACEMENT_RETRY_S at least while a JobSet waits, counting one whose
 * record or resume failed or that a user's ConfigMap blocks; pod events alone,
 * while no JobSet waits, bring one every PLACEMENT_POD_PASS_S at most):
 *   1. the topology: --placement-levels, the Kueue Topology named by
 *      --placement-topology, HyperNodes with --placement-hypernodes, or by
 *      default the cluster's only Kueue Topology, else its HyperNodes;
 *   2. a snapshot of the cluster with the room promised to placed JobSets
 *      whose pods are not bound yet taken off (each such pod's request on a
 *      node of its recorded domain, first fit);
 *   3. the waiting JobSets in creation order (oldest first; one that does not
 *      fit does not hold back a later one that does), each placement taken
 *      off the snapshot before the next, so two JobSets never get the same
 *      room;
 *   4. outside the lock: the record written (create; a record of this
 *      JobSet already there is kept, one of an earlier JobSet of the name is
 *      replaced), then the JobSet resumed with the annotation "placed" in
 *      one patch carrying its uid; a JobSet that does not fit keeps waiting
 *      with the core's sentence in the annotation muster.dev/placement-reason
 *      and a Warning Event PlacementWaiting (both only when the reason
 *      changes).
 * A record is read back once for each JobSet seen placed or waiting (a
 * restart loses nothing: the records are the state).
 *
 * Room lost before the pods of a domain run (topo_promise.h): when a placed
 * JobSet's pods not bound yet have no room left in their domain, because
 * its nodes went NotReady, were cordoned or tainted against them, or other
 * pods filled them, for --placement-replace-after seconds (default
 * PLACEMENT_REPLACE_AFTER_S, as Kueue's NodeFailureDelay; checked every
 * second meanwhile, every PLACEMENT_RETRY_S while any pod of a placed
 * JobSet is not bound), or at once when the domain has no node left
 * (deleted), the JobSet is suspended again (annotation waiting, the reason
 * saying which domain and why, a Warning Event PlacementLost), its record
 * deleted, and it is placed afresh once the pod route's cached copies of
 * the old record have expired (RECORD_CACHE_WAIT_S). Pods already bound
 * keep running until the suspend stops them. After every pod is bound, a
 * lost node is the JobSet's failure policy's to handle.
 *
 * Restart attempts: a record places one attempt (status.restarts). When a
 * placed JobSet restarts, its record is dropped and it is suspended the
 * same way (a Normal Event PlacementRenewed), whatever the topology's
 * state, and the new attempt is placed afresh at once: the pod route pins a
 * pod only by the record of its own attempt, so no hold is needed. A record
 * without an attempt (written before they were) is adopted as the current
 * attempt's. A placed JobSet found without its record when the records are
 * read (at the start: this controller stopped between the drop and the
 * suspend) while some of its pods are not bound (they would be refused) is
 * placed again likewise; one whose pods all run is left alone. Records are
 * not watched: one deleted by hand meanwhile is seen at the next start.
 *
 * Lifecycle: placement_loop_new succeeds fully or leaves nothing;
 * placement_loop_run blocks until *stop is set or a watch fails for good;
 * placement_loop_free accepts NULL.
 */
#ifndef MUSTER_PLACEMENT_LOOP_H
#define MUSTER_PLACEMENT_LOOP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "kube_client.h"
#include "kube_config.h"

#define PLACEMENT_COALESCE_MS 200
#define PLACEMENT_RETRY_S 10
/* At most one pass this often for pod events alone while no JobSet waits. */
#define PLACEMENT_POD_PASS_S 1.0
#define PLACEMENT_REPLACE_AFTER_S 30 /* Kueue's NodeFailureDelay */
/* The resources tracked when --placement-resources is not given. */
#define PLACEMENT_RESOURCES_DEFAULT "cpu,memory,pods,nvidia.com/gpu,amd.com/gpu,google.com/tpu"

struct placement_options {
	const char *namespace; /* NULL or "": JobSets of every namespace */
	const char *levels; /* "L1,L2,..." node labels, outermost first; or NULL */
	const char *topology; /* a Kueue Topology's name; or NULL */
	int hypernodes; /* the cluster's HyperNodes */
	const char *resources; /* comma separated, NULL: PLACEMENT_RESOURCES_DEFAULT */
	/* seconds a placed JobSet's pods not bound may have no room in their
	 * domain (nodes not Ready, cordoned, tainted, full) before it is placed
	 * again; a domain with no node left is placed again at once */
	unsigned long replace_after_s;
	/* Kueue's balanced placement for a JobSet that does not say
	 * (MUSTER_ANNOTATION_TOPOLOGY_BALANCED absent) */
	int balanced;
	/* how long a JobSet placed again waits before its new placement, so
	 * that the pod route's cached copies of the old record expire; 0:
	 * RECORD_CACHE_WAIT_S (tests shorten it) */
	unsigned long hold_ms;
	const struct kube_transport *transport; /* NULL: libcurl */
	void *transport_ctx;
	/* The process's JobSet and pod watches (controller_group_watches),
	 * which the loop subscribes to; NULL: it runs its own. */
	struct watch_hub *jobset_watch, *pod_watch;
};

struct placement_loop;
struct watch_hub;

int placement_loop_new(const struct kube_config *cfg, const struct placement_options *options,
		       struct placement_loop **out, char **cause);

int placement_loop_run(struct placement_loop *loop, atomic_int *stop, char **cause);

void placement_loop_free(struct placement_loop *loop);

/* 1 when the watches started have listed once, else 0 and a sentence. */
int placement_loop_ready(struct placement_loop *loop, char *reason, size_t size);

/* Counters and gauges for /metrics. Any thread. */
#define PLACEMENT_DOMAINS_SHOWN 64
struct placement_stats {
	uint64_t placements, refusals, record_failures, passes;
	uint64_t relocations; /* placed JobSets placed again (pending pods lost their room, or the record) */
	uint64_t restarts; /* placed JobSets placed afresh for a restart attempt */
	uint64_t moves; /* Jobs placed again alone (their pods lost their room; the others stayed) */
	uint64_t jobs_retired; /* moved Jobs deleted for JobSet to make again */
	size_t waiting; /* JobSets waiting for a placement */
	uint64_t list_pages_shrunk; /* its LIST pages asked again, half as large (kube_list) */
	double last_decision_s; /* the last pass's decision time */
	size_t domain_count; /* top-level domains below, at most PLACEMENT_DOMAINS_SHOWN */
	char domains[PLACEMENT_DOMAINS_SHOWN][64];
	double free_cpu[PLACEMENT_DOMAINS_SHOWN]; /* cores free (requests) */
	double free_nodes[PLACEMENT_DOMAINS_SHOWN]; /* schedulable nodes */
};

void placement_loop_stats(struct placement_loop *loop, struct placement_stats *out);

/* Seconds from the event that made a JobSet placeable (the pass's start)
 * to its record written and the JobSet resumed. */
struct placement_observer {
	void (*placed)(void *arg, double seconds);
	void *arg;
};

void placement_loop_observe(struct placement_loop *loop, const struct placement_observer *observer);

#endif
