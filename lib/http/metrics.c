/*
 * metrics: the registry, its atomic series and the text renderer. See
 * metrics.h for the contract.
 *
 * Families and their series are lists appended under the registry's mutex
 * and never shortened before the registry is freed, which is what keeps a
 * handle valid without reference counts. A series' labels are escaped once,
 * at registration, into the text between its braces, so a render only
 * formats numbers. A double lives in an _Atomic uint64_t as its bit pattern
 * and is added to with a compare-and-swap loop: C11 has no atomic add for
 * floating types.
 *
 * Every byte a render produces goes through emit(), which charges it to the
 * render's budget: the limit holds for the registered series, for what the
 * collectors write, and for both together.
 */
#define _POSIX_C_SOURCE 200809L
#include "metrics.h"
#include "cause.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(double) == sizeof(uint64_t), "a double is stored in 64 bits");

/* Longest label text (between the braces) of a registered series. */
#define REGISTERED_LABELS_MAX (64u * 1024u)

enum metric_type { TYPE_COUNTER, TYPE_GAUGE, TYPE_HISTOGRAM };

static const char *const type_names[] = {
	[TYPE_COUNTER] = "counter",
	[TYPE_GAUGE] = "gauge",
	[TYPE_HISTOGRAM] = "histogram",
};

struct metrics_counter {
	_Atomic uint64_t value;
};

struct metrics_gauge {
	_Atomic uint64_t bits; /* a double */
};

struct metrics_histogram {
	size_t bound_count;
	double *bounds;
	/* Per bucket, not cumulative; counts[bound_count] holds what is above
	 * every bound. The cumulative counts are summed at render time. */
	_Atomic uint64_t *counts;
	_Atomic uint64_t sum_bits; /* a double */
};

struct series {
	struct series *next;
	char *labels; /* escaped `a="x",b="y"`; "" without labels */
	union {
		struct metrics_counter counter;
		struct metrics_gauge gauge;
		struct metrics_histogram histogram;
	} u;
};

struct family {
	struct family *next;
	enum metric_type type;
	char *name;
	char *help; /* NULL: no HELP line */
	struct series *series, **series_tail;
};

struct collector {
	metrics_collect_fn collect;
	void *arg;
};

struct metrics_registry {
	pthread_mutex_t lock; /* families, collectors */
	size_t render_max;
	struct family *families, **families_tail;
	struct collector collectors[METRICS_COLLECTORS_MAX];
	size_t collector_count;
};

/* A growable text. */
struct buffer {
	char *data; /* NUL-terminated once anything was added */
	size_t len;
	size_t cap;
};

/* The budget and the first failure of one render (or of one label text). */
struct render {
	size_t used; /* bytes held by every buffer charged to this render */
	size_t max;
	int err;
	char *cause;
};

/* A family written by the collectors of one render. */
struct writer_family {
	char name[METRICS_NAME_MAX + 1];
	enum metric_type type;
	struct buffer text; /* HELP, TYPE and the samples */
};

struct metrics_writer {
	struct metrics_registry *registry;
	struct render *render;
	struct writer_family *families; /* METRICS_WRITER_FAMILIES_MAX */
	size_t family_count;
	size_t last; /* the family written last: most writes repeat it */
};

/* ---- causes: cause_err and cause_vformat (lib/base/cause.h) ---- */

