/*
 * utf8: well-formed UTF-8 without NUL. See utf8.h.
 */
#include "utf8.h"
#include "cause.h"

#include <stdint.h>
#include <string.h>

#define HIGH_BITS 0x8080808080808080ull
#define LOW_BITS 0x0101010101010101ull

/* The length of the well-formed sequence at p (RFC 3629, table 3-7 of the
 * Unicode standard), or 0 when it is not one; *cut is set to 1 when every
 * byte there is right but the input ends before the sequence does. `left`
 * bytes remain, at least 1. */
static size_t sequence_len(const unsigned char *p, size_t left, int *cut)
{
	unsigned char c = p[0], lo = 0x80, hi = 0xbf;
	size_t n;

	*cut = 0;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0; /* 80..BF alone, C0 C1 (overlong), F5..FF (above U+10FFFF) */
	if (c == 0xe0)
		lo = 0xa0; /* overlong */
	else if (c == 0xed)
		hi = 0x9f; /* surrogates */
	else if (c == 0xf0)
		lo = 0x90; /* overlong */
	else if (c == 0xf4)
		hi = 0x8f; /* above U+10FFFF */
	for (size_t i = 1; i < n; i++) {
		if (i >= left) {
			*cut = 1;
			return 0;
		}
		if (i == 1 ? p[1] < lo || p[1] > hi : (p[i] & 0xc0) != 0x80)
			return 0;
	}
	return n;
}

size_t utf8_invalid_at(const char *data, size_t len)
{
	const unsigned char *p = (const unsigned char *)data;
	size_t i = 0;

	while (i < len) {
		size_t n;
		int cut;

		/* Eight ASCII bytes, none of them NUL, at a time. */
		while (len - i >= 8) {
			uint64_t w;

			memcpy(&w, p + i, 8);
			if ((w & HIGH_BITS) || ((w - LOW_BITS) & ~w & HIGH_BITS))
				break;
			i += 8;
		}
		if (i >= len)
			break;
		if (p[i] >= 0x01 && p[i] <= 0x7f) {
			i++;
			continue;
		}
		if (p[i] == 0 || (n = sequence_len(p + i, len - i, &cut)) == 0)
			return i;
		i += n;
	}
	return len;
}

void utf8_repair(char *text, size_t len)
{
	size_t i = 0;

	while (i < len) {
		size_t at = i + utf8_invalid_at(text + i, len - i);

		if (at >= len)
			break;
		text[at] = '?';
		i = at + 1;
	}
}

int utf8_check(const char *data, size_t len, const char *what, char **cause)
{
	const unsigned char *p = (const unsigned char *)data;
	size_t at = utf8_invalid_at(data, len);
	int cut;

	if (at == len)
		return 0;
	if (p[at] == 0)
		return cause_fail(cause, "%s holds a NUL byte (at offset %zu), which JSON text never carries",
				  what, at);
	sequence_len(p + at, len - at, &cut);
	if (cut)
		return cause_fail(cause, "%s is not valid UTF-8 (it ends inside a character, at offset %zu)",
				  what, at);
	return cause_fail(cause, "%s is not valid UTF-8 (byte 0x%02X at offset %zu)", what, p[at], at);
}
