/*
 * Unit tests of topo_retire: the annotation muster.dev/placement-retire
 * read and written back; bad entries skipped and counted, the good ones
 * kept; a Job listed twice kept once (the later entry).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "topo_retire.h"

static void entries_read_back_as_written(void **state)
{
	const char *text = "ported/0=2b423883-a78b@1795570345;w/12=job-1@1795570400";
	struct topo_retire *list = NULL;
	size_t count, skipped;
	char *again;

	(void)state;
	assert_int_equal(topo_retire_parse(text, strlen(text), &list, &count, &skipped), 0);
	assert_int_equal(count, 2);
	assert_int_equal(skipped, 0);
	assert_string_equal(list[0].replicated_job, "ported");
	assert_int_equal(list[0].job, 0);
	assert_string_equal(list[0].job_uid, "2b423883-a78b");
	assert_true(list[0].due == 1795570345.0);
	assert_string_equal(list[1].replicated_job, "w");
	assert_int_equal(list[1].job, 12);
	again = topo_retire_format(list, count);
	assert_string_equal(again, text);
	free(again);
	free(list);
}

static void bad_entries_are_skipped_and_counted(void **state)
{
	const char *text = ";w/1=u@5;nojob=u@5;w/x=u@5;w/2=@5;w/3=u@;w/4=u@-1;/5=u@5;w/6=u@5x;w/7=u@9";
	struct topo_retire *list = NULL;
	size_t count, skipped;

	(void)state;
	assert_int_equal(topo_retire_parse(text, strlen(text), &list, &count, &skipped), 0);
	assert_int_equal(count, 2);
	assert_int_equal(skipped, 7);
	assert_int_equal(list[0].job, 1);
	assert_int_equal(list[1].job, 7);
	free(list);
}

static void a_job_listed_twice_is_kept_once_the_later_entry(void **state)
{
	const char *text = "w/1=old@5;w/1=new@9";
	struct topo_retire *list = NULL, r = { "w", 2, "u2", 3 };
	size_t count, skipped;
	char *empty;

	(void)state;
	assert_int_equal(topo_retire_parse(text, strlen(text), &list, &count, &skipped), 0);
	assert_int_equal(count, 1);
	assert_string_equal(list[0].job_uid, "new");
	assert_int_equal(topo_retire_add(&list, &count, &r), 0);
	assert_int_equal(count, 2);
	free(list);
	empty = topo_retire_format(NULL, 0);
	assert_string_equal(empty, "");
	free(empty);
	assert_int_equal(topo_retire_parse("", 0, &list, &count, &skipped), 0);
	assert_null(list);
	assert_int_equal(count, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(entries_read_back_as_written),
		cmocka_unit_test(bad_entries_are_skipped_and_counted),
		cmocka_unit_test(a_job_listed_twice_is_kept_once_the_later_entry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
