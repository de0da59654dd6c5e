/*
 * jobset_admission: the admission model, a JobSet under review decoded once.
 *
 * Every part of a JobSet the webhook's answer decides on is decoded here,
 * each by its one decoder, once per object of a review; the gate, the
 * validator and the barrier's patch take their decisions from the model.
 * They read the tree only where the answer addresses it (a patch's paths
 * and the lists it adds to, the marks the gate strips) or where a rule
 * looks at what no part holds (the pod specs' container and volume names,
 * startupPolicy, completionMode). Each part keeps its own verdict, and the
 * route refuses with its cause where (and only where) its answer needs
 * that part, in the order the routes give (webhook.c). A part built on
 * another fails with it: the placement request counts the replicated jobs
 * from the counted spec, so settings that do not decode fail it too (its
 * decoder then counts the JobSet itself, to say so in its own words).
 *
 *   identity    metadata.name, the barrier token, spec.suspend, muster's
 *               placement state (the annotation muster.dev/placement)
 *   placement   whose placement it is (Kueue's queue label, a pod template
 *               naming Volcano's scheduler), whether a topology annotation
 *               muster reads is there (on the JobSet, a Job template or a
 *               pod template), and the request (lib/topo/topo_jobset.h),
 *               decoded when one is there and the JobSet is not Kueue's
 *   settings    the group-scheduling settings (lib/muster/group_config.h)
 *   generation  the gang generation, annotation and labels, under the
 *               JobSet's own settings when they decode and are present; for
 *               a stored object (jobset_admission_decode_stored), under the
 *               new object's, from which an update's patch counts
 *   counted     the counted spec (lib/muster/jobset_model.h), decoded once
 *               when the settings decode and either they are present and
 *               it is asked for (JOBSET_ADMISSION_COUNTED) or the placement
 *               request is decoded, which reads its replicated jobs from it
 *
 * The model describes the object as the request sent it. The tree stays
 * the caller's and must outlive the model (names point into it); what the
 * placement gate changes is in its copy, which the barrier's patch then
 * addresses (jobset_mutate.h). No I/O, no state.
 */
#ifndef MUSTER_JOBSET_ADMISSION_H
#define MUSTER_JOBSET_ADMISSION_H

#include "group_config.h"
#include "jobset_model.h"
#include "topo_jobset.h"
#include "topo_store.h"

/* jobset_admission_decode's flags. */
#define JOBSET_ADMISSION_COUNTED 1u /* decode the counted spec too (a CREATE) */

struct cJSON;

struct jobset_admission {
	const struct cJSON *tree;

	/* identity and state (NULL when absent or not a string) */
	const char *name, *token, *placement_state;
	int suspended;

	/* placement */
	const char *owner; /* "kueue", "volcano", or NULL: muster's to place */
	int mentions; /* a topology annotation muster reads is there */
	int asks; /* 1: muster is asked to place it (a request constrains some
		   * pod); 0: not (or not decoded); -1: malformed, placement_cause */
	char *placement_cause;
	struct topo_store store;
	struct topo_jobset request; /* when asks >= 0 and it was decoded */

	/* settings */
	int config_ok;
	char *config_cause;
	struct group_config config;

	/* generation, when config_ok and config.present */
	int generation_ok;
	char *generation_cause;
	long long generation_annotation, generation_labels;

	/* counted (see above): the model, or NULL and counted_cause */
	struct jobset_model *counted;
	char *counted_cause;
};

/* Decodes `tree` (a JobSet object). Returns the model (free with
 * jobset_admission_free), or NULL when memory ran out. A part that does not
 * decode is not a failure here: its cause is in the model. */
struct jobset_admission *jobset_admission_decode(const struct cJSON *tree, unsigned flags);

/* The stored object of an UPDATE whose new object's model is `now`: as
 * jobset_admission_decode(tree, 0), its generation read under now's
 * settings when they decode and are present. */
struct jobset_admission *jobset_admission_decode_stored(const struct cJSON *tree,
							const struct jobset_admission *now);

void jobset_admission_free(struct jobset_admission *a);

#endif
