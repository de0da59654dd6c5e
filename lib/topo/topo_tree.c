/*
 * topo_tree: builds the domain tree from node-label levels or from HyperNodes
 * (contract in topo_tree.h). Both builders first decide, for every node, its
 * chain of ancestors, then lay the domains out in preorder with siblings
 * sorted by name.
 */
#define _POSIX_C_SOURCE 200809L
#include "topo_tree.h"

#include "cause.h"

#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void topo_tree_free(struct topo_tree *tree)
{
	if (!tree)
		return;
	free(tree->domains);
	free(tree->node_domain);
	free(tree->excluded);
	free(tree);
}

int topo_resource_index(const struct topo_cluster *cluster, const char *name)
{
	for (size_t i = 0; i < cluster->resource_count; i++)
		if (cluster->resources[i] && strcmp(cluster->resources[i], name) == 0)
			return (int)i;
	return -1;
}

const char *topo_node_label(const struct topo_node *node, const char *key)
{
	for (size_t i = 0; i < node->label_count; i++)
		if (node->labels[i].key && strcmp(node->labels[i].key, key) == 0)
			return node->labels[i].value ? node->labels[i].value : "";
	return NULL;
}

/* A decimal integer with nothing after it (Gt / Lt); 0 when it does not parse. */
static int parse_integer(const char *s, long long *out)
{
	char *end;

	if (!s || !*s)
		return 0;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return errno == 0 && *end == '\0';
}

static int requirement_matches(const struct topo_node *node, const struct topo_requirement *r)
{
	const char *have = r->on_name ? node->name : topo_node_label(node, r->key ? r->key : "");
	long long a, b;
	size_t i;

	switch (r->op) {
	case TOPO_OP_EXISTS:
		return have != NULL;
	case TOPO_OP_DOES_NOT_EXIST:
		return have == NULL;
	case TOPO_OP_GT:
	case TOPO_OP_LT:
		if (!have || r->value_count != 1 || !parse_integer(have, &a) ||
		    !parse_integer(r->values[0], &b))
			return 0;
		return r->op == TOPO_OP_GT ? a > b : a < b;
	case TOPO_OP_IN:
	case TOPO_OP_NOT_IN:
		for (i = 0; have && i < r->value_count; i++)
			if (r->values[i] && strcmp(r->values[i], have) == 0)
				break;
		/* Found when have is set and the loop stopped early. */
		return r->op == TOPO_OP_IN ? have && i < r->value_count : !have || i == r->value_count;
	}
	return 0;
}

int topo_requirements_match(const struct topo_node *node, const struct topo_requirement *requirements,
			    size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (!requirement_matches(node, &requirements[i]))
			return 0;
	return 1;
}

static int check_cluster(const struct topo_cluster *cluster, char **cause)
{
	if (!cluster || (cluster->node_count && !cluster->nodes)) {
		cause_fail(cause, "topology: no cluster given");
		return -1;
	}
	if (cluster->node_count > TOPO_NODES_MAX) {
		cause_fail(cause, "topology: %zu nodes, at most %u supported", cluster->node_count,
			   TOPO_NODES_MAX);
		return -1;
	}
	if (cluster->resource_count > TOPO_RESOURCES_MAX) {
		cause_fail(cause, "topology: %zu resources, at most %d supported", cluster->resource_count,
			   TOPO_RESOURCES_MAX);
		return -1;
	}
	for (size_t i = 0; i < cluster->node_count; i++)
		if (!cluster->nodes[i].name ||
		    strnlen(cluster->nodes[i].name, TOPO_NAME_MAX + 1) > TOPO_NAME_MAX) {
			cause_fail(cause, "topology: node %zu has no name or a name above %d bytes", i,
				   TOPO_NAME_MAX);
			return -1;
		}
	return 0;
}

/* A tree with its root and room for `domains` domains, or NULL. */
static struct topo_tree *tree_alloc(const struct topo_cluster *cluster, size_t domains)
{
	struct topo_tree *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cluster = cluster;
	t->domains = calloc(domains ? domains : 1, sizeof(*t->domains));
	t->node_domain = malloc((cluster->node_count ? cluster->node_count : 1) * sizeof(*t->node_domain));
	t->excluded = calloc(cluster->node_count ? cluster->node_count : 1, sizeof(*t->excluded));
	if (!t->domains || !t->node_domain || !t->excluded) {
		topo_tree_free(t);
		return NULL;
	}
	for (size_t i = 0; i < cluster->node_count; i++)
		t->node_domain[i] = TOPO_NONE;
	t->domains[0] = (struct topo_domain){ .parent = TOPO_NONE, .end = 1, .node = TOPO_NONE, .name = "" };
	t->domain_count = 1;
	t->level_names[0] = "(cluster)";
	return t;
}

