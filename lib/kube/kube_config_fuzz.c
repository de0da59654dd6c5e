/*
 * libFuzzer target for the kubeconfig parser (kube_config_parse_kubeconfig):
 * any bytes must load or fail cleanly with a cause and leave nothing behind;
 * a loaded config must have an https server and never skip TLS.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube_config.h"
#include "kube_error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *yaml = malloc(size ? size : 1);
	struct kube_config cfg;
	char *cause = NULL;
	int err;

	if (!yaml)
		return 0;
	if (size)
		memcpy(yaml, data, size);
	err = kube_config_parse_kubeconfig(yaml, size, "/base", NULL, &cfg, &cause);
	if (err == MUSTER_OK) {
		if (!cfg.server || strncmp(cfg.server, "https://", 8) != 0 || cause)
			abort();
		kube_config_free(&cfg);
	} else if ((!cause && err != MUSTER_ENOMEM) || cfg.server || cfg.token || cfg.token_file ||
		   cfg.ca_data || cfg.client_key_data) {
		/* A failure explains itself and leaves nothing behind. */
		abort();
	}
	free(cause);
	free(yaml);
	return 0;
}
