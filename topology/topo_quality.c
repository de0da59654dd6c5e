/*
 * topo_quality: the placement core against Kueue's greedy BestFit (alone,
 * and given the JobSet's level) and an exhaustive search (contract and the rules of each in topo_quality.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "topo_quality.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo_place.h"
#include "topo_tree.h"

#define Q_NODES 8
#define Q_GROUPS 3
#define Q_INSTANCES 4
#define Q_PODS 6 /* in all */
#define Q_LEVELS 4 /* 0 the cluster, 1 block, 2 rack, 3 the host */
#define Q_HOST_CPU 4000
#define Q_HOST_MEM 4
#define R_CPU 0
#define R_MEM 1
#define R_PODS 2
#define EXAMPLES_MAX (64u * 1024u)

const struct topo_quality_figure_info topo_quality_figures[TOPO_QUALITY_FIGURES] = {
	[TOPO_QUALITY_HOSTS] = { "hosts used", 0, 1 },
	[TOPO_QUALITY_FREE_BLOCK] = { "largest free block", 1, 0 },
	[TOPO_QUALITY_FREE_RACK] = { "largest free rack", 1, 0 },
	[TOPO_QUALITY_FREE_HOST] = { "largest free host", 1, 0 },
	[TOPO_QUALITY_LEVEL] = { "JobSet's tightest level", 2, 0 },
	[TOPO_QUALITY_PREFERRED] = { "preferred levels met", 3, 0 },
};

const char *const topo_quality_measure_names[TOPO_QUALITY_MEASURES] = {
	"hosts used",
	"largest free domain",
	"JobSet's tightest level",
	"preferred levels met",
};

static const char *const LEVELS[] = { "block", "rack" };

/* One Job of the JobSet: the pods of instance k go to nodes at[k][..]. */
struct qinstance {
	uint32_t group, job, pods;
	struct topo_constraint constraint;
};

struct qcase {
	uint64_t rng;
	struct topo_node nodes[Q_NODES];
	struct topo_label labels[Q_NODES][2];
	char blocks[Q_NODES][4], racks[Q_NODES][8], names[Q_NODES][4];
	struct topo_cluster cluster;
	struct topo_tree *t;
	struct topo_group g[Q_GROUPS];
	struct topo_request req;
	struct qinstance inst[Q_INSTANCES];
	size_t instances;
	uint32_t anc[Q_NODES][Q_LEVELS]; /* the domain of each level above a node (the leaf at 3) */
	int64_t free0[Q_NODES][3]; /* allocatable - used, before the JobSet */
};

/* One placement: the node of each pod, by instance and rank. */
struct qplacement {
	uint32_t at[Q_INSTANCES][Q_PODS];
	int64_t free[Q_NODES][3];
};

/* splitmix64: a well-mixed nonzero start for each case's xorshift. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x ? x : 1;
}

static uint32_t rnd(struct qcase *c, uint32_t n)
{
	c->rng ^= c->rng << 13;
	c->rng ^= c->rng >> 7;
	c->rng ^= c->rng << 17;
	return n ? (uint32_t)(c->rng % n) : 0;
}

/* ---- the case ---- */

