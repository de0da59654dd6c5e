/*
 * topo_bench: speed, memory and quality of the placement core.
 *
 *   1. The case: 10 blocks x 50 racks x 20 hosts (10,000 nodes) at
 *      random usage (uniform 0-100%, 50% on average), a JobSet of 16 jobs of
 *      312 pods (2 cpu each), rack required per job, block preferred for the
 *      whole: time of the tree build and of topo_place (median of runs), and
 *      the process's peak RSS (ru_maxrss, includes the generated input).
 *   2. The curve: the same JobSet on 1,000 to 100,000 nodes.
 *      The case also shows its quality figures against the Kueue- and
 *      Volcano-style baselines written here after the upstream algorithms (a
 *      best-fit rack per job, then the largest hosts first; the most used
 *      HyperNode and hosts): placed, one block, hosts per job, largest free rack.
 *   3. The node-level search at scale; slices kept whole at scale.
 *   4. End to end as muster-topology meets it: 10,000 Nodes as kubectl
 *      writes them and the JobSet in YAML decoded, the tree, the placement.
 *   5. Quality (issue 36, topo_quality.h): random small cases placed by
 *      muster, by Kueue's greedy BestFit and by an exhaustive search; per
 *      figure the share of cases where muster is as good as the greedy,
 *      where it is better, the three means, and the verdicts.
 *
 *   topo_bench [--quality-cases N] [--quality-examples N] [--quality-only] [runs]
 *
 *   --quality-cases: how many quality cases (100,000; `make bench-micro
 *   BENCH_SIZE=ci` runs 10,000); --quality-examples N: print up to N cases
 *   where muster is worse than the greedy on some figure; --quality-only:
 *   section 5 alone.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "topo_input.h"
#include "topo_place.h"
#include "topo_quality.h"
#include "topo_tree.h"

#define CPU_PER_HOST 64000
#define POD_CPU 2000

struct gen {
	struct topo_cluster cluster;
	struct topo_node *nodes;
	struct topo_label *labels;
	char *strings;
};

static uint64_t rng = 1;

static uint32_t rnd(uint32_t n)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)((rng >> 33) % n);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *const LEVELS[] = { "block", "rack", "kubernetes.io/hostname" };

/* blocks x racks x hosts nodes with `cpu_per_host`, usage drawn per node by `usage_pct` (-1: uniform 0-100).
 */
static void gen_cluster(struct gen *g, uint32_t blocks, uint32_t racks, uint32_t hosts, int64_t cpu_per_host,
			int usage_pct)
{
	size_t n = (size_t)blocks * racks * hosts, i = 0;

	g->nodes = calloc(n, sizeof(*g->nodes));
	g->labels = calloc(n * 3, sizeof(*g->labels));
	g->strings = calloc(n, 64);
	if (!g->nodes || !g->labels || !g->strings) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	g->cluster.resources[0] = "cpu";
	g->cluster.resources[1] = "pods";
	g->cluster.resource_count = 2;
	g->cluster.nodes = g->nodes;
	g->cluster.node_count = n;
	for (uint32_t b = 0; b < blocks; b++)
		for (uint32_t r = 0; r < racks; r++)
			for (uint32_t h = 0; h < hosts; h++, i++) {
				char *s = g->strings + i * 64;
				int pct = usage_pct < 0 ? (int)rnd(101) : usage_pct;

				snprintf(s, 32, "b%04u-r%03u-h%02u", b % 10000, r % 1000, h % 100);
				snprintf(s + 32, 16, "b%04u", b % 10000);
				snprintf(s + 48, 16, "r%03u", r % 1000);
				g->labels[i * 3] = (struct topo_label){ "block", s + 32 };
				g->labels[i * 3 + 1] = (struct topo_label){ "rack", s + 48 };
				g->labels[i * 3 + 2] = (struct topo_label){ "kubernetes.io/hostname", s };
				g->nodes[i].name = s;
				g->nodes[i].labels = &g->labels[i * 3];
				g->nodes[i].label_count = 3;
				g->nodes[i].allocatable[0] = cpu_per_host;
				g->nodes[i].allocatable[1] = 110;
				g->nodes[i].used[0] = cpu_per_host * pct / 100 / 1000 * 1000;
			}
}

