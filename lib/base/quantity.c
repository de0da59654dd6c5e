/*
 * quantity: Kubernetes resource quantities. See quantity.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "quantity.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

long long quantity_parse(const char *s)
{
	static const struct {
		const char *suffix;
		int exp10, exp2;
	} units[] = {
		{ "Ki", 0, 10 }, { "Mi", 0, 20 }, { "Gi", 0, 30 }, { "Ti", 0, 40 },
		{ "Pi", 0, 50 }, { "Ei", 0, 60 }, { "n", -9, 0 },  { "u", -6, 0 },
		{ "m", -3, 0 },	 { "", 0, 0 },	  { "k", 3, 0 },   { "M", 6, 0 },
		{ "G", 9, 0 },	 { "T", 12, 0 },  { "P", 15, 0 },  { "E", 18, 0 },
	};
	unsigned long long m = 0;
	int digits = 0, significant = 0, sticky = 0, exp10 = 0, exp2 = 0, found = 0;
	const char *p = s;

	if (!s)
		return -1;
	if (*p == '+' || *p == '-')
		p++;
	for (; isdigit((unsigned char)*p); p++, digits++) {
		if (m == 0 && *p == '0')
			continue;
		if (significant < 18) {
			m = m * 10 + (unsigned)(*p - '0');
			significant++;
		} else {
			exp10++;
			sticky |= *p != '0';
		}
	}
	if (*p == '.') {
		for (p++; isdigit((unsigned char)*p); p++, digits++) {
			if (significant < 18) {
				if (m || *p != '0')
					significant++;
				m = m * 10 + (unsigned)(*p - '0');
				exp10--;
			} else {
				sticky |= *p != '0';
			}
		}
	}
	if (digits == 0)
		return -1;
	if (s[0] == '-' && (m || sticky))
		return -1;
	if ((*p == 'e' || *p == 'E') && (isdigit((unsigned char)p[1]) ||
					 ((p[1] == '+' || p[1] == '-') && isdigit((unsigned char)p[2])))) {
		char *end;
		long e;

		errno = 0;
		e = strtol(p + 1, &end, 10);
		if (errno || *end || e > 100 || e < -100)
			return -1;
		exp10 += (int)e;
		found = 1;
	}
	for (size_t u = 0; !found && u < sizeof(units) / sizeof(units[0]); u++)
		if (strcmp(p, units[u].suffix) == 0) {
			exp10 += units[u].exp10;
			exp2 = units[u].exp2;
			found = 1;
		}
	if (!found)
		return -1;
	exp10 += 3; /* thousandths */
	if (m == 0)
		return sticky ? 1 : 0;
	if (exp2 && m > (unsigned long long)QUANTITY_MAX >> exp2)
		return -1;
	m <<= exp2;
	if (exp10 >= 0) {
		for (; exp10 > 0; exp10--) {
			if (m > (unsigned long long)QUANTITY_MAX / 10)
				return -1;
			m *= 10;
		}
		m += sticky;
	} else if (exp10 < -19) {
		m = 1;
	} else {
		unsigned long long div = 1;

		for (; exp10 < 0; exp10++)
			div *= 10;
		m = m / div + (m % div || sticky);
	}
	return m > (unsigned long long)QUANTITY_MAX ? -1 : (long long)m;
}
