/*
 * topo_bench: speed, memory and quality of the placement core.
 *
 *   1. The case: 10 blocks x 50 racks x 20 hosts (10,000 nodes) at
 *      random usage (uniform 0-100%, 50% on average), a JobSet of 16 jobs of
 *      312 pods (2 cpu each), rack required per job, block preferred for the
 *      whole: time of the tree build and of topo_place (median of runs), and
 *      the process's peak RSS (ru_maxrss, includes the generated input).
 *   2. The curve: the same JobSet on 1,000 to 100,000 nodes.
 *   3. Quality on small random clusters against an exhaustive search over
 *      rack choices, and against two baselines written here after the
 *      upstream algorithms (field notes): a Kueue-style greedy (instances in
 *      order, best-fit rack, then the largest hosts first; no JobSet-wide
 *      level) and a Volcano-style tier search (lowest tier first, the most
 *      utilised HyperNode that fits, binpack onto the most used hosts).
 *      Figures: placed / feasible, whole JobSet in one block, hosts used per
 *      job, largest free rack left (pods).
 *   4. End to end as muster-topology meets it: 10,000 Nodes as kubectl
 *      writes them and the JobSet in YAML decoded, the tree, the placement.
 *   5. Quality with Kueue's own semantics: PodSets of two pod shapes with
 *      podset-preferred-topology, muster against Kueue's greedy as KEP-2724
 *      states it, per case on four measures (racks per PodSet, PodSets in
 *      one rack, the largest free rack, the JobSet's level).
 *
 *   topo_bench [runs]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "topo_input.h"
#include "topo_place.h"
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

/* Exhaustive over rack choices: best (largest free rack left) among feasible ones. */
static void exhaustive(const uint64_t *rack_room, const uint32_t *rack_block, size_t racks, uint32_t jobs,
		       uint32_t pods, uint32_t k, uint64_t *used, int *feasible, int *feasible_block,
		       uint64_t *best_left)
{
	if (k == jobs) {
		uint64_t big = 0;
		int same = 1;
		uint32_t blk = UINT32_MAX;

		for (size_t r = 0; r < racks; r++) {
			if (rack_room[r] - used[r] > big)
				big = rack_room[r] - used[r];
			if (used[r]) {
				if (blk != UINT32_MAX && rack_block[r] != blk)
					same = 0;
				blk = rack_block[r];
			}
		}
		*feasible = 1;
		if (same && !*feasible_block) {
			*feasible_block = 1;
			*best_left = 0; /* from now on only one-block placements count */
		}
		if ((same || !*feasible_block) && big > *best_left)
			*best_left = big;
		return;
	}
	for (size_t r = 0; r < racks; r++)
		if (used[r] + pods <= rack_room[r]) {
			used[r] += pods;
			exhaustive(rack_room, rack_block, racks, jobs, pods, k + 1, used, feasible,
				   feasible_block, best_left);
			used[r] -= pods;
		}
}

