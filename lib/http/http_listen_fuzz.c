/*
 * libFuzzer target for the listen address parser (http_serve_parse_listen):
 * any text must parse to an IPv4 or IPv6 socket address of the right length
 * or be refused with MUSTER_EINVAL and a cause; a parsed address formatted back
 * ("ADDR:PORT", "[ADDR]:PORT") must parse to the same address.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Formats addr the way the parser reads it. */
static void format(const struct http_serve_addr *addr, char *out, size_t out_size)
{
	char host[INET6_ADDRSTRLEN];

	if (addr->addr.ss_family == AF_INET6) {
		struct sockaddr_in6 six;

		memcpy(&six, &addr->addr, sizeof(six));
		if (!inet_ntop(AF_INET6, &six.sin6_addr, host, sizeof(host)))
			abort();
		snprintf(out, out_size, "[%s]:%u", host, ntohs(six.sin6_port));
	} else {
		struct sockaddr_in four;

		memcpy(&four, &addr->addr, sizeof(four));
		if (!inet_ntop(AF_INET, &four.sin_addr, host, sizeof(host)))
			abort();
		snprintf(out, out_size, "%s:%u", host, ntohs(four.sin_port));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *listen = malloc(size + 1), text[INET6_ADDRSTRLEN + 16];
	struct http_serve_addr addr, again;
	const char *cause = NULL;
	int err;

	if (!listen)
		return 0;
	memcpy(listen, data, size);
	listen[size] = '\0';
	err = http_serve_parse_listen(listen, &addr, &cause);
	if (err == 0) {
		if (!(addr.addr.ss_family == AF_INET && addr.addr_len == sizeof(struct sockaddr_in)) &&
		    !(addr.addr.ss_family == AF_INET6 && addr.addr_len == sizeof(struct sockaddr_in6)))
			abort();
		format(&addr, text, sizeof(text));
		cause = NULL;
		if (http_serve_parse_listen(text, &again, &cause) != 0 || again.addr_len != addr.addr_len ||
		    memcmp(&again.addr, &addr.addr, addr.addr_len) != 0)
			abort();
	} else if (err != MUSTER_EINVAL || !cause) {
		abort();
	}
	free(listen);
	return 0;
}