static int make_case(struct qcase *c, char **cause)
{
	uint32_t left = Q_PODS, groups = 1 + rnd(c, Q_GROUPS);

	c->cluster.resources[R_CPU] = "cpu";
	c->cluster.resources[R_MEM] = "memory";
	c->cluster.resources[R_PODS] = "pods";
	c->cluster.resource_count = 3;
	c->cluster.nodes = c->nodes;
	c->cluster.node_count = Q_NODES;
	for (uint32_t i = 0; i < Q_NODES; i++) {
		struct topo_node *n = &c->nodes[i];

		snprintf(c->names[i], sizeof(c->names[i]), "n%u", i);
		snprintf(c->blocks[i], sizeof(c->blocks[i]), "b%u", i / 4);
		snprintf(c->racks[i], sizeof(c->racks[i]), "b%ur%u", i / 4, i / 2 % 2);
		c->labels[i][0] = (struct topo_label){ "block", c->blocks[i] };
		c->labels[i][1] = (struct topo_label){ "rack", c->racks[i] };
		n->name = c->names[i];
		n->labels = c->labels[i];
		n->label_count = 2;
		n->allocatable[R_CPU] = Q_HOST_CPU;
		n->allocatable[R_MEM] = Q_HOST_MEM;
		n->allocatable[R_PODS] = 110;
		n->used[R_CPU] = 1000 * (int64_t)rnd(c, 5);
		n->used[R_MEM] = (int64_t)rnd(c, 5);
		for (int r = 0; r < 3; r++)
			c->free0[i][r] = n->allocatable[r] - n->used[r];
	}
	c->t = topo_tree_from_levels(&c->cluster, LEVELS, 2, cause);
	if (!c->t)
		return -1;
	for (uint32_t i = 0; i < Q_NODES; i++) {
		uint32_t d = c->t->node_domain[i];

		for (int l = Q_LEVELS - 1; l >= 0; l--) {
			c->anc[i][l] = d;
			d = c->t->domains[d].parent;
		}
	}
	memset(c->g, 0, sizeof(c->g));
	c->req = (struct topo_request){ .groups = c->g };
	c->instances = 0;
	for (uint32_t k = 0; k < groups && left > 0 && c->instances < Q_INSTANCES; k++) {
		struct topo_group *g = &c->g[k];
		int small = rnd(c, 2);

		g->name = k == 0 ? "g0" : k == 1 ? "g1" : "g2";
		g->replicas = 1 + rnd(c, 2);
		g->pods = 1 + rnd(c, 3);
		if (g->replicas * g->pods > left || c->instances + g->replicas > Q_INSTANCES) {
			g->replicas = 1;
			g->pods = g->pods < left ? g->pods : left;
		}
		g->shape.requests[R_CPU] = small ? 1000 : 2000;
		g->shape.requests[R_MEM] = small ? 2 : 1;
		g->constraint.mode = rnd(c, 2) ? TOPO_MODE_REQUIRED : TOPO_MODE_PREFERRED;
		g->constraint.level = (uint8_t)(1 + rnd(c, 2));
		for (uint32_t j = 0; j < g->replicas; j++)
			c->inst[c->instances++] = (struct qinstance){ k, j, g->pods, g->constraint };
		left -= g->replicas * g->pods;
		c->req.group_count = k + 1;
	}
	c->req.whole.mode = (enum topo_mode)rnd(c, 3); /* none, required, preferred */
	c->req.whole.level = (uint8_t)(1 + rnd(c, 2));
	return 0;
}

/* Takes `pods` pods of group g's shape off node n. */
static void take(int64_t free[Q_NODES][3], const struct topo_group *g, uint32_t n, uint32_t pods)
{
	free[n][R_CPU] -= g->shape.requests[R_CPU] * pods;
	free[n][R_MEM] -= g->shape.requests[R_MEM] * pods;
	free[n][R_PODS] -= pods;
}

static uint32_t fit(const struct qcase *c, int64_t free[Q_NODES][3], const struct topo_group *g, uint32_t n)
{
	return topo_node_fit(&c->cluster, &c->nodes[n], free[n], &g->shape, NULL);
}

/* ---- the measures ---- */

/* Free pods of the JobSet's shapes on node n (its free resources `free`), each shape counted on its own. */
static int64_t free_pods_of(const struct qcase *c, const int64_t *free, uint32_t n)
{
	int64_t sum = 0;

	for (size_t g = 0; g < c->req.group_count; g++) {
		size_t h = 0;

		while (h < g && memcmp(&c->g[h].shape, &c->g[g].shape, sizeof(c->g[g].shape)) != 0)
			h++;
		if (h == g)
			sum += topo_node_fit(&c->cluster, &c->nodes[n], free, &c->g[g].shape, NULL);
	}
	return sum;
}

