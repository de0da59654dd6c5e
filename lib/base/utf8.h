/*
 * utf8: the one check that text from outside is well-formed UTF-8 without a
 * NUL byte, made before any JSON (or YAML) from outside is parsed: admission
 * reviews, API responses and watch lines, placement records, files.
 *
 * Why before the parser: cJSON copies the bytes of a string as they come,
 * so a review whose name holds FF FE C0 80 would be judged, patched and
 * echoed in a denial with those raw bytes; and a raw NUL inside a string
 * silently cuts it, so the value read would not be the value sent. RFC 8259
 * requires JSON text to be UTF-8, so no valid document is refused.
 *
 * Well-formed means RFC 3629: no overlong forms (C0 80 for NUL), no UTF-16
 * surrogates (ED A0..ED BF), nothing above U+10FFFF, no stray continuation
 * byte, no sequence cut short. Escapes are the parser's: cJSON refuses a
 * lone surrogate escape ("\udcff", "\ud800" without its pair) as a syntax
 * error, so after this check every string a tree holds is valid UTF-8. The
 * escape \u0000 is valid JSON; the webhook refuses it itself (admission.c).
 *
 * Pure, no state. Linear, eight ASCII bytes at a time: a 3 MiB body costs
 * about a millisecond.
 */
#ifndef MUSTER_UTF8_H
#define MUSTER_UTF8_H

#include <stddef.h>

/* The offset of the first byte of the first ill-formed sequence or NUL
 * byte in `len` bytes, or len when there is none. */
size_t utf8_invalid_at(const char *data, size_t len);

/* 0 when `len` bytes are well-formed UTF-8 without a NUL byte; else -1 and
 * *cause (cause.h) saying where, by offset and hex value, never quoting the
 * bytes themselves: "<what> is not valid UTF-8 (byte 0xFF at offset 123)",
 * "<what> is not valid UTF-8 (it ends inside a character, at offset 9)",
 * "<what> holds a NUL byte (at offset 12), which JSON text never carries". */
int utf8_check(const char *data, size_t len, const char *what, char **cause);

/* Replaces with '?' each byte of `len` bytes that starts no well-formed
 * sequence (a NUL too), so that a sentence cut by a precision ("%.20s") or a
 * length limit in the middle of a character is still text. */
void utf8_repair(char *text, size_t len);

#endif
