/*
 * libFuzzer target for the metrics exposition's escaping: any help text and
 * label values (registered and collected), and any candidate metric name,
 * must render as text that the Prometheus text format 0.0.4 reads: every
 * line "# HELP name text", "# TYPE name type" or a sample
 * name{label="value",...} number, help escaping only \\ and \n, label values
 * only \\, \" and \n, all of it valid UTF-8. The input is split at its NUL
 * bytes into the help text, a registered label value, a collected label
 * value and a name.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct parts {
	char *text[4];
};

static int collect(void *arg, struct metrics_writer *writer)
{
	const struct parts *p = arg;
	const struct metrics_label label = { "v", p->text[2] };

	metrics_write_gauge(writer, "fuzz_collected", p->text[0], &label, 1, 1.5);
	return 0;
}

static int name_char(char c, int first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
	       (!first && c >= '0' && c <= '9');
}

/* Length of a valid UTF-8 sequence at s (at most n bytes), 0 when invalid. */
static size_t utf8_at(const unsigned char *s, size_t n)
{
	size_t len = s[0] < 0x80	     ? 1
		     : (s[0] & 0xE0) == 0xC0 ? 2
		     : (s[0] & 0xF0) == 0xE0 ? 3
		     : (s[0] & 0xF8) == 0xF0 ? 4
					     : 0;

	if (!len || len > n || (len == 2 && s[0] < 0xC2))
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	return len;
}

/* Checks one line [s, e); aborts when the format is broken. */
static void check_line(const char *s, const char *e)
{
	const char *p = s;

	if (e - s >= 7 && memcmp(s, "# HELP ", 7) == 0) {
		for (p = s + 7; p < e && *p != ' '; p++)
			if (!name_char(*p, p == s + 7))
				abort();
		for (; p < e; p++)
			if (*p == '\\' && (++p >= e || (*p != '\\' && *p != 'n')))
				abort();
		return;
	}
	if (e - s >= 7 && memcmp(s, "# TYPE ", 7) == 0)
		return;
	for (; p < e && *p != '{' && *p != ' '; p++)
		if (!name_char(*p, p == s))
			abort();
	if (p == s || p >= e)
		abort();
	if (*p == '{') {
		for (p++; p < e && *p != '}';) {
			const char *k = p;

			for (; p < e && *p != '='; p++)
				if (!name_char(*p, p == k))
					abort();
			if (p + 1 >= e || p[1] != '"')
				abort();
			for (p += 2; p < e && *p != '"'; p++)
				if (*p == '\\' && (++p >= e || (*p != '\\' && *p != '"' && *p != 'n')))
					abort();
			if (p >= e)
				abort();
			p++; /* the closing quote */
			if (p < e && *p == ',')
				p++;
		}
		if (p >= e)
			abort();
		p++;
	}
	if (p >= e || *p != ' ' || p + 1 >= e)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct parts parts = { { 0 } };
	struct metrics_registry *r = NULL;
	struct metrics_gauge *g = NULL, *named = NULL;
	struct metrics_label label;
	char *text = NULL, *cause = NULL;
	size_t len = 0, at = 0;
	int err;

	for (int i = 0; i < 4; i++) {
		const uint8_t *nul = at < size ? memchr(data + at, 0, size - at) : NULL;
		size_t n = at < size ? (size_t)((nul ? nul : data + size) - (data + at)) : 0;

		parts.text[i] = malloc(n + 1);
		if (!parts.text[i])
			goto out;
		memcpy(parts.text[i], data + at, n);
		parts.text[i][n] = '\0';
		at += n + 1;
	}
	if (metrics_registry_new(0, &r))
		goto out;
	label = (struct metrics_label){ "k", parts.text[1] };
	/* Any help and label value is accepted, unless the label text passes
	 * the registered series' bound (64 KiB escaped: MUSTER_ETOOBIG, with a cause). */
	err = metrics_gauge_register(r, "fuzz_registered", parts.text[0], &label, 1, &g, &cause);
	if (err && (err != MUSTER_ETOOBIG || !cause || strlen(parts.text[1]) < 16384))
		abort();
	if (err)
		goto out;
	metrics_gauge_set(g, -0.25);
	/* (the collector's family name is left to it: a collision fails the
	 * render by design) */
	if (strcmp(parts.text[3], "fuzz_collected") == 0) {
		/* nothing */
	} else if (metrics_gauge_register(r, parts.text[3], NULL, NULL, 0, &named, &cause) == 0) {
		for (const char *c = parts.text[3]; *c; c++)
			if (!name_char(*c, c == parts.text[3]))
				abort(); /* a bad name was accepted */
	} else if (!cause) {
		abort();
	}
	free(cause);
	cause = NULL;
	metrics_collector_register(r, collect, &parts, NULL);
	if (metrics_render(r, &text, &len, &cause))
		abort();
	if (strlen(text) != len || (len && text[len - 1] != '\n'))
		abort();
	for (size_t i = 0; i < len;) {
		size_t n = utf8_at((const unsigned char *)text + i, len - i);

		if (!n)
			abort(); /* not UTF-8 */
		i += n;
	}
	for (const char *s = text, *e; s < text + len; s = e + 1) {
		e = memchr(s, '\n', (size_t)(text + len - s));
		check_line(s, e);
	}
out:
	free(text);
	free(cause);
	metrics_registry_free(r);
	for (int i = 0; i < 4; i++)
		free(parts.text[i]);
	return 0;
}