static void measure(const struct qcase *c, const struct qplacement *p, double *v)
{
	uint32_t all = 0, hosts = 0, met = 0;
	int64_t free_pods[Q_NODES];
	int level = 0;

	for (size_t k = 0; k < c->instances; k++) {
		uint32_t mask = 0, n0 = p->at[k][0], same = 1;

		for (uint32_t r = 0; r < c->inst[k].pods; r++) {
			mask |= 1u << p->at[k][r];
			same &= c->anc[p->at[k][r]][c->inst[k].constraint.level] ==
				c->anc[n0][c->inst[k].constraint.level];
		}
		hosts += (uint32_t)__builtin_popcount(mask);
		met += c->inst[k].constraint.mode == TOPO_MODE_PREFERRED && same;
		all |= mask;
	}
	for (int l = Q_LEVELS - 1; l >= 0 && !level; l--) {
		uint32_t d = TOPO_NONE, one = 1;

		for (uint32_t n = 0; n < Q_NODES; n++)
			if (all & (1u << n)) {
				one &= d == TOPO_NONE || c->anc[n][l] == d;
				d = c->anc[n][l];
			}
		if (one)
			level = l;
	}
	/* Free pods per node: of each of the JobSet's shapes, summed over them. */
	for (uint32_t n = 0; n < Q_NODES; n++)
		free_pods[n] = free_pods_of(c, p->free[n], n);
	v[TOPO_QUALITY_HOSTS] = hosts;
	for (int l = 1; l < Q_LEVELS; l++) {
		int64_t best = 0;

		for (uint32_t d = 0; d < c->t->domain_count; d++) {
			int64_t sum = 0;

			if (c->t->domains[d].level != l)
				continue;
			for (uint32_t n = 0; n < Q_NODES; n++)
				if (c->anc[n][l] == d)
					sum += free_pods[n];
			best = sum > best ? sum : best;
		}
		v[TOPO_QUALITY_FREE_BLOCK + l - 1] = (double)best;
	}
	v[TOPO_QUALITY_LEVEL] = level;
	v[TOPO_QUALITY_PREFERRED] = met;
}

/* ---- muster ---- */

static int place_muster(const struct qcase *c, struct qplacement *p)
{
	struct topo_placement *out = NULL;
	char *cause = NULL;
	uint32_t first[Q_GROUPS] = { 0 };

	if (topo_place(c->t, &c->req, &out, &cause) != 0) {
		free(cause);
		return 0;
	}
	for (size_t k = c->instances; k-- > 0;)
		first[c->inst[k].group] = (uint32_t)k;
	memcpy(p->free, c->free0, sizeof(p->free));
	for (size_t i = 0; i < out->pod_count; i++) {
		const struct topo_pod *pod = &out->pods[i];

		p->at[first[pod->group] + pod->job_index][pod->completion] = pod->node;
		take(p->free, &c->g[pod->group], pod->node, 1);
	}
	topo_placement_free(out);
	return 1;
}

/* ---- Kueue's greedy BestFit ---- */

struct kueue {
	const struct qcase *c;
	uint32_t count[64]; /* pods of the shape that fit, per domain */
	uint32_t assigned[64];
};

/* Sorts domains by count descending, then tree order (Kueue's names). */
static void kueue_sort(const struct kueue *k, uint32_t *d, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && (k->count[d[j]] > k->count[d[j - 1]] ||
					     (k->count[d[j]] == k->count[d[j - 1]] && d[j] < d[j - 1]));
		     j--) {
			uint32_t x = d[j];

			d[j] = d[j - 1];
			d[j - 1] = x;
		}
}

/* findBestFitDomainBy: the first of the smallest count >= need, else d[0]. */
static size_t kueue_best_fit(const struct kueue *k, const uint32_t *d, size_t n, uint32_t need)
{
	size_t best = n;

	for (size_t i = 0; i < n; i++)
		if (k->count[d[i]] >= need && (best == n || k->count[d[i]] < k->count[d[best]]))
			best = i;
	return best == n ? 0 : best;
}

/* updateCountsToMinimumGeneric without leaders or slices: the domains in
 * order, each whole until the rest fits one, which is the best fit among
 * those left. Returns how many were taken (moved to the front of d). */
static size_t kueue_minimum(struct kueue *k, uint32_t *d, size_t n, uint32_t need)
{
	for (size_t i = 0; i < n && need > 0; i++) {
		if (k->count[d[i]] >= need) {
			size_t b = i + kueue_best_fit(k, d + i, n - i, need);
			uint32_t x = d[b];

			memmove(d + i + 1, d + i, (b - i) * sizeof(*d));
			d[i] = x;
			k->assigned[x] = need;
			return i + 1;
		}
		k->assigned[d[i]] = k->count[d[i]];
		need -= k->count[d[i]];
	}
	return need ? 0 : n;
}