/* Records the render's first failure; later ones are dropped. */
static void render_fail(struct render *render, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void render_fail(struct render *render, int err, const char *fmt, ...)
{
	va_list ap;

	if (render->err)
		return;
	render->err = err;
	va_start(ap, fmt);
	render->cause = cause_vformat(fmt, ap);
	va_end(ap);
}

/* ---- text ---- */

static void emit(struct render *render, struct buffer *buffer, const char *text, size_t len)
{
	size_t need, cap;
	char *data;

	if (render->err || len == 0)
		return;
	if (len > render->max - render->used) {
		render_fail(render, MUSTER_ETOOBIG, "metrics output exceeds the limit of %zu bytes",
			    render->max);
		return;
	}
	/* buffer->len <= used, so need <= max + 1 and the doubling below stays
	 * far from overflow (max <= METRICS_RENDER_MAX_LIMIT). */
	need = buffer->len + len + 1;
	if (need > buffer->cap) {
		cap = buffer->cap ? buffer->cap : 4096;
		while (cap < need)
			cap *= 2;
		if (cap > render->max + 1)
			cap = render->max + 1;
		data = realloc(buffer->data, cap);
		if (!data) {
			render_fail(render, MUSTER_ENOMEM, "out of memory rendering metrics");
			return;
		}
		buffer->data = data;
		buffer->cap = cap;
	}
	memcpy(buffer->data + buffer->len, text, len);
	buffer->len += len;
	buffer->data[buffer->len] = '\0';
	render->used += len;
}

static void emit_str(struct render *render, struct buffer *buffer, const char *text)
{
	emit(render, buffer, text, strlen(text));
}

/* Length of the valid UTF-8 sequence of 2 to 4 bytes at s (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF), 0 when there is
 * none. s is NUL-terminated, and NUL is never a continuation byte, so no
 * read goes past the end. */
static size_t utf8_length(const unsigned char *s)
{
	unsigned char low = 0x80, high = 0xbf;
	size_t length;

	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		length = 2;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		length = 3;
		if (s[0] == 0xe0)
			low = 0xa0;
		else if (s[0] == 0xed)
			high = 0x9f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		length = 4;
		if (s[0] == 0xf0)
			low = 0x90;
		else if (s[0] == 0xf4)
			high = 0x8f;
	} else {
		return 0;
	}
	if (s[1] < low || s[1] > high)
		return 0;
	for (size_t i = 2; i < length; i++) {
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	}
	return length;
}

/* Appends text escaped for a label value (quotes too) or a HELP line:
 * backslash and newline (and double quote) get a backslash, and a byte that
 * starts no valid UTF-8 sequence becomes U+FFFD. */
static void emit_escaped(struct render *render, struct buffer *buffer, const char *text, int quotes)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t start = 0, i = 0;

	while (s[i]) {
		const char *replacement = NULL;
		size_t step = 1;

		if (s[i] == '\\')
			replacement = "\\\\";
		else if (s[i] == '\n')
			replacement = "\\n";
		else if (s[i] == '"' && quotes)
			replacement = "\\\"";
		else if (s[i] >= 0x80 && (step = utf8_length(s + i)) == 0)
			replacement = "\xef\xbf\xbd";
		if (replacement) {
			step = 1;
			emit(render, buffer, text + start, i - start);
			emit_str(render, buffer, replacement);
			start = i + 1;
		}
		i += step;
	}
	emit(render, buffer, text + start, i - start);
}

/* The shortest of %.15g, %.16g and %.17g that reads back as the same
 * double, so 0.1 is "0.1"; and the format's spellings of NaN and infinity. */
static void format_double(char *out, size_t size, double value)
{
	if (isnan(value)) {
		snprintf(out, size, "NaN");
		return;
	}
	if (isinf(value)) {
		snprintf(out, size, "%s", value > 0 ? "+Inf" : "-Inf");
		return;
	}
	for (int precision = 15; precision < 17; precision++) {
		snprintf(out, size, "%.*g", precision, value);
		if (strtod(out, NULL) == value)
			return;
	}
	snprintf(out, size, "%.17g", value);
}

static double double_from_bits(uint64_t bits)
{
	double value;

	memcpy(&value, &bits, sizeof(value));
	return value;
}

static uint64_t bits_from_double(double value)
{
	uint64_t bits;

	memcpy(&bits, &value, sizeof(bits));
	return bits;
}

static void add_double(_Atomic uint64_t *bits, double delta)
{
	uint64_t old = atomic_load_explicit(bits, memory_order_relaxed);

	while (!atomic_compare_exchange_weak_explicit(bits, &old,
						      bits_from_double(double_from_bits(old) + delta),
						      memory_order_relaxed, memory_order_relaxed))
		;
}

