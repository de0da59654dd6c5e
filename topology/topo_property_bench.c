/*
 * topo_property_bench: the property test of topo_property.h at a larger
 * count (default 500,000 cases; the first argument sets it), printing what
 * the cases covered and what the core and the exhaustive search answered.
 * Exit 1 with the failing case when a property breaks.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "topo_property.h"

int main(int argc, char **argv)
{
	struct topo_property_counts n = { 0 };
	size_t cases = argc > 1 ? strtoul(argv[1], NULL, 10) : 500000;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000; /* the first case's */
	char *failure = NULL;
	struct timespec a, b;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &a);
	rc = topo_property_run(seed, cases, &n, &failure);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("topo_property_bench: %zu random cases (%zu on HyperNode trees) against an exhaustive search, %.1f s\n",
	       n.cases, n.hypernode_cases,
	       (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
	printf("  the core: placed %zu whole, %zu with fewer partitions; refused %zu (exit 1), %zu as a request (exit 2)\n",
	       n.placed_full, n.placed_partial, n.refused, n.refused_request);
	printf("  exhaustive: a full placement in %zu, any placement in %zu (%zu assignments checked)\n",
	       n.exhaustive_full, n.exhaustive_any, n.exhaustive_leaves);
	printf("  replicated jobs with slices %zu (more layers %zu), a minimum %zu, exclusive %zu; co-placed pairs %zu;\n"
	       "  JobSet-wide required level %zu; shapes other than the first group's %zu; balanced asked %zu\n",
	       n.with_slices, n.with_layers, n.with_minimum, n.with_exclusive, n.with_group, n.with_whole,
	       n.mixed_shapes, n.with_balanced);
	if (rc != 0) {
		printf("FAILED: %s\n", failure);
		free(failure);
		return 1;
	}
	printf("  every property held\n");
	return 0;
}