static void gen_free(struct gen *g)
{
	free(g->nodes);
	free(g->labels);
	free(g->strings);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static long peak_rss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* Hosts used per job, whether all jobs share one block, largest free rack. */
struct quality {
	int placed;
	int one_block;
	double hosts_per_job;
	uint64_t largest_free_rack;
};

/* Free pods per rack after `taken[node]` pods, largest. */
static uint64_t largest_free_rack(const struct topo_tree *t, const uint32_t *fit, const uint32_t *taken)
{
	uint64_t best = 0;

	for (uint32_t d = 0; d < t->domain_count; d++) {
		uint64_t sum = 0;

		if (t->domains[d].level != 2)
			continue;
		for (uint32_t c = d; c < t->domains[d].end; c++)
			if (t->domains[c].node != TOPO_NONE)
				sum += fit[t->domains[c].node] - taken[t->domains[c].node];
		if (sum > best)
			best = sum;
	}
	return best;
}

static uint32_t ancestor(const struct topo_tree *t, uint32_t d, size_t level)
{
	while (t->domains[d].level > level)
		d = t->domains[d].parent;
	return d;
}

static struct quality quality_of_muster(const struct topo_tree *t, const struct topo_request *req,
					const uint32_t *fit, uint32_t *taken)
{
	struct quality q = { 0 };
	struct topo_placement *p = NULL;
	char *cause = NULL;
	size_t n = t->cluster->node_count, hosts = 0;

	memset(taken, 0, n * sizeof(*taken));
	if (topo_place(t, req, &p, &cause) != 0) {
		free(cause);
		return q;
	}
	q.placed = 1;
	q.one_block = 1;
	for (size_t i = 0; i < p->pod_count; i++) {
		taken[p->pods[i].node]++;
		if (i == 0 || p->pods[i].node != p->pods[i - 1].node ||
		    p->pods[i].job_index != p->pods[i - 1].job_index)
			hosts++;
		if (ancestor(t, t->node_domain[p->pods[i].node], 1) !=
		    ancestor(t, t->node_domain[p->pods[0].node], 1))
			q.one_block = 0;
	}
	q.hosts_per_job = (double)hosts / p->instance_count;
	q.largest_free_rack = largest_free_rack(t, fit, taken);
	topo_placement_free(p);
	return q;
}

/* Baselines: both take the instances in order, a rack each (required), and hosts inside. */
enum baseline { KUEUE, VOLCANO };

static int by_free_desc_hosts;

static struct quality quality_of_baseline(enum baseline kind, const struct topo_tree *t, uint32_t jobs,
					  uint32_t pods, const uint32_t *fit, uint32_t *taken)
{
	const struct topo_cluster *c = t->cluster;
	struct quality q = { .placed = 1, .one_block = 1 };
	size_t hosts = 0;
	uint32_t first_block = TOPO_NONE;

	(void)by_free_desc_hosts;
	memset(taken, 0, c->node_count * sizeof(*taken));
	for (uint32_t j = 0; j < jobs; j++) {
		uint32_t best = TOPO_NONE;
		double best_score = 0;

		for (uint32_t d = 0; d < t->domain_count; d++) {
			uint64_t room = 0, cap = 0;
			double score;

			if (t->domains[d].level != 2)
				continue;
			for (uint32_t x = d; x < t->domains[d].end; x++)
				if (t->domains[x].node != TOPO_NONE) {
					uint32_t nn = t->domains[x].node;

					room += fit[nn] - taken[nn];
					cap += c->nodes[nn].allocatable[0] / POD_CPU;
				}
			if (room < pods)
				continue;
			/* Kueue: least spare capacity; Volcano: most utilised (binpack). */
			score = kind == KUEUE ? -(double)room : 1.0 - (double)room / (double)(cap ? cap : 1);
			if (best == TOPO_NONE || score > best_score) {
				best = d;
				best_score = score;
			}
		}
		if (best == TOPO_NONE) {
			q.placed = 0;
			return q;
		}
		if (first_block == TOPO_NONE)
			first_block = ancestor(t, best, 1);
		else if (ancestor(t, best, 1) != first_block)
			q.one_block = 0;
		/* Hosts: Kueue takes the largest free first; Volcano the most used first. */
		for (uint32_t left = pods; left > 0;) {
			uint32_t pick = TOPO_NONE;
			double pick_score = 0;

			for (uint32_t x = best; x < t->domains[best].end; x++) {
				uint32_t nn = t->domains[x].node;
				double s;

				if (nn == TOPO_NONE || fit[nn] == taken[nn])
					continue;
				s = kind == KUEUE ? (double)(fit[nn] - taken[nn])
						  : (double)c->nodes[nn].used[0] /
								    (double)c->nodes[nn].allocatable[0] +
							    (double)taken[nn] / 1e6;
				if (pick == TOPO_NONE || s > pick_score) {
					pick = nn;
					pick_score = s;
				}
			}
			uint32_t n = fit[pick] - taken[pick] < left ? fit[pick] - taken[pick] : left;
			taken[pick] += n;
			left -= n;
			hosts++;
		}
	}
	q.hosts_per_job = (double)hosts / jobs;
	q.largest_free_rack = largest_free_rack(t, fit, taken);
	return q;
}

/* ---- quality: muster against Kueue's greedy BestFit and an exhaustive search ----
 *
 * topo_quality.h has the cases, the three placements and the measures.
 * `examples` > 0 prints that many cases where muster is worse than the
 * greedy on some figure (the debug mode). */
static void run_quality(size_t cases, size_t examples)
{
	struct topo_quality_report r;
	char *cause = NULL;
	double worst, stated_worst = 0.0, unbought_most = 0.0;
	int better_measures;
	size_t n;

	if (topo_quality_run(36, cases, examples, &r, &cause) != 0) {
		fprintf(stderr, "quality: %s\n", cause ? cause : "out of memory");
		exit(1);
	}
	n = r.compared;
	printf("\nquality: %zu random cases, 2 blocks x 2 racks x 2 hosts (4 cpu, 4 memory units) at random usage;\n"
	       "1-3 replicated jobs of 1-2 Jobs of 1-3 pods (at most 6 pods), two pod shapes (2 cpu + 1 mem,\n"
	       "1 cpu + 2 mem), each required or preferred at block or rack; the JobSet: no level, required or preferred\n"
	       "(block or rack)\n",
	       r.cases);
	printf("  placed: muster %zu, Kueue greedy (BestFit, a PodSet per Job) %zu, exhaustive %zu; compared (all three): %zu;\n"
	       "  the exhaustive search scored %zu complete assignments\n",
	       r.placed[TOPO_QUALITY_MUSTER], r.placed[TOPO_QUALITY_GREEDY],
	       r.placed[TOPO_QUALITY_EXHAUSTIVE], n, r.exhaustive_leaves);
	printf("  %-27s %-6s %9s %9s %8s %14s %8s %8s %10s\n", "figure (mean over compared)", "better",
	       "muster>=", "(Kueue's)", "muster>", "worse (buying)", "muster", "greedy", "exhaustive");
	for (int f = 0; f < TOPO_QUALITY_FIGURES; f++)
		printf("  %-27s %-6s %8.2f%% %8.2f%% %7.2f%% %6zu (%5zu) %8.3f %8.3f %10.3f\n",
		       topo_quality_figures[f].name, topo_quality_figures[f].lower_better ? "fewer" : "more",
		       n ? 100.0 * (double)r.as_good[f] / (double)n : 0.0,
		       r.stated ? 100.0 * (double)r.stated_as_good[f] / (double)r.stated : 0.0,
		       n ? 100.0 * (double)r.better[f] / (double)n : 0.0, n - r.as_good[f], r.worse_buying[f],
		       n ? r.sum[TOPO_QUALITY_MUSTER][f] / (double)n : 0.0,
		       n ? r.sum[TOPO_QUALITY_GREEDY][f] / (double)n : 0.0,
		       n ? r.sum[TOPO_QUALITY_EXHAUSTIVE][f] / (double)n : 0.0);
	printf("  (muster>= : cases where muster is as good as the greedy or better; (Kueue's): the same over the\n"
	       "   %zu compared cases Kueue can state, those with no JobSet-wide level; muster> : strictly better;\n"
	       "   worse: cases where it is worse, (buying): of them, those where its JobSet sits at a deeper\n"
	       "   level or meets more preferred levels than the greedy's; exhaustive: the best any placement\n"
	       "   reaches, each figure on its own; free domains in free pods of the JobSet's shapes)\n",
	       r.stated);
	printf("  against the greedy given the JobSet's level (greedy+: the JobSet's domain the best fit of\n"
	       "  its level holding every Job by the greedy; placed %zu, compared with muster %zu, every input):\n"
	       "  %-27s %-6s %9s %10s %8s %8s %8s\n",
	       r.placed[TOPO_QUALITY_GREEDY_WHOLE], r.whole_compared, "figure (mean over compared)", "better",
	       "muster>=", "(leveled)", "muster>", "muster", "greedy+");
	for (int f = 0; f < TOPO_QUALITY_FIGURES; f++)
		printf("  %-27s %-6s %8.2f%% %9.2f%% %7.2f%% %8.3f %8.3f\n", topo_quality_figures[f].name,
		       topo_quality_figures[f].lower_better ? "fewer" : "more",
		       r.whole_compared ? 100.0 * (double)r.whole_as_good[f] / (double)r.whole_compared : 0.0,
		       r.leveled_compared ? 100.0 * (double)r.leveled_as_good[f] / (double)r.leveled_compared
					  : 0.0,
		       r.whole_compared ? 100.0 * (double)r.whole_better[f] / (double)r.whole_compared : 0.0,
		       r.whole_compared ? r.whole_sum[0][f] / (double)r.whole_compared : 0.0,
		       r.whole_compared ? r.whole_sum[1][f] / (double)r.whole_compared : 0.0);
	printf("  ((leveled): the same over the %zu of them with a JobSet-wide level, where greedy+ differs\n"
	       "   from the greedy; greedy+ is muster's reading of Kueue given that level, which Kueue lacks)\n",
	       r.leveled_compared);
	topo_quality_verdicts(&r, &worst, &better_measures);
	printf("  verdict: muster as good as the greedy in >= 99%% of cases on every figure: %s (lowest %.2f%%)\n",
	       worst >= 0.99 ? "PASS" : "FAIL", 100.0 * worst);
	for (int f = 0; f < TOPO_QUALITY_FIGURES; f++) {
		double stated = r.stated ? (double)r.stated_as_good[f] / (double)r.stated : 0.0;
		double unbought = n ? (double)(n - r.as_good[f] - r.worse_buying[f]) / (double)n : 0.0;

		stated_worst = f == 0 || stated < stated_worst ? stated : stated_worst;
		unbought_most = unbought > unbought_most ? unbought : unbought_most;
	}
	printf("  verdict: the same over the cases Kueue can state: %s (lowest %.2f%%)\n",
	       stated_worst >= 0.99 ? "PASS" : "FAIL", 100.0 * stated_worst);
	printf("  verdict: as good as the greedy given the JobSet's level, every input: %s (lowest %.2f%%)\n",
	       topo_quality_whole_worst(&r, 0) >= 0.99 ? "PASS" : "FAIL",
	       100.0 * topo_quality_whole_worst(&r, 0));
	printf("  verdict: the same over the %zu with a JobSet-wide level: %s (lowest %.2f%%)\n",
	       r.leveled_compared, topo_quality_whole_worst(&r, 1) >= 0.99 ? "PASS" : "FAIL",
	       100.0 * topo_quality_whole_worst(&r, 1));
	printf("  verdict: worse on a figure, buying neither a tighter JobSet nor a preferred level,\n"
	       "  in <= 1%% of cases: %s (most %.2f%%)\n",
	       unbought_most <= 0.01 ? "PASS" : "FAIL", 100.0 * unbought_most);
	printf("  verdict: muster better on average on >= 2 of the 4 measures: %s (%d)\n",
	       better_measures >= 2 ? "PASS" : "FAIL", better_measures);
	if (r.example_count)
		printf("  cases where muster is worse than a greedy on some figure (figures in the order above):\n%s",
		       r.examples);
	topo_quality_report_free(&r);
}

/* ---- end to end: files decoded, tree built, JobSet placed ----
 *
 * The case as muster-topology meets it: 10,000 Nodes as
 * `kubectl get nodes -o json` writes them (labels, allocatable, a taint on
 * some) and a JobSet of 16 jobs of 312 pods in YAML, decoded by topo_input,
 * then the tree and the placement. */
static void run_end_to_end(int runs)
{
	size_t cap = 16u << 20, used = 0;
	char *nodes = malloc(cap);
	static const char jobset[] =
		"apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: train\n"
		"  annotations: {muster.dev/topology-preferred: block}\n"
		"spec:\n  replicatedJobs:\n  - name: workers\n    replicas: 16\n    template:\n      spec:\n"
		"        parallelism: 312\n        completions: 312\n        template:\n          metadata:\n"
		"            annotations:\n              kueue.x-k8s.io/podset-slice-required-topology: rack\n"
		"              kueue.x-k8s.io/podset-slice-size: '312'\n"
		"          spec: {containers: [{name: c, resources: {requests: {cpu: '2', memory: 4Gi}}}]}\n";
	double *times = calloc((size_t)runs, sizeof(double));

	if (!nodes || !times) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	rng = 5;
	used += (size_t)snprintf(nodes + used, cap - used,
				 "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[");
	for (uint32_t i = 0; i < 10000; i++)
		used += (size_t)snprintf(
			nodes + used, cap - used,
			"%s{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"b%02u-r%02u-h%02u\","
			"\"labels\":{\"block\":\"b%02u\",\"rack\":\"r%02u\",\"kubernetes.io/hostname\":\"b%02u-r%02u-h%02u\","
			"\"node.kubernetes.io/instance-type\":\"a3-highgpu-8g\",\"topology.kubernetes.io/zone\":\"z1\"}},"
			"\"spec\":{%s},\"status\":{\"allocatable\":{\"cpu\":\"%u\",\"memory\":\"1056Gi\",\"pods\":\"110\","
			"\"ephemeral-storage\":\"500Gi\",\"hugepages-2Mi\":\"0\"},\"conditions\":[{\"type\":\"Ready\","
			"\"status\":\"True\"}]}}",
			i ? "," : "", i / 1000, i / 20 % 50, i % 20, i / 1000, i / 20 % 50, i / 1000,
			i / 20 % 50, i % 20,
			i % 97 == 0 ? "\"taints\":[{\"key\":\"maintenance\",\"effect\":\"NoSchedule\"}]" : "",
			16 + rnd(49));
	used += (size_t)snprintf(nodes + used, cap - used, "]}");
	for (int r = 0; r < runs; r++) {
		struct topo_input in;
		struct topo_tree *t;
		struct topo_group groups[TOPO_GROUPS_MAX];
		struct topo_request req;
		struct topo_placement *p = NULL;
		char *cause = NULL;
		double start = now();

		memset(&in, 0, sizeof(in));
		if (topo_input_jobset(&in, jobset, sizeof(jobset) - 1, &cause) ||
		    topo_input_nodes(&in, nodes, used, &cause) ||
		    !(t = topo_tree_from_levels(&in.cluster, LEVELS, 2, &cause)) ||
		    topo_jobset_place(&in.jobset, t, groups, &req, &p, &cause)) {
			fprintf(stderr, "end to end: %s\n", cause ? cause : "out of memory");
			exit(1);
		}
		times[r] = now() - start;
		if (p->pod_count != 16 * 312) {
			fprintf(stderr, "end to end: %zu pods placed\n", p->pod_count);
			exit(1);
		}
		topo_placement_free(p);
		topo_tree_free(t);
		topo_input_free(&in);
	}
	qsort(times, (size_t)runs, sizeof(double), cmp_double);
	printf("\nend to end (decode %zu bytes of kubectl JSON for 10,000 nodes + the JobSet in YAML, tree, place\n"
	       "4,992 pods; the goal is under 0.5 s): median %.1f ms, max %.1f ms of %d runs\n",
	       used, times[runs / 2] * 1000, times[runs - 1] * 1000, runs);
	free(times);
	free(nodes);
}

static void run_case(uint32_t blocks, int runs, int detail)
{
	struct gen g = { 0 };
	struct topo_tree *t = NULL;
	struct topo_group grp;
	struct topo_request req = { .groups = &grp, .group_count = 1 };
	struct topo_placement *p = NULL;
	char *cause = NULL;
	double times[64], build[64];
	uint32_t *fit, *taken;

	rng = 12345;
	gen_cluster(&g, blocks, 50, 20, CPU_PER_HOST, -1);
	memset(&grp, 0, sizeof(grp));
	grp.name = "workers";
	grp.replicas = 16;
	grp.pods = 312;
	grp.shape.requests[0] = POD_CPU;
	grp.constraint = (struct topo_constraint){ TOPO_MODE_REQUIRED, 2 };
	req.whole = (struct topo_constraint){ TOPO_MODE_PREFERRED, 1 };
	if (runs > 64)
		runs = 64;
	for (int r = 0; r < runs; r++) {
		double t0 = now(), t1;

		t = topo_tree_from_levels(&g.cluster, LEVELS, 3, &cause);
		if (!t) {
			fprintf(stderr, "tree: %s\n", cause);
			exit(1);
		}
		t1 = now();
		if (topo_place(t, &req, &p, &cause) != 0) {
			printf("refused: %s\n", cause);
			free(cause);
			cause = NULL;
		}
		times[r] = now() - t1;
		build[r] = t1 - t0;
		if (r + 1 < runs) {
			topo_placement_free(p);
			p = NULL;
			topo_tree_free(t);
		}
	}
	qsort(times, (size_t)runs, sizeof(double), cmp_double);
	qsort(build, (size_t)runs, sizeof(double), cmp_double);
	printf("  %7zu nodes  %5zu domains  tree %7.2f ms  place %7.2f ms  descents %zu  peak RSS %ld MB\n",
	       g.cluster.node_count, t->domain_count, build[runs / 2] * 1e3, times[runs / 2] * 1e3,
	       p ? p->descents : 0, peak_rss_kb() / 1024);
	if (detail && p) {
		struct quality q[3];

		fit = calloc(g.cluster.node_count, sizeof(*fit));
		taken = calloc(g.cluster.node_count, sizeof(*taken));
		for (size_t i = 0; i < g.cluster.node_count; i++)
			fit[i] = (uint32_t)((g.nodes[i].allocatable[0] - g.nodes[i].used[0]) / POD_CPU);
		q[0] = quality_of_muster(t, &req, fit, taken);
		q[1] = quality_of_baseline(KUEUE, t, 16, 312, fit, taken);
		q[2] = quality_of_baseline(VOLCANO, t, 16, 312, fit, taken);
		printf("    quality here: %-20s placed %d  one block %d  hosts/job %.1f  largest free rack %llu\n",
		       "muster", q[0].placed, q[0].one_block, q[0].hosts_per_job,
		       (unsigned long long)q[0].largest_free_rack);
		printf("                  %-20s placed %d  one block %d  hosts/job %.1f  largest free rack %llu\n",
		       "Kueue-style", q[1].placed, q[1].one_block, q[1].hosts_per_job,
		       (unsigned long long)q[1].largest_free_rack);
		printf("                  %-20s placed %d  one block %d  hosts/job %.1f  largest free rack %llu\n",
		       "Volcano-style", q[2].placed, q[2].one_block, q[2].hosts_per_job,
		       (unsigned long long)q[2].largest_free_rack);
		free(fit);
		free(taken);
	}
	topo_placement_free(p);
	topo_tree_free(t);
	gen_free(&g);
}

/* Places `req` `runs` times (at most 64); the median time in seconds, and
 * the last run's placement or cause. */
static double place_median(const struct topo_tree *t, const struct topo_request *req, int runs,
			   struct topo_placement **p, char **cause)
{
	double times[64];

	for (int r = 0; r < runs; r++) {
		double t0 = now();

		topo_placement_free(*p);
		*p = NULL;
		free(*cause);
		*cause = NULL;
		topo_place(t, req, p, cause);
		times[r] = now() - t0;
	}
	qsort(times, (size_t)runs, sizeof(double), cmp_double);
	return times[runs / 2];
}

/* The node-level search at scale (lib/topo/topo_place_node.c): 3,000 nodes
 * of one shape (3 blocks x 50 racks x 20 hosts of 64 cpu, 16 pod slots).
 * A JobSet the greedy descent places (16 Jobs x 312 pods, rack each, 4,992
 * pods) and one it cannot, which only a search can refuse (the whole JobSet
 * in one rack: 250 pods of 1 cpu and 6 of 60 cpu, which need hosts holding
 * at most 4 of the small ones; the racks' free cpu and pod slots would hold
 * both): the search runs to its step budget, and the refusal says so. */
static void run_exact_scale(int runs)
{
	struct gen g = { 0 };
	struct topo_tree *t;
	struct topo_group grp[2];
	struct topo_request req = { .groups = grp };
	struct topo_placement *p = NULL;
	char *cause = NULL;
	double median;

	rng = 777;
	gen_cluster(&g, 3, 50, 20, 64000, 0);
	for (size_t i = 0; i < g.cluster.node_count; i++)
		g.nodes[i].allocatable[1] = 16;
	t = topo_tree_from_levels(&g.cluster, LEVELS, 3, &cause);
	if (!t) {
		fprintf(stderr, "tree: %s\n", cause);
		exit(1);
	}
	printf("\nthe node-level search at scale: %zu nodes of one shape (64 cpu, 16 pods)\n",
	       g.cluster.node_count);
	for (int which = 0; which < 2; which++) {
		memset(grp, 0, sizeof(grp));
		if (which == 0) {
			grp[0] = (struct topo_group){ .name = "workers", .replicas = 16, .pods = 312 };
			grp[0].shape.requests[0] = 2000;
			grp[0].constraint = (struct topo_constraint){ TOPO_MODE_REQUIRED, 2 };
			req.group_count = 1;
			req.whole = (struct topo_constraint){ TOPO_MODE_PREFERRED, 1 };
		} else {
			grp[0] = (struct topo_group){ .name = "small", .replicas = 1, .pods = 250 };
			grp[0].shape.requests[0] = 1000;
			grp[1] = (struct topo_group){ .name = "large", .replicas = 1, .pods = 6 };
			grp[1].shape.requests[0] = 60000;
			req.group_count = 2;
			req.whole = (struct topo_constraint){ TOPO_MODE_REQUIRED, 2 };
		}
		median = place_median(t, &req, runs, &p, &cause);
		if (which == 0)
			printf("  16 x 312 pods, rack each, block preferred: %s in %.2f ms\n",
			       p ? "placed" : "refused", median * 1e3);
		else
			printf("  250 + 6 pods of two shapes in one rack: %.2f ms, %s%.150s\n", median * 1e3,
			       p ? "placed" : "refused: ", cause ? cause : "");
	}
	topo_placement_free(p);
	free(cause);
	topo_tree_free(t);
	gen_free(&g);
}

/* Slices kept whole below their level, at scale: on 10,000 nodes (2 blocks
 * x 250 racks x 20 hosts of 64 cpu) 50 Jobs of 100 pods, each a slice of its
 * block; and a refusal whose search backtracks over slices (8 blocks x 50
 * racks x 20 hosts of 2 cpu; 5 x 900 pods in slices of 2 per block, then 41
 * pods in one rack, which no rack holds), where every try descends again. */
static void run_slices_scale(int runs)
{
	for (int which = 0; which < 2; which++) {
		struct gen g = { 0 };
		struct topo_tree *t;
		struct topo_group grp[2];
		struct topo_request req = { .groups = grp };
		struct topo_placement *p = NULL;
		char *cause = NULL;
		double median;

		rng = 99;
		if (which == 0)
			gen_cluster(&g, 2, 250, 20, 64000, 0);
		else
			gen_cluster(&g, 8, 50, 20, 2000, 0);
		t = topo_tree_from_levels(&g.cluster, LEVELS, 3, &cause);
		if (!t) {
			fprintf(stderr, "tree: %s\n", cause);
			exit(1);
		}
		memset(grp, 0, sizeof(grp));
		if (which == 0) {
			grp[0] = (struct topo_group){ .name = "workers", .replicas = 1, .pods = 5000 };
			grp[0].job_pods = 100;
			grp[0].slice_size = 100;
			req.group_count = 1;
		} else {
			grp[0] = (struct topo_group){ .name = "x", .replicas = 5, .pods = 900 };
			grp[0].slice_size = 2;
			grp[0].constraint = (struct topo_constraint){ TOPO_MODE_REQUIRED, 1 };
			grp[1] = (struct topo_group){ .name = "y", .replicas = 1, .pods = 41 };
			grp[1].shape.requests[0] = 1000;
			grp[1].constraint = (struct topo_constraint){ TOPO_MODE_REQUIRED, 2 };
			req.group_count = 2;
			req.exact_budget = 1;
		}
		grp[0].shape.requests[0] = which == 0 ? POD_CPU : 1000;
		grp[0].slice_level = 1;
		median = place_median(t, &req, runs, &p, &cause);
		if (which == 0)
			printf("\nslices kept whole below their level (%zu nodes):\n"
			       "  50 Jobs of 100 pods, each a slice of a block: %s in %.2f ms\n",
			       g.cluster.node_count, p ? "placed" : "refused", median * 1e3);
		else
			printf("  5 x 900 pods in slices of 2 per block, then 41 in one rack (%zu nodes, "
			       "backtracking): %.2f ms, %s%.100s\n",
			       g.cluster.node_count, median * 1e3,
			       p ? "placed" : "refused: ", cause ? cause : "");
		topo_placement_free(p);
		free(cause);
		topo_tree_free(t);
		gen_free(&g);
	}
}

static void usage(void)
{
	fprintf(stderr,
		"usage: topo_bench [--quality-cases N] [--quality-examples N] [--quality-only] [runs]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int runs = 21, quality_only = 0;
	size_t cases = 100000, examples = 0;
	static const uint32_t curve[] = { 1, 2, 5, 10, 20, 50, 100 };

	for (int i = 1; i < argc; i++) {
		char *end = NULL;

		if (strcmp(argv[i], "--quality-only") == 0) {
			quality_only = 1;
		} else if (strcmp(argv[i], "--quality-cases") == 0 ||
			   strcmp(argv[i], "--quality-examples") == 0) {
			unsigned long long v;

			if (i + 1 >= argc)
				usage();
			v = strtoull(argv[i + 1], &end, 10);
			if (*end || v > 10000000)
				usage();
			*(strcmp(argv[i], "--quality-cases") == 0 ? &cases : &examples) = (size_t)v;
			i++;
		} else {
			long v = strtol(argv[i], &end, 10);

			if (*end || v < 1 || v > 64)
				usage();
			runs = (int)v;
		}
	}
	if (quality_only) {
		run_quality(cases, examples);
		return 0;
	}
	printf("topo_bench: JobSet of 16 jobs x 312 pods (2 cpu), rack required per job, block preferred;\n"
	       "hosts of 64 cpu at uniform random usage; blocks x 50 racks x 20 hosts; median of %d runs\n\n",
	       runs);
	printf("the issue's case:\n");
	run_case(10, runs, 1);
	printf("\ncurve (each row in a fresh process would show its own RSS; here RSS is the high-water mark so far):\n");
	for (size_t i = 0; i < sizeof(curve) / sizeof(curve[0]); i++)
		run_case(curve[i], curve[i] >= 50 ? 5 : runs, 0);
	run_exact_scale(runs < 5 ? runs : 5);
	run_slices_scale(runs < 3 ? runs : 3);
	run_end_to_end(runs < 5 ? runs : 5);
	run_quality(cases, examples);
	return 0;
}
