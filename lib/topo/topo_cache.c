/*
 * topo_cache: the cluster as placement sees it, kept from watch events. See
 * topo_cache.h.
 *
 * A slot per node name holds the use of the pods bound to it and, once the
 * Node is known, the decoded Node; pods point at their slot, so a Node that
 * comes after its pods, goes and comes back finds its use in place. Request
 * vectors are interned with a count of the pods using each.
 */
#define _POSIX_C_SOURCE 200809L
#include "topo_cache.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cause.h"
#include "kjson.h"
#include "name_table.h"
#include "topo_objects.h"

#define NODE_CHUNK 256 /* a Node's strings: labels and taints */

/* A Node: its labels and taints point at interned strings (label keys and
 * most values repeat from node to node), its name at its slot's. */
struct cache_node {
	struct topo_node node;
	struct topo_label *labels;
	struct topo_taint *taints;
};

/* A string shared by the Nodes that use it. */
struct interned {
	struct name_node key; /* first; namespace "" */
	uint32_t refs;
	char text[];
};

struct slot {
	struct name_node key; /* first: a slot is its node; namespace "" */
	int64_t used[TOPO_RESOURCES_MAX];
	uint32_t pods;
	struct cache_node *node; /* NULL until the Node is known */
	char name[];
};

struct cache_pod {
	struct name_node key; /* first: a pod is its node */
	struct slot *slot;
	uint32_t shape;
	char text[]; /* "namespace\0name\0" */
};

struct shape {
	int64_t requests[TOPO_RESOURCES_MAX];
	uint32_t pods; /* 0: free for reuse */
};

struct topo_cache {
	struct topo_cluster resources; /* the tracked resources (no nodes) */
	char *names[TOPO_RESOURCES_MAX];
	int pods_resource;
	struct name_table slots, pods, strings;
	struct shape *shapes;
	size_t shape_count, shape_cap, shapes_used;
	size_t node_count, pod_count, node_bytes, pod_bytes;
	struct topo_node *snapshot;
	size_t snapshot_cap;
};

int topo_cache_new(const char *const *resources, size_t count, struct topo_cache **out, char **cause)
{
	struct topo_cache *c;

	*out = NULL;
	if (count > TOPO_RESOURCES_MAX)
		return cause_fail(cause, "at most %d resources are tracked", TOPO_RESOURCES_MAX);
	c = calloc(1, sizeof(*c));
	if (!c)
		return cause_fail(cause, "out of memory");
	c->pods_resource = -1;
	for (size_t r = 0; r < count; r++) {
		c->names[r] = strdup(resources[r]);
		if (!c->names[r]) {
			topo_cache_free(c);
			return cause_fail(cause, "out of memory");
		}
		c->resources.resources[r] = c->names[r];
		if (strcmp(resources[r], "pods") == 0)
			c->pods_resource = (int)r;
	}
	c->resources.resource_count = count;
	*out = c;
	return 0;
}

/* An interned copy of s (a reference taken), or NULL without memory. */
/* The entry of `name` in a table of entries that start with their key and
 * end with their name (`size` bytes before it, at `text`): found, or made
 * zeroed with *made set; NULL without memory. */
static struct name_node *find_or_make(struct name_table *table, const char *name, size_t size, size_t text,
				      int *made)
{
	struct name_node *key = name_table_find(table, "", name);
	size_t len = strlen(name);
	char *entry;

	*made = 0;
	if (key)
		return key;
	entry = calloc(1, size + len + 1);
	if (!entry)
		return NULL;
	memcpy(entry + text, name, len + 1);
	key = (struct name_node *)(void *)entry;
	key->namespace = "";
	key->name = entry + text;
	if (name_table_insert(table, key)) {
		free(entry);
		return NULL;
	}
	*made = 1;
	return key;
}

static const char *intern_string(struct topo_cache *c, const char *s)
{
	int made;
	struct interned *x = (struct interned *)find_or_make(&c->strings, s, sizeof(struct interned),
							     offsetof(struct interned, text), &made);

	if (!x)
		return NULL;
	x->refs++;
	if (made)
		c->node_bytes += sizeof(*x) + strlen(s) + 1 + 16;
	return x->text;
}

static void release_string(struct topo_cache *c, const char *s)
{
	struct interned *x = s ? (struct interned *)name_table_find(&c->strings, "", s) : NULL;

	if (!x || --x->refs)
		return;
	name_table_remove(&c->strings, &x->key);
	c->node_bytes -= sizeof(*x) + strlen(x->text) + 1 + 16;
	free(x);
}

