/*
 * topo_store: the storage of decoded topology objects. See topo_store.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "topo_store.h"
#include "cause.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_SIZE 65536

static size_t limit_of(const struct topo_store *s)
{
	return s->limit ? s->limit : TOPO_STORE_LIMIT_DEFAULT;
}

void *topo_store_alloc(struct topo_store *s, size_t count, size_t size)
{
	void *p;

	if (s->stored > limit_of(s) || (size && count > (limit_of(s) - s->stored) / size))
		return NULL;
	if (s->block_count == s->block_cap) {
		/* A small store (one object's) starts with room for a few blocks. */
		size_t cap = s->block_cap ? s->block_cap * 2 : s->chunk && s->chunk < 4096 ? 4 : 64;
		void **b = realloc(s->blocks, cap * sizeof(void *));

		if (!b)
			return NULL;
		s->blocks = b;
		s->block_cap = cap;
	}
	p = calloc(count ? count : 1, size ? size : 1);
	if (p) {
		s->blocks[s->block_count++] = p;
		s->stored += count * size;
	}
	return p;
}

const char *topo_store_string(struct topo_store *s, const char *text)
{
	size_t n = strlen(text) + 1, chunk = s->chunk ? s->chunk : CHUNK_SIZE;
	char *p;

	if (n > chunk / 4) {
		p = topo_store_alloc(s, n, 1);
	} else {
		if (n > s->chunk_left) {
			s->chunk_at = topo_store_alloc(s, chunk, 1);
			s->chunk_left = s->chunk_at ? chunk : 0;
		}
		p = s->chunk_left >= n ? s->chunk_at : NULL;
		if (p) {
			s->chunk_at += n;
			s->chunk_left -= n;
		}
	}
	if (p)
		memcpy(p, text, n);
	return p;
}

int topo_store_nomem(const struct topo_store *s, char **cause)
{
	return cause_replace(cause, "input: out of memory or above %zu bytes of decoded data", limit_of(s));
}

void topo_store_free(struct topo_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->block_count; i++)
		free(s->blocks[i]);
	free(s->blocks);
	memset(s, 0, sizeof(*s));
}
