/*
 * topo_live: what the command-line tools read from a live cluster:
 * a LIST collected into one tree, or one object, through the API client
 * (lib/kube). The trees go to topo_input's *_tree decoders, so the cluster
 * and files are decoded the same way. I/O: negative KUBE_E* codes and a
 * cause (docs/errors.md).
 */
#ifndef MUSTER_TOPO_LIVE_H
#define MUSTER_TOPO_LIVE_H

struct cJSON;
struct topo_live;

/* Connects with the kubeconfig's context `context` (NULL: its current
 * context), TLS verified. */
int topo_live_open(const char *kubeconfig, const char *context, struct topo_live **out, char **cause);

/* The same on a client already open (kubectl-muster's, or a test's on a
 * fake transport); the topo_live owns it from then on, also on failure. */
struct kube_client;
int topo_live_wrap(struct kube_client *client, struct topo_live **out, char **cause);

/* The client it reads through (borrowed). */
struct kube_client *topo_live_client(struct topo_live *live);

/* LISTs path page by page (field selector may be NULL) into *out, an
 * object {"items": [...]} the caller deletes. */
int topo_live_list(struct topo_live *live, const char *path, const char *field_selector, struct cJSON **out,
		   char **cause);

/* The same with a label selector (may be NULL) as well. */
int topo_live_list_labelled(struct topo_live *live, const char *path, const char *label_selector,
			    const char *field_selector, struct cJSON **out, char **cause);

/* GETs one object into *out (the caller deletes it). */
int topo_live_get(struct topo_live *live, const char *path, struct cJSON **out, char **cause);

void topo_live_close(struct topo_live *live);

#endif
