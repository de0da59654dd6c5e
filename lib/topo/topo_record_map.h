/*
 * topo_record_map: the one reader of the placement of record from its
 * ConfigMap `<jobset>-placement` (lib/muster/muster_api.h), for the
 * controller (which writes, keeps and replaces it) and the pod route (which
 * pins pods by it). Both fetch the ConfigMap their own way; what it holds
 * is read here, by one rule:
 *
 * 1. Whose it is: lib/muster/record_owner's rule. A ConfigMap of the name
 *    that this JobSet does not own is not its record, whatever it holds
 *    (an earlier JobSet's of the name, or anyone else's), and is not read.
 * 2. Its record: data[MUSTER_PLACEMENT_KEY], parsed (topo_record.h), and
 *    written for this JobSet's uid; one of another uid is an earlier
 *    JobSet's.
 *
 * Pure; reads a cJSON tree, keeps nothing; errors are -1 and a malloc'd
 * cause (docs/errors.md) that names no value of the ConfigMap's.
 */
#ifndef MUSTER_TOPO_RECORD_MAP_H
#define MUSTER_TOPO_RECORD_MAP_H

#include <stddef.h>

struct cJSON;
struct topo_record;

enum topo_record_whose {
	TOPO_RECORD_OURS, /* owned by this JobSet (name and uid) */
	TOPO_RECORD_EARLIER, /* controlled by an earlier JobSet of the name */
	TOPO_RECORD_FOREIGN, /* anyone else's: never read, never touched */
};

/* Whose `configmap` is for JobSet `jobset` of `uid` (with need_controller,
 * ours only when its reference says `controller: true`, as muster writes
 * it), and when ours, *text (may be NULL) its record's text, borrowed from
 * the tree: NULL when data[MUSTER_PLACEMENT_KEY] is not a string. */
enum topo_record_whose topo_record_map_whose(const struct cJSON *configmap, const char *jobset,
					     const char *uid, int need_controller, const char **text);

/* Parses `len` bytes of a record's text as the placement of JobSet `uid`:
 * 0 and *out (the caller frees it), or -1 and a cause; *earlier (may be
 * NULL) is 1 when the text parsed but places another uid (an earlier
 * JobSet's of the name). */
int topo_record_map_parse(const char *text, size_t len, const char *uid, struct topo_record **out,
			  int *earlier, char **cause);

#endif
