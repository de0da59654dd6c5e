/*
 * muster_lock: counted mutexes (see muster_lock.h).
 */
#include "muster_lock.h"

#include <stdlib.h>
#include <string.h>

#include "mlog.h"

static _Thread_local unsigned held;

void muster_lock(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
	held++;
}

void muster_unlock(pthread_mutex_t *m)
{
	held--;
	pthread_mutex_unlock(m);
}

unsigned muster_locks_held(void)
{
	return held;
}

void muster_lock_violation(const char *what)
{
	char quoted[320];

	what = what ? what : "?";
	mlog(MLOG_ERROR, "api-call-under-lock", "locks=%u request=%s", held,
	     mlog_quote(quoted, sizeof(quoted), what, strlen(what)));
	abort();
}