/* In preorder a subtree is contiguous: it ends where its last descendant ends. */
static void set_ends(struct topo_tree *t)
{
	for (size_t d = 0; d < t->domain_count; d++)
		t->domains[d].end = (uint32_t)d + 1;
	for (size_t d = t->domain_count; d-- > 1;) {
		uint32_t p = t->domains[d].parent;

		if (t->domains[d].end > t->domains[p].end)
			t->domains[p].end = t->domains[d].end;
	}
}

static void exclude(struct topo_tree *t, size_t node, const char *reason, const char *detail)
{
	t->excluded[t->excluded_count++] = (struct topo_exclusion){ (uint32_t)node, reason, detail };
}

/* ---- levels ---- */

struct level_row {
	const char *values[TOPO_LEVELS_MAX + 1]; /* the label values, then the node name */
	uint32_t node;
};

/* The sort keys of qsort's comparators (levels + 1; the HyperNodes and the
 * nodes being sorted): per thread, so that trees can be built on several
 * threads at once. */
static _Thread_local size_t row_width;

static int row_compare(const void *a, const void *b)
{
	const struct level_row *x = a, *y = b;

	for (size_t i = 0; i < row_width; i++) {
		int c = strcmp(x->values[i], y->values[i]);
		if (c)
			return c;
	}
	return x->node < y->node ? -1 : x->node > y->node;
}

struct topo_tree *topo_tree_from_levels(const struct topo_cluster *cluster, const char *const *levels,
					size_t level_count, char **cause)
{
	struct topo_tree *t = NULL;
	struct level_row *rows = NULL;
	uint32_t open[TOPO_LEVELS_MAX + 2];
	size_t n = 0;

	*cause = NULL;
	if (check_cluster(cluster, cause))
		goto fail;
	if (!levels || level_count == 0 || level_count > TOPO_LEVELS_MAX) {
		cause_fail(cause, "topology: between 1 and %d levels are needed, %zu given", TOPO_LEVELS_MAX,
			   level_count);
		goto fail;
	}
	for (size_t l = 0; l < level_count; l++) {
		if (!levels[l] || !levels[l][0] || strnlen(levels[l], TOPO_NAME_MAX + 1) > TOPO_NAME_MAX) {
			cause_fail(cause, "topology: level %zu is empty or longer than %d bytes", l + 1,
				   TOPO_NAME_MAX);
			goto fail;
		}
		for (size_t k = 0; k < l; k++)
			if (strcmp(levels[k], levels[l]) == 0) {
				cause_fail(cause, "topology: level %s is given twice", levels[l]);
				goto fail;
			}
	}
	/* At most one domain per node and level, plus the root. */
	t = tree_alloc(cluster, 1 + cluster->node_count * (level_count + 1));
	rows = calloc(cluster->node_count ? cluster->node_count : 1, sizeof(*rows));
	if (!t || !rows)
		goto nomem;
	t->node_level = level_count + 1;
	for (size_t l = 0; l < level_count; l++) {
		/* Volcano's discovery from labels: the lowest level is tier 1. */
		t->level_names[l + 1] = levels[l];
		t->level_tiers[l + 1] = (int)(level_count - l);
		snprintf(t->tier_label_storage[l], sizeof(t->tier_label_storage[l]), "tier %d",
			 (int)(level_count - l) % 100);
	}
	t->level_names[t->node_level] = "(node)";
	for (size_t i = 0; i < cluster->node_count; i++) {
		const struct topo_node *node = &cluster->nodes[i];
		size_t l;

		for (l = 0; l < level_count; l++) {
			rows[n].values[l] = topo_node_label(node, levels[l]);
			if (!rows[n].values[l])
				break;
		}
		if (l < level_count) {
			exclude(t, i, "lacks the level label", levels[l]);
			continue;
		}
		rows[n].values[level_count] = node->name;
		rows[n].node = (uint32_t)i;
		n++;
	}
	row_width = level_count + 1;
	qsort(rows, n, sizeof(*rows), row_compare);
	/* open[l]: the domain currently open at level l. A new row opens new
	 * domains from the first level where its tuple differs from the last. */
	open[0] = 0;
	for (size_t r = 0; r < n; r++) {
		size_t first = 1;

		if (r > 0)
			while (first <= level_count &&
			       strcmp(rows[r].values[first - 1], rows[r - 1].values[first - 1]) == 0)
				first++;
		else
			first = 1;
		for (size_t l = first; l <= t->node_level; l++) {
			uint32_t d = (uint32_t)t->domain_count++;

			t->domains[d] = (struct topo_domain){ .parent = open[l - 1],
							      .node = TOPO_NONE,
							      .level = (uint8_t)l,
							      .name = rows[r].values[l - 1] };
			open[l] = d;
		}
		t->domains[open[t->node_level]].node = rows[r].node;
		t->node_domain[rows[r].node] = open[t->node_level];
	}
	set_ends(t);
	free(rows);
	return t;
nomem:
	cause_fail(cause, "topology: out of memory");
fail:
	free(rows);
	topo_tree_free(t);
	return NULL;
}

