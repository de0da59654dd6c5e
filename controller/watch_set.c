/*
 * watch_set: informers in threads, stopped together (see watch_set.h).
 */
#include "watch_set.h"

#include <stdlib.h>

#include "kube_error.h"

static void *watch_main(void *arg)
{
	struct watch_run *w = arg;

	w->err = kube_informer_run(w->spec.informer, w->spec.client, w->spec.path, &w->spec.selectors,
				   w->spec.page_size, w->stop, &w->cause);
	if (w->err)
		atomic_store(w->stop, 1); /* one watch gone for good: stop the others too */
	return NULL;
}

int watch_set_add(struct watch_set *set, const struct watch_spec *spec)
{
	if (set->count >= WATCH_SET_MAX)
		return -1;
	set->watches[set->count++].spec = *spec;
	return 0;
}

int watch_set_start(struct watch_set *set, atomic_int *stop, char **cause)
{
	for (size_t i = 0; i < set->count; i++) {
		set->watches[i].stop = stop;
		if (pthread_create(&set->watches[i].thread, NULL, watch_main, &set->watches[i]) != 0) {
			atomic_store(stop, 1);
			return cause_err(cause, MUSTER_ENOMEM, "cannot start a watch thread");
		}
		set->started++;
	}
	return 0;
}

int watch_set_join(struct watch_set *set, char **cause)
{
	int err = 0;

	for (size_t i = 0; i < set->started; i++) {
		pthread_join(set->watches[i].thread, NULL);
		if (set->watches[i].err && !err) {
			err = set->watches[i].err;
			cause_err(cause, err, "watch %s: %s", set->watches[i].spec.path,
				  set->watches[i].cause ? set->watches[i].cause : muster_err_message(err));
		}
		free(set->watches[i].cause);
		set->watches[i].cause = NULL;
	}
	set->started = 0;
	return err;
}
