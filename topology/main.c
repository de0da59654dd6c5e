/*
 * muster-topology: reads nodes (kubectl get nodes -o json), optionally pods
 * for usage, a topology (--levels or a HyperNode file) and a JobSet, from
 * files or from a live cluster (--kubeconfig: every Node, the pods bound and
 * not ended, a Kueue Topology or the cluster's HyperNodes, a JobSet); prints
 * the topology tree with the free capacity per domain for each replicated
 * job's pod shape, then the placement or the refusal, as text or JSON.
 * Exit 0 placed, 1 refused, 2 bad input (the cause names the file, item and
 * field). The JobSet is read before the nodes so that the resources it
 * requests are among those tracked (topo_input.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "daemon.h"
#include "flag.h"
#include "kjson.h"
#include "kube_error.h"
#include "kube_path.h"
#include "muster_api.h"
#include "topo_record.h"
#include "topo_input.h"
#include "topo_live.h"
#include "topo_place.h"
#include "topo_tree.h"

/* Above this many domains the tree is shown as a summary per level unless
 * --depth asks for more: a 10,000-node tree stays readable. */
#define FULL_TREE_DOMAINS 200

struct options {
	const char *nodes, *pods, *levels, *hypernodes, *jobset, *output, *depth;
	const char *kubeconfig, *topology, *jobset_ref, *explain;
	int cluster_hypernodes;
	char *levels_copy; /* --levels split: the tree's level names point into it */
};

/* The API paths read with --kubeconfig. */
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

static int load(struct topo_input *in, const char *file,
		int (*decode)(struct topo_input *, const char *, size_t, char **))
{
	size_t size = 0;
	char *data = read_file(file, &size), *cause = NULL;
	int rc;

	if (!data) {
		fprintf(stderr, "muster-topology: cannot read %s\n", file);
		return -1;
	}
	rc = decode(in, data, size, &cause);
	free(data);
	if (rc)
		fprintf(stderr, "muster-topology: %s: %s\n", file, cause ? cause : "out of memory");
	free(cause);
	return rc;
}

/* Reads one input from the cluster: a LIST (field selector or NULL) or, when
 * `get`, one object; then its tree decoder. */
static int load_live(struct topo_live *live, struct topo_input *in, const char *path, const char *field,
		     int get, int (*decode)(struct topo_input *, struct cJSON *, char **))
{
	cJSON *tree = NULL;
	char *cause = NULL;
	int rc = get ? topo_live_get(live, path, &tree, &cause)
		     : topo_live_list(live, path, field, &tree, &cause);

	if (rc == 0)
		rc = decode(in, tree, &cause);
	if (rc)
		fprintf(stderr, "muster-topology: %s: %s\n", path, cause ? cause : "out of memory");
	free(cause);
	return rc ? -1 : 0;
}

/* A Kueue Topology of the cluster as --levels: its node labels, outermost first. */
static int load_topology(struct topo_live *live, struct topo_input *in, const char *name, const char **levels,
			 size_t *count)
{
	struct topo_levels found;
	char path[512], *cause = NULL;
	cJSON *tree = NULL;
	int rc;

	rc = kube_path(path, sizeof(path), &KUBE_KUEUE_TOPOLOGIES, NULL, name, &cause);
	if (!rc)
		rc = topo_live_get(live, path, &tree, &cause);
	if (rc == KUBE_ENOTFOUND) { /* a cluster serving only Kueue's older version */
		char *older = NULL;

		kube_path(path, sizeof(path), &KUBE_KUEUE_TOPOLOGIES_V1BETA1, NULL, name, NULL);
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
		fprintf(stderr, "muster-topology: %s: %s\n", path, cause ? cause : "out of memory");
		free(cause);
		return -1;
	}
	for (size_t i = 0; i < found.count; i++)
		levels[i] = found.labels[i];
	*count = found.count;
	return 0;
}

/* ---- the controller's view (--explain, and the domains records hold) ---- */