/* ---- HyperNodes ---- */

struct hn_build {
	const struct topo_cluster *cluster;
	const struct topo_hypernode *hns;
	size_t hn_count;
	uint32_t *hn_parent; /* hypernode -> parent hypernode or TOPO_NONE */
	uint32_t *node_parent; /* node -> hypernode or TOPO_NONE */
	uint8_t *hn_level;
	uint32_t *sorted_hn; /* hypernode indexes by name */
	uint32_t *sorted_node; /* node indexes by name */
	/* children lists: every item (hypernode h as h, node i as hn_count + i) */
	uint32_t *child_first, *child_next;
};

static _Thread_local const struct topo_hypernode *sort_hns;
static _Thread_local const struct topo_node *sort_nodes;

static int hn_name_compare(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = strcmp(sort_hns[x].name, sort_hns[y].name);

	return c ? c : (x < y ? -1 : x > y);
}

static int node_name_compare(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = strcmp(sort_nodes[x].name, sort_nodes[y].name);

	return c ? c : (x < y ? -1 : x > y);
}

/* A labelMatch member: matchLabels and matchExpressions both hold. */
static int selector_matches(const struct topo_node *node, const struct topo_member *mem)
{
	for (size_t i = 0; i < mem->match_label_count; i++) {
		const char *v =
			topo_node_label(node, mem->match_labels[i].key ? mem->match_labels[i].key : "");

		if (!v || strcmp(v, mem->match_labels[i].value ? mem->match_labels[i].value : "") != 0)
			return 0;
	}
	return topo_requirements_match(node, mem->match_expressions, mem->match_expression_count);
}

static int claim(uint32_t *slot, uint32_t parent, const char *what, const char *name,
		 const struct topo_hypernode *hns, char **cause)
{
	if (*slot != TOPO_NONE && *slot != parent) {
		const char *a = hns[*slot].name, *b = hns[parent].name;

		cause_fail(cause, "topology: %s %s has two parents: HyperNodes %s and %s", what, name,
			   strcmp(a, b) < 0 ? a : b, strcmp(a, b) < 0 ? b : a);
		return -1;
	}
	*slot = parent;
	return 0;
}

