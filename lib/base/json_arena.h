/*
 * json_arena: a per-thread bump allocator for cJSON trees that live for one
 * watch line only.
 *
 * A pod as the apiserver sends it is ~9 KB of JSON and ~400 cJSON nodes: a
 * malloc and a free per node and per string, which is most of the cost of a
 * watch event once parsing is done. Between json_arena_begin() and
 * json_arena_end() the calling thread's cJSON allocations come from its
 * arena instead; freeing them (cJSON_Delete) is then a no-op, and
 * json_arena_reset() takes the whole arena back at once.
 *
 * Rules, which kube_client's watch loop follows: a tree parsed in the arena
 * is used and deleted on the same thread before the next json_arena_reset(),
 * and no part of it is kept. Allocations made outside begin/end, or by other
 * threads, are plain malloc/free as before; so are cJSON's own outside them.
 *
 * json_arena_install() sets cJSON's allocation hooks for the whole process
 * (once; later calls do nothing). Call it before threads use cJSON. Each
 * thread's arena is freed when the thread exits.
 */
#ifndef MUSTER_JSON_ARENA_H
#define MUSTER_JSON_ARENA_H

#include <stddef.h>

/* Routes cJSON's malloc and free through the arena hooks. Returns 0, or -1
 * if the per-thread key cannot be made (cJSON then keeps plain malloc). */
int json_arena_install(void);

/* This thread's cJSON allocations come from its arena until json_arena_end. */
void json_arena_begin(void);
void json_arena_end(void);

/* Forgets everything allocated in this thread's arena; keeps one block for
 * the next line. */
void json_arena_reset(void);

/* Bytes held by this thread's arena now (for tests). */
size_t json_arena_bytes(void);

#endif