static void run_quality(void)
{
	const int rounds = 2000;
	double hosts[3] = { 0 }, left[3] = { 0 }, exhaustive_left = 0;
	int placed[3] = { 0 }, block[3] = { 0 }, feasible_n = 0, feasible_block_n = 0, both = 0;
	/* Per case, muster against the Kueue-style greedy: at least as good on
	 * each measure (fewer or as many hosts per job, as large a free rack
	 * left, in one block whenever it is). */
	int as_good[3] = { 0 }, better[3] = { 0 };

	rng = 99;
	for (int round = 0; round < rounds; round++) {
		struct gen g = { 0 };
		struct topo_tree *t;
		char *cause = NULL;
		uint32_t jobs = 2 + rnd(3), pods = 2 + rnd(8);
		uint32_t fit[18], taken[18];
		uint64_t room[6] = { 0 }, used[6] = { 0 }, best_left = 0;
		uint32_t rack_block[6];
		int feasible = 0, feasible_block = 0;
		struct topo_group grp;
		struct topo_request req = { .groups = &grp, .group_count = 1 };
		struct quality q[3];

		gen_cluster(&g, 2, 3, 3, 8000, -1);
		t = topo_tree_from_levels(&g.cluster, LEVELS, 3, &cause);
		if (!t) {
			fprintf(stderr, "tree: %s\n", cause);
			exit(1);
		}
		for (size_t i = 0; i < 18; i++) {
			fit[i] = (uint32_t)((g.nodes[i].allocatable[0] - g.nodes[i].used[0]) / POD_CPU);
			room[i / 3] += fit[i];
			rack_block[i / 3] = (uint32_t)(i / 9);
		}
		exhaustive(room, rack_block, 6, jobs, pods, 0, used, &feasible, &feasible_block, &best_left);
		memset(&grp, 0, sizeof(grp));
		grp.name = "w";
		grp.replicas = jobs;
		grp.pods = pods;
		grp.shape.requests[0] = POD_CPU;
		grp.constraint = (struct topo_constraint){ TOPO_MODE_REQUIRED, 2 };
		req.whole = (struct topo_constraint){ TOPO_MODE_PREFERRED, 1 };
		q[0] = quality_of_muster(t, &req, fit, taken);
		q[1] = quality_of_baseline(KUEUE, t, jobs, pods, fit, taken);
		q[2] = quality_of_baseline(VOLCANO, t, jobs, pods, fit, taken);
		feasible_n += feasible;
		feasible_block_n += feasible_block;
		if (feasible && q[0].placed && q[1].placed && q[2].placed) {
			both++;
			exhaustive_left += (double)best_left;
			for (int a = 0; a < 3; a++) {
				hosts[a] += q[a].hosts_per_job;
				left[a] += (double)q[a].largest_free_rack;
			}
			as_good[0] += q[0].hosts_per_job <= q[1].hosts_per_job + 1e-9;
			better[0] += q[0].hosts_per_job < q[1].hosts_per_job - 1e-9;
			as_good[1] += q[0].largest_free_rack >= q[1].largest_free_rack;
			better[1] += q[0].largest_free_rack > q[1].largest_free_rack;
			as_good[2] += q[0].one_block >= q[1].one_block;
			better[2] += q[0].one_block > q[1].one_block;
		}
		for (int a = 0; a < 3; a++) {
			placed[a] += q[a].placed;
			block[a] += q[a].placed && q[a].one_block;
		}
		topo_tree_free(t);
		gen_free(&g);
	}
	printf("\nquality: %d random clusters of 2 blocks x 3 racks x 3 hosts (0-4 pods each), 2-4 jobs of 2-9 pods,\n"
	       "rack required per job, block preferred for the whole JobSet\n",
	       rounds);
	printf("  %-22s %8s %14s %14s %16s\n", "", "placed", "in one block", "hosts/job",
	       "largest free rack");
	printf("  %-22s %8d %14d %14s %16.2f\n", "exhaustive (racks)", feasible_n, feasible_block_n, "-",
	       both ? exhaustive_left / both : 0);
	printf("  %-22s %8d %14d %14.2f %16.2f\n", "muster topo_place", placed[0], block[0],
	       both ? hosts[0] / both : 0, both ? left[0] / both : 0);
	printf("  %-22s %8d %14d %14.2f %16.2f\n", "Kueue-style greedy", placed[1], block[1],
	       both ? hosts[1] / both : 0, both ? left[1] / both : 0);
	printf("  %-22s %8d %14d %14.2f %16.2f\n", "Volcano-style tiers", placed[2], block[2],
	       both ? hosts[2] / both : 0, both ? left[2] / both : 0);
	printf("  (hosts/job and largest free rack: mean over the %d clusters all four placed; the exhaustive\n"
	       "   figure is the best over one-block placements where one exists, else over all)\n",
	       both);
	printf("  per case, muster against the Kueue-style greedy (of the %d):\n", both);
	printf("    %-24s at least as good %5d (%5.1f %%), better %5d, worse %5d\n", "hosts per job",
	       as_good[0], both ? 100.0 * as_good[0] / both : 0, better[0], both - as_good[0]);
	printf("    %-24s at least as good %5d (%5.1f %%), better %5d, worse %5d\n", "largest free rack",
	       as_good[1], both ? 100.0 * as_good[1] / both : 0, better[1], both - as_good[1]);
	printf("    %-24s at least as good %5d (%5.1f %%), better %5d, worse %5d\n", "JobSet in one block",
	       as_good[2], both ? 100.0 * as_good[2] / both : 0, better[2], both - as_good[2]);
}

