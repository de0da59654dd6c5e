/*
 * topo_quality: how good the placement core's choices are (issue 36),
 * against Kueue's greedy BestFit and an exhaustive search, on random cases
 * small enough for the exhaustive one.
 *
 * Each case: 2 blocks x 2 racks x 2 hosts of 4 cpu and 4 memory units at
 * random usage, and a JobSet of 1 to 3 replicated jobs (1 or 2 Jobs of 1 to
 * 3 pods, at most 6 pods and 4 Jobs in all) of two pod shapes (2 cpu + 1
 * memory unit, 1 cpu + 2 units), each required or preferred at block or
 * rack, with no JobSet-wide level, a preferred one or a required one.
 *
 * Four placements of the same case:
 *  - muster: topo_place, as the controller calls it;
 *  - greedy: Kueue's BestFit as kubernetes-sigs/kueue
 *    pkg/cache/scheduler/tas_flavor_snapshot.go does it, each Job a PodSet
 *    of its own in the JobSet's order (Kueue has no JobSet-wide level):
 *    counts of pods per domain; at the Job's level, the domains by count
 *    descending then name, and when the first holds the Job, the first of
 *    the smallest count that does (findLevelWithFitDomains); none: refused
 *    if required, else one level up, and at the top level the domains by
 *    count descending, each taken whole until the rest fits one, the best
 *    fit for that one; then down, level by level, the children of the
 *    chosen domains pooled, sorted and taken the same way
 *    (updateCountsToMinimumGeneric). A placement that breaks the JobSet's
 *    required level counts as a refusal;
 *  - greedy given the JobSet's level ("greedy+"): the same greedy answering
 *    the whole request, as Kueue's level search meets a PodSet's with the
 *    JobSet one PodSet: at the JobSet-wide level, of the domains where
 *    every Job fits by the greedy held inside it, the one with the fewest
 *    free pods of the JobSet's shapes (the first such); none: refused if
 *    required, else one level up, the cluster last. Without a JobSet-wide
 *    level it is the greedy;
 *  - exhaustive: every assignment of every pod to a node that keeps the
 *    required levels and fits; per measure, the best any of them reaches
 *    (each measure on its own, so no one placement need reach all).
 *
 * The measures, per placement:
 *  - hosts used: per Job, the nodes holding its pods, summed (fewer better);
 *  - the largest free domain left at each level (block, rack, host): free
 *    pods of the JobSet's shapes in the freest domain, each shape counted
 *    on its own and the counts summed (larger better);
 *  - the JobSet's tightest level: the deepest level with one domain holding
 *    every pod (0 the cluster .. 3 one host; deeper better);
 *  - preferred levels met: Jobs whose preferred level holds them in one
 *    domain (more better).
 *
 * Pure: no I/O. Deterministic for a seed.
 */
#ifndef MUSTER_TOPO_QUALITY_H
#define MUSTER_TOPO_QUALITY_H

#include <stddef.h>
#include <stdint.h>

/* The figures, one per column (the free domain is one figure per level). */
enum topo_quality_figure {
	TOPO_QUALITY_HOSTS,
	TOPO_QUALITY_FREE_BLOCK,
	TOPO_QUALITY_FREE_RACK,
	TOPO_QUALITY_FREE_HOST,
	TOPO_QUALITY_LEVEL,
	TOPO_QUALITY_PREFERRED,
	TOPO_QUALITY_FIGURES
};

/* The four measures the figures belong to. */
enum { TOPO_QUALITY_MEASURES = 4 };

/* Who placed. */
enum topo_quality_way {
	TOPO_QUALITY_MUSTER,
	TOPO_QUALITY_GREEDY,
	TOPO_QUALITY_EXHAUSTIVE,
	TOPO_QUALITY_GREEDY_WHOLE, /* the greedy given the JobSet-wide level too */
	TOPO_QUALITY_WAYS
};

struct topo_quality_figure_info {
	const char *name;
	int measure; /* 0 .. TOPO_QUALITY_MEASURES - 1 */
	int lower_better; /* hosts: fewer is better; the others: more */
};

/* Indexed by enum topo_quality_figure. */
extern const struct topo_quality_figure_info topo_quality_figures[TOPO_QUALITY_FIGURES];
extern const char *const topo_quality_measure_names[TOPO_QUALITY_MEASURES];

struct topo_quality_report {
	size_t cases;
	size_t placed[TOPO_QUALITY_WAYS]; /* exhaustive: a placement exists */
	size_t compared; /* cases all three placed: the figures below are over these */
	size_t as_good[TOPO_QUALITY_FIGURES]; /* muster as good as the greedy or better */
	size_t better[TOPO_QUALITY_FIGURES]; /* muster strictly better */
	/* Of the cases where muster is worse on the figure, those where it
	 * holds the JobSet at a deeper level or meets more preferred levels
	 * than the greedy (what its order of measures puts first). */
	size_t worse_buying[TOPO_QUALITY_FIGURES];
	/* The compared cases Kueue can state (no JobSet-wide level: Kueue has
	 * none), and of them where muster is as good as the greedy or better. */
	size_t stated;
	size_t stated_as_good[TOPO_QUALITY_FIGURES];
	double sum[TOPO_QUALITY_WAYS][TOPO_QUALITY_FIGURES]; /* for the means (not GREEDY_WHOLE) */
	/* Against the greedy given the JobSet-wide level (every input): the
	 * cases muster and it both placed, where muster is as good or
	 * better, strictly better, and the sums of muster's and its figures. */
	size_t whole_compared;
	size_t whole_as_good[TOPO_QUALITY_FIGURES];
	/* The same over the inputs with a JobSet-wide level (where the
	 * greedy given it differs from the greedy). */
	size_t leveled_compared;
	size_t leveled_as_good[TOPO_QUALITY_FIGURES];
	size_t whole_better[TOPO_QUALITY_FIGURES];
	double whole_sum[2][TOPO_QUALITY_FIGURES];
	size_t exhaustive_leaves; /* complete assignments the exhaustive search scored */
	/* Up to the `examples` asked, cases where muster is worse than either
	 * greedy on some figure, described (malloc'd text or NULL; at most
	 * 64 KiB). */
	char *examples;
	size_t example_count;
};

/* Runs `cases` cases from `seed` into *report (zeroed first). 0, or -1
 * with *cause (malloc'd) when the harness itself is wrong: muster or the
 * greedy places a case the exhaustive search finds no placement for, or
 * beats the best it found on some figure, or out of memory. Free with
 * topo_quality_report_free (also after -1). */
int topo_quality_run(uint64_t seed, size_t cases, size_t examples, struct topo_quality_report *report,
		     char **cause);

void topo_quality_report_free(struct topo_quality_report *report);

/* The verdicts, from the figures: *worst_as_good the lowest share (0..1)
 * of compared cases where muster is as good as the greedy, over every
 * figure; *better_measures how many of the four measures muster is better
 * on, on average (a measure is better when one of its figures' means is
 * better and none is worse). */
void topo_quality_verdicts(const struct topo_quality_report *report, double *worst_as_good,
			   int *better_measures);

/* The lowest share (0..1), over every figure, of the cases muster and the
 * greedy given the JobSet's level both placed where muster is as good or
 * better (1 when there are none): over every input, or (leveled) over
 * those with a JobSet-wide level. */
double topo_quality_whole_worst(const struct topo_quality_report *report, int leveled);

#endif