/* ---- names and labels ---- */

static int is_letter(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* [a-zA-Z_:][a-zA-Z0-9_:]*, at most METRICS_NAME_MAX bytes. */
static int valid_metric_name(const char *name)
{
	size_t i;

	if (!name || !(is_letter(name[0]) || name[0] == ':'))
		return 0;
	for (i = 1; name[i]; i++) {
		if (!is_letter(name[i]) && !is_digit(name[i]) && name[i] != ':')
			return 0;
	}
	return i <= METRICS_NAME_MAX;
}

/* [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__", at most METRICS_NAME_MAX. */
static int valid_label_name(const char *name)
{
	size_t i;

	if (!name || !is_letter(name[0]) || (name[0] == '_' && name[1] == '_'))
		return 0;
	for (i = 1; name[i]; i++) {
		if (!is_letter(name[i]) && !is_digit(name[i]))
			return 0;
	}
	return i <= METRICS_NAME_MAX;
}

/* Checks a label set; on a problem sets the render's failure (MUSTER_EINVAL) and
 * returns -1. `metric` is a valid name, so it is safe in a cause. */
static int check_labels(struct render *render, const char *metric, const struct metrics_label *labels,
			size_t count, int histogram)
{
	if (count > METRICS_LABELS_MAX) {
		render_fail(render, MUSTER_EINVAL, "%s: more than %u labels", metric, METRICS_LABELS_MAX);
		return -1;
	}
	if (count && !labels) {
		render_fail(render, MUSTER_EINVAL, "%s: labels missing", metric);
		return -1;
	}
	for (size_t i = 0; i < count; i++) {
		if (!valid_label_name(labels[i].name)) {
			render_fail(
				render, MUSTER_EINVAL,
				"%s: label %zu's name is not [a-zA-Z_][a-zA-Z0-9_]* (at most %u bytes, no "
				"leading __)",
				metric, i + 1, METRICS_NAME_MAX);
			return -1;
		}
		if (!labels[i].value) {
			render_fail(render, MUSTER_EINVAL, "%s: label %s has no value", metric,
				    labels[i].name);
			return -1;
		}
		if (histogram && strcmp(labels[i].name, "le") == 0) {
			render_fail(render, MUSTER_EINVAL, "%s: label le is reserved for histogram buckets",
				    metric);
			return -1;
		}
		for (size_t j = 0; j < i; j++) {
			if (strcmp(labels[i].name, labels[j].name) == 0) {
				render_fail(render, MUSTER_EINVAL, "%s: label %s appears twice", metric,
					    labels[i].name);
				return -1;
			}
		}
	}
	return 0;
}

/* Appends `name="value",...`, taking the labels in `order` (NULL: as given). */
static void emit_labels(struct render *render, struct buffer *buffer, const struct metrics_label *labels,
			const size_t *order, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		const struct metrics_label *label = &labels[order ? order[i] : i];

		if (i)
			emit_str(render, buffer, ",");
		emit_str(render, buffer, label->name);
		emit_str(render, buffer, "=\"");
		emit_escaped(render, buffer, label->value, 1);
		emit_str(render, buffer, "\"");
	}
}

/* ---- registry ---- */

int metrics_registry_new(size_t render_max, struct metrics_registry **out)
{
	struct metrics_registry *registry;

	*out = NULL;
	if (render_max > METRICS_RENDER_MAX_LIMIT)
		return MUSTER_EINVAL;
	registry = calloc(1, sizeof(*registry));
	if (!registry)
		return MUSTER_ENOMEM;
	if (pthread_mutex_init(&registry->lock, NULL) != 0) {
		free(registry);
		return MUSTER_ENOMEM;
	}
	registry->render_max = render_max ? render_max : METRICS_RENDER_MAX_DEFAULT;
	registry->families_tail = &registry->families;
	*out = registry;
	return 0;
}