/* ---- quality with Kueue's own semantics and mixed shapes ----
 *
 * A JobSet of two replicated jobs of different pod sizes (2 and 1 cpu),
 * each a Kueue PodSet with podset-preferred-topology: rack (all replicas
 * together), on 2 blocks x 3 racks x 3 hosts of 8 cpu at random usage.
 * muster places it as the controller will (topo_place, PodSets as one
 * instance each); the reference is Kueue's greedy as KEP-2724's "Computing
 * the assignment" and tas_flavor_snapshot.go state it, PodSet by PodSet in
 * spec order: counts per leaf, the preferred level's best-fit domain (the
 * smallest count that holds the PodSet), else one level up, else spread at
 * the top; then down the tree, the children by count descending, whole
 * until the rest fits one, which is the best fit among those that do. */

#define PS_HOSTS 18

struct ps_quality {
	int placed;
	double racks_per_podset; /* racks used, mean over the PodSets */
	int preferred_met; /* PodSets inside one rack */
	int64_t largest_free_rack; /* free cpu (millicores) of the freest rack after */
	int jobset_level; /* the deepest level holding every pod: 2 rack, 1 block, 0 cluster */
};

static int64_t ps_rack_free(const struct topo_tree *t, const int64_t *free_cpu, uint32_t rack)
{
	int64_t sum = 0;

	for (uint32_t c = rack; c < t->domains[rack].end; c++)
		if (t->domains[c].node != TOPO_NONE)
			sum += free_cpu[t->domains[c].node];
	return sum;
}

/* The measures of a placement given as the rack of every pod per PodSet. */
static struct ps_quality ps_measure(const struct topo_tree *t, const int64_t *free_cpu, uint32_t racks[2][64],
				    const uint32_t *count)
{
	struct ps_quality q = { .placed = 1, .jobset_level = 2 };
	uint32_t first = racks[0][0];

	for (int s = 0; s < 2; s++) {
		uint32_t seen[64];
		size_t n = 0;

		for (uint32_t i = 0; i < count[s]; i++) {
			size_t k;

			for (k = 0; k < n && seen[k] != racks[s][i]; k++)
				;
			if (k == n)
				seen[n++] = racks[s][i];
			if (racks[s][i] != first) {
				if (t->domains[racks[s][i]].parent != t->domains[first].parent)
					q.jobset_level = 0;
				else if (q.jobset_level > 1)
					q.jobset_level = 1;
			}
		}
		q.racks_per_podset += (double)n / 2;
		q.preferred_met += n == 1;
	}
	for (uint32_t d = 0; d < t->domain_count; d++)
		if (t->domains[d].level == 2 && ps_rack_free(t, free_cpu, d) > q.largest_free_rack)
			q.largest_free_rack = ps_rack_free(t, free_cpu, d);
	return q;
}

