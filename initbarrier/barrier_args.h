/*
 * barrier_args: muster-barrier's flags and environment (--help has them
 * all), checked, into a struct barrier_config. A usage error is printed on
 * stderr and written to the termination log, so that a pod given bad
 * arguments says so in `kubectl describe`. No other side effect.
 */
#ifndef MUSTER_BARRIER_ARGS_H
#define MUSTER_BARRIER_ARGS_H

#include "barrier_run.h"

/* Fills *config from argv and the environment ($MUSTER_BARRIER_TOKEN).
 * Returns -1 to run, else the exit code: 0 after --help or --version,
 * MUSTER_BARRIER_EXIT_USAGE after a usage error. */
int barrier_args_parse(int argc, char **argv, struct barrier_config *config);

#endif