static const char *annotation_of(const cJSON *object, const char *key)
{
	const cJSON *v = kjson_member(kjson_member(kjson_member(object, "metadata"), "annotations"), key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int print_run(void *arg, const char *rj, uint32_t job, uint32_t from, uint32_t to,
		     const char *selector)
{
	(void)arg;
	printf("  %s job %u, completion indexes %u-%u: %s\n", rj, job, from, to,
	       *selector ? selector : "(anywhere)");
	return 0;
}

/* What muster-controller says of the JobSet: its placement state, why it
 * waits, its placement of record. */
static void explain(struct topo_live *live, const char *ns, const char *name)
{
	char path[700], record_name[300], *cause = NULL;
	cJSON *jobset = NULL, *configmap = NULL;
	const char *state, *reason;
	const cJSON *text;
	struct topo_record *record = NULL;

	if (kube_path(path, sizeof(path), &KUBE_JOBSETS, ns, name, &cause) ||
	    topo_live_get(live, path, &jobset, &cause) != 0) {
		printf("JobSet %s/%s: %s\n", ns, name, cause ? cause : "cannot be read");
		free(cause);
		return;
	}
	state = annotation_of(jobset, MUSTER_ANNOTATION_PLACEMENT);
	reason = annotation_of(jobset, MUSTER_ANNOTATION_PLACEMENT_REASON);
	if (!state)
		printf("JobSet %s/%s: not gated by muster (no %s annotation: no topology request, Kueue's or Volcano's, "
		       "or created before muster)\n",
		       ns, name, MUSTER_ANNOTATION_PLACEMENT);
	else
		printf("JobSet %s/%s: %s=%s%s%s\n", ns, name, MUSTER_ANNOTATION_PLACEMENT, state,
		       reason ? "; waiting because: " : "", reason ? reason : "");
	snprintf(record_name, sizeof(record_name), "%s" MUSTER_PLACEMENT_SUFFIX, name);
	free(cause);
	cause = NULL;
	if (kube_path(path, sizeof(path), &KUBE_CONFIGMAPS, ns, record_name, &cause) ||
	    topo_live_get(live, path, &configmap, &cause) != 0) {
		printf("placement of record: none (ConfigMap %s/%s%s: %s)\n", ns, name,
		       MUSTER_PLACEMENT_SUFFIX, cause ? cause : "cannot be read");
	} else if (!cJSON_IsString(
			   text = kjson_member(kjson_member(configmap, "data"), MUSTER_PLACEMENT_KEY)) ||
		   topo_record_parse(text->valuestring, strlen(text->valuestring), &record, NULL) != 0) {
		printf("placement of record: ConfigMap %s/%s%s holds no readable record\n", ns, name,
		       MUSTER_PLACEMENT_SUFFIX);
	} else {
		printf("placement of record (ConfigMap %s/%s%s, JobSet uid %s):\n", ns, name,
		       MUSTER_PLACEMENT_SUFFIX, topo_record_uid(record));
		topo_record_foreach(record, print_run, NULL);
	}
	printf("what muster-topology decides on the free room now (the room placed JobSets hold until\n"
	       "their pods are bound is not taken off here; see \"held by\" below):\n");
	topo_record_free(record);
	cJSON_Delete(configmap);
	cJSON_Delete(jobset);
	free(cause);
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
 * cluster (ConfigMaps <jobset>-placement), pods per domain and JobSet. */
static void print_holders(struct topo_live *live)
{
	cJSON *list = NULL;
	const cJSON *cm;
	char *cause = NULL;
	struct holdings h = { 0 };

	if (topo_live_list_labelled(live, "/api/v1/configmaps", JOBSET_LABEL_NAME, NULL, &list, &cause) !=
	    0) {
		printf("held by placed JobSets: cannot list ConfigMaps: %s\n",
		       cause ? cause : "out of memory");
		free(cause);
		return;
	}
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
		h.jobset = jobset;
		topo_record_foreach(record, hold_run, &h);
		topo_record_free(record);
	}
	if (h.count > 1)
		qsort(h.items, h.count, sizeof(*h.items), by_selector);
	printf("held by placed JobSets (their placements of record; a pod holds its room from the record until it ends):\n");
	if (!h.count)
		printf("  none\n");
	for (size_t i = 0; i < h.count && i < FULL_TREE_DOMAINS; i++)
		printf("  %s: %s, %lu pods\n", h.items[i].selector, h.items[i].jobset, h.items[i].pods);
	if (h.count > FULL_TREE_DOMAINS)
		printf("  ... and %zu more\n", h.count - FULL_TREE_DOMAINS);
	free(h.items);
	cJSON_Delete(list);
}

/* Free capacity per domain in pods of each group's shape (domain x group). */
static uint64_t *free_pods_of(const struct topo_tree *t, const struct topo_request *req)
{
	const struct topo_cluster *c = t->cluster;
	size_t groups = req->group_count ? req->group_count : 1;
	uint64_t *free_pods = calloc(t->domain_count * groups, sizeof(uint64_t));
	int64_t res[TOPO_RESOURCES_MAX];

	if (!free_pods)
		return NULL;
	for (size_t g = 0; g < req->group_count; g++)
		for (size_t d = t->domain_count; d-- > 0;) {
			uint32_t n = t->domains[d].node;

			if (n != TOPO_NONE) {
				for (size_t r = 0; r < c->resource_count; r++)
					res[r] = c->nodes[n].allocatable[r] - c->nodes[n].used[r];
				free_pods[d * groups + g] =
					topo_node_fit(c, &c->nodes[n], res, &req->groups[g].shape, NULL);
			}
			if (d > 0)
				free_pods[t->domains[d].parent * groups + g] += free_pods[d * groups + g];
		}
	return free_pods;
}

/* How many domains are above d: its indent, so that a node sits under its
 * real parent even where the tree skips a level. */
static int depth_of(const struct topo_tree *t, uint32_t d)
{
	int n = 0;

	for (; d != 0; d = t->domains[d].parent)
		n++;
	return n;
}

/* The tree down to `depth` levels, then per level the domains' count and
 * free capacity (smallest and largest domain), then the nodes left out. */
static void print_tree(const struct topo_tree *t, const struct topo_request *req, const uint64_t *free_pods,
		       size_t depth)
{
	const struct topo_cluster *c = t->cluster;
	size_t groups = req->group_count ? req->group_count : 1, shown = 0;

	printf("topology (free pods per replicated job:");
	for (size_t g = 0; g < req->group_count; g++)
		printf(" %s", req->groups[g].name);
	printf(")\n");
	for (size_t d = 0; d < t->domain_count; d++) {
		const struct topo_domain *dom = &t->domains[d];

		if (dom->level > depth)
			continue;
		shown++;
		printf("%*s%s %s", depth_of(t, (uint32_t)d) * 2, "",
		       dom->node != TOPO_NONE ? "(node)" : t->level_names[dom->level], d ? dom->name : "");
		for (size_t g = 0; g < req->group_count; g++)
			printf(" %llu", (unsigned long long)free_pods[d * groups + g]);
		printf("\n");
	}
	if (shown < t->domain_count) {
		printf("levels (%zu of %zu domains shown; --depth all shows every one):\n", shown,
		       t->domain_count);
		for (size_t l = 1; l <= t->node_level; l++) {
			size_t count = 0;
			uint64_t least = UINT64_MAX, most = 0;

			for (size_t d = 0; d < t->domain_count; d++) {
				uint64_t v = req->group_count ? free_pods[d * groups] : 0;

				if (t->domains[d].level != l)
					continue;
				count++;
				least = v < least ? v : least;
				most = v > most ? v : most;
			}
			printf("  %s: %zu domains, free pods of %s from %llu to %llu\n",
			       l == t->node_level ? "nodes" : t->level_names[l], count,
			       req->group_count ? req->groups[0].name : "-",
			       count ? (unsigned long long)least : 0ULL, (unsigned long long)most);
		}
	}
	for (size_t i = 0; i < t->excluded_count; i++)
		printf("excluded: node %s %s%s%s\n", c->nodes[t->excluded[i].node].name,
		       t->excluded[i].reason, t->excluded[i].detail ? " " : "",
		       t->excluded[i].detail ? t->excluded[i].detail : "");
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

/* The result as one JSON object for scripts: placed, the refusal, the pods
 * with their domain, nodeSelector and node, and the nodes left out. */
static int print_json(const struct topo_tree *t, const struct topo_request *req,
		      const struct topo_placement *p, const char *jobset, const char *refusal)
{
	const struct topo_cluster *c = t->cluster;
	cJSON *out = cJSON_CreateObject(), *pods, *excluded;
	char buf[1024], *text;
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
	ok = ok && (excluded = cJSON_AddArrayToObject(out, "excluded")) != NULL;
	for (size_t i = 0; ok && i < t->excluded_count; i++) {
		cJSON *one = cJSON_CreateObject();

		ok = one && cJSON_AddItemToArray(excluded, one);
		ok = ok && cJSON_AddStringToObject(one, "node", c->nodes[t->excluded[i].node].name);
		snprintf(buf, sizeof(buf), "%s%s%s", t->excluded[i].reason, t->excluded[i].detail ? " " : "",
			 t->excluded[i].detail ? t->excluded[i].detail : "");
		ok = ok && cJSON_AddStringToObject(one, "reason", buf);
	}
	text = ok ? cJSON_PrintUnformatted(out) : NULL;
	if (text)
		printf("%s\n", text);
	else
		fprintf(stderr, "muster-topology: out of memory\n");
	free(text);
	cJSON_Delete(out);
	return text ? 0 : -1;
}

static const char *output_problem(const char *value)
{
	return strcmp(value, "text") == 0 || strcmp(value, "json") == 0 ? NULL : "neither text nor json";
}

static const char *depth_problem(const char *value)
{
	unsigned long n;

	return strcmp(value, "all") == 0 || flag_number(value, 0, TOPO_LEVELS_MAX + 1, &n) == 0
		       ? NULL
		       : "neither all nor a level from 0 to 9";
}

/* An input with no node in the topology cannot be placed on: that is the
 * input's problem (exit 2), not a refusal. */
static int check_tree(const struct topo_input *in, const struct topo_tree *t, const char *nodes)
{
	if (in->cluster.node_count == 0) {
		fprintf(stderr, "muster-topology: %s: no Node in the input\n", nodes);
		return -1;
	}
	if (t->excluded_count == in->cluster.node_count) {
		const struct topo_exclusion *e = &t->excluded[0];

		fprintf(stderr,
			"muster-topology: none of the %zu nodes is in the topology (node %s %s%s%s); give the "
			"levels the nodes are labelled with, or HyperNodes that claim them\n",
			in->cluster.node_count, in->cluster.nodes[e->node].name, e->reason,
			e->detail ? " " : "", e->detail ? e->detail : "");
		return -1;
	}
	return 0;
}

/* Parses the flags into *o and checks they name one of each input: -1 to
 * run, else the exit code. */
static int parse_flags(int argc, char **argv, struct options *o)
{
	const struct flag_def flags[] = {
		{ FLAG_SECTION, NULL, NULL, "inputs (JSON or YAML, as kubectl writes them):", 0, 0, NULL,
		  NULL },
		{ FLAG_TEXT, "--nodes", "FILE", "the nodes: kubectl get nodes -o json", 0, 0, NULL,
		  &o->nodes },
		{ FLAG_TEXT, "--pods", "FILE",
		  "pods using the nodes: kubectl get pods -A -o json (bound, not ended)", 0, 0, NULL,
		  &o->pods },
		{ FLAG_TEXT, "--levels", "L1,L2,...", "the topology as node labels, outermost first", 0, 0,
		  NULL, &o->levels },
		{ FLAG_TEXT, "--hypernodes", "FILE", "or the topology as Volcano HyperNodes", 0, 0, NULL,
		  &o->hypernodes },
		{ FLAG_TEXT, "--jobset", "FILE", "the JobSet to place", 0, 0, NULL, &o->jobset },
		{ FLAG_SECTION, NULL, NULL, "or from a live cluster:", 0, 0, NULL, NULL },
		{ FLAG_TEXT, "--kubeconfig", "FILE",
		  "read the nodes, and the pods bound and not ended, from the cluster\n(unless --nodes / --pods give files)",
		  0, 0, NULL, &o->kubeconfig },
		{ FLAG_TEXT, "--topology", "NAME", "the levels of the cluster's Kueue Topology NAME", 0, 0,
		  NULL, &o->topology },
		{ FLAG_SWITCH, "--cluster-hypernodes", NULL,
		  "the topology as the cluster's Volcano HyperNodes", 0, 0, NULL, &o->cluster_hypernodes },
		{ FLAG_TEXT, "--jobset-ref", "NS/NAME", "the cluster's JobSet NS/NAME", 0, 0, NULL,
		  &o->jobset_ref },
		{ FLAG_TEXT, "--explain", "NS/NAME",
		  "--jobset-ref NS/NAME, and first what muster-controller says of it:\nits placement state, why it waits, its placement of record",
		  0, 0, NULL, &o->explain },
		{ FLAG_SECTION, NULL, NULL, "output:", 0, 0, NULL, NULL },
		{ FLAG_TEXT, "--output", "text|json", "text (default), or one JSON object for scripts", 0, 0,
		  output_problem, &o->output },
		{ FLAG_TEXT, "--depth", "N|all",
		  "tree levels shown (text); default: all up to 200 domains,\nelse the top level and a summary per level",
		  0, 0, depth_problem, &o->depth },
	};
	static const char head[] =
		"usage: muster-topology --nodes FILE [--pods FILE] (--levels L1,L2,... | --hypernodes FILE)\n"
		"                       --jobset FILE [--output text|json] [--depth N|all]\n"
		"       muster-topology --kubeconfig FILE (--levels L1,... | --topology NAME | --cluster-hypernodes)\n"
		"                       (--jobset FILE | --jobset-ref NS/NAME | --explain NS/NAME) [--output text|json]\n"
		"                       [--depth N|all]\n"
		"Places a JobSet on a cluster's topology as muster would, and says why when it cannot.\n";
	static const char tail[] =
		"exit status: 0 placed, 1 refused (the reason is printed), 2 bad input (a request\nthe placement cannot take included)\n";
	int code = daemon_exit_code(flag_parse(argc, argv, "muster-topology", MUSTER_VERSION, head, flags,
					       sizeof(flags) / sizeof(flags[0]), tail));

	if (code >= 0)
		return code;
	if (o->explain) {
		if (o->jobset_ref) {
			fprintf(stderr,
				"muster-topology: --explain NS/NAME is --jobset-ref NS/NAME and more: give one\n");
			return 2;
		}
		o->jobset_ref = o->explain;
	}
	if ((!o->nodes && !o->kubeconfig) || !o->jobset == !o->jobset_ref ||
	    !!o->levels + !!o->hypernodes + !!o->topology + o->cluster_hypernodes != 1 ||
	    ((o->topology || o->cluster_hypernodes || o->jobset_ref) && !o->kubeconfig)) {
		fprintf(stderr,
			"muster-topology: give the nodes (--nodes or --kubeconfig), one JobSet (--jobset or "
			"--jobset-ref) and one topology (--levels, --hypernodes, --topology or "
			"--cluster-hypernodes; the last two and --jobset-ref need --kubeconfig); see --help\n");
		return 2;
	}
	return -1;
}

/* The JobSet, the nodes, the pods and the HyperNodes, from files or the
 * cluster; 0, or -1 said on stderr. */
static int load_inputs(const struct options *o, struct topo_live *live, struct topo_input *in)
{
	if (o->jobset_ref) {
		char path[600], ns[254], *cause = NULL;
		const char *slash = strchr(o->jobset_ref, '/');

		if (slash && (size_t)(slash - o->jobset_ref) < sizeof(ns))
			snprintf(ns, sizeof(ns), "%.*s", (int)(slash - o->jobset_ref), o->jobset_ref);
		if (!slash || (size_t)(slash - o->jobset_ref) >= sizeof(ns) ||
		    kube_path(path, sizeof(path), &KUBE_JOBSETS, ns, slash + 1, &cause)) {
			fprintf(stderr, "muster-topology: --jobset-ref: give NAMESPACE/NAME%s%s\n",
				cause ? ": " : "", cause ? cause : "");
			free(cause);
			return -1;
		}
		if (load_live(live, in, path, NULL, 1, topo_input_jobset_tree))
			return -1;
	} else if (load(in, o->jobset, topo_input_jobset)) {
		return -1;
	}
	if (o->nodes ? load(in, o->nodes, topo_input_nodes)
		     : load_live(live, in, PATH_NODES, NULL, 0, topo_input_nodes_tree))
		return -1;
	if (o->pods ? load(in, o->pods, topo_input_pods)
		    : live && load_live(live, in, PATH_PODS, PODS_HOLDING, 0, topo_input_pods_tree))
		return -1;
	if ((o->hypernodes && load(in, o->hypernodes, topo_input_hypernodes)) ||
	    (o->cluster_hypernodes &&
	     load_live(live, in, PATH_HYPERNODES, NULL, 0, topo_input_hypernodes_tree)))
		return -1;
	return 0;
}

/* The topology tree from --topology, --levels or the HyperNodes; NULL said
 * on stderr (or in *cause). */
static struct topo_tree *build_tree(struct options *o, struct topo_live *live, struct topo_input *in,
				    char **cause)
{
	const char *level_list[TOPO_LEVELS_MAX];
	size_t level_count = 0;
	struct topo_tree *t;

	if (o->topology) {
		if (!kube_dns_subdomain(o->topology, KUBE_NAME_MAX)) {
			fprintf(stderr, "muster-topology: --topology %s: not a Kubernetes object name\n",
				o->topology);
			return NULL;
		}
		if (load_topology(live, in, o->topology, level_list, &level_count))
			return NULL;
		t = topo_tree_from_levels(&in->cluster, level_list, level_count, cause);
	} else if (o->levels) {
		char *save = NULL;

		o->levels_copy = strdup(o->levels);
		for (char *tok = o->levels_copy ? strtok_r(o->levels_copy, ",", &save) : NULL; tok;
		     tok = strtok_r(NULL, ",", &save)) {
			if (level_count == TOPO_LEVELS_MAX) {
				fprintf(stderr, "muster-topology: at most %d levels\n", TOPO_LEVELS_MAX);
				return NULL;
			}
			level_list[level_count++] = tok;
		}
		t = topo_tree_from_levels(&in->cluster, level_list, level_count, cause);
	} else {
		t = topo_tree_from_hypernodes(&in->cluster, in->hypernodes, in->hypernode_count, cause);
	}
	if (!t && !*cause)
		fprintf(stderr, "muster-topology: out of memory\n");
	if (t && check_tree(in, t, o->nodes ? o->nodes : PATH_NODES)) {
		topo_tree_free(t);
		return NULL;
	}
	return t;
}

/* The tree with its free room (text), the placement or the refusal; the
 * exit code. */
static int report(const struct options *o, struct topo_live *live, struct topo_input *in, struct topo_tree *t,
		  struct topo_group *groups, struct topo_request *req)
{
	struct topo_placement *p = NULL;
	uint64_t *free_pods = free_pods_of(t, req);
	int json = strcmp(o->output, "json") == 0, rc;
	char *cause = NULL;
	size_t depth;

	if (!free_pods) {
		fprintf(stderr, "muster-topology: out of memory\n");
		return 2;
	}
	if (o->depth && strcmp(o->depth, "all") != 0) {
		unsigned long n = 0;

		flag_number(o->depth, 0, TOPO_LEVELS_MAX + 1, &n);
		depth = n;
	} else {
		depth = o->depth || t->domain_count <= FULL_TREE_DOMAINS ? TOPO_LEVELS_MAX + 1 : 1;
	}
	if (o->explain && !json) {
		char ns[254];
		const char *slash = strchr(o->explain, '/');

		snprintf(ns, sizeof(ns), "%.*s", (int)(slash - o->explain), o->explain);
		explain(live, ns, slash + 1);
	}
	if (!json)
		print_tree(t, req, free_pods, depth);
	if (!json && live)
		print_holders(live);
	rc = topo_jobset_place(&in->jobset, t, groups, req, &p, &cause) ? 1 : 0;
	/* A request the core cannot take (its checks' sentences begin so) is
	 * bad input, not a refusal of the cluster: exit 2. */
	if (rc && cause && strncmp(cause, "request: ", 9) == 0)
		rc = 2;
	if (json) {
		if (print_json(t, req, p, in->jobset.name, rc ? (cause ? cause : "out of memory") : NULL))
			rc = 2;
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

int main(int argc, char **argv)
{
	struct options o = { .output = "text", .depth = NULL };
	struct topo_input in;
	struct topo_tree *t = NULL;
	struct topo_group groups[TOPO_GROUPS_MAX];
	struct topo_request req;
	struct topo_live *live = NULL;
	char *cause = NULL;
	int rc = parse_flags(argc, argv, &o);

	if (rc >= 0)
		return rc;
	rc = 2;
	memset(&in, 0, sizeof(in));
	if (o.kubeconfig && topo_live_open(o.kubeconfig, &live, &cause)) {
		fprintf(stderr, "muster-topology: %s: %s\n", o.kubeconfig, cause ? cause : "out of memory");
		free(cause);
		cause = NULL;
		goto out;
	}
	if (load_inputs(&o, live, &in) || !(t = build_tree(&o, live, &in, &cause)))
		goto out;
	/* The request as the tree shows it (the strict one: a soft preference
	 * relaxed by topo_jobset_place has the same shapes). */
	if (topo_jobset_request(&in.jobset, t, groups, &req, &cause)) {
		fprintf(stderr, "muster-topology: %s\n", cause ? cause : "out of memory");
		goto out;
	}
	rc = report(&o, live, &in, t, groups, &req);
out:
	if (!t && cause)
		fprintf(stderr, "muster-topology: %s\n", cause);
	free(cause);
	topo_tree_free(t);
	free(o.levels_copy);
	topo_input_free(&in);
	topo_live_close(live);
	return rc;
}