static int hn_find(const struct hn_build *b, const char *name)
{
	size_t lo = 0, hi = b->hn_count;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(b->hns[b->sorted_hn[mid]].name, name);

		if (c == 0)
			return (int)b->sorted_hn[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int node_find(const struct hn_build *b, const char *name)
{
	size_t lo = 0, hi = b->cluster->node_count;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(b->cluster->nodes[b->sorted_node[mid]].name, name);

		if (c == 0)
			return (int)b->sorted_node[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* Go's regexp (RE2, what Volcano uses) in POSIX extended form: the classes
 * \d \s \w and their negations become bracket expressions (inside a bracket
 * expression \d \s \w become [:digit:] [:space:] [:alnum:]_), (?: becomes (,
 * escaped punctuation stays literal. RE2-only syntax that POSIX would read
 * differently (flags, lazy quantifiers, \b \p \x ..., a negated class or an
 * escaped - ] ^ where POSIX cannot place it inside [...]) is refused.
 * NULL when translated, else why not. */
static const char *re2_to_posix(const char *in, char *out, size_t size)
{
	static const struct {
		char letter;
		const char *outside, *inside;
	} classes[] = {
		{ 'd', "[[:digit:]]", "[:digit:]" },   { 'D', "[^[:digit:]]", NULL },
		{ 's', "[[:space:]]", "[:space:]" },   { 'S', "[^[:space:]]", NULL },
		{ 'w', "[[:alnum:]_]", "[:alnum:]_" }, { 'W', "[^[:alnum:]_]", NULL },
	};
	size_t used = 0;
	int bracket = 0; /* 0 outside [...], 1 at its first position, 2 further in */

	for (const char *p = in; *p; p++) {
		char one[3] = { *p, 0, 0 };
		const char *put = one;
		size_t n;

		if (*p == '\\' && p[1]) {
			size_t c;

			p++;
			for (c = 0; c < sizeof(classes) / sizeof(classes[0]) && classes[c].letter != *p; c++)
				;
			if (c < sizeof(classes) / sizeof(classes[0])) {
				put = bracket ? classes[c].inside : classes[c].outside;
				if (!put)
					return "a negated class inside [...] is not supported";
			} else if (isalnum((unsigned char)*p)) {
				return "an escape POSIX lacks (\\b, \\p, \\x, ...) is not supported";
			} else if (bracket) {
				/* POSIX takes characters in [...] literally, but places - ] ^ by position. */
				if ((*p == '-' && p[1] != ']') || (*p == ']' && bracket != 1) ||
				    (*p == '^' && bracket == 1))
					return "an escaped - ] or ^ inside [...] where POSIX cannot place it";
				one[0] = *p;
			} else if (strchr(".[]()*+?{}|^$\\", *p)) {
				one[0] = '\\';
				one[1] = *p;
			} else {
				one[0] = *p; /* \- \/ ... are the characters themselves */
			}
			if (bracket)
				bracket = 2;
		} else if (bracket) {
			if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
				char close[3] = { p[1], ']', 0 };
				const char *end = strstr(p + 2, close);

				if (!end)
					return "an unterminated [: :] class";
				n = (size_t)(end + 2 - p);
				if (used + n >= size)
					return "too long";
				memcpy(out + used, p, n);
				used += n;
				p = end + 1;
				bracket = 2;
				continue;
			}
			bracket = *p == ']' && bracket == 2 ? 0 : 2;
		} else if (*p == '[') {
			bracket = 1;
			if (p[1] == '^') {
				one[1] = '^';
				p++;
			}
		} else if (*p == '(' && p[1] == '?') {
			if (p[2] != ':')
				return "RE2 flags and group syntax (?...) are not supported";
			p += 2;
		} else if ((*p == '*' || *p == '+' || *p == '?' || *p == '}') && p[1] == '?') {
			return "lazy quantifiers are not supported";
		}
		n = strlen(put);
		if (used + n >= size)
			return "too long";
		memcpy(out + used, put, n);
		used += n;
	}
	if (bracket)
		return "an unterminated [...]";
	out[used] = '\0';
	return NULL;
}

/* glibc's regcomp expands repetitions by copying the repeated expression
 * (x+ is xx*, x{2,5} five copies), so nested ones grow exponentially: a
 * 1 KB pattern could take gigabytes. This bounds the expanded size, counting
 * each atom as 1 and multiplying a repeated atom or group by its copies, and
 * refuses what Go's RE2 refuses too (a repetition of a repetition, counts
 * above 1000). Runs on the POSIX form. NULL when acceptable, else why. */
#define REGEX_SIZE_MAX 10000
#define REGEX_DEPTH_MAX 64

static const char *regex_too_big(const char *p)
{
	unsigned long sum[REGEX_DEPTH_MAX + 1] = { 0 }, last[REGEX_DEPTH_MAX + 1] = { 0 }, total = 0;
	int depth = 0, after_repeat = 0;

	while (*p) {
		unsigned long copies = 0;

		if (*p == '(') {
			if (++depth > REGEX_DEPTH_MAX)
				return "groups nested deeper than 64";
			sum[depth] = last[depth] = 0;
			after_repeat = 0;
			p++;
			continue;
		}
		if (*p == ')' && depth > 0) {
			unsigned long group = sum[depth--] + 1;

			sum[depth] += group;
			last[depth] = group;
			after_repeat = 0;
			p++;
		} else if (*p == '|') {
			last[depth] = 0;
			after_repeat = 0;
			p++;
		} else if (*p == '*' || *p == '?' || *p == '+') {
			copies = *p == '+' ? 2 : 1;
			p++;
		} else if (*p == '{' && isdigit((unsigned char)p[1])) {
			char *end;
			unsigned long low = strtoul(p + 1, &end, 10), high = low;

			p = end;
			if (*p == ',') {
				p++;
				high = isdigit((unsigned char)*p) ? strtoul(p, &end, 10) : low + 1;
				p = isdigit((unsigned char)*p) ? end : p;
			}
			if (*p != '}')
				return "a malformed {m,n} repetition";
			p++;
			if (low > 1000 || high > 1000)
				return "a repetition count above 1000";
			copies = high > low ? high : low;
			copies = copies ? copies : 1;
		} else {
			/* One atom: an escape, a bracket expression, or a character. */
			if (*p == '\\' && p[1]) {
				p += 2;
			} else if (*p == '[') {
				p += p[1] == '^' ? 2 : 1;
				if (*p == ']')
					p++;
				while (*p && *p != ']') {
					if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
						char close[3] = { p[1], ']', 0 };
						const char *end = strstr(p + 2, close);

						p = end ? end + 2 : p + 1;
					} else {
						p++;
					}
				}
				if (*p)
					p++;
			} else {
				p++;
			}
			sum[depth]++;
			last[depth] = 1;
			after_repeat = 0;
		}
		if (copies) {
			if (after_repeat)
				return "a repetition of a repetition (such as a++) is not supported";
			sum[depth] += last[depth] * (copies - 1);
			last[depth] *= copies;
			after_repeat = 1;
		}
		if (sum[depth] > REGEX_SIZE_MAX || last[depth] > REGEX_SIZE_MAX)
			return "it expands too much (nested repetitions)";
	}
	for (int d = 0; d <= depth; d++)
		total += sum[d];
	return total > REGEX_SIZE_MAX ? "it expands too much (nested repetitions)" : NULL;
}

/* Resolves every member of HyperNode h into hn_parent / node_parent. */
static int resolve_members(struct hn_build *b, uint32_t h, char **cause)
{
	const struct topo_hypernode *hn = &b->hns[h];

	for (size_t m = 0; m < hn->member_count; m++) {
		const struct topo_member *mem = &hn->members[m];
		int by_labels = mem->match_labels || mem->match_expressions;
		int kinds = !!mem->exact + !!mem->regex + by_labels;
		int is_node = mem->kind == TOPO_MEMBER_NODE;
		regex_t re;

		if (kinds != 1 || (!is_node && by_labels)) {
			cause_fail(
				cause,
				"topology: HyperNode %s member %zu needs exactly one of exactMatch, regexMatch, "
				"labelMatch (labelMatch for Nodes only)",
				hn->name, m + 1);
			return -1;
		}
		if (mem->exact) {
			int i = is_node ? node_find(b, mem->exact) : hn_find(b, mem->exact);

			if (i < 0)
				continue; /* a member that does not exist (yet) selects nothing */
			if (!is_node && (uint32_t)i == h) {
				cause_fail(cause, "topology: HyperNode %s is a member of itself (a cycle)",
					   hn->name);
				return -1;
			}
			if (claim(is_node ? &b->node_parent[i] : &b->hn_parent[i], h,
				  is_node ? "Node" : "HyperNode", mem->exact, b->hns, cause))
				return -1;
			continue;
		}
		if (mem->regex) {
			char posix[TOPO_PATTERN_MAX * 12 + 1];
			const char *why = strnlen(mem->regex, TOPO_PATTERN_MAX + 1) > TOPO_PATTERN_MAX
						  ? "longer than 1024 bytes"
						  : re2_to_posix(mem->regex, posix, sizeof(posix));

			if (!why)
				why = regex_too_big(posix);
			if (why || regcomp(&re, posix, REG_EXTENDED | REG_NOSUB)) {
				cause_fail(cause, "topology: HyperNode %s member %zu: invalid pattern %s%s%s",
					   hn->name, m + 1, mem->regex, why ? ": " : "", why ? why : "");
				return -1;
			}
			size_t count = is_node ? b->cluster->node_count : b->hn_count;
			for (size_t i = 0; i < count; i++) {
				const char *name = is_node ? b->cluster->nodes[i].name : b->hns[i].name;

				if (regexec(&re, name, 0, NULL, 0) != 0 || (!is_node && i == h))
					continue;
				if (claim(is_node ? &b->node_parent[i] : &b->hn_parent[i], h,
					  is_node ? "Node" : "HyperNode", name, b->hns, cause)) {
					regfree(&re);
					return -1;
				}
			}
			regfree(&re);
			continue;
		}
		for (size_t i = 0; i < b->cluster->node_count; i++)
			if (selector_matches(&b->cluster->nodes[i], mem) &&
			    claim(&b->node_parent[i], h, "Node", b->cluster->nodes[i].name, b->hns, cause))
				return -1;
	}
	return 0;
}

static int tier_desc(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x > y ? -1 : x < y;
}

static void free_build(struct hn_build *b)
{
	free(b->hn_parent);
	free(b->node_parent);
	free(b->hn_level);
	free(b->sorted_hn);
	free(b->sorted_node);
	free(b->child_first);
	free(b->child_next);
}

struct topo_tree *topo_tree_from_hypernodes(const struct topo_cluster *cluster,
					    const struct topo_hypernode *hns, size_t hn_count, char **cause)
{
	struct hn_build b = { 0 };
	struct topo_tree *t = NULL;
	int tiers[TOPO_LEVELS_MAX];
	size_t tier_count = 0, items;
	uint32_t *stack = NULL, *stack_parent = NULL;
	size_t top = 0;

	*cause = NULL;
	if (check_cluster(cluster, cause))
		goto fail;
	if ((hn_count && !hns) || hn_count > TOPO_HYPERNODES_MAX) {
		cause_fail(cause, "topology: at most %u HyperNodes supported", TOPO_HYPERNODES_MAX);
		goto fail;
	}
	b.cluster = cluster;
	b.hns = hns;
	b.hn_count = hn_count;
	items = hn_count + cluster->node_count;
	b.hn_parent = malloc((hn_count + 1) * sizeof(uint32_t));
	b.node_parent = malloc((cluster->node_count + 1) * sizeof(uint32_t));
	b.hn_level = calloc(hn_count + 1, 1);
	b.sorted_hn = malloc((hn_count + 1) * sizeof(uint32_t));
	b.sorted_node = malloc((cluster->node_count + 1) * sizeof(uint32_t));
	b.child_first = malloc((items + 1) * sizeof(uint32_t));
	b.child_next = malloc((items + 1) * sizeof(uint32_t));
	stack = malloc((items + 1) * sizeof(uint32_t));
	stack_parent = malloc((items + 1) * sizeof(uint32_t));
	if (!b.hn_parent || !b.node_parent || !b.hn_level || !b.sorted_hn || !b.sorted_node ||
	    !b.child_first || !b.child_next || !stack || !stack_parent)
		goto nomem;
	for (size_t h = 0; h < hn_count; h++) {
		const struct topo_hypernode *hn = &hns[h];
		size_t k;

		if (!hn->name || !hn->name[0] || strnlen(hn->name, TOPO_NAME_MAX + 1) > TOPO_NAME_MAX) {
			cause_fail(cause, "topology: HyperNode %zu has no name or one above %d bytes", h + 1,
				   TOPO_NAME_MAX);
			goto fail;
		}
		if (hn->tier < 1 || hn->tier > 1000000) {
			cause_fail(cause, "topology: HyperNode %s has tier %d, tiers start at 1", hn->name,
				   hn->tier);
			goto fail;
		}
		for (k = 0; k < tier_count && tiers[k] != hn->tier; k++)
			;
		if (k == tier_count) {
			if (tier_count == TOPO_LEVELS_MAX) {
				cause_fail(cause, "topology: more than %d distinct tiers", TOPO_LEVELS_MAX);
				goto fail;
			}
			tiers[tier_count++] = hn->tier;
		}
		b.hn_parent[h] = TOPO_NONE;
		b.sorted_hn[h] = (uint32_t)h;
	}
	for (size_t i = 0; i < cluster->node_count; i++) {
		b.node_parent[i] = TOPO_NONE;
		b.sorted_node[i] = (uint32_t)i;
	}
	sort_hns = hns;
	qsort(b.sorted_hn, hn_count, sizeof(uint32_t), hn_name_compare);
	sort_nodes = cluster->nodes;
	qsort(b.sorted_node, cluster->node_count, sizeof(uint32_t), node_name_compare);
	for (size_t i = 1; i < hn_count; i++)
		if (strcmp(hns[b.sorted_hn[i]].name, hns[b.sorted_hn[i - 1]].name) == 0) {
			cause_fail(cause, "topology: two HyperNodes are named %s", hns[b.sorted_hn[i]].name);
			goto fail;
		}
	for (size_t h = 0; h < hn_count; h++)
		if (resolve_members(&b, (uint32_t)h, cause))
			goto fail;
	/* Cycles first (walking up more steps than there are HyperNodes), then tiers. */
	for (size_t h = 0; h < hn_count; h++) {
		uint32_t x = (uint32_t)h;
		size_t steps = 0;

		while (x != TOPO_NONE && steps <= hn_count) {
			x = b.hn_parent[x];
			steps++;
		}
		if (x != TOPO_NONE) {
			cause_fail(cause, "topology: HyperNode %s is in a cycle of HyperNode members",
				   hns[h].name);
			goto fail;
		}
	}
	for (size_t h = 0; h < hn_count; h++) {
		uint32_t p = b.hn_parent[h];

		if (p != TOPO_NONE && hns[p].tier <= hns[h].tier) {
			cause_fail(
				cause,
				"topology: HyperNode %s (tier %d) is a member of %s whose tier %d is not higher",
				hns[h].name, hns[h].tier, hns[p].name, hns[p].tier);
			goto fail;
		}
	}
	qsort(tiers, tier_count, sizeof(int), tier_desc);
	t = tree_alloc(cluster, 1 + items);
	if (!t)
		goto nomem;
	t->from_hypernodes = 1;
	t->node_level = tier_count + 1;
	for (size_t l = 0; l < tier_count; l++) {
		const char *tier_name = NULL;

		snprintf(t->tier_label_storage[l], sizeof(t->tier_label_storage[l]), "tier %d", tiers[l]);
		for (size_t h = 0; h < hn_count && !tier_name; h++)
			if (hns[h].tier == tiers[l] && hns[h].tier_name && hns[h].tier_name[0])
				tier_name = hns[h].tier_name;
		t->level_names[l + 1] = tier_name ? tier_name : t->tier_label_storage[l];
		t->level_tiers[l + 1] = tiers[l];
	}
	t->level_names[t->node_level] = "(node)";
	for (size_t h = 0; h < hn_count; h++)
		for (size_t l = 0; l < tier_count; l++)
			if (tiers[l] == hns[h].tier)
				b.hn_level[h] = (uint8_t)(l + 1);
	/* Children lists: items are inserted at the head in reverse name order,
	 * Nodes first, so each list holds its HyperNodes by name, then its Nodes
	 * by name. */
	for (size_t i = 0; i <= items; i++)
		b.child_first[i] = TOPO_NONE;
	/* child_first[items] is the root's list. */
	for (size_t k = cluster->node_count; k-- > 0;) {
		uint32_t i = b.sorted_node[k], p = b.node_parent[i];

		if (p == TOPO_NONE) {
			exclude(t, i, "is not a member of any HyperNode", NULL);
			continue;
		}
		b.child_next[hn_count + i] = b.child_first[p];
		b.child_first[p] = (uint32_t)(hn_count + i);
	}
	for (size_t k = hn_count; k-- > 0;) {
		uint32_t h = b.sorted_hn[k], p = b.hn_parent[h];
		uint32_t slot = p == TOPO_NONE ? (uint32_t)items : p;

		b.child_next[h] = b.child_first[slot];
		b.child_first[slot] = h;
	}
	/* Preorder by an explicit stack; children are pushed last-first. */
	for (uint32_t c = b.child_first[items]; c != TOPO_NONE; c = b.child_next[c])
		top++;
	{
		size_t k = top;
		for (uint32_t c = b.child_first[items]; c != TOPO_NONE; c = b.child_next[c]) {
			stack[--k] = c;
			stack_parent[k] = 0;
		}
	}
	while (top > 0) {
		uint32_t item = stack[--top], parent = stack_parent[top];
		uint32_t d = (uint32_t)t->domain_count++;
		size_t n = 0, k;

		if (item < hn_count) {
			t->domains[d] = (struct topo_domain){ .parent = parent,
							      .node = TOPO_NONE,
							      .level = b.hn_level[item],
							      .name = hns[item].name };
			for (uint32_t c = b.child_first[item]; c != TOPO_NONE; c = b.child_next[c])
				n++;
			k = top + n;
			for (uint32_t c = b.child_first[item]; c != TOPO_NONE; c = b.child_next[c]) {
				stack[--k] = c;
				stack_parent[k] = d;
			}
			top += n;
		} else {
			uint32_t i = item - (uint32_t)hn_count;

			t->domains[d] = (struct topo_domain){ .parent = parent,
							      .node = i,
							      .level = (uint8_t)t->node_level,
							      .name = cluster->nodes[i].name };
			t->node_domain[i] = d;
		}
	}
	set_ends(t);
	free(stack);
	free(stack_parent);
	free_build(&b);
	return t;
nomem:
	cause_fail(cause, "topology: out of memory");
fail:
	free(stack);
	free(stack_parent);
	free_build(&b);
	topo_tree_free(t);
	return NULL;
}

int topo_tree_level(const struct topo_tree *tree, const char *name)
{
	for (size_t l = 1; l < tree->node_level; l++)
		if (strcmp(tree->level_names[l], name) == 0 ||
		    strcmp(tree->tier_label_storage[l - 1], name) == 0)
			return (int)l;
	return -1;
}

int topo_tree_tier_level(const struct topo_tree *tree, int tier)
{
	for (size_t l = 1; l < tree->node_level; l++)
		if (tree->level_tiers[l] <= tier)
			return (int)l;
	return -1;
}

/* The domains from level 1 down to `domain` (the root left out), top first
 * in chain[n - 1 .. 0]; returns n. */
static size_t domain_chain(const struct topo_tree *tree, uint32_t domain, uint32_t chain[TOPO_LEVELS_MAX + 2])
{
	size_t n = 0;

	for (uint32_t d = domain; d != TOPO_NONE && d != 0 && n < TOPO_LEVELS_MAX + 2;
	     d = tree->domains[d].parent)
		chain[n++] = d;
	return n;
}

/* Joins the chain to `domain` into buf: each domain as its name (path) or
 * as "label=name" (selector, a leaf as its hostname), truncated to size. */
/* What a nodeSelector on kubernetes.io/hostname must say for a node: its
 * label (kubelet's --hostname-override may make it differ from the name),
 * else its name. */
static const char *hostname(const struct topo_node *node)
{
	const char *label = topo_node_label(node, "kubernetes.io/hostname");

	return label ? label : node->name;
}

static char *join_chain(const struct topo_tree *tree, uint32_t domain, int selector, char *buf, size_t size)
{
	uint32_t chain[TOPO_LEVELS_MAX + 2];
	size_t n = domain_chain(tree, domain, chain), used = 0;

	if (size == 0)
		return buf;
	buf[0] = '\0';
	while (n-- > 0 && used < size) {
		const struct topo_domain *dom = &tree->domains[chain[n]];
		int leaf = dom->level == tree->node_level && dom->node != TOPO_NONE;
		int w = selector ? snprintf(buf + used, size - used, "%s%s=%s", used ? "," : "",
					    leaf ? "kubernetes.io/hostname" : tree->level_names[dom->level],
					    leaf ? hostname(&tree->cluster->nodes[dom->node]) : dom->name)
				 : snprintf(buf + used, size - used, "%s%s", used ? "/" : "", dom->name);

		if (w < 0)
			break;
		used += (size_t)w;
	}
	return buf;
}

char *topo_tree_path(const struct topo_tree *tree, uint32_t domain, char *buf, size_t size)
{
	return join_chain(tree, domain, 0, buf, size);
}

char *topo_tree_selector(const struct topo_tree *tree, uint32_t domain, uint32_t node, char *buf, size_t size)
{
	if (!tree->from_hypernodes)
		return join_chain(tree, domain, 1, buf, size);
	if (size == 0)
		return buf;
	buf[0] = '\0';
	if (node != TOPO_NONE && node < tree->cluster->node_count)
		snprintf(buf, size, "kubernetes.io/hostname=%s", hostname(&tree->cluster->nodes[node]));
	return buf;
}