static void series_free(struct series *series, enum metric_type type)
{
	if (!series)
		return;
	if (type == TYPE_HISTOGRAM) {
		free(series->u.histogram.bounds);
		free(series->u.histogram.counts);
	}
	free(series->labels);
	free(series);
}

void metrics_registry_free(struct metrics_registry *registry)
{
	struct family *family, *next_family;
	struct series *series, *next_series;

	if (!registry)
		return;
	for (family = registry->families; family; family = next_family) {
		next_family = family->next;
		for (series = family->series; series; series = next_series) {
			next_series = series->next;
			series_free(series, family->type);
		}
		free(family->name);
		free(family->help);
		free(family);
	}
	pthread_mutex_destroy(&registry->lock);
	free(registry);
}

/* Called with the registry's lock held. */
static struct family *family_find(struct metrics_registry *registry, const char *name)
{
	for (struct family *family = registry->families; family; family = family->next) {
		if (strcmp(family->name, name) == 0)
			return family;
	}
	return NULL;
}

static struct family *family_new(enum metric_type type, const char *name, const char *help)
{
	struct family *family = calloc(1, sizeof(*family));

	if (!family)
		return NULL;
	family->type = type;
	family->name = strdup(name);
	family->help = help ? strdup(help) : NULL;
	family->series_tail = &family->series;
	if (!family->name || (help && !family->help)) {
		free(family->name);
		free(family->help);
		free(family);
		return NULL;
	}
	return family;
}

static int check_bounds(const double *bounds, size_t count, const char *name, char **cause)
{
	if (!bounds || count == 0 || count > METRICS_BUCKETS_MAX)
		return cause_err(cause, MUSTER_EINVAL, "%s: a histogram needs 1 to %u bucket bounds", name,
				 METRICS_BUCKETS_MAX);
	for (size_t i = 0; i < count; i++) {
		if (!isfinite(bounds[i]))
			return cause_err(cause, MUSTER_EINVAL,
					 "%s: bucket bound %zu is not finite (+Inf is implicit)", name,
					 i + 1);
		if (i && !(bounds[i] > bounds[i - 1]))
			return cause_err(cause, MUSTER_EINVAL,
					 "%s: bucket bounds are not increasing at bound %zu", name, i + 1);
	}
	return 0;
}

/* Builds a series of `type` with its label text (labels sorted by name). */
static int series_new(enum metric_type type, const char *name, const struct metrics_label *labels,
		      size_t label_count, const double *bounds, size_t bound_count, struct series **out,
		      char **cause)
{
	struct render render = { .max = REGISTERED_LABELS_MAX };
	struct buffer text = { 0 };
	struct series *series = NULL;
	size_t order[METRICS_LABELS_MAX];
	int err = 0;

	*out = NULL;
	if (check_labels(&render, name, labels, label_count, type == TYPE_HISTOGRAM) == 0) {
		for (size_t i = 0; i < label_count; i++) {
			size_t j = i;

			for (; j > 0 && strcmp(labels[order[j - 1]].name, labels[i].name) > 0; j--)
				order[j] = order[j - 1];
			order[j] = i;
		}
		emit_labels(&render, &text, labels, order, label_count);
	}
	if (render.err) {
		err = cause_err(cause, render.err, "%s", render.cause ? render.cause : "out of memory");
		goto out;
	}
	series = calloc(1, sizeof(*series));
	if (!series)
		goto nomem;
	series->labels = text.data ? text.data : strdup("");
	text.data = NULL;
	if (!series->labels)
		goto nomem;
	switch (type) {
	case TYPE_COUNTER:
		atomic_init(&series->u.counter.value, 0);
		break;
	case TYPE_GAUGE:
		atomic_init(&series->u.gauge.bits, bits_from_double(0.0));
		break;
	case TYPE_HISTOGRAM: {
		struct metrics_histogram *histogram = &series->u.histogram;

		histogram->bounds = malloc(bound_count * sizeof(*histogram->bounds));
		histogram->counts = malloc((bound_count + 1) * sizeof(*histogram->counts));
		if (!histogram->bounds || !histogram->counts)
			goto nomem;
		memcpy(histogram->bounds, bounds, bound_count * sizeof(*bounds));
		histogram->bound_count = bound_count;
		for (size_t i = 0; i <= bound_count; i++)
			atomic_init(&histogram->counts[i], 0);
		atomic_init(&histogram->sum_bits, bits_from_double(0.0));
		break;
	}
	}
	*out = series;
	series = NULL;
	goto out;
nomem:
	err = cause_err(cause, MUSTER_ENOMEM, "out of memory registering %s", name);
out:
	series_free(series, type);
	free(text.data);
	free(render.cause);
	return err;
}