static int place_greedy_instance(struct kueue *k, struct qplacement *p, size_t which, uint32_t within)
{
	const struct qcase *c = k->c;
	const struct topo_tree *t = c->t;
	const struct qinstance *in = &c->inst[which];
	const struct topo_group *g = &c->g[in->group];
	uint32_t chosen[64], next[64], rank = 0;
	size_t n = 0;
	int level = in->constraint.level;

	memset(k->count, 0, sizeof(k->count));
	memset(k->assigned, 0, sizeof(k->assigned));
	for (uint32_t x = 0; x < Q_NODES; x++)
		k->count[t->node_domain[x]] =
			c->anc[x][t->domains[within].level] == within ? fit(c, p->free, g, x) : 0;
	for (uint32_t d = (uint32_t)t->domain_count; d-- > 1;)
		k->count[t->domains[d].parent] += k->count[d];
	for (;;) { /* findLevelWithFitDomains */
		n = 0;
		for (uint32_t d = 0; d < t->domain_count; d++)
			if (t->domains[d].level == level)
				chosen[n++] = d;
		kueue_sort(k, chosen, n);
		if (k->count[chosen[0]] >= in->pods) {
			chosen[0] = chosen[kueue_best_fit(k, chosen, n, in->pods)];
			k->assigned[chosen[0]] = in->pods;
			n = 1;
			break;
		}
		if (in->constraint.mode == TOPO_MODE_REQUIRED)
			return 0;
		if (level > 1) {
			level--;
			continue;
		}
		n = kueue_minimum(k, chosen, n, in->pods);
		if (n == 0)
			return 0;
		break;
	}
	for (; level < (int)t->node_level; level++) { /* down: the children pooled */
		size_t m = 0;

		for (size_t i = 0; i < n; i++)
			for (uint32_t x = chosen[i] + 1; x < t->domains[chosen[i]].end; x = t->domains[x].end)
				next[m++] = x;
		kueue_sort(k, next, m);
		n = kueue_minimum(k, next, m, in->pods);
		if (n == 0)
			return 0;
		memcpy(chosen, next, n * sizeof(*chosen));
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t node = t->domains[chosen[i]].node;

		take(p->free, g, node, k->assigned[chosen[i]]);
		for (uint32_t j = 0; j < k->assigned[chosen[i]]; j++)
			p->at[which][rank++] = node;
	}
	return rank == in->pods;
}

/* Every Job in turn on the nodes under domain `within` (0: the cluster). */
static int place_greedy_in(const struct qcase *c, struct qplacement *p, uint32_t within)
{
	struct kueue k = { .c = c };

	if (c->t->domain_count > 64)
		return 0;
	memcpy(p->free, c->free0, sizeof(p->free));
	for (size_t i = 0; i < c->instances; i++)
		if (!place_greedy_instance(&k, p, i, within))
			return 0;
	return 1;
}

static int place_greedy(const struct qcase *c, struct qplacement *p)
{
	uint32_t d = TOPO_NONE;

	if (!place_greedy_in(c, p, 0))
		return 0;
	if (c->req.whole.mode != TOPO_MODE_REQUIRED)
		return 1;
	for (size_t i = 0; i < c->instances; i++) /* Kueue cannot ask for it: a break is a refusal */
		for (uint32_t r = 0; r < c->inst[i].pods; r++) {
			uint32_t here = c->anc[p->at[i][r]][c->req.whole.level];

			if (d != TOPO_NONE && here != d)
				return 0;
			d = here;
		}
	return 1;
}

/* The greedy given the JobSet-wide level, as Kueue's level search meets a
 * PodSet's (findLevelWithFitDomains, the JobSet one PodSet): at that level,
 * of the domains where every Job fits greedily, the one with the fewest
 * free pods (the first such); none: refused if required, else one level
 * up, the cluster last. */
static int place_greedy_whole(const struct qcase *c, struct qplacement *p)
{
	if (c->req.whole.mode == TOPO_MODE_NONE)
		return place_greedy_in(c, p, 0);
	for (int level = c->req.whole.level; level >= 0; level--) {
		int64_t fewest = -1;

		for (uint32_t d = 0; d < c->t->domain_count; d++) {
			struct qplacement trial;
			int64_t count = 0;

			if (c->t->domains[d].level != level || !place_greedy_in(c, &trial, d))
				continue;
			for (uint32_t n = 0; n < Q_NODES; n++)
				if (c->anc[n][level] == d)
					count += free_pods_of(c, c->free0[n], n);
			if (fewest < 0 || count < fewest) {
				fewest = count;
				*p = trial;
			}
		}
		if (fewest >= 0)
			return 1;
		if (c->req.whole.mode == TOPO_MODE_REQUIRED)
			return 0;
	}
	return 0;
}