static void free_node(struct topo_cache *c, struct cache_node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->node.label_count; i++) {
		release_string(c, n->labels[i].key);
		release_string(c, n->labels[i].value);
	}
	for (size_t i = 0; i < n->node.taint_count; i++) {
		release_string(c, n->taints[i].key);
		release_string(c, n->taints[i].value);
	}
	free(n->labels);
	free(n->taints);
	free(n);
}

static size_t node_size(const struct cache_node *n)
{
	return sizeof(*n) + 16 + n->node.label_count * sizeof(*n->labels) + (n->labels ? 16 : 0) +
	       n->node.taint_count * sizeof(*n->taints) + (n->taints ? 16 : 0);
}

/* The decoded Node, its strings interned, into n (the store is then freed). */
static int compact(struct topo_cache *c, const struct topo_node *decoded, const char *name,
		   struct cache_node *n)
{
	n->node = *decoded;
	n->node.name = name;
	n->node.labels = NULL;
	n->node.taints = NULL;
	n->node.label_count = n->node.taint_count = 0;
	if (decoded->label_count && !(n->labels = calloc(decoded->label_count, sizeof(*n->labels))))
		return -1;
	if (decoded->taint_count && !(n->taints = calloc(decoded->taint_count, sizeof(*n->taints))))
		return -1;
	n->node.labels = n->labels;
	n->node.taints = n->taints;
	for (size_t i = 0; i < decoded->label_count; i++, n->node.label_count++) {
		n->labels[i].key = intern_string(c, decoded->labels[i].key);
		n->labels[i].value = n->labels[i].key ? intern_string(c, decoded->labels[i].value) : NULL;
		if (!n->labels[i].value) {
			release_string(c, n->labels[i].key);
			return -1;
		}
	}
	for (size_t i = 0; i < decoded->taint_count; i++, n->node.taint_count++) {
		n->taints[i] = decoded->taints[i];
		n->taints[i].key = intern_string(c, decoded->taints[i].key);
		n->taints[i].value =
			decoded->taints[i].value ? intern_string(c, decoded->taints[i].value) : NULL;
		if (!n->taints[i].key || (decoded->taints[i].value && !n->taints[i].value)) {
			release_string(c, n->taints[i].key);
			return -1;
		}
	}
	return 0;
}

static void free_slot(void *arg, struct name_node *key)
{
	struct slot *s = (struct slot *)key;

	free_node(arg, s->node);
	free(s);
}

static void free_string(void *arg, struct name_node *key)
{
	(void)arg;
	free(key);
}

static void free_pod(void *arg, struct name_node *key)
{
	(void)arg;
	free(key);
}

void topo_cache_free(struct topo_cache *c)
{
	if (!c)
		return;
	name_table_each(&c->pods, free_pod, NULL);
	name_table_clear(&c->pods);
	name_table_each(&c->slots, free_slot, c);
	name_table_clear(&c->slots);
	name_table_each(&c->strings, free_string, NULL);
	name_table_clear(&c->strings);
	for (size_t r = 0; r < TOPO_RESOURCES_MAX; r++)
		free(c->names[r]);
	free(c->shapes);
	free(c->snapshot);
	free(c);
}

/* ---- slots ---- */

static struct slot *slot_of(struct topo_cache *c, const char *name)
{
	int made;
	struct slot *s = (struct slot *)find_or_make(&c->slots, name, sizeof(struct slot),
						     offsetof(struct slot, name), &made);

	if (s && made)
		c->node_bytes += sizeof(*s) + strlen(name) + 1 + 16;
	return s;
}

/* Frees a slot with no Node and no pod. */
static void slot_release(struct topo_cache *c, struct slot *s)
{
	if (s->node || s->pods)
		return;
	name_table_remove(&c->slots, &s->key);
	c->node_bytes -= sizeof(*s) + strlen(s->name) + 1 + 16;
	free(s);
}

/* ---- Nodes ---- */

/* The bytes of a Node's strings (name, labels, taints), so that one chunk
 * holds them all; at least NODE_CHUNK. */
