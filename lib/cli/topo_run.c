/*
 * topo_run: the placement flow of the command-line tools. See topo_run.h.
 * The JobSet is read before the nodes so that the resources it requests
 * are among those tracked (topo_input.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "topo_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "flag.h"
#include "kjson.h"
#include "kube_error.h"
#include "kube_path.h"
#include "muster_api.h"
#include "topo_input.h"
#include "topo_live.h"
#include "topo_place.h"
#include "topo_record.h"
#include "topo_tree.h"
#include "topo_view.h"

/* The API paths read from a live cluster. */
#define PATH_NODES "/api/v1/nodes"
#define PATH_PODS "/api/v1/pods"
/* Bound and not ended: the pods whose requests hold node capacity. */
#define PODS_HOLDING "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
#define PATH_HYPERNODES "/apis/topology.volcano.sh/v1alpha1/hypernodes"

static char *read_file(const char *name, size_t *size)
{
	FILE *f = fopen(name, "rb");
	char *buf = NULL;
	size_t used = 0, cap = 0;

	if (!f)
		return NULL;
	for (;;) {
		size_t n;

		if (used == cap) {
			char *b;

			if (cap >= TOPO_INPUT_BYTES_MAX)
				goto fail;
			cap = cap ? cap * 2 : 65536;
			b = realloc(buf, cap + 1);
			if (!b)
				goto fail;
			buf = b;
		}
		n = fread(buf + used, 1, cap - used, f);
		used += n;
		if (n == 0)
			break;
	}
	if (ferror(f))
		goto fail;
	fclose(f);
	buf[used] = '\0';
	*size = used;
	return buf;
fail:
	fclose(f);
	free(buf);
	return NULL;
}

static int load(const struct topo_run_options *o, struct topo_input *in, const char *file,
		int (*decode)(struct topo_input *, const char *, size_t, char **))
{
	size_t size = 0;
	char *data = read_file(file, &size), *cause = NULL;
	int rc;

	if (!data) {
		fprintf(stderr, "%s: cannot read %s\n", o->program, file);
		return -1;
	}
	rc = decode(in, data, size, &cause);
	free(data);
	if (rc)
		fprintf(stderr, "%s: %s: %s\n", o->program, file, cause ? cause : "out of memory");
	free(cause);
	return rc;
}

/* Reads one input from the cluster: a LIST (field selector or NULL) or, when
 * `get`, one object; then its tree decoder. */
static int load_live(const struct topo_run_options *o, struct topo_live *live, struct topo_input *in,
		     const char *path, const char *field, int get,
		     int (*decode)(struct topo_input *, struct cJSON *, char **))
{
	cJSON *tree = NULL;
	char *cause = NULL;
	int rc = get ? topo_live_get(live, path, &tree, &cause)
		     : topo_live_list(live, path, field, &tree, &cause);

	if (rc == 0)
		rc = decode(in, tree, &cause);
	if (rc)
		fprintf(stderr, "%s: %s: %s\n", o->program, path, cause ? cause : "out of memory");
	free(cause);
	return rc ? -1 : 0;
}

/* A Kueue Topology of the cluster as levels: its node labels, outermost first. */
static int load_topology(const struct topo_run_options *o, struct topo_live *live, struct topo_input *in,
			 const char **levels, size_t *count)
{
	struct topo_levels found;
	char path[512], *cause = NULL;
	cJSON *tree = NULL;
	int rc;

	rc = kube_path(path, sizeof(path), &KUBE_KUEUE_TOPOLOGIES, NULL, o->topology, &cause);
	if (!rc)
		rc = topo_live_get(live, path, &tree, &cause);
	if (rc == MUSTER_ENOTFOUND) { /* a cluster serving only Kueue's older version */
		char *older = NULL;

		kube_path(path, sizeof(path), &KUBE_KUEUE_TOPOLOGIES_V1BETA1, NULL, o->topology, NULL);
		if (topo_live_get(live, path, &tree, &older) == 0) {
			free(cause);
			cause = NULL;
			rc = 0;
		}
		free(older);
	}
	if (rc == 0)
		rc = topo_kueue_topology_decode(&in->store, tree, "topology", &found, &cause);
	cJSON_Delete(tree);
	if (rc) {
		fprintf(stderr, "%s: %s: %s\n", o->program, path, cause ? cause : "out of memory");
		free(cause);
		return -1;
	}
	for (size_t i = 0; i < found.count; i++)
		levels[i] = found.labels[i];
	*count = found.count;
	return 0;
}

