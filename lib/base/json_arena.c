/*
 * json_arena: see json_arena.h. Blocks of ARENA_BLOCK bytes (an allocation
 * larger than a block gets a block of its own); a pointer is the arena's when
 * it lies inside one of the thread's blocks.
 */
#define _POSIX_C_SOURCE 200809L

#include "json_arena.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#define ARENA_BLOCK (128u * 1024u)
#define ARENA_ALIGN 16u

struct block {
	struct block *next;
	size_t size; /* usable bytes after the header */
	size_t used;
	_Alignas(ARENA_ALIGN) unsigned char data[];
};

struct arena {
	struct block *blocks; /* newest first */
	size_t bytes;
	int active;
};

static _Thread_local struct arena arena;
static pthread_key_t exit_key;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_result = -1;

static void free_blocks(struct block *b)
{
	while (b) {
		struct block *next = b->next;

		free(b);
		b = next;
	}
}

/* Thread exit: the key's value is only a marker that the arena has blocks. */
static void on_thread_exit(void *marker)
{
	(void)marker;
	free_blocks(arena.blocks);
	arena.blocks = NULL;
	arena.bytes = 0;
}

static int owns(const void *p)
{
	const unsigned char *q = p;

	for (const struct block *b = arena.blocks; b; b = b->next)
		if (q >= b->data && q < b->data + b->size)
			return 1;
	return 0;
}

static void *arena_malloc(size_t size)
{
	struct block *b = arena.blocks;
	size_t need = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);

	if (!arena.active)
		return malloc(size);
	if (need < size)
		return NULL;
	if (!b || b->size - b->used < need) {
		size_t capacity = need > ARENA_BLOCK ? need : ARENA_BLOCK;

		b = malloc(sizeof(*b) + capacity);
		if (!b)
			return NULL;
		if (!arena.blocks)
			pthread_setspecific(exit_key, &arena);
		b->size = capacity;
		b->used = 0;
		b->next = arena.blocks;
		arena.blocks = b;
		arena.bytes += capacity;
	}
	b->used += need;
	return b->data + b->used - need;
}

static void arena_free(void *p)
{
	if (p && !owns(p))
		free(p);
}

static void install(void)
{
	cJSON_Hooks hooks = { arena_malloc, arena_free };

	if (pthread_key_create(&exit_key, on_thread_exit) != 0)
		return;
	cJSON_InitHooks(&hooks);
	install_result = 0;
}

int json_arena_install(void)
{
	pthread_once(&install_once, install);
	return install_result;
}

void json_arena_begin(void)
{
	arena.active = install_result == 0;
}

void json_arena_end(void)
{
	arena.active = 0;
}

void json_arena_reset(void)
{
	struct block *keep = arena.blocks;

	if (!keep)
		return;
	/* Keep the oldest standard block, the one most likely to be reused. */
	while (keep->next)
		keep = keep->next;
	if (keep->size != ARENA_BLOCK) {
		free_blocks(arena.blocks);
		arena.blocks = NULL;
		arena.bytes = 0;
		return;
	}
	for (struct block *b = arena.blocks, *next; b != keep; b = next) {
		next = b->next;
		free(b);
	}
	keep->used = 0;
	arena.blocks = keep;
	arena.bytes = keep->size;
}

size_t json_arena_bytes(void)
{
	return arena.bytes;
}