/* ---- exhaustive ---- */

struct search {
	const struct qcase *c;
	struct qplacement p;
	double best[TOPO_QUALITY_FIGURES];
	int found;
	size_t leaves;
};

static void search_pod(struct search *s, size_t k, uint32_t r)
{
	const struct qcase *c = s->c;
	const struct qinstance *in;
	const struct topo_group *g;

	if (k == c->instances) {
		double v[TOPO_QUALITY_FIGURES];

		measure(c, &s->p, v);
		for (int f = 0; f < TOPO_QUALITY_FIGURES; f++)
			if (!s->found ||
			    (topo_quality_figures[f].lower_better ? v[f] < s->best[f] : v[f] > s->best[f]))
				s->best[f] = v[f];
		s->found = 1;
		s->leaves++;
		return;
	}
	in = &c->inst[k];
	g = &c->g[in->group];
	if (r == in->pods) {
		search_pod(s, k + 1, 0);
		return;
	}
	/* The ranks of one Job are alike: nodes in nondecreasing order. */
	for (uint32_t n = r ? s->p.at[k][r - 1] : 0; n < Q_NODES; n++) {
		if (fit(c, s->p.free, g, n) == 0)
			continue;
		if (in->constraint.mode == TOPO_MODE_REQUIRED && r > 0 &&
		    c->anc[n][in->constraint.level] != c->anc[s->p.at[k][0]][in->constraint.level])
			continue;
		if (c->req.whole.mode == TOPO_MODE_REQUIRED && (k > 0 || r > 0) &&
		    c->anc[n][c->req.whole.level] != c->anc[s->p.at[0][0]][c->req.whole.level])
			continue;
		take(s->p.free, g, n, 1);
		s->p.at[k][r] = n;
		search_pod(s, k, r + 1);
		s->p.free[n][R_CPU] += g->shape.requests[R_CPU];
		s->p.free[n][R_MEM] += g->shape.requests[R_MEM];
		s->p.free[n][R_PODS] += 1;
	}
}

/* ---- the report ---- */

static const char *mode_name(enum topo_mode m)
{
	return m == TOPO_MODE_REQUIRED ? "required" : m == TOPO_MODE_PREFERRED ? "preferred" : "none";
}

static const char *level_name(int level)
{
	static const char *const names[] = { "cluster", "block", "rack", "host" };

	return level >= 0 && level < Q_LEVELS ? names[level] : "?";
}

struct text {
	char *buf;
	size_t len;
};

static void say(struct text *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct text *x, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!x->buf)
		return;
	va_start(ap, fmt);
	n = vsnprintf(x->buf + x->len, EXAMPLES_MAX - x->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		x->len = x->len + (size_t)n < EXAMPLES_MAX ? x->len + (size_t)n : EXAMPLES_MAX - 1;
}

/* The case and each placement made (placed[w]): muster, the greedy, the
 * greedy given the JobSet-wide level. */