static int register_series(struct metrics_registry *registry, enum metric_type type, const char *name,
			   const char *help, const struct metrics_label *labels, size_t label_count,
			   const double *bounds, size_t bound_count, struct series **out, char **cause)
{
	struct series *series = NULL;
	struct family *family;
	int err;

	*out = NULL;
	if (!registry)
		return cause_err(cause, MUSTER_EINVAL, "no registry");
	if (!valid_metric_name(name))
		return cause_err(cause, MUSTER_EINVAL,
				 "metric name is not [a-zA-Z_:][a-zA-Z0-9_:]* of at most %u bytes",
				 METRICS_NAME_MAX);
	if (type == TYPE_HISTOGRAM && (err = check_bounds(bounds, bound_count, name, cause)) != 0)
		return err;
	err = series_new(type, name, labels, label_count, bounds, bound_count, &series, cause);
	if (err)
		return err;

	pthread_mutex_lock(&registry->lock);
	family = family_find(registry, name);
	if (family && family->type != type) {
		err = cause_err(cause, MUSTER_EINVAL, "%s is registered as a %s", name,
				type_names[family->type]);
	} else if (family && (!help != !family->help || (help && strcmp(help, family->help) != 0))) {
		err = cause_err(cause, MUSTER_EINVAL, "%s is registered with another help text", name);
	} else if (family) {
		for (const struct series *other = family->series; other; other = other->next) {
			if (strcmp(other->labels, series->labels) == 0) {
				err = cause_err(cause, MUSTER_ECONFLICT, "%s{%s} is registered already", name,
						series->labels);
				break;
			}
		}
	} else {
		family = family_new(type, name, help);
		if (family) {
			*registry->families_tail = family;
			registry->families_tail = &family->next;
		} else {
			err = cause_err(cause, MUSTER_ENOMEM, "out of memory registering %s", name);
		}
	}
	if (!err) {
		*family->series_tail = series;
		family->series_tail = &series->next;
		*out = series;
		series = NULL;
	}
	pthread_mutex_unlock(&registry->lock);
	series_free(series, type);
	return err;
}

int metrics_counter_register(struct metrics_registry *registry, const char *name, const char *help,
			     const struct metrics_label *labels, size_t label_count,
			     struct metrics_counter **out, char **cause)
{
	struct series *series;
	int err = register_series(registry, TYPE_COUNTER, name, help, labels, label_count, NULL, 0, &series,
				  cause);

	*out = err ? NULL : &series->u.counter;
	return err;
}

int metrics_gauge_register(struct metrics_registry *registry, const char *name, const char *help,
			   const struct metrics_label *labels, size_t label_count, struct metrics_gauge **out,
			   char **cause)
{
	struct series *series;
	int err = register_series(registry, TYPE_GAUGE, name, help, labels, label_count, NULL, 0, &series,
				  cause);

	*out = err ? NULL : &series->u.gauge;
	return err;
}

int metrics_histogram_register(struct metrics_registry *registry, const char *name, const char *help,
			       const struct metrics_label *labels, size_t label_count, const double *bounds,
			       size_t bound_count, struct metrics_histogram **out, char **cause)
{
	struct series *series;
	int err = register_series(registry, TYPE_HISTOGRAM, name, help, labels, label_count, bounds,
				  bound_count, &series, cause);

	*out = err ? NULL : &series->u.histogram;
	return err;
}