/* Kueue's greedy descent: `need` pods of `cpu` under domain d. */
static void kueue_descend(const struct topo_tree *t, int64_t *free_cpu, uint32_t d, uint32_t need,
			  int64_t cpu, uint32_t *racks, uint32_t *placed)
{
	uint32_t kids[64], counts[64];
	size_t k = 0;

	if (t->domains[d].node != TOPO_NONE) {
		free_cpu[t->domains[d].node] -= cpu * need;
		while (need--)
			racks[(*placed)++] = t->domains[d].parent;
		return;
	}
	for (uint32_t c = d + 1; c < t->domains[d].end; c = t->domains[c].end) {
		uint32_t n = 0;

		for (uint32_t x = c; x < t->domains[c].end; x++)
			if (t->domains[x].node != TOPO_NONE)
				n += (uint32_t)(free_cpu[t->domains[x].node] / cpu);
		kids[k] = c;
		counts[k++] = n;
	}
	for (size_t i = 1; i < k; i++) /* by count descending, stable */
		for (size_t j = i; j > 0 && counts[j] > counts[j - 1]; j--) {
			uint32_t a = kids[j], b = counts[j];

			kids[j] = kids[j - 1], counts[j] = counts[j - 1];
			kids[j - 1] = a, counts[j - 1] = b;
		}
	for (size_t i = 0; i < k && need > 0; i++) {
		size_t best = k;

		for (size_t j = i; j < k; j++) /* the rest fits one: its best fit */
			if (counts[j] >= need && (best == k || counts[j] < counts[best]))
				best = j;
		if (best < k) {
			kueue_descend(t, free_cpu, kids[best], need, cpu, racks, placed);
			return;
		}
		if (counts[i] > 0) {
			kueue_descend(t, free_cpu, kids[i], counts[i], cpu, racks, placed);
			need -= counts[i];
		}
	}
}

static int kueue_podset(const struct topo_tree *t, int64_t *free_cpu, uint32_t need, int64_t cpu,
			uint32_t *racks)
{
	uint32_t placed = 0;

	for (int level = 2; level >= 0; level--) {
		uint32_t best = TOPO_NONE, best_count = 0;

		for (uint32_t d = 0; d < t->domain_count; d++) {
			uint32_t n = 0;

			if (t->domains[d].level != (size_t)level)
				continue;
			for (uint32_t x = d; x < t->domains[d].end; x++)
				if (t->domains[x].node != TOPO_NONE)
					n += (uint32_t)(free_cpu[t->domains[x].node] / cpu);
			if (n >= need && (best == TOPO_NONE || n < best_count))
				best = d, best_count = n;
		}
		if (best != TOPO_NONE) {
			kueue_descend(t, free_cpu, best, need, cpu, racks, &placed);
			return placed == need;
		}
	}
	return 0;
}

/* Whether `a` pods of cpu_a and `b` pods of cpu_b fit together on hosts
 * with free cpu free[0..n): every spread of the first over the hosts. */
static int ps_pack(const int64_t *free, size_t n, uint32_t a, int64_t cpu_a, uint32_t b, int64_t cpu_b)
{
	int64_t f[8];

	if (n == 0)
		return a == 0 && b == 0;
	if (a == 0) {
		uint64_t room = 0;

		for (size_t i = 0; i < n; i++)
			room += (uint64_t)(free[i] / cpu_b);
		return room >= b;
	}
	for (size_t i = 0; i < n; i++)
		f[i] = free[i];
	for (uint32_t c = 0; c <= a && c * cpu_a <= f[0]; c++) {
		uint32_t fit_b = (uint32_t)((f[0] - c * cpu_a) / cpu_b);

		/* Host 0 takes c of the first and as many of the second as fit. */
		if (ps_pack(f + 1, n - 1, a - c, cpu_a, b > fit_b ? b - fit_b : 0, cpu_b))
			return 1;
	}
	return 0;
}

/* The best each measure can be, each on its own, over the choices of one
 * rack per PodSet (a PodSet that fits no rack is spread): PodSets in one
 * rack, then among those the largest free rack and the JobSet's level. */