static void describe(struct text *x, const struct qcase *c, size_t index, const struct qplacement *p,
		     const int *placed, double v[3][TOPO_QUALITY_FIGURES], int buys)
{
	static const char *const who[] = { "muster", "greedy", "greedy+" };

	say(x, "case %zu%s: free (cpu/mem) per node:", index,
	    buys ? " (muster's JobSet tighter or more preferred levels met than the greedy's)" : "");
	for (uint32_t n = 0; n < Q_NODES; n++)
		say(x, "%s %s %lld/%lld",
		    n % 2   ? ""
		    : n % 4 ? " |"
			    : " ||",
		    c->names[n], (long long)(c->free0[n][R_CPU] / 1000), (long long)c->free0[n][R_MEM]);
	say(x, "\n  JobSet: whole %s %s;", mode_name(c->req.whole.mode),
	    c->req.whole.mode == TOPO_MODE_NONE ? "" : level_name(c->req.whole.level));
	for (size_t k = 0; k < c->instances; k++) {
		const struct topo_group *g = &c->g[c->inst[k].group];

		say(x, " %s/%u %u pods of %lld cpu %lld mem %s %s;", g->name, c->inst[k].job, c->inst[k].pods,
		    (long long)(g->shape.requests[R_CPU] / 1000), (long long)g->shape.requests[R_MEM],
		    mode_name(c->inst[k].constraint.mode), level_name(c->inst[k].constraint.level));
	}
	for (int w = 0; w < 3; w++) {
		if (!placed[w])
			continue;
		say(x, "\n  %-7s", who[w]);
		for (size_t k = 0; k < c->instances; k++) {
			say(x, " [");
			for (uint32_t r = 0; r < c->inst[k].pods; r++)
				say(x, "%s%s", r ? " " : "", c->names[p[w].at[k][r]]);
			say(x, "]");
		}
		say(x, "  figures");
		for (int f = 0; f < TOPO_QUALITY_FIGURES; f++)
			say(x, " %g", v[w][f]);
	}
	say(x, "\n");
}

/* muster (figures m) against the greedy given the JobSet-wide level
 * (figures w): -1 with buf set when that greedy beats the exhaustive
 * search's best; else 0, *worse set when muster is worse on some figure. */
static int compare_whole(struct topo_quality_report *report, size_t index, int leveled, const double *m,
			 const double *w, const double *best, int *worse, char *buf, size_t size)
{
	report->whole_compared++;
	report->leveled_compared += leveled;
	for (int f = 0; f < TOPO_QUALITY_FIGURES; f++) {
		int lower = topo_quality_figures[f].lower_better;
		double a = lower ? -m[f] : m[f], b = lower ? -w[f] : w[f], e = lower ? -best[f] : best[f];

		if (b > e) {
			snprintf(buf, size,
				 "case %zu: the greedy given the JobSet's level has %s %g, beyond the "
				 "exhaustive search's %g",
				 index, topo_quality_figures[f].name, w[f], best[f]);
			return -1;
		}
		report->whole_as_good[f] += a >= b;
		report->leveled_as_good[f] += a >= b && leveled;
		report->whole_better[f] += a > b;
		report->whole_sum[0][f] += m[f];
		report->whole_sum[1][f] += w[f];
		*worse |= a < b;
	}
	return 0;
}