int metrics_collector_register(struct metrics_registry *registry, metrics_collect_fn collect, void *arg,
			       char **cause)
{
	int err = 0;

	if (!registry || !collect)
		return cause_err(cause, MUSTER_EINVAL, "no registry or no collector");
	pthread_mutex_lock(&registry->lock);
	if (registry->collector_count == METRICS_COLLECTORS_MAX) {
		err = cause_err(cause, MUSTER_ETOOBIG, "more than %u metrics collectors",
				METRICS_COLLECTORS_MAX);
	} else {
		registry->collectors[registry->collector_count].collect = collect;
		registry->collectors[registry->collector_count].arg = arg;
		registry->collector_count++;
	}
	pthread_mutex_unlock(&registry->lock);
	return err;
}

/* ---- updates ---- */

void metrics_counter_inc(struct metrics_counter *counter)
{
	if (counter)
		atomic_fetch_add_explicit(&counter->value, 1, memory_order_relaxed);
}

void metrics_counter_add(struct metrics_counter *counter, uint64_t amount)
{
	if (counter)
		atomic_fetch_add_explicit(&counter->value, amount, memory_order_relaxed);
}

uint64_t metrics_counter_value(const struct metrics_counter *counter)
{
	return counter ? atomic_load_explicit(&counter->value, memory_order_relaxed) : 0;
}

void metrics_gauge_set(struct metrics_gauge *gauge, double value)
{
	if (gauge)
		atomic_store_explicit(&gauge->bits, bits_from_double(value), memory_order_relaxed);
}

void metrics_gauge_add(struct metrics_gauge *gauge, double delta)
{
	if (gauge)
		add_double(&gauge->bits, delta);
}

double metrics_gauge_value(const struct metrics_gauge *gauge)
{
	return gauge ? double_from_bits(atomic_load_explicit(&gauge->bits, memory_order_relaxed)) : 0.0;
}

void metrics_histogram_observe(struct metrics_histogram *histogram, double value)
{
	size_t bucket = 0;

	if (!histogram)
		return;
	/* Written so that NaN, which compares false, falls through to +Inf. */
	while (bucket < histogram->bound_count && !(value <= histogram->bounds[bucket]))
		bucket++;
	atomic_fetch_add_explicit(&histogram->counts[bucket], 1, memory_order_relaxed);
	add_double(&histogram->sum_bits, value);
}

/* ---- rendering ---- */

static void emit_header(struct render *render, struct buffer *buffer, const char *name, const char *help,
			enum metric_type type)
{
	if (help) {
		emit_str(render, buffer, "# HELP ");
		emit_str(render, buffer, name);
		emit_str(render, buffer, " ");
		emit_escaped(render, buffer, help, 0);
		emit_str(render, buffer, "\n");
	}
	emit_str(render, buffer, "# TYPE ");
	emit_str(render, buffer, name);
	emit_str(render, buffer, " ");
	emit_str(render, buffer, type_names[type]);
	emit_str(render, buffer, "\n");
}

/* `<name><suffix>{<labels>,le="<le>"} <value>\n`, braces only when needed. */
static void emit_sample(struct render *render, struct buffer *buffer, const char *name, const char *suffix,
			const char *labels, const char *le, const char *value)
{
	emit_str(render, buffer, name);
	emit_str(render, buffer, suffix);
	if (labels[0] || le) {
		emit_str(render, buffer, "{");
		emit_str(render, buffer, labels);
		if (le) {
			emit_str(render, buffer, labels[0] ? ",le=\"" : "le=\"");
			emit_str(render, buffer, le);
			emit_str(render, buffer, "\"");
		}
		emit_str(render, buffer, "}");
	}
	emit_str(render, buffer, " ");
	emit_str(render, buffer, value);
	emit_str(render, buffer, "\n");
}

