/*
 * topo_cache_bench: the controller's view of a large cluster, kept from
 * watch events (lib/topo/topo_cache): 10,000 Nodes with a dozen labels each
 * and 100,000 bound pods of 20 request shapes, put as a watch delivers them
 * (decoded from JSON one by one). Prints the memory held per pod and per
 * Node (the goals: at most 200 and 1,000 bytes), the rate of pod
 * events, and the time from a snapshot to a placement: the cluster out of
 * the cache, the tree, and a JobSet of 16 x 312 pods (2 cpu) with a rack per
 * Job and the block preferred (the goal for the decision: p99 under
 * 100 ms), median and worst of the runs.
 *
 *   topo_cache_bench [runs]
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "topo_cache.h"
#include "topo_place.h"
#include "topo_record.h"
#include "topo_tree.h"

#define NODES 10000
#define PODS 100000

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void put(struct topo_cache *c, int pod, const char *json)
{
	cJSON *t = cJSON_Parse(json);
	char *cause = NULL;

	if (!t || (pod ? topo_cache_pod_put(c, t, &cause) : topo_cache_node_put(c, t, &cause))) {
		fprintf(stderr, "%s: %s\n", json, cause ? cause : "not JSON");
		exit(1);
	}
	cJSON_Delete(t);
}

int main(int argc, char **argv)
{
	static const char *const resources[] = { "cpu", "memory", "pods", "nvidia.com/gpu" };
	static const char *const levels[] = { "block", "rack" };
	int runs = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 21;
	struct topo_cache *c;
	struct topo_cache_stats st;
	char json[2048], *cause = NULL;
	double start, pods_seconds, *times, parse_ms = 0;
	size_t record_bytes = 0;
	size_t base_bytes, heap_empty = 0, heap_nodes = 0, heap_pods = 0;

	if (runs < 1)
		runs = 1;
	times = calloc((size_t)runs, sizeof(double));
	if (!times || topo_cache_new(resources, 4, &c, &cause)) {
		fprintf(stderr, "setup: %s\n", cause ? cause : "out of memory");
		return 1;
	}
	heap_empty = mallinfo2().uordblks;
	for (int i = 0; i < NODES; i++) {
		snprintf(
			json, sizeof(json),
			"{\"metadata\":{\"name\":\"gke-a3-pool-%05d\",\"labels\":{\"block\":\"b%02d\",\"rack\":\"r%02d\","
			"\"kubernetes.io/hostname\":\"gke-a3-pool-%05d\",\"kubernetes.io/arch\":\"amd64\","
			"\"kubernetes.io/os\":\"linux\",\"node.kubernetes.io/instance-type\":\"a3-highgpu-8g\","
			"\"topology.kubernetes.io/region\":\"us-central1\",\"topology.kubernetes.io/zone\":\"us-central1-a\","
			"\"cloud.google.com/gke-nodepool\":\"a3-pool\",\"cloud.google.com/gke-accelerator\":\"nvidia-h100-80gb\","
			"\"cloud.google.com/gke-boot-disk\":\"pd-ssd\",\"beta.kubernetes.io/arch\":\"amd64\"}},"
			"\"spec\":{%s},\"status\":{\"allocatable\":{\"cpu\":\"208\",\"memory\":\"1800Gi\",\"pods\":\"110\","
			"\"nvidia.com/gpu\":\"8\",\"ephemeral-storage\":\"500Gi\"},\"conditions\":[{\"type\":\"Ready\","
			"\"status\":\"True\"}]}}",
			i, i / 1000, i / 20 % 50, i,
			i % 50 == 0
				? "\"taints\":[{\"key\":\"nvidia.com/gpu\",\"value\":\"present\",\"effect\":\"NoSchedule\"}]"
				: "");
		put(c, 0, json);
	}
	topo_cache_stats(c, &st);
	base_bytes = st.pod_bytes;
	heap_nodes = mallinfo2().uordblks;
	start = now();
	for (int i = 0; i < PODS; i++) {
		snprintf(
			json, sizeof(json),
			"{\"metadata\":{\"namespace\":\"team-%02d\",\"name\":\"train-%04d-workers-%d-%d-x7k2q\"},"
			"\"spec\":{\"nodeName\":\"gke-a3-pool-%05d\",\"containers\":[{\"name\":\"main\",\"resources\":{"
			"\"requests\":{\"cpu\":\"%dm\",\"memory\":\"%dGi\"}}}],\"initContainers\":[{\"name\":\"init\","
			"\"resources\":{\"requests\":{\"cpu\":\"10m\"}}}]},\"status\":{\"phase\":\"Running\"}}",
			i % 40, i / 250, i / 25 % 10, i % 25, i % NODES, 500 * (1 + i % 20), 1 + i % 7);
		put(c, 1, json);
	}
	pods_seconds = now() - start;
	heap_pods = mallinfo2().uordblks;
	topo_cache_stats(c, &st);
	printf("topo_cache_bench: %d Nodes (13 labels, 5 allocatable resources), %d bound pods of %zu shapes\n",
	       NODES, PODS, st.shapes);
	printf("  memory per pod  %6.1f bytes (goal <= 200), per Node %6.1f bytes (goal <= 1,000)\n",
	       (double)(st.pod_bytes - base_bytes) / (double)st.pods,
	       (double)st.node_bytes / (double)st.nodes);
	printf("  heap in use     %6.1f bytes per pod, %6.1f per Node (glibc's mallinfo2: bytes in allocated chunks)\n",
	       (double)(heap_pods - heap_nodes) / PODS, (double)(heap_nodes - heap_empty) / NODES);
	printf("  pod events      %6.0f per second (decoding from JSON included)\n", PODS / pods_seconds);
	for (int r = 0; r < runs; r++) {
		struct topo_cluster cl;
		struct topo_tree *t;
		struct topo_group g = { .name = "workers", .replicas = 16, .pods = 312 };
		struct topo_request req = { .groups = &g,
					    .group_count = 1,
					    .whole = { TOPO_MODE_PREFERRED, 1 } };
		struct topo_placement *p = NULL;
		struct topo_record *rec = NULL;
		char *text = NULL;

		g.shape.requests[0] = 2000;
		g.constraint = (struct topo_constraint){ TOPO_MODE_REQUIRED, 2 };
		start = now();
		if (topo_cache_cluster(c, &cl, &cause) ||
		    !(t = topo_tree_from_levels(&cl, levels, 2, &cause)) || topo_place(t, &req, &p, &cause) ||
		    topo_record_encode(t, &req, p, "uid", 0, &text, &cause)) {
			fprintf(stderr, "placement: %s\n", cause ? cause : "out of memory");
			return 1;
		}
		times[r] = now() - start;
		record_bytes = strlen(text);
		start = now();
		if (topo_record_parse(text, strlen(text), &rec, &cause)) {
			fprintf(stderr, "record: %s\n", cause ? cause : "out of memory");
			return 1;
		}
		parse_ms = (now() - start) * 1000;
		topo_record_free(rec);
		free(text);
		topo_placement_free(p);
		topo_tree_free(t);
	}
	qsort(times, (size_t)runs, sizeof(double), cmp_double);
	printf("  decision        snapshot + tree + placement of 4,992 pods + the record's text: median %.1f ms,\n"
	       "                  worst %.1f ms of %d runs (goal: under 100 ms at the 99th percentile; the\n"
	       "                  record's write to the API not included)\n",
	       times[runs / 2] * 1000, times[runs - 1] * 1000, runs);
	printf("  record          %zu bytes for 4,992 pods (runs of consecutive ranks); parsed by the pod route in %.2f ms\n",
	       record_bytes, parse_ms);
	free(times);
	topo_cache_free(c);
	return 0;
}
