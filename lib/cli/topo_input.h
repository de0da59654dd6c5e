/*
 * topo_input: what muster-topology reads from files, into the plain structs
 * of topo_tree.h and topo_place.h. Each input is a file of JSON or YAML
 * (lib/base/yaml_json.h); its objects are decoded by lib/topo's object
 * decoders (topo_objects.h for Nodes, pods and HyperNodes, topo_jobset.h for
 * the JobSet's placement request, which say what each field means), and its
 * parse tree freed before the call returns: every string kept is a copy,
 * bounded in length, in the input's store.
 *
 *   nodes      `kubectl get nodes -o json` (or YAML): a List, a bare list
 *              or one Node; names must be unique
 *   pods       `kubectl get pods -A -o json`: every pod bound to a node that
 *              was read and not Succeeded or Failed adds its request to that
 *              node's use
 *   jobset     a JobSet
 *   hypernodes HyperNodes (topology.volcano.sh), YAML documents separated by
 *              --- or a JSON List
 *
 * Quantities are held in thousandths of their unit (millicores, millibytes,
 * ...), except the resource "pods", held in pods. The cluster tracks
 * TOPO_RESOURCES_MAX resources: cpu, memory and pods, then those the JobSet
 * requests (when it was read first), then the extended resources (names with
 * a '/'), then the others, by name.
 *
 * Errors name the input, the item and the field, e.g.
 * `nodes: items[3] (n-7): status.allocatable["nvidia.com/gpu"]: bad quantity x`.
 *
 * Bounds: an input of at most TOPO_INPUT_BYTES_MAX, YAML expanding (aliases)
 * to no more than about 17 times its size, nesting depth YAML_JSON_DEPTH_MAX,
 * all decoded storage of one topo_input at most TOPO_INPUT_STORED_MAX, and
 * the counts of topo_objects.h.
 *
 * Lifecycle: zero a struct topo_input, call the decoders (each at most once;
 * the JobSet before the nodes gives its resources priority; pods after the
 * nodes), then topo_input_free(). Decoded structs point into storage the
 * input owns. Each decoder returns 0, or -1 with *cause (malloc'd, the
 * caller frees; NULL only when that allocation failed); after a failure
 * the input must still be freed and its decoded parts are unspecified.
 * The placement request is built by topo_jobset_request() from `jobset`.
 */
#ifndef MUSTER_TOPO_INPUT_H
#define MUSTER_TOPO_INPUT_H

#include <stddef.h>

#include "topo_jobset.h"
#include "topo_objects.h"
#include "topo_place.h"
#include "topo_store.h"
#include "topo_tree.h"

#define TOPO_INPUT_BYTES_MAX (256u * 1024 * 1024)
#define TOPO_INPUT_STORED_MAX (1024u * 1024 * 1024)

struct topo_input {
	struct topo_store store; /* everything decoded points into it */
	struct topo_cluster cluster;
	struct topo_node *nodes;
	struct topo_hypernode *hypernodes;
	size_t hypernode_count;
	struct topo_jobset jobset;
	int read_nodes, read_pods, read_jobset, read_hypernodes;
};

int topo_input_nodes(struct topo_input *in, const char *data, size_t size, char **cause);
int topo_input_pods(struct topo_input *in, const char *data, size_t size, char **cause);
int topo_input_jobset(struct topo_input *in, const char *data, size_t size, char **cause);
int topo_input_hypernodes(struct topo_input *in, const char *data, size_t size, char **cause);

/* The same from a tree already parsed (a LIST collected from the cluster:
 * an object with "items", a list, or one object); the call takes the tree
 * and deletes it. */
struct cJSON;
int topo_input_nodes_tree(struct topo_input *in, struct cJSON *root, char **cause);
int topo_input_pods_tree(struct topo_input *in, struct cJSON *root, char **cause);
int topo_input_jobset_tree(struct topo_input *in, struct cJSON *root, char **cause);
int topo_input_hypernodes_tree(struct topo_input *in, struct cJSON *root, char **cause);

void topo_input_free(struct topo_input *in);

#endif
