/*
 * muster-barrier: the init container that holds a pod of a group-scheduled
 * JobSet until the whole group has started.
 *
 * This file only reads the command line (barrier_args), names the pod in
 * the log, then runs barrier_run().
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "barrier_args.h"
#include "barrier_run.h"
#include "mlog.h"

int main(int argc, char **argv)
{
	static struct barrier_config config;
	const char *ns = getenv("POD_NAMESPACE"), *name = getenv("POD_NAME");
	char object[256] = "";
	int code = barrier_args_parse(argc, argv, &config);

	if (code >= 0)
		return code;
	if (name && name[0])
		snprintf(object, sizeof(object), "%.120s/%.120s", ns && ns[0] ? ns : "-", name);
	mlog_init("barrier", "pod", object);
	return barrier_run(&config);
}
