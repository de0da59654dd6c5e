/*
 * libFuzzer target for topo_record_parse (the placement record the pod
 * webhook reads): any input is parsed or refused with a cause; what is
 * parsed answers every lookup its runs name, and lookups outside them
 * answer "not held", never a crash. Inputs up to the record's bound
 * (TOPO_RECORD_BYTES_MAX) are tried whole.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topo_record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct walk {
	const struct topo_record *r;
};

static int check_run(void *arg, const char *rj, uint32_t job, uint32_t from, uint32_t to,
		     const char *selector)
{
	struct walk *w = arg;
	const char *found = NULL;

	if (to < from || topo_record_find(w->r, rj, job, from, &found) != 1 ||
	    topo_record_find(w->r, rj, job, to, &found) != 1)
		abort();
	(void)selector;
	/* A Job's template share, at its first run only (each call walks the
	 * Job's runs): one of its runs' selectors, never "". Indexes past the
	 * record's are later pods in its slots (topo_record.h): the share of
	 * every index up to 2^32 - 2 is that of every slot, never "" either. */
	if (from == 0 && topo_record_job_template(w->r, rj, job, 0, UINT32_MAX - 1, &found) == 1 && !found[0])
		abort();
	if (from == 0 && topo_record_job_template(w->r, rj, job, 0, to, &found) == 1 && !found[0])
		abort();
	/* A later pod of an index past this run's answers as a pod of the
	 * record does: a selector, or none, never a crash. */
	(void)topo_record_find(w->r, rj, job, to + 1u + (to - from), &found);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct topo_record *r = NULL;
	char *cause = NULL;
	const char *selector;
	struct walk w;

	if (topo_record_parse((const char *)data, size, &r, &cause) != 0) {
		if (r)
			abort(); /* a refusal leaves nothing */
		free(cause);
		return 0;
	}
	w.r = r;
	topo_record_foreach(r, check_run, &w);
	(void)topo_record_find(r, "w", 0, UINT32_MAX, &selector);
	(void)topo_record_find(r, "", UINT32_MAX, 0, &selector);
	topo_record_free(r);
	return 0;
}
