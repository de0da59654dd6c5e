/*
 * muster_api: names of muster's contract with the cluster that more than one
 * binary reads (the webhook writes them, the controller and the barrier read
 * them). Names of the release of record (the ConfigMap keys) and the push
 * line live in release_line.h, shared with the barrier.
 *
 * Not all of the contract is here yet: moving every label, annotation and
 * object name into this one header is the restructure issue's work.
 */
#ifndef MUSTER_API_H
#define MUSTER_API_H

/* Label on the targeted pod templates of a group-scheduled JobSet: muster's
 * count of the JobSet's resumes (suspend true -> false). The webhook raises
 * it on every resume, JobSet copies it to the child Jobs' pod templates when
 * it resumes them, and the barrier (through the downward API) and the
 * controller compare it: a release of an earlier generation never lets a
 * pod of a later one through. Absent means 0. */
#define MUSTER_LABEL_GANG_GENERATION "muster.dev/gang-generation"
/* The same name as a JSON Pointer token ('/' escaped as "~1"). */
#define MUSTER_LABEL_GANG_GENERATION_POINTER "muster.dev~1gang-generation"

/* Upstream JobSet's label on every child Job and pod: the JobSet's uid. */
#define JOBSET_LABEL_UID "jobset.sigs.k8s.io/jobset-uid"

#endif