static void emit_histogram(struct render *render, struct buffer *buffer, const char *name,
			   const struct series *series)
{
	const struct metrics_histogram *histogram = &series->u.histogram;
	char le[32], number[32];
	uint64_t cumulative = 0;

	for (size_t i = 0; i <= histogram->bound_count; i++) {
		cumulative += atomic_load_explicit(&histogram->counts[i], memory_order_relaxed);
		if (i < histogram->bound_count)
			format_double(le, sizeof(le), histogram->bounds[i]);
		else
			snprintf(le, sizeof(le), "+Inf");
		snprintf(number, sizeof(number), "%" PRIu64, cumulative);
		emit_sample(render, buffer, name, "_bucket", series->labels, le, number);
	}
	format_double(number, sizeof(number),
		      double_from_bits(atomic_load_explicit(&histogram->sum_bits, memory_order_relaxed)));
	emit_sample(render, buffer, name, "_sum", series->labels, NULL, number);
	/* The +Inf bucket's count, so that _count always equals it. */
	snprintf(number, sizeof(number), "%" PRIu64, cumulative);
	emit_sample(render, buffer, name, "_count", series->labels, NULL, number);
}

static void emit_family(struct render *render, struct buffer *buffer, const struct family *family)
{
	char number[32];

	emit_header(render, buffer, family->name, family->help, family->type);
	for (const struct series *series = family->series; series && !render->err; series = series->next) {
		switch (family->type) {
		case TYPE_COUNTER:
			snprintf(number, sizeof(number), "%" PRIu64,
				 atomic_load_explicit(&series->u.counter.value, memory_order_relaxed));
			emit_sample(render, buffer, family->name, "", series->labels, NULL, number);
			break;
		case TYPE_GAUGE:
			format_double(number, sizeof(number),
				      double_from_bits(atomic_load_explicit(&series->u.gauge.bits,
									    memory_order_relaxed)));
			emit_sample(render, buffer, family->name, "", series->labels, NULL, number);
			break;
		case TYPE_HISTOGRAM:
			emit_histogram(render, buffer, family->name, series);
			break;
		}
	}
}

/* The writer's family called `name`, made (with its HELP and TYPE lines) on
 * first use; NULL after a failure, which is recorded in the render. */
static struct writer_family *writer_family(struct metrics_writer *writer, enum metric_type type,
					   const char *name, const char *help)
{
	struct render *render = writer->render;
	struct writer_family *family = NULL;
	int registered;

	if (writer->family_count && strcmp(writer->families[writer->last].name, name) == 0) {
		family = &writer->families[writer->last];
	} else {
		for (size_t i = 0; i < writer->family_count; i++) {
			if (strcmp(writer->families[i].name, name) == 0) {
				family = &writer->families[i];
				writer->last = i;
				break;
			}
		}
	}
	if (family) {
		if (family->type != type) {
			render_fail(render, MUSTER_EINVAL,
				    "collected family %s is written as a %s and as a %s", name,
				    type_names[family->type], type_names[type]);
			return NULL;
		}
		return family;
	}
	if (!valid_metric_name(name)) {
		render_fail(render, MUSTER_EINVAL,
			    "collected metric name is not [a-zA-Z_:][a-zA-Z0-9_:]* of at most %u bytes",
			    METRICS_NAME_MAX);
		return NULL;
	}
	if (writer->family_count == METRICS_WRITER_FAMILIES_MAX) {
		render_fail(render, MUSTER_EINVAL, "metrics collectors wrote more than %u families",
			    METRICS_WRITER_FAMILIES_MAX);
		return NULL;
	}
	pthread_mutex_lock(&writer->registry->lock);
	registered = family_find(writer->registry, name) != NULL;
	pthread_mutex_unlock(&writer->registry->lock);
	if (registered) {
		render_fail(render, MUSTER_EINVAL, "collected family %s has the name of a registered family",
			    name);
		return NULL;
	}
	writer->last = writer->family_count++;
	family = &writer->families[writer->last];
	memcpy(family->name, name, strlen(name) + 1);
	family->type = type;
	emit_header(render, &family->text, name, help, type);
	return render->err ? NULL : family;
}

