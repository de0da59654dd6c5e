/*
 * libFuzzer target for what a (hostile or broken) API server answers to a
 * request, through the client's real code paths on a scripted transport:
 * LIST pages (items, metadata.continue, resourceVersion, and the next page's
 * answer), GET answers and Status error bodies of any status, and a Lease
 * read and written by one leader-election step. The input is a script: its
 * first byte picks the operation, then answers separated by NUL bytes, each
 * answer's first byte picking its HTTP status. Any answer must give MUSTER_OK
 * or an error with a cause, never a crash, a leak or a hang (the retries
 * sleep on a fake clock).
 */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube_client.h"
#include "kube_error.h"
#include "kube_lease.h"
#include "script_transport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int err, char *cause)
{
	if (err > 0 || (err && !cause) || (!err && cause))
		abort();
	free(cause);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct script_transport s;
	struct kube_clock clock;
	struct kube_client *client;
	char *cause = NULL, *rv = NULL;
	int err;

	if (!size || !(client = script_transport_client(&s, data + 1, size - 1, &clock)))
		return 0;
	switch (data[0] % 3) {
	case 0: { /* a LIST, two items a page: every continue asks for the next answer */
		cJSON *items = cJSON_CreateArray();

		err = kube_list(client, "/api/v1/pods", NULL, 2, kube_item_collect, items, &rv, &cause);
		if (!err && !rv)
			abort();
		check(err, cause);
		free(rv);
		cJSON_Delete(items);
		break;
	}
	case 1: { /* a GET: an object, or a Status of any status */
		cJSON *out = NULL;

		err = kube_get(client, "/api/v1/namespaces/ns/configmaps/c", &out, &cause);
		if (!err != !!out)
			abort();
		check(err, cause);
		cJSON_Delete(out);
		break;
	}
	default: { /* a leader-election step: the Lease read, then written */
		struct kube_lease_options o = { .namespace = "ns", .name = "lease", .identity = "me" };
		struct kube_lease *lease = NULL;
		char holder[KUBE_LEASE_HOLDER_MAX + 1];

		if (kube_lease_new(client, &o, &clock, &lease, NULL) != MUSTER_OK)
			break;
		for (int step = 0; step < 3 && s.at < s.end; step++) {
			err = kube_lease_try(lease, &cause);
			if (err > 1)
				abort();
			check(err < 0 ? err : 0, cause);
			cause = NULL;
			kube_lease_holder(lease, holder, sizeof(holder));
			if (strnlen(holder, sizeof(holder)) >= sizeof(holder))
				abort();
		}
		kube_lease_free(lease);
		break;
	}
	}
	kube_client_free(client);
	return 0;
}
