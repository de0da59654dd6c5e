/*
 * Unit tests of json_arena: trees parsed inside begin/end come from the
 * thread's arena and cost nothing to free; everything else is plain malloc;
 * reset keeps one block; threads have their own arenas, freed at exit (the
 * ASan build's leak check covers that).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "json_arena.h"

static const char pod[] = "{\"metadata\":{\"name\":\"p\",\"uid\":\"u\",\"labels\":{\"a\":\"b\"}},"
			  "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.1\"}}";

static void parses_in_the_arena_and_resets(void **state)
{
	cJSON *tree;

	(void)state;
	assert_int_equal(json_arena_install(), 0);
	json_arena_reset();
	json_arena_begin();
	tree = cJSON_Parse(pod);
	json_arena_end();
	assert_non_null(tree);
	assert_true(json_arena_bytes() > 0);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(tree, "status"), "phase")->valuestring,
			    "Running");
	cJSON_Delete(tree); /* a no-op for arena nodes */
	json_arena_reset();
	assert_int_equal(json_arena_bytes(), 128u * 1024u); /* one block kept */
	/* Many lines in a row reuse that block. */
	for (int i = 0; i < 1000; i++) {
		json_arena_begin();
		tree = cJSON_Parse(pod);
		json_arena_end();
		assert_non_null(tree);
		cJSON_Delete(tree);
		json_arena_reset();
	}
	assert_int_equal(json_arena_bytes(), 128u * 1024u);
}

static void large_allocations_get_their_own_block(void **state)
{
	size_t size = 300u * 1024u;
	char *text = malloc(size + 3);
	cJSON *tree;

	(void)state;
	assert_non_null(text);
	text[0] = '"';
	memset(text + 1, 'x', size);
	text[size + 1] = '"';
	text[size + 2] = '\0';
	json_arena_install();
	json_arena_begin();
	tree = cJSON_Parse(text);
	json_arena_end();
	assert_non_null(tree);
	assert_int_equal(strlen(tree->valuestring), size);
	assert_true(json_arena_bytes() >= size);
	cJSON_Delete(tree);
	json_arena_reset();
	assert_true(json_arena_bytes() <= 128u * 1024u);
	free(text);
}

static void outside_the_arena_is_plain_malloc(void **state)
{
	cJSON *tree;
	char *printed;
	size_t before;

	(void)state;
	json_arena_install();
	json_arena_reset();
	before = json_arena_bytes();
	tree = cJSON_Parse(pod);
	printed = cJSON_PrintUnformatted(tree);
	assert_non_null(printed);
	assert_int_equal(json_arena_bytes(), before);
	/* Freed with free(): it was never the arena's (ASan would report it). */
	free(printed);
	cJSON_Delete(tree);
}

static void *thread_main(void *arg)
{
	cJSON *tree;

	(void)arg;
	json_arena_begin();
	tree = cJSON_Parse(pod);
	json_arena_end();
	if (!tree || json_arena_bytes() == 0)
		return (void *)1;
	cJSON_Delete(tree);
	return NULL; /* the arena's block is freed at thread exit */
}

static void threads_have_their_own_arena(void **state)
{
	pthread_t threads[4];
	void *result;
	size_t mine;

	(void)state;
	json_arena_install();
	json_arena_reset();
	mine = json_arena_bytes();
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&threads[i], NULL, thread_main, NULL), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(threads[i], &result), 0);
		assert_null(result);
	}
	assert_int_equal(json_arena_bytes(), mine);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parses_in_the_arena_and_resets),
		cmocka_unit_test(large_allocations_get_their_own_block),
		cmocka_unit_test(outside_the_arena_is_plain_malloc),
		cmocka_unit_test(threads_have_their_own_arena),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