static int write_sample(struct metrics_writer *writer, enum metric_type type, const char *name,
			const char *help, const struct metrics_label *labels, size_t label_count,
			double value)
{
	struct render *render;
	struct writer_family *family;
	char number[32];

	if (!writer)
		return MUSTER_EINVAL;
	render = writer->render;
	if (render->err)
		return render->err;
	if (!name) {
		render_fail(render, MUSTER_EINVAL, "collected metric has no name");
		return render->err;
	}
	family = writer_family(writer, type, name, help);
	if (!family || check_labels(render, name, labels, label_count, 0) != 0)
		return render->err;
	emit_str(render, &family->text, name);
	if (label_count) {
		emit_str(render, &family->text, "{");
		emit_labels(render, &family->text, labels, NULL, label_count);
		emit_str(render, &family->text, "}");
	}
	format_double(number, sizeof(number), value);
	emit_str(render, &family->text, " ");
	emit_str(render, &family->text, number);
	emit_str(render, &family->text, "\n");
	return render->err;
}

int metrics_write_gauge(struct metrics_writer *writer, const char *name, const char *help,
			const struct metrics_label *labels, size_t label_count, double value)
{
	return write_sample(writer, TYPE_GAUGE, name, help, labels, label_count, value);
}

int metrics_write_counter(struct metrics_writer *writer, const char *name, const char *help,
			  const struct metrics_label *labels, size_t label_count, double value)
{
	return write_sample(writer, TYPE_COUNTER, name, help, labels, label_count, value);
}

/* Runs the collectors and appends their families to out, in the order they
 * were first written. */
static void collect(struct metrics_registry *registry, const struct collector *collectors, size_t count,
		    struct render *render, struct buffer *out)
{
	struct metrics_writer writer = { .registry = registry, .render = render };

	if (count == 0)
		return;
	writer.families = calloc(METRICS_WRITER_FAMILIES_MAX, sizeof(*writer.families));
	if (!writer.families) {
		render_fail(render, MUSTER_ENOMEM, "out of memory rendering metrics");
		return;
	}
	for (size_t i = 0; i < count && !render->err; i++) {
		int err = collectors[i].collect(collectors[i].arg, &writer);

		if (err)
			render_fail(render, err < 0 ? err : MUSTER_EIO,
				    "metrics collector %zu failed (error %d)", i + 1, err);
	}
	for (size_t i = 0; i < writer.family_count; i++) {
		struct buffer *text = &writer.families[i].text;

		/* Moved, not added: the bytes were charged when written. */
		render->used -= text->len;
		emit(render, out, text->data, text->len);
		free(text->data);
	}
	free(writer.families);
}

int metrics_render(struct metrics_registry *registry, char **text, size_t *text_len, char **cause)
{
	struct collector collectors[METRICS_COLLECTORS_MAX];
	struct buffer out = { 0 };
	struct render render = { 0 };
	size_t collector_count;

	*text = NULL;
	*text_len = 0;
	if (!registry)
		return cause_err(cause, MUSTER_EINVAL, "no registry");
	render.max = registry->render_max;
	pthread_mutex_lock(&registry->lock);
	for (const struct family *family = registry->families; family && !render.err; family = family->next)
		emit_family(&render, &out, family);
	collector_count = registry->collector_count;
	memcpy(collectors, registry->collectors, collector_count * sizeof(collectors[0]));
	pthread_mutex_unlock(&registry->lock);

	if (!render.err)
		collect(registry, collectors, collector_count, &render, &out);
	if (!render.err && !out.data) {
		out.data = calloc(1, 1);
		if (!out.data)
			render_fail(&render, MUSTER_ENOMEM, "out of memory rendering metrics");
	}
	if (render.err) {
		free(out.data);
		if (cause && !*cause) {
			*cause = render.cause;
			render.cause = NULL;
		}
		free(render.cause);
		return render.err;
	}
	*text = out.data;
	*text_len = out.len;
	return 0;
}