int topo_quality_run(uint64_t seed, size_t cases, size_t examples, struct topo_quality_report *report,
		     char **cause)
{
	struct text x = { 0 };

	memset(report, 0, sizeof(*report));
	*cause = NULL;
	if (examples && !(x.buf = calloc(1, EXAMPLES_MAX))) {
		*cause = strdup("out of memory");
		return -1;
	}
	for (size_t i = 0; i < cases; i++) {
		struct qcase c = { .rng = mix(seed + i) };
		struct qplacement p[3];
		struct search s = { .c = &c };
		double v[3][TOPO_QUALITY_FIGURES];
		int placed[3], worse = 0;
		char buf[160];

		if (make_case(&c, cause) != 0) {
			free(x.buf);
			return -1;
		}
		memcpy(s.p.free, c.free0, sizeof(s.p.free));
		search_pod(&s, 0, 0);
		placed[0] = place_muster(&c, &p[0]);
		placed[1] = place_greedy(&c, &p[1]);
		placed[2] = place_greedy_whole(&c, &p[2]);
		report->cases++;
		report->exhaustive_leaves += s.leaves;
		report->placed[TOPO_QUALITY_EXHAUSTIVE] += s.found;
		report->placed[TOPO_QUALITY_MUSTER] += placed[0];
		report->placed[TOPO_QUALITY_GREEDY] += placed[1];
		report->placed[TOPO_QUALITY_GREEDY_WHOLE] += placed[2];
		if ((placed[0] || placed[1] || placed[2]) && !s.found) {
			snprintf(buf, sizeof(buf),
				 "case %zu: %s placed it, the exhaustive search found nothing", i,
				 placed[0] ? "muster" : "a greedy");
			topo_tree_free(c.t);
			free(x.buf);
			*cause = strdup(buf);
			return -1;
		}
		for (int w = 0; w < 3; w++)
			if (placed[w])
				measure(&c, &p[w], v[w]);
		if (placed[0] && placed[1]) {
			int buys = v[0][TOPO_QUALITY_LEVEL] > v[1][TOPO_QUALITY_LEVEL] ||
				   v[0][TOPO_QUALITY_PREFERRED] > v[1][TOPO_QUALITY_PREFERRED];

			report->compared++;
			report->stated += c.req.whole.mode == TOPO_MODE_NONE;
			for (int f = 0; f < TOPO_QUALITY_FIGURES; f++) {
				double m = topo_quality_figures[f].lower_better ? -v[0][f] : v[0][f];
				double k = topo_quality_figures[f].lower_better ? -v[1][f] : v[1][f];
				double e = topo_quality_figures[f].lower_better ? -s.best[f] : s.best[f];

				if (m > e || k > e) { /* both are assignments the search scored */
					snprintf(buf, sizeof(buf),
						 "case %zu: %s's %s, %g, beats the exhaustive search's %g", i,
						 m > e ? "muster" : "the greedy",
						 topo_quality_figures[f].name, v[m > e ? 0 : 1][f],
						 s.best[f]);
					topo_tree_free(c.t);
					free(x.buf);
					*cause = strdup(buf);
					return -1;
				}
				report->as_good[f] += m >= k;
				report->stated_as_good[f] += m >= k && c.req.whole.mode == TOPO_MODE_NONE;
				report->better[f] += m > k;
				report->worse_buying[f] += m < k && buys;
				worse |= m < k;
				report->sum[TOPO_QUALITY_MUSTER][f] += v[0][f];
				report->sum[TOPO_QUALITY_GREEDY][f] += v[1][f];
				report->sum[TOPO_QUALITY_EXHAUSTIVE][f] += s.best[f];
			}
		}
		if (placed[0] && placed[2] &&
		    compare_whole(report, i, c.req.whole.mode != TOPO_MODE_NONE, v[0], v[2], s.best, &worse,
				  buf, sizeof(buf)) != 0) {
			topo_tree_free(c.t);
			free(x.buf);
			*cause = strdup(buf);
			return -1;
		}
		if (worse && report->example_count < examples) {
			describe(&x, &c, i, p, placed, v,
				 placed[1] && (v[0][TOPO_QUALITY_LEVEL] > v[1][TOPO_QUALITY_LEVEL] ||
					       v[0][TOPO_QUALITY_PREFERRED] > v[1][TOPO_QUALITY_PREFERRED]));
			report->example_count++;
		}
		topo_tree_free(c.t);
	}
	report->examples = x.buf;
	return 0;
}

void topo_quality_report_free(struct topo_quality_report *report)
{
	if (!report)
		return;
	free(report->examples);
	report->examples = NULL;
}

void topo_quality_verdicts(const struct topo_quality_report *report, double *worst_as_good,
			   int *better_measures)
{
	int up[TOPO_QUALITY_MEASURES] = { 0 }, down[TOPO_QUALITY_MEASURES] = { 0 };

	*worst_as_good = report->compared ? 1.0 : 0.0;
	*better_measures = 0;
	for (int f = 0; f < TOPO_QUALITY_FIGURES; f++) {
		double share = report->compared ? (double)report->as_good[f] / (double)report->compared : 0.0;
		double m = report->sum[TOPO_QUALITY_MUSTER][f], k = report->sum[TOPO_QUALITY_GREEDY][f];
		int measure_of = topo_quality_figures[f].measure;

		if (share < *worst_as_good)
			*worst_as_good = share;
		if (topo_quality_figures[f].lower_better) {
			m = -m;
			k = -k;
		}
		up[measure_of] |= m > k;
		down[measure_of] |= m < k;
	}
	for (int i = 0; i < TOPO_QUALITY_MEASURES; i++)
		*better_measures += up[i] && !down[i];
}

double topo_quality_whole_worst(const struct topo_quality_report *report, int leveled)
{
	size_t n = leveled ? report->leveled_compared : report->whole_compared;
	const size_t *good = leveled ? report->leveled_as_good : report->whole_as_good;
	double worst = 1.0;

	for (int f = 0; f < TOPO_QUALITY_FIGURES && n; f++) {
		double share = (double)good[f] / (double)n;

		worst = share < worst ? share : worst;
	}
	return worst;
}
