/*
 * topo_retire: the moved Jobs to delete (topo_retire.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "topo_retire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One entry of `len` bytes: 1 with *r, else 0. */
static int entry(const char *text, size_t len, struct topo_retire *r)
{
	char buf[TOPO_RETIRE_NAME_MAX + TOPO_RETIRE_UID_MAX + 48], *slash, *eq, *at, *stop = NULL;
	unsigned long job;
	double due;

	if (!len || len >= sizeof(buf))
		return 0;
	memcpy(buf, text, len);
	buf[len] = '\0';
	if (memchr(buf, '\0', len))
		return 0;
	eq = strchr(buf, '=');
	if (!eq)
		return 0;
	*eq = '\0';
	slash = strrchr(buf, '/');
	at = strrchr(eq + 1, '@');
	if (!slash || slash == buf || (size_t)(slash - buf) >= TOPO_RETIRE_NAME_MAX || !at || at == eq + 1 ||
	    (size_t)(at - eq - 1) >= TOPO_RETIRE_UID_MAX || slash[1] < '0' || slash[1] > '9')
		return 0;
	job = strtoul(slash + 1, &stop, 10);
	if (*stop || job > 2147483647UL)
		return 0;
	if (at[1] < '0' || at[1] > '9')
		return 0;
	due = strtod(at + 1, &stop);
	if (*stop || !(due >= 0 && due < 1e12))
		return 0;
	memset(r, 0, sizeof(*r));
	memcpy(r->replicated_job, buf, (size_t)(slash - buf));
	r->job = (uint32_t)job;
	memcpy(r->job_uid, eq + 1, (size_t)(at - eq - 1));
	r->due = due;
	return 1;
}

int topo_retire_add(struct topo_retire **list, size_t *count, const struct topo_retire *r)
{
	struct topo_retire *grown;

	for (size_t i = 0; i < *count; i++)
		if ((*list)[i].job == r->job && strcmp((*list)[i].replicated_job, r->replicated_job) == 0) {
			(*list)[i] = *r;
			return 0;
		}
	if (!(grown = realloc(*list, (*count + 1) * sizeof(*grown))))
		return -1;
	*list = grown;
	grown[(*count)++] = *r;
	return 0;
}

int topo_retire_parse(const char *text, size_t len, struct topo_retire **out, size_t *count, size_t *skipped)
{
	size_t at = 0;

	*out = NULL;
	*count = *skipped = 0;
	while (at < len) {
		const char *end = memchr(text + at, ';', len - at);
		size_t n = end ? (size_t)(end - (text + at)) : len - at;
		struct topo_retire r;

		if (n) {
			if (*count >= TOPO_RETIRE_ENTRIES_MAX || !entry(text + at, n, &r)) {
				(*skipped)++;
			} else if (topo_retire_add(out, count, &r)) {
				free(*out);
				*out = NULL;
				*count = 0;
				return -1;
			}
		}
		at += n + 1;
	}
	return 0;
}

char *topo_retire_format(const struct topo_retire *list, size_t count)
{
	size_t size = 1 + count * (TOPO_RETIRE_NAME_MAX + TOPO_RETIRE_UID_MAX + 32), at = 0;
	char *text = malloc(size);

	if (!text)
		return NULL;
	text[0] = '\0';
	for (size_t i = 0; i < count; i++)
		at += (size_t)snprintf(text + at, size - at, "%s%s/%u=%s@%.0f", i ? ";" : "",
				       list[i].replicated_job, list[i].job, list[i].job_uid, list[i].due);
	return text;
}
