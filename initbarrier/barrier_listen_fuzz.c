/*
 * libFuzzer target for the --listen address parser: any text must parse to
 * an IPv4 or IPv6 socket address of the right length or be refused with a
 * cause.
 */
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "barrier_push.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *spec = malloc(size + 1);
	struct barrier_listen_addr addr;
	const char *cause = NULL;

	if (!spec)
		return 0;
	memcpy(spec, data, size);
	spec[size] = '\0';
	if (barrier_listen_parse(spec, &addr, &cause) == 0) {
		if (!(addr.addr.ss_family == AF_INET && addr.addr_len == sizeof(struct sockaddr_in)) &&
		    !(addr.addr.ss_family == AF_INET6 && addr.addr_len == sizeof(struct sockaddr_in6)))
			abort();
	} else if (!cause) {
		abort();
	}
	free(spec);
	return 0;
}
