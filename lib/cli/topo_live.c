/*
 * topo_live: LIST and GET from the cluster for muster-topology. See
 * topo_live.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "topo_live.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

#include "cause.h"
#include "kube_client.h"
#include "kube_config.h"
#include "kube_curl.h"
#include "kube_error.h"

#define PAGE_SIZE 500

struct topo_live {
	struct kube_client *client; /* owns its transport */
};

int topo_live_open(const char *kubeconfig, const char *context, struct topo_live **out, char **cause)
{
	struct topo_live *live = calloc(1, sizeof(*live));
	struct kube_config cfg;
	int err;

	*out = NULL;
	if (!live)
		return cause_err(cause, MUSTER_ENOMEM, "no memory for the API client");
	err = kube_config_from_kubeconfig(kubeconfig, context, &cfg, cause);
	if (err) {
		free(live);
		return err;
	}
	err = kube_client_open(&cfg, &live->client, cause);
	kube_config_free(&cfg);
	if (err) {
		topo_live_close(live);
		return err;
	}
	*out = live;
	return 0;
}

int topo_live_wrap(struct kube_client *client, struct topo_live **out, char **cause)
{
	struct topo_live *live = calloc(1, sizeof(*live));

	*out = NULL;
	if (!live) {
		kube_client_free(client);
		return cause_err(cause, MUSTER_ENOMEM, "no memory for the API client");
	}
	live->client = client;
	*out = live;
	return 0;
}

struct kube_client *topo_live_client(struct topo_live *live)
{
	return live->client;
}

int topo_live_list(struct topo_live *live, const char *path, const char *field_selector, cJSON **out,
		   char **cause)
{
	return topo_live_list_labelled(live, path, NULL, field_selector, out, cause);
}

int topo_live_list_labelled(struct topo_live *live, const char *path, const char *label_selector,
			    const char *field_selector, cJSON **out, char **cause)
{
	struct kube_selectors selectors = { .label = label_selector, .field = field_selector };
	cJSON *list = cJSON_CreateObject(), *items = list ? cJSON_AddArrayToObject(list, "items") : NULL;
	int err;

	*out = NULL;
	if (!items) {
		cJSON_Delete(list);
		return cause_err(cause, MUSTER_ENOMEM, "no memory for the list of %s", path);
	}
	err = kube_list(live->client, path, &selectors, PAGE_SIZE, kube_item_collect, items, NULL, cause);
	if (err) {
		cJSON_Delete(list);
		return err;
	}
	*out = list;
	return 0;
}

int topo_live_get(struct topo_live *live, const char *path, cJSON **out, char **cause)
{
	return kube_get(live->client, path, out, cause);
}

void topo_live_close(struct topo_live *live)
{
	if (!live)
		return;
	kube_client_free(live->client);
	free(live);
}