static size_t strings_of(const cJSON *object)
{
	const cJSON *name = kjson_path(object, "metadata", "name", NULL), *x;
	size_t n = cJSON_IsString(name) ? strlen(name->valuestring) + 1 : 0;

	cJSON_ArrayForEach(x,
			   kjson_path(object, "metadata", "labels", NULL)) if (x->string && cJSON_IsString(x))
		n += strlen(x->string) + strlen(x->valuestring) + 2;
	cJSON_ArrayForEach(x, kjson_path(object, "spec", "taints", NULL))
	{
		const cJSON *key = kjson_value(x, "key"), *value = kjson_value(x, "value");

		n += (cJSON_IsString(key) ? strlen(key->valuestring) : 0) +
		     (cJSON_IsString(value) ? strlen(value->valuestring) : 0) + 2;
	}
	/* A chunk takes strings up to a quarter of its size (longer ones get a
	 * block of their own), so four times the longest fits too. */
	return n * 4 > NODE_CHUNK ? n + 64 : NODE_CHUNK;
}

int topo_cache_node_put(struct topo_cache *c, const cJSON *object, char **cause)
{
	struct topo_store store = { .chunk = strings_of(object) };
	struct cache_node *n = calloc(1, sizeof(*n));
	struct topo_node_object decoded;
	struct slot *s = NULL;
	int rc = -1;

	if (!n)
		return cause_fail(cause, "out of memory");
	if (topo_node_decode(&store, object, "node", &c->resources, &decoded, cause))
		goto out;
	s = slot_of(c, decoded.node.name);
	if (!s || compact(c, &decoded.node, s->name, n)) {
		cause_fail(cause, "out of memory");
		goto out;
	}
	if (s->node) {
		c->node_bytes -= node_size(s->node);
		free_node(c, s->node);
	} else {
		c->node_count++;
	}
	s->node = n;
	c->node_bytes += node_size(n);
	n = NULL;
	rc = 0;
out:
	free_node(c, n);
	if (s && rc)
		slot_release(c, s);
	topo_store_free(&store);
	return rc;
}

void topo_cache_node_delete(struct topo_cache *c, const char *name)
{
	struct slot *s = (struct slot *)name_table_find(&c->slots, "", name);

	if (!s || !s->node)
		return;
	c->node_bytes -= node_size(s->node);
	free_node(c, s->node);
	s->node = NULL;
	c->node_count--;
	slot_release(c, s);
}

/* ---- pods ---- */

/* The interned shape of a request vector (its pod count not raised), or
 * UINT32_MAX without memory. */
static uint32_t intern(struct topo_cache *c, const int64_t *requests)
{
	size_t free_at = c->shape_count;

	for (size_t i = 0; i < c->shape_count; i++) {
		if (c->shapes[i].pods == 0) {
			if (free_at == c->shape_count)
				free_at = i;
			continue;
		}
		if (memcmp(c->shapes[i].requests, requests, sizeof(c->shapes[i].requests)) == 0)
			return (uint32_t)i;
	}
	if (free_at == c->shape_count) {
		if (c->shape_count == c->shape_cap) {
			size_t cap = c->shape_cap ? c->shape_cap * 2 : 16;
			struct shape *grown = realloc(c->shapes, cap * sizeof(*grown));

			if (!grown)
				return UINT32_MAX;
			c->shapes = grown;
			c->shape_cap = cap;
		}
		c->shape_count++;
	}
	memcpy(c->shapes[free_at].requests, requests, sizeof(c->shapes[free_at].requests));
	c->shapes[free_at].pods = 0;
	return (uint32_t)free_at;
}

/* Adds (sign 1) or removes (sign -1) a pod's use on its slot. */
static void account(struct topo_cache *c, struct cache_pod *p, int sign)
{
	struct shape *sh = &c->shapes[p->shape];

	for (size_t r = 0; r < c->resources.resource_count; r++)
		p->slot->used[r] += sign * sh->requests[r];
	if (sign > 0) {
		p->slot->pods++;
		if (sh->pods++ == 0)
			c->shapes_used++;
	} else {
		p->slot->pods--;
		if (--sh->pods == 0)
			c->shapes_used--;
	}
}

static size_t pod_size(const struct cache_pod *p)
{
	return sizeof(*p) + strlen(p->key.namespace) + strlen(p->key.name) + 2 + 16;
}

static void drop_pod(struct topo_cache *c, struct cache_pod *p)
{
	struct slot *s = p->slot;

	account(c, p, -1);
	name_table_remove(&c->pods, &p->key);
	c->pod_bytes -= pod_size(p);
	c->pod_count--;
	free(p);
	slot_release(c, s);
}

