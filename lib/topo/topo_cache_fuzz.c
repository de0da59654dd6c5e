/*
 * libFuzzer target for topo_cache: the input is a script of watch events
 * (each byte pair picks an operation and its arguments: a Node or a pod put
 * with a few names, nodes, phases and requests, or deleted, and now and then
 * a raw JSON object taken from the input, put into a cache of its own). After
 * every step the snapshot's
 * use of each node must equal the sum over the pods the script says are
 * bound there and not ended, and the cache must never hold a pod it was
 * told is gone.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "topo_cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NODES 4
#define PODS 8

struct model {
	int node_known[NODES], node_ready[NODES];
	int pod_node[PODS]; /* -1: not holding */
	int pod_cpu[PODS];
};

static void put(struct topo_cache *c, int pod, const char *json)
{
	cJSON *t = cJSON_Parse(json);
	char *cause = NULL;

	if (!t)
		abort();
	if ((pod ? topo_cache_pod_put(c, t, &cause) : topo_cache_node_put(c, t, &cause)) != 0)
		abort(); /* the script writes only good objects */
	cJSON_Delete(t);
}

static void check(struct topo_cache *c, const struct model *m)
{
	struct topo_cluster cl;
	struct topo_cache_stats st;
	char *cause = NULL;
	size_t want_nodes = 0, want_pods = 0;

	if (topo_cache_cluster(c, &cl, &cause))
		abort();
	for (int n = 0; n < NODES; n++)
		want_nodes += m->node_known[n];
	if (cl.node_count != want_nodes)
		abort();
	for (size_t i = 0; i < cl.node_count; i++) {
		int n = cl.nodes[i].name[1] - '0';
		int64_t cpu = 0, pods = 0;

		if (cl.nodes[i].not_ready != !m->node_ready[n]) /* kept, marked */
			abort();

		for (int p = 0; p < PODS; p++)
			if (m->pod_node[p] == n) {
				cpu += m->pod_cpu[p];
				pods++;
			}
		if (cl.nodes[i].used[0] != cpu || cl.nodes[i].used[1] != pods)
			abort();
	}
	for (int p = 0; p < PODS; p++)
		want_pods += m->pod_node[p] >= 0;
	topo_cache_stats(c, &st);
	if (st.pods != want_pods)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const resources[] = { "cpu", "pods" };
	struct topo_cache *c, *raw;
	struct model m;
	char json[512], *cause = NULL;

	if (topo_cache_new(resources, 2, &c, &cause) || topo_cache_new(resources, 2, &raw, &cause))
		abort();
	memset(&m, 0, sizeof(m));
	for (int p = 0; p < PODS; p++)
		m.pod_node[p] = -1;
	for (size_t i = 0; i + 1 < size; i += 2) {
		uint8_t op = data[i] % 6, arg = data[i + 1];
		int n = arg % NODES, p = (arg >> 2) % PODS;

		switch (op) {
		case 0: /* a Node, Ready or not */
			m.node_known[n] = 1;
			m.node_ready[n] = !(arg & 0x80);
			snprintf(
				json, sizeof(json),
				"{\"metadata\":{\"name\":\"n%d\",\"labels\":{\"rack\":\"r%d\"}},\"status\":{\"allocatable\":"
				"{\"cpu\":\"64\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
				n, n % 2, m.node_ready[n] ? "True" : "False");
			put(c, 0, json);
			break;
		case 1:
			m.node_known[n] = 0;
			topo_cache_node_delete(c, (char[]){ 'n', (char)('0' + n), 0 });
			break;
		case 2: /* a pod bound and running, or ended */
		case 3: {
			int ended = op == 3, cpu = 100 * (1 + (arg >> 5));

			snprintf(
				json, sizeof(json),
				"{\"metadata\":{\"namespace\":\"ns\",\"name\":\"p%d\"},\"spec\":{\"nodeName\":\"n%d\","
				"\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"%dm\"}}}]},\"status\":{\"phase\":"
				"\"%s\"}}",
				p, n, cpu, ended ? "Succeeded" : "Running");
			put(c, 1, json);
			m.pod_node[p] = ended ? -1 : n;
			m.pod_cpu[p] = cpu;
			break;
		}
		case 4: {
			char name[8];

			snprintf(name, sizeof(name), "p%d", p);
			topo_cache_pod_delete(c, "ns", name);
			m.pod_node[p] = -1;
			break;
		}
		default: { /* raw bytes as an object: decoded or refused, never half applied */
			size_t len = arg % 64 < size - i - 2 ? arg % 64 : size - i - 2;
			char *text = malloc(len + 1);
			cJSON *t;

			if (!text)
				abort();
			memcpy(text, data + i + 2, len);
			text[len] = '\0';
			t = cJSON_Parse(text);
			if (t) { /* into a cache of their own: the model is the script's */
				if (topo_cache_pod_put(raw, t, &cause) != 0 && !cause)
					abort();
				free(cause);
				cause = NULL;
				if (topo_cache_node_put(raw, t, &cause) != 0 && !cause)
					abort();
				free(cause);
				cause = NULL;
			}
			cJSON_Delete(t);
			free(text);
			i += len;
			break;
		}
		}
		check(c, &m);
	}
	topo_cache_free(c);
	topo_cache_free(raw);
	return 0;
}