static void ps_optimum(const struct topo_tree *t, const int64_t *free_cpu, const uint32_t *count,
		       const int64_t *cpu, int *best_met, int64_t *best_free, int *best_level)
{
	uint32_t racks[8];
	size_t n = 0;

	*best_met = 0;
	*best_free = 0;
	*best_level = 0;
	for (uint32_t d = 0; d < t->domain_count && n < 8; d++)
		if (t->domains[d].level == 2)
			racks[n++] = d;
	for (size_t x = 0; x < n; x++)
		for (size_t y = 0; y < n; y++) {
			int64_t fx[8], fy[8];
			size_t hx = 0, hy = 0;
			int met, level;
			int64_t left = 0;

			for (uint32_t c = racks[x]; c < t->domains[racks[x]].end; c++)
				if (t->domains[c].node != TOPO_NONE && hx < 8)
					fx[hx++] = free_cpu[t->domains[c].node];
			for (uint32_t c = racks[y]; c < t->domains[racks[y]].end; c++)
				if (t->domains[c].node != TOPO_NONE && hy < 8)
					fy[hy++] = free_cpu[t->domains[c].node];
			met = x == y ? 2 * ps_pack(fx, hx, count[0], cpu[0], count[1], cpu[1])
				     : ps_pack(fx, hx, count[0], cpu[0], 0, cpu[1]) +
					       ps_pack(fy, hy, 0, cpu[0], count[1], cpu[1]);
			if (met < 2)
				level = 0;
			else
				level = x == y							     ? 2
					: t->domains[racks[x]].parent == t->domains[racks[y]].parent ? 1
												     : 0;
			for (size_t r = 0; met == 2 && r < n; r++) {
				int64_t f = ps_rack_free(t, free_cpu, racks[r]) -
					    (r == x ? count[0] * cpu[0] : 0) -
					    (r == y ? count[1] * cpu[1] : 0);

				left = f > left ? f : left;
			}
			if (met > *best_met)
				*best_met = met;
			if (met == 2 && left > *best_free)
				*best_free = left;
			if (met == 2 && level > *best_level)
				*best_level = level;
		}
}

/* The cluster as Volcano HyperNodes: a tier-1 HyperNode per rack with its
 * hosts by exact name, a tier-2 one per block with its racks. */
static struct topo_tree *ps_hypernode_tree(const struct gen *g, char **cause)
{
	static struct topo_member members[PS_HOSTS + 6];
	static struct topo_hypernode hns[8];
	static char names[8][16];
	size_t m = 0;

	for (uint32_t r = 0; r < 6; r++) {
		snprintf(names[r], sizeof(names[r]), "leaf-%u", r);
		hns[r] = (struct topo_hypernode){ names[r], 1, "leaf", &members[m], 3 };
		for (uint32_t h = 0; h < 3; h++)
			members[m++] = (struct topo_member){ .kind = TOPO_MEMBER_NODE,
							     .exact = g->nodes[r * 3 + h].name };
	}
	for (uint32_t b = 0; b < 2; b++) {
		snprintf(names[6 + b], sizeof(names[6 + b]), "spine-%u", b);
		hns[6 + b] = (struct topo_hypernode){ names[6 + b], 2, "spine", &members[m], 3 };
		for (uint32_t r = 0; r < 3; r++)
			members[m++] = (struct topo_member){ .kind = TOPO_MEMBER_HYPERNODE,
							     .exact = names[b * 3 + r] };
	}
	return topo_tree_from_hypernodes(&g->cluster, hns, 8, cause);
}