int topo_cache_pod_put(struct topo_cache *c, const cJSON *object, char **cause)
{
	struct topo_pod_usage usage;
	const char *namespace = NULL;
	struct cache_pod *p, *old;
	int64_t requests[TOPO_RESOURCES_MAX] = { 0 };
	size_t ns_len, name_len;
	uint32_t shape;
	struct slot *s;

	if (topo_pod_usage_decode(object, "pod", &usage, cause))
		return -1;
	if (kjson_string(kjson_path(object, "metadata", "namespace", NULL), 253, &namespace) != KJSON_OK ||
	    !usage.name)
		return cause_fail(cause, "pod: metadata.name and metadata.namespace are needed");
	if (!namespace)
	namespace = "";
	old = (struct cache_pod *)name_table_find(&c->pods, namespace, usage.name);
	if (!usage.holds) {
		if (old)
			drop_pod(c, old);
		return 0;
	}
	for (size_t i = 0; i < usage.requests.count; i++) {
		int r = topo_resource_index(&c->resources, usage.requests.names[i]);

		if (r >= 0)
			requests[r] = usage.requests.values[i];
	}
	if (c->pods_resource >= 0)
		requests[c->pods_resource] = 1;
	shape = intern(c, requests);
	s = slot_of(c, usage.node_name);
	if (shape == UINT32_MAX || !s) {
		if (s)
			slot_release(c, s);
		return cause_fail(cause, "out of memory");
	}
	if (old && old->slot == s && old->shape == shape)
		return 0; /* the same use: most updates are status only */
	ns_len = strlen(namespace);
	name_len = strlen(usage.name);
	p = calloc(1, sizeof(*p) + ns_len + name_len + 2);
	if (!p) {
		slot_release(c, s);
		return cause_fail(cause, "out of memory");
	}
	memcpy(p->text, namespace, ns_len + 1);
	memcpy(p->text + ns_len + 1, usage.name, name_len + 1);
	p->key.namespace = p->text;
	p->key.name = p->text + ns_len + 1;
	p->slot = s;
	p->shape = shape;
	s->pods++; /* holds the slot while the old record goes */
	if (old)
		drop_pod(c, old);
	s->pods--;
	if (name_table_insert(&c->pods, &p->key)) {
		free(p);
		slot_release(c, s);
		return cause_fail(cause, "out of memory");
	}
	account(c, p, 1);
	c->pod_count++;
	c->pod_bytes += pod_size(p);
	return 0;
}

void topo_cache_pod_delete(struct topo_cache *c, const char *namespace, const char *name)
{
	struct cache_pod *p = (struct cache_pod *)name_table_find(&c->pods, namespace, name);

	if (p)
		drop_pod(c, p);
}

/* ---- snapshot ---- */

struct gather {
	struct topo_cache *c;
	size_t n;
};

static void gather_node(void *arg, struct name_node *key)
{
	struct gather *g = arg;
	struct slot *s = (struct slot *)key;
	struct topo_node *out;

	if (!s->node)
		return;
	out = &g->c->snapshot[g->n++];
	*out = s->node->node;
	for (size_t r = 0; r < g->c->resources.resource_count; r++)
		out->used[r] = s->used[r];
}

static int by_node_name(const void *a, const void *b)
{
	return strcmp(((const struct topo_node *)a)->name, ((const struct topo_node *)b)->name);
}

int topo_cache_cluster(struct topo_cache *c, struct topo_cluster *out, char **cause)
{
	struct gather g = { c, 0 };

	if (c->node_count > c->snapshot_cap) {
		struct topo_node *grown = realloc(c->snapshot, c->node_count * sizeof(*grown));

		if (!grown)
			return cause_fail(cause, "out of memory");
		c->snapshot = grown;
		c->snapshot_cap = c->node_count;
	}
	name_table_each(&c->slots, gather_node, &g);
	if (g.n > 1) /* qsort takes no NULL base, even for nothing */
		qsort(c->snapshot, g.n, sizeof(*c->snapshot), by_node_name);
	*out = c->resources;
	out->nodes = c->snapshot;
	out->node_count = g.n;
	return 0;
}

void topo_cache_stats(const struct topo_cache *c, struct topo_cache_stats *out)
{
	out->nodes = c->node_count;
	out->pods = c->pod_count;
	out->shapes = c->shapes_used;
	/* Each table's buckets, shared out by what they hold. */
	out->node_bytes = c->node_bytes + (c->slots.bucket_count + c->strings.bucket_count) * sizeof(void *);
	out->pod_bytes =
		c->pod_bytes + c->pods.bucket_count * sizeof(void *) + c->shape_cap * sizeof(struct shape);
}