/* ---- the controller's view (explain, and the domains records hold) ---- */

static const char *annotation_of(const cJSON *object, const char *key)
{
	const cJSON *v = kjson_member(kjson_member(kjson_member(object, "metadata"), "annotations"), key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int add_run(void *arg, const char *rj, uint32_t job, uint32_t from, uint32_t to, const char *selector)
{
	cJSON *one = cJSON_CreateObject();
	int ok = one && cJSON_AddItemToArray(arg, one);

	ok = ok && cJSON_AddStringToObject(one, "replicatedJob", rj);
	ok = ok && cJSON_AddNumberToObject(one, "jobIndex", job);
	ok = ok && cJSON_AddNumberToObject(one, "from", from);
	ok = ok && cJSON_AddNumberToObject(one, "to", to);
	ok = ok && cJSON_AddStringToObject(one, "nodeSelector", selector);
	return ok ? 0 : -1;
}

static int add_text(cJSON *object, const char *key, const char *value)
{
	return value ? cJSON_AddStringToObject(object, key, value) != NULL
		     : cJSON_AddNullToObject(object, key) != NULL;
}

/* What muster-controller says of the JobSet, as JSON: "jobset", "readError"
 * (the JobSet could not be read), "placement" (the annotation, null when
 * not gated), "waitingReason", "record" (the placement of record: its
 * ConfigMap, the uid and attempt it places, its runs; null when none),
 * "recordState" ("found", "none" or "unreadable": a ConfigMap holding no
 * record muster can read), "recordProblem" (why there is none). NULL when memory ran out. */
static cJSON *explain_json(struct topo_live *live, const char *ns, const char *name)
{
	char path[700], record_name[300], configmap_ref[600], *cause = NULL;
	cJSON *out = cJSON_CreateObject(), *jobset = NULL, *configmap = NULL, *record_json, *runs;
	const cJSON *text;
	struct topo_record *record = NULL;
	int ok = out != NULL;

	snprintf(configmap_ref, sizeof(configmap_ref), "%s/%s%s", ns, name, MUSTER_PLACEMENT_SUFFIX);
	snprintf(path, sizeof(path), "%s/%s", ns, name);
	ok = ok && cJSON_AddStringToObject(out, "jobset", path);
	if (ok && (kube_path(path, sizeof(path), &KUBE_JOBSETS, ns, name, &cause) ||
		   topo_live_get(live, path, &jobset, &cause) != 0)) {
		ok = add_text(out, "readError", cause ? cause : "cannot be read");
		goto out;
	}
	ok = ok && add_text(out, "placement", annotation_of(jobset, MUSTER_ANNOTATION_PLACEMENT));
	ok = ok && add_text(out, "waitingReason", annotation_of(jobset, MUSTER_ANNOTATION_PLACEMENT_REASON));
	snprintf(record_name, sizeof(record_name), "%s" MUSTER_PLACEMENT_SUFFIX, name);
	free(cause);
	cause = NULL;
	if (kube_path(path, sizeof(path), &KUBE_CONFIGMAPS, ns, record_name, &cause) ||
	    topo_live_get(live, path, &configmap, &cause) != 0) {
		char problem[900];

		snprintf(problem, sizeof(problem), "ConfigMap %s: %s", configmap_ref,
			 cause ? cause : "cannot be read");
		ok = ok && cJSON_AddNullToObject(out, "record") && add_text(out, "recordState", "none") &&
		     add_text(out, "recordProblem", problem);
	} else if (!cJSON_IsString(
			   text = kjson_member(kjson_member(configmap, "data"), MUSTER_PLACEMENT_KEY)) ||
		   topo_record_parse(text->valuestring, strlen(text->valuestring), &record, NULL) != 0) {
		char problem[900];

		snprintf(problem, sizeof(problem), "ConfigMap %s holds no readable record", configmap_ref);
		ok = ok && cJSON_AddNullToObject(out, "record") &&
		     add_text(out, "recordState", "unreadable") && add_text(out, "recordProblem", problem);
	} else {
		ok = ok && add_text(out, "recordState", "found");
		ok = ok && (record_json = cJSON_AddObjectToObject(out, "record")) != NULL;
		ok = ok && cJSON_AddStringToObject(record_json, "configMap", configmap_ref);
		ok = ok && cJSON_AddStringToObject(record_json, "uid", topo_record_uid(record));
		ok = ok && cJSON_AddNumberToObject(record_json, "attempt", topo_record_attempt(record));
		ok = ok && (runs = cJSON_AddArrayToObject(record_json, "runs")) != NULL;
		ok = ok && topo_record_foreach(record, add_run, runs) == 0;
	}
out:
	topo_record_free(record);
	cJSON_Delete(configmap);
	cJSON_Delete(jobset);
	free(cause);
	if (!ok) {
		cJSON_Delete(out);
		return NULL;
	}
	return out;
}

static const char *json_text(const cJSON *object, const char *key)
{
	const cJSON *v = kjson_member(object, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The explanation as text: the JobSet's placement state, why it waits, its
 * placement of record. */
static void explain_print(const struct topo_run_options *o, const cJSON *e)
{
	const char *jobset = json_text(e, "jobset"), *state = json_text(e, "placement");
	const char *reason = json_text(e, "waitingReason");
	const cJSON *record = kjson_member(e, "record"), *run;

	if (json_text(e, "readError")) {
		printf("JobSet %s: %s\n", jobset, json_text(e, "readError"));
		return;
	}
	if (!state)
		printf("JobSet %s: not gated by muster (no %s annotation: no topology request, Kueue's or Volcano's, "
		       "or created before muster)\n",
		       jobset, MUSTER_ANNOTATION_PLACEMENT);
	else
		printf("JobSet %s: %s=%s%s%s\n", jobset, MUSTER_ANNOTATION_PLACEMENT, state,
		       reason ? "; waiting because: " : "", reason ? reason : "");
	if (!cJSON_IsObject(record)) {
		const char *problem = json_text(e, "recordProblem");

		if (strcmp(json_text(e, "recordState") ? json_text(e, "recordState") : "", "unreadable") == 0)
			printf("placement of record: %s\n", problem);
		else
			printf("placement of record: none (%s)\n", problem ? problem : "");
	} else {
		printf("placement of record (ConfigMap %s, JobSet uid %s):\n", json_text(record, "configMap"),
		       json_text(record, "uid"));
		cJSON_ArrayForEach(run, kjson_member(record, "runs"))
		{
			const char *selector = json_text(run, "nodeSelector");

			printf("  %s job %d, completion indexes %d-%d: %s\n", json_text(run, "replicatedJob"),
			       kjson_member(run, "jobIndex")->valueint, kjson_member(run, "from")->valueint,
			       kjson_member(run, "to")->valueint,
			       selector && *selector ? selector : "(anywhere)");
		}
	}
	printf("what %s decides on the free room now (the room placed JobSets hold until\n"
	       "their pods are bound is not taken off here; see \"held by\" below):\n",
	       o->program);
}

struct holding {
	char selector[256], jobset[320];
	unsigned long pods;
};

struct holdings {
	struct holding *items;
	size_t count, cap;
	const char *jobset;
};

static int hold_run(void *arg, const char *rj, uint32_t job, uint32_t from, uint32_t to, const char *selector)
{
	struct holdings *h = arg;

	(void)rj;
	(void)job;
	for (size_t i = 0; i < h->count; i++)
		if (strcmp(h->items[i].selector, selector) == 0 &&
		    strcmp(h->items[i].jobset, h->jobset) == 0) {
			h->items[i].pods += to - from + 1;
			return 0;
		}
	if (h->count == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 32;
		struct holding *grown = realloc(h->items, cap * sizeof(*grown));

		if (!grown)
			return -1;
		h->items = grown;
		h->cap = cap;
	}
	snprintf(h->items[h->count].selector, sizeof(h->items[h->count].selector), "%s",
		 *selector ? selector : "(anywhere)");
	snprintf(h->items[h->count].jobset, sizeof(h->items[h->count].jobset), "%s", h->jobset);
	h->items[h->count++].pods = to - from + 1;
	return 0;
}

static int by_selector(const void *a, const void *b)
{
	const struct holding *x = a, *y = b;
	int c = strcmp(x->selector, y->selector);

	return c ? c : strcmp(x->jobset, y->jobset);
}

/* Which JobSets hold which domains: the placements of record in the
 * cluster (ConfigMaps <jobset>-placement), pods per domain and JobSet,
 * sorted; 0, or a KUBE_E* code with *cause. */
static int collect_holders(struct topo_live *live, struct holdings *h, char **cause)
{
	cJSON *list = NULL;
	const cJSON *cm;
	int err = topo_live_list_labelled(live, "/api/v1/configmaps", JOBSET_LABEL_NAME, NULL, &list, cause);

	if (err)
		return err;
	cJSON_ArrayForEach(cm, kjson_member(list, "items"))
	{
		const cJSON *name = kjson_member(kjson_member(cm, "metadata"), "name");
		const cJSON *ns = kjson_member(kjson_member(cm, "metadata"), "namespace");
		const cJSON *text = kjson_member(kjson_member(cm, "data"), MUSTER_PLACEMENT_KEY);
		struct topo_record *record = NULL;
		char jobset[320];
		size_t len;

		if (!cJSON_IsString(name) || !cJSON_IsString(ns) || !cJSON_IsString(text) ||
		    (len = strlen(name->valuestring)) <= strlen(MUSTER_PLACEMENT_SUFFIX) ||
		    strcmp(name->valuestring + len - strlen(MUSTER_PLACEMENT_SUFFIX),
			   MUSTER_PLACEMENT_SUFFIX) != 0 ||
		    topo_record_parse(text->valuestring, strlen(text->valuestring), &record, NULL) != 0)
			continue;
		snprintf(jobset, sizeof(jobset), "%s/%.*s", ns->valuestring,
			 (int)(len - strlen(MUSTER_PLACEMENT_SUFFIX)), name->valuestring);
		h->jobset = jobset;
		err = topo_record_foreach(record, hold_run, h);
		topo_record_free(record);
		if (err) {
			cJSON_Delete(list);
			return MUSTER_ENOMEM;
		}
	}
	if (h->count > 1)
		qsort(h->items, h->count, sizeof(*h->items), by_selector);
	cJSON_Delete(list);
	return 0;
}

static void print_holders(struct topo_live *live)
{
	char *cause = NULL;
	struct holdings h = { 0 };

	if (collect_holders(live, &h, &cause) != 0) {
		printf("held by placed JobSets: cannot list ConfigMaps: %s\n",
		       cause ? cause : "out of memory");
		free(cause);
		free(h.items);
		return;
	}
	printf("held by placed JobSets (their placements of record; a pod holds its room from the record until it ends):\n");
	if (!h.count)
		printf("  none\n");
	for (size_t i = 0; i < h.count && i < TOPO_VIEW_FULL_TREE_DOMAINS; i++)
		printf("  %s: %s, %lu pods\n", h.items[i].selector, h.items[i].jobset, h.items[i].pods);
	if (h.count > TOPO_VIEW_FULL_TREE_DOMAINS)
		printf("  ... and %zu more\n", h.count - TOPO_VIEW_FULL_TREE_DOMAINS);
	free(h.items);
}

/* The holders as a JSON array of {"nodeSelector", "jobset", "pods"} added
 * to `out` as "heldBy", or "heldByError" when they cannot be listed. */
static int holders_json(struct topo_live *live, cJSON *out)
{
	char *cause = NULL;
	struct holdings h = { 0 };
	cJSON *list;
	int ok;

	if (collect_holders(live, &h, &cause) != 0) {
		ok = add_text(out, "heldByError", cause ? cause : "out of memory");
		free(cause);
		free(h.items);
		return ok;
	}
	ok = (list = cJSON_AddArrayToObject(out, "heldBy")) != NULL;
	for (size_t i = 0; ok && i < h.count; i++) {
		cJSON *one = cJSON_CreateObject();

		ok = one && cJSON_AddItemToArray(list, one);
		ok = ok && cJSON_AddStringToObject(one, "nodeSelector", h.items[i].selector);
		ok = ok && cJSON_AddStringToObject(one, "jobset", h.items[i].jobset);
		ok = ok && cJSON_AddNumberToObject(one, "pods", (double)h.items[i].pods);
	}
	free(h.items);
	return ok;
}

static void print_placement(const struct topo_tree *t, const struct topo_request *req,
			    const struct topo_placement *p, const char *jobset)
{
	const struct topo_cluster *c = t->cluster;
	char buf[1024];

	printf("placement of JobSet %s:\n", jobset ? jobset : "");
	for (size_t g = 0, k = 0; g < req->group_count; g++)
		for (uint32_t j = 0; j < req->groups[g].replicas; j++, k++)
			if (p->instance_pods[k] < req->groups[g].pods)
				printf("  %s-%u: %u of %u pods placed (minPartitions), the rest not placed\n",
				       req->groups[g].name, j, p->instance_pods[k], req->groups[g].pods);
	for (size_t i = 0; i < p->count_count; i++) {
		printf("  %s-%u: %u pods in %s", req->groups[p->counts[i].group].name, p->counts[i].job_index,
		       p->counts[i].count, topo_tree_path(t, p->counts[i].domain, buf, sizeof(buf)));
		if (!t->from_hypernodes)
			printf(" (nodeSelector %s)",
			       topo_tree_selector(t, p->counts[i].domain, TOPO_NONE, buf, sizeof(buf)));
		printf("\n");
	}
	/* The selector confines a pod to its domain: every level's label in
	 * levels mode; in HyperNode mode, where a domain is no label, the
	 * node's hostname. The node is the one the core chose (a hint). */
	printf("pods (replicated job, job index, completion index -> domain, nodeSelector, node):\n");
	for (size_t i = 0; i < p->pod_count; i++) {
		const struct topo_pod *pod = &p->pods[i];

		if (pod->domain == TOPO_NONE) {
			printf("  %s %u %u (not placed)\n", req->groups[pod->group].name, pod->job_index,
			       pod->completion);
			continue;
		}
		printf("  %s %u %u %s", req->groups[pod->group].name, pod->job_index, pod->completion,
		       topo_tree_path(t, pod->domain, buf, sizeof(buf)));
		printf(" %s", topo_tree_selector(t, pod->domain, pod->node, buf, sizeof(buf)));
		printf(" %s\n", c->nodes[pod->node].name);
	}
}

/* Prints one JSON object on stdout and deletes it; -1 (said) when it is
 * NULL or cannot be printed. */
static int emit_json(const struct topo_run_options *o, cJSON *out)
{
	char *text = out ? cJSON_PrintUnformatted(out) : NULL;

	if (text)
		printf("%s\n", text);
	else
		fprintf(stderr, "%s: out of memory\n", o->program);
	free(text);
	cJSON_Delete(out);
	return text ? 0 : -1;
}

/* The result as one JSON object for scripts: placed, the refusal, the pods
 * with their domain, nodeSelector and node, the nodes left out, and
 * (explain) what muster-controller says of the JobSet. */
static int print_json(const struct topo_run_options *o, struct topo_live *live, const struct topo_tree *t,
		      const struct topo_request *req, const struct topo_placement *p, const char *jobset,
		      const char *refusal)
{
	const struct topo_cluster *c = t->cluster;
	cJSON *out = cJSON_CreateObject(), *pods, *e;
	char buf[1024];
	int ok = out != NULL;

	ok = ok && cJSON_AddStringToObject(out, "jobset", jobset ? jobset : "") != NULL;
	ok = ok && cJSON_AddBoolToObject(out, "placed", p != NULL) != NULL;
	if (refusal)
		ok = ok && cJSON_AddStringToObject(out, "refusal", refusal) != NULL;
	ok = ok && (pods = cJSON_AddArrayToObject(out, "pods")) != NULL;
	for (size_t i = 0; ok && p && i < p->pod_count; i++) {
		const struct topo_pod *pod = &p->pods[i];
		cJSON *one = cJSON_CreateObject();

		ok = one && cJSON_AddItemToArray(pods, one);
		ok = ok && cJSON_AddStringToObject(one, "replicatedJob", req->groups[pod->group].name);
		ok = ok && cJSON_AddNumberToObject(one, "jobIndex", pod->job_index);
		ok = ok && cJSON_AddNumberToObject(one, "completionIndex", pod->completion);
		if (ok && pod->domain != TOPO_NONE) {
			ok = cJSON_AddStringToObject(
				     one, "domain", topo_tree_path(t, pod->domain, buf, sizeof(buf))) != NULL;
			ok = ok && cJSON_AddStringToObject(
					   one, "nodeSelector",
					   topo_tree_selector(t, pod->domain, pod->node, buf, sizeof(buf)));
			ok = ok && cJSON_AddStringToObject(one, "node", c->nodes[pod->node].name);
		}
	}
	ok = ok && topo_view_excluded_json(out, t) == 0;
	if (ok && o->explain && live) {
		ok = (e = explain_json(live, o->jobset_namespace, o->jobset_name)) != NULL;
		ok = ok && cJSON_AddItemToObject(out, "explain", e);
	}
	if (!ok) {
		cJSON_Delete(out);
		out = NULL;
	}
	return emit_json(o, out);
}

/* An input with no node in the topology cannot be placed on: that is the
 * input's problem (exit 2), not a refusal. */
static int check_tree(const struct topo_run_options *o, const struct topo_input *in,
		      const struct topo_tree *t, const char *nodes)
{
	if (in->cluster.node_count == 0) {
		fprintf(stderr, "%s: %s: no Node in the input\n", o->program, nodes);
		return -1;
	}
	if (t->excluded_count == in->cluster.node_count) {
		const struct topo_exclusion *e = &t->excluded[0];

		fprintf(stderr,
			"%s: none of the %zu nodes is in the topology (node %s %s%s%s); give the "
			"levels the nodes are labelled with, or HyperNodes that claim them\n",
			o->program, in->cluster.node_count, in->cluster.nodes[e->node].name, e->reason,
			e->detail ? " " : "", e->detail ? e->detail : "");
		return -1;
	}
	return 0;
}

/* The JobSet (when one is given), the nodes, the pods and the HyperNodes,
 * from files or the cluster; 0, or -1 said on stderr. */
static int load_inputs(const struct topo_run_options *o, struct topo_live *live, struct topo_input *in)
{
	if (o->jobset_name) {
		char path[600], *cause = NULL;

		if (kube_path(path, sizeof(path), &KUBE_JOBSETS, o->jobset_namespace, o->jobset_name,
			      &cause)) {
			fprintf(stderr, "%s: JobSet %s/%s: %s\n", o->program, o->jobset_namespace,
				o->jobset_name, cause ? cause : "out of memory");
			free(cause);
			return -1;
		}
		if (load_live(o, live, in, path, NULL, 1, topo_input_jobset_tree))
			return -1;
	} else if (o->jobset && load(o, in, o->jobset, topo_input_jobset)) {
		return -1;
	}
	if (o->nodes ? load(o, in, o->nodes, topo_input_nodes)
		     : load_live(o, live, in, PATH_NODES, NULL, 0, topo_input_nodes_tree))
		return -1;
	if (o->pods ? load(o, in, o->pods, topo_input_pods)
		    : live && load_live(o, live, in, PATH_PODS, PODS_HOLDING, 0, topo_input_pods_tree))
		return -1;
	if ((o->hypernodes && load(o, in, o->hypernodes, topo_input_hypernodes)) ||
	    (o->cluster_hypernodes &&
	     load_live(o, live, in, PATH_HYPERNODES, NULL, 0, topo_input_hypernodes_tree)))
		return -1;
	return 0;
}

/* The topology tree from the Kueue Topology, the levels or the HyperNodes;
 * NULL said on stderr. `levels_copy` gets the split levels the tree's level
 * names point into (the caller frees it after the tree). */
static struct topo_tree *build_tree(const struct topo_run_options *o, struct topo_live *live,
				    struct topo_input *in, char **levels_copy)
{
	const char *level_list[TOPO_LEVELS_MAX];
	size_t level_count = 0;
	struct topo_tree *t;
	char *cause = NULL;

	if (o->topology) {
		if (!kube_dns_subdomain(o->topology, KUBE_NAME_MAX)) {
			fprintf(stderr, "%s: --topology %s: not a Kubernetes object name\n", o->program,
				o->topology);
			return NULL;
		}
		if (load_topology(o, live, in, level_list, &level_count))
			return NULL;
		t = topo_tree_from_levels(&in->cluster, level_list, level_count, &cause);
	} else if (o->levels) {
		char *save = NULL;

		*levels_copy = strdup(o->levels);
		for (char *tok = *levels_copy ? strtok_r(*levels_copy, ",", &save) : NULL; tok;
		     tok = strtok_r(NULL, ",", &save)) {
			if (level_count == TOPO_LEVELS_MAX) {
				fprintf(stderr, "%s: at most %d levels\n", o->program, TOPO_LEVELS_MAX);
				return NULL;
			}
			level_list[level_count++] = tok;
		}
		t = topo_tree_from_levels(&in->cluster, level_list, level_count, &cause);
	} else {
		t = topo_tree_from_hypernodes(&in->cluster, in->hypernodes, in->hypernode_count, &cause);
	}
	if (!t)
		fprintf(stderr, "%s: %s\n", o->program, cause ? cause : "out of memory");
	free(cause);
	if (t && check_tree(o, in, t, o->nodes ? o->nodes : PATH_NODES)) {
		topo_tree_free(t);
		return NULL;
	}
	return t;
}

static size_t depth_of_options(const struct topo_run_options *o, const struct topo_tree *t)
{
	unsigned long n = 0;

	if (o->depth && strcmp(o->depth, "all") != 0) {
		flag_number(o->depth, 0, TOPO_LEVELS_MAX + 1, &n);
		return n;
	}
	return o->depth ? TOPO_LEVELS_MAX + 1 : topo_view_default_depth(t);
}

/* The request's groups as the tree's columns: its title and summary label. */
static void request_columns(const struct topo_request *req, const char **names, char *title,
			    size_t title_size, char *summary, size_t summary_size)
{
	size_t used = (size_t)snprintf(title, title_size, "topology (free pods per replicated job:");

	for (size_t g = 0; g < req->group_count; g++) {
		names[g] = req->groups[g].name;
		if (used < title_size)
			used += (size_t)snprintf(title + used, title_size - used, " %s", req->groups[g].name);
	}
	if (used < title_size)
		snprintf(title + used, title_size - used, ")");
	snprintf(summary, summary_size, "pods of %s", req->group_count ? req->groups[0].name : "-");
}

/* The tree with its free room (text), the placement or the refusal; the
 * exit code. */
static int report(const struct topo_run_options *o, struct topo_live *live, struct topo_input *in,
		  struct topo_tree *t, struct topo_group *groups, struct topo_request *req)
{
	struct topo_placement *p = NULL;
	uint64_t *free_pods = topo_view_free_pods(t, req);
	const char *names[TOPO_GROUPS_MAX];
	char title[4096], summary[128], *cause = NULL;
	int rc;

	if (!free_pods) {
		fprintf(stderr, "%s: out of memory\n", o->program);
		return TOPO_RUN_BAD_INPUT;
	}
	if (o->explain && !o->json) {
		cJSON *e = explain_json(live, o->jobset_namespace, o->jobset_name);

		if (e)
			explain_print(o, e);
		cJSON_Delete(e);
	}
	if (!o->json) {
		request_columns(req, names, title, sizeof(title), summary, sizeof(summary));
		topo_view_print_tree(stdout, t, title, free_pods, req->group_count, summary,
				     depth_of_options(o, t));
	}
	if (!o->json && live)
		print_holders(live);
	rc = topo_jobset_place(&in->jobset, t, groups, req, &p, &cause) ? TOPO_RUN_REFUSED : TOPO_RUN_PLACED;
	/* A request the core cannot take (its checks' sentences begin so) is
	 * bad input, not a refusal of the cluster. */
	if (rc && cause && strncmp(cause, "request: ", 9) == 0)
		rc = TOPO_RUN_BAD_INPUT;
	if (o->json) {
		if (print_json(o, live, t, req, p, in->jobset.name,
			       rc ? (cause ? cause : "out of memory") : NULL))
			rc = TOPO_RUN_BAD_INPUT;
	} else if (rc) {
		printf("refused: %s\n", cause ? cause : "out of memory");
	} else {
		print_placement(t, req, p, in->jobset.name);
	}
	topo_placement_free(p);
	free(free_pods);
	free(cause);
	return rc;
}

int topo_run_place(const struct topo_run_options *o, struct topo_live *live)
{
	struct topo_input in;
	struct topo_tree *t = NULL;
	struct topo_group groups[TOPO_GROUPS_MAX];
	struct topo_request req;
	char *cause = NULL, *levels_copy = NULL;
	int rc = TOPO_RUN_BAD_INPUT;

	memset(&in, 0, sizeof(in));
	if (load_inputs(o, live, &in) || !(t = build_tree(o, live, &in, &levels_copy)))
		goto out;
	/* The request as the tree shows it (the strict one: a soft preference
	 * relaxed by topo_jobset_place has the same shapes). */
	if (topo_jobset_request(&in.jobset, t, groups, &req, &cause)) {
		fprintf(stderr, "%s: %s\n", o->program, cause ? cause : "out of memory");
		goto out;
	}
	rc = report(o, live, &in, t, groups, &req);
out:
	free(cause);
	topo_tree_free(t);
	free(levels_copy);
	topo_input_free(&in);
	return rc;
}

int topo_run_tree(const struct topo_run_options *o, struct topo_live *live)
{
	struct topo_input in;
	struct topo_tree *t = NULL;
	struct topo_group groups[TOPO_GROUPS_MAX];
	struct topo_request req;
	const char *names[TOPO_GROUPS_MAX > TOPO_RESOURCES_MAX ? TOPO_GROUPS_MAX : TOPO_RESOURCES_MAX];
	char title[4096], summary[128], *cause = NULL, *levels_copy = NULL;
	uint64_t *values = NULL;
	size_t columns = 0;
	int rc = TOPO_RUN_BAD_INPUT;

	memset(&in, 0, sizeof(in));
	if (load_inputs(o, live, &in) || !(t = build_tree(o, live, &in, &levels_copy)))
		goto out;
	if (o->jobset_name || o->jobset) {
		if (topo_jobset_request(&in.jobset, t, groups, &req, &cause)) {
			fprintf(stderr, "%s: %s\n", o->program, cause ? cause : "out of memory");
			goto out;
		}
		values = topo_view_free_pods(t, &req);
		request_columns(&req, names, title, sizeof(title), summary, sizeof(summary));
		columns = req.group_count;
	} else {
		values = topo_view_free_resources(t, names, &columns);
		snprintf(title, sizeof(title), "topology (free");
		for (size_t k = 0; k < columns; k++) {
			size_t used = strlen(title);

			snprintf(title + used, sizeof(title) - used, " %s", names[k]);
		}
		snprintf(title + strlen(title), sizeof(title) - strlen(title), ")");
		snprintf(summary, sizeof(summary), "%s", columns ? names[0] : "-");
	}
	if (!values) {
		fprintf(stderr, "%s: out of memory\n", o->program);
		goto out;
	}
	if (o->json) {
		cJSON *out = topo_view_tree_json(t, names, values, columns);

		if (out && live && !holders_json(live, out)) {
			cJSON_Delete(out);
			out = NULL;
		}
		rc = emit_json(o, out) ? TOPO_RUN_BAD_INPUT : TOPO_RUN_PLACED;
		goto out;
	}
	topo_view_print_tree(stdout, t, title, values, columns, summary, depth_of_options(o, t));
	if (live)
		print_holders(live);
	rc = TOPO_RUN_PLACED;
out:
	free(values);
	free(cause);
	topo_tree_free(t);
	free(levels_copy);
	topo_input_free(&in);
	return rc;
}