static void run_quality_podsets(int hypernodes)
{
	const int rounds = 3000;
	int both = 0, as_good[4] = { 0 }, better[4] = { 0 }, placed[2] = { 0 }, at_optimum[3] = { 0 };
	double sum[2][4] = { { 0 } }, optimum[3] = { 0 }, mine[2] = { 0 };
	int fit_both = 0;

	rng = 7;
	for (int round = 0; round < rounds; round++) {
		struct gen g = { 0 };
		struct topo_tree *t;
		struct topo_group grp[2];
		struct topo_request req = { .groups = grp, .group_count = 2 };
		struct topo_placement *p = NULL;
		char *cause = NULL;
		uint32_t replicas[2] = { 1 + rnd(2), 1 + rnd(3) }, pods[2] = { 1 + rnd(4), 1 + rnd(4) };
		int64_t cpu[2] = { 2000, 1000 }, free_m[PS_HOSTS], free_k[PS_HOSTS], free_o[PS_HOSTS],
			best_free;
		int best_met, best_level;
		uint32_t racks_m[2][64], racks_k[2][64], count[2];
		struct ps_quality q[2] = { { 0 }, { 0 } };
		int ok_k = 1;

		gen_cluster(&g, 2, 3, 3, 8000, -1);
		t = hypernodes ? ps_hypernode_tree(&g, &cause)
			       : topo_tree_from_levels(&g.cluster, LEVELS, 2, &cause);
		if (!t) {
			fprintf(stderr, "tree: %s\n", cause);
			exit(1);
		}
		for (size_t i = 0; i < PS_HOSTS; i++)
			free_m[i] = free_k[i] = free_o[i] = g.nodes[i].allocatable[0] - g.nodes[i].used[0];
		for (int s = 0; s < 2; s++) {
			memset(&grp[s], 0, sizeof(grp[s]));
			grp[s].name = s ? "small" : "large";
			grp[s].replicas = 1;
			grp[s].pods = replicas[s] * pods[s];
			grp[s].job_pods = pods[s];
			grp[s].shape.requests[0] = cpu[s];
			grp[s].constraint = (struct topo_constraint){ TOPO_MODE_PREFERRED, 2 };
			count[s] = grp[s].pods;
		}
		if (topo_place(t, &req, &p, &cause) == 0) {
			for (size_t i = 0; i < p->pod_count; i++) {
				const struct topo_pod *pod = &p->pods[i];
				uint32_t rank = pod->job_index * pods[pod->group] + pod->completion;

				racks_m[pod->group][rank] = pod->domain;
				free_m[pod->node] -= cpu[pod->group];
			}
			q[0] = ps_measure(t, free_m, racks_m, count);
			placed[0]++;
		}
		for (int s = 0; s < 2 && ok_k; s++)
			ok_k = kueue_podset(t, free_k, count[s], cpu[s], racks_k[s]);
		if (ok_k) {
			q[1] = ps_measure(t, free_k, racks_k, count);
			placed[1]++;
		}
		if (q[0].placed && q[1].placed) {
			double m[2][4];

			both++;
			ps_optimum(t, free_o, count, cpu, &best_met, &best_free, &best_level);
			optimum[0] += best_met;
			if (best_met == 2) { /* the free rack and the level where both fit one rack */
				fit_both++;
				optimum[1] += (double)best_free / 1000;
				optimum[2] += best_level;
				mine[0] += (double)q[0].largest_free_rack / 1000;
				mine[1] += q[0].jobset_level;
			}
			at_optimum[0] += q[0].preferred_met >= best_met;
			at_optimum[1] += q[0].preferred_met < best_met || q[0].largest_free_rack >= best_free;
			at_optimum[2] += q[0].preferred_met < best_met || q[0].jobset_level >= best_level;
			for (int a = 0; a < 2; a++) {
				m[a][0] = -q[a].racks_per_podset; /* higher is better everywhere */
				m[a][1] = q[a].preferred_met;
				m[a][2] = (double)q[a].largest_free_rack;
				m[a][3] = q[a].jobset_level;
				sum[a][0] += q[a].racks_per_podset;
				sum[a][1] += q[a].preferred_met;
				sum[a][2] += (double)q[a].largest_free_rack / 1000;
				sum[a][3] += q[a].jobset_level;
			}
			for (int k = 0; k < 4; k++) {
				as_good[k] += m[0][k] >= m[1][k] - 1e-9;
				better[k] += m[0][k] > m[1][k] + 1e-9;
			}
		}
		free(cause);
		topo_placement_free(p);
		topo_tree_free(t);
		gen_free(&g);
	}
	printf("\nquality, Kueue's semantics, %s: %d random clusters of 2 blocks x 3 racks x 3 hosts of 8 cpu at\n"
	       "random usage; PodSets of 1-2 x 1-4 pods of 2 cpu and 1-3 x 1-4 pods of 1 cpu, podset-preferred-topology\n"
	       "rack (tier 1)\n",
	       hypernodes ? "Volcano HyperNodes (tier 1 racks, tier 2 blocks)" : "label levels", rounds);
	printf("  placed: muster %d, Kueue greedy (KEP-2724) %d; on the %d both placed (mean; per case muster vs Kueue):\n",
	       placed[0], placed[1], both);
	{
		static const char *const names[] = { "racks per PodSet (lower)", "PodSets in one rack (of 2)",
						     "largest free rack, cpu",
						     "JobSet level (2 rack, 0 cluster)" };

		for (int k = 0; k < 4; k++)
			printf("    %-34s muster %6.3f  Kueue %6.3f   at least as good %5d (%5.1f %%), better %4d, worse %4d\n",
			       names[k], both ? sum[0][k] / both : 0, both ? sum[1][k] / both : 0, as_good[k],
			       both ? 100.0 * as_good[k] / both : 0, better[k], both - as_good[k]);
	}
	printf("  exhaustive optimum over one rack per PodSet, each measure on its own: PodSets in one rack %.3f\n"
	       "  (muster reaches it in %d of %d); where both fit one rack (%d cases): largest free rack %.3f cpu\n"
	       "  (muster %.3f, reaches it in %d), JobSet level %.3f (muster %.3f, reaches it in %d)\n",
	       both ? optimum[0] / both : 0, at_optimum[0], both, fit_both,
	       fit_both ? optimum[1] / fit_both : 0, fit_both ? mine[0] / fit_both : 0, at_optimum[1],
	       fit_both ? optimum[2] / fit_both : 0, fit_both ? mine[1] / fit_both : 0, at_optimum[2]);
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
	double times[64];

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
		for (int r = 0; r < runs; r++) {
			double t0 = now();

			topo_placement_free(p);
			p = NULL;
			free(cause);
			cause = NULL;
			topo_place(t, &req, &p, &cause);
			times[r] = now() - t0;
		}
		qsort(times, (size_t)runs, sizeof(double), cmp_double);
		if (which == 0)
			printf("  16 x 312 pods, rack each, block preferred: %s in %.2f ms\n",
			       p ? "placed" : "refused", times[runs / 2] * 1e3);
		else
			printf("  250 + 6 pods of two shapes in one rack: %.2f ms, %s%.150s\n",
			       times[runs / 2] * 1e3, p ? "placed" : "refused: ", cause ? cause : "");
	}
	topo_placement_free(p);
	free(cause);
	topo_tree_free(t);
	gen_free(&g);
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 21;
	static const uint32_t curve[] = { 1, 2, 5, 10, 20, 50, 100 };

	if (runs < 1)
		runs = 1;
	printf("topo_bench: JobSet of 16 jobs x 312 pods (2 cpu), rack required per job, block preferred;\n"
	       "hosts of 64 cpu at uniform random usage; blocks x 50 racks x 20 hosts; median of %d runs\n\n",
	       runs);
	printf("the issue's case:\n");
	run_case(10, runs, 1);
	printf("\ncurve (each row in a fresh process would show its own RSS; here RSS is the high-water mark so far):\n");
	for (size_t i = 0; i < sizeof(curve) / sizeof(curve[0]); i++)
		run_case(curve[i], curve[i] >= 50 ? 5 : runs, 0);
	run_exact_scale(runs < 5 ? runs : 5);
	run_end_to_end(runs < 5 ? runs : 5);
	run_quality();
	run_quality_podsets(0);
	run_quality_podsets(1);
	return 0;
}
