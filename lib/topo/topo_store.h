/*
 * topo_store: the storage that decoded topology objects point into. Each
 * decoder of topo_objects.h and topo_jobset.h copies what it keeps (strings,
 * label lists, selectors) into a store, so that the parse tree can be freed
 * at once; freeing the store frees every object decoded into it. A store
 * has a limit on what it holds, so hostile input cannot take the memory.
 *
 * Zero a struct topo_store, set `limit` (0: TOPO_STORE_LIMIT_DEFAULT), use
 * it, topo_store_free() it.
 */
#ifndef MUSTER_TOPO_STORE_H
#define MUSTER_TOPO_STORE_H

#include <stddef.h>

#define TOPO_STORE_LIMIT_DEFAULT (1024u * 1024 * 1024)

struct topo_store {
	size_t limit; /* bytes; 0 means TOPO_STORE_LIMIT_DEFAULT */
	size_t chunk; /* bytes of a string chunk; 0 means 64 KiB (small for one object's store) */
	void **blocks;
	size_t block_count, block_cap;
	char *chunk_at; /* the free part of the current chunk */
	size_t chunk_left;
	size_t stored; /* bytes held, at most the limit */
};

/* Zeroed memory for count items of size bytes, owned by the store; NULL
 * when out of memory or above the limit. */
void *topo_store_alloc(struct topo_store *s, size_t count, size_t size);

/* A copy of the string (strings share chunks); NULL as above. */
const char *topo_store_string(struct topo_store *s, const char *text);

/* The sentence for a failed allocation, as a cause (docs/errors.md): -1. */
int topo_store_nomem(const struct topo_store *s, char **cause);

/* Frees everything the store holds and zeroes it (the limit too). */
void topo_store_free(struct topo_store *s);

#endif
