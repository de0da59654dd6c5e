/*
 * jobset_validate: the admission rules for a group-scheduled JobSet.
 *
 * On CREATE (jobset_validate_create) a JobSet is denied when:
 *   - its groupSchedulingConfig (spec field or annotations) does not decode,
 *     or the two forms disagree (lib/muster/group_config);
 *   - timeoutAfterSeconds is outside GROUP_CONFIG_TIMEOUT_MIN..MAX;
 *   - a targetReplicatedJobs entry names no replicated job;
 *   - startupPolicyOrder is InOrder and the group holds more than one
 *     replicated job (InOrder waits for each job to be ready before creating
 *     the next; the barrier waits for all of them: they would wait forever);
 *   - a container is named group-scheduling-init (reserved; an init
 *     container of that name is accepted only in a targeted replicated job,
 *     where it is the barrier muster injected), or a targeted pod template
 *     has a volume group-scheduling that is not the JobSet's ConfigMap;
 *   - group scheduling is on and the JobSet has no metadata.name (a
 *     generated name is not known when the ConfigMap volume is injected), or
 *     a name so long that `<name>-group-scheduling` is not a valid object
 *     name;
 *   - the annotation muster.dev/barrier-token is not a token the barrier
 *     accepts;
 *   - a targeted replicated job has no pod template.
 * On UPDATE (jobset_validate_update) it is denied when the group-scheduling
 * settings or the token differ from the stored object's: the barriers
 * already running were started with them.
 *
 * Messages name the field and say what to do; the apiserver shows them to
 * the user as `admission webhook ... denied the request: <message>`.
 *
 * No I/O, no state. Each function returns 0 (allowed) or -1 (denied) with
 * *message a malloc'd sentence the caller frees (NULL only when that
 * allocation failed).
 */
#ifndef MUSTER_JOBSET_VALIDATE_H
#define MUSTER_JOBSET_VALIDATE_H

struct jobset_admission;

/* `a` is the JobSet's admission model (jobset_admission.h), decoded with
 * JOBSET_ADMISSION_COUNTED; a JobSet without settings is checked for
 * reserved names and its token only. */
int jobset_validate_create(const struct jobset_admission *a, char **message);

/* `old` is the stored object's model, `a` the new one's. */
int jobset_validate_update(const struct jobset_admission *old, const struct jobset_admission *a,
			   char **message);

#endif
