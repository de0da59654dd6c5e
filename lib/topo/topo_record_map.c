/*
 * topo_record_map: the placement of record from its ConfigMap
 * (topo_record_map.h).
 */
#include "topo_record_map.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "cause.h"
#include "kjson.h"
#include "muster_api.h"
#include "record_owner.h"
#include "topo_record.h"

enum topo_record_whose topo_record_map_whose(const cJSON *configmap, const char *jobset, const char *uid,
					     int need_controller, const char **text)
{
	const cJSON *data;

	if (text)
		*text = NULL;
	switch (record_owner_of(configmap, jobset, uid, need_controller)) {
	case RECORD_OWNER_OURS:
		break;
	case RECORD_OWNER_PREDECESSOR:
		return TOPO_RECORD_EARLIER;
	default:
		return TOPO_RECORD_FOREIGN;
	}
	data = kjson_member(kjson_member(configmap, "data"), MUSTER_PLACEMENT_KEY);
	if (text && cJSON_IsString(data))
		*text = data->valuestring;
	return TOPO_RECORD_OURS;
}

int topo_record_map_parse(const char *text, size_t len, const char *uid, struct topo_record **out,
			  int *earlier, char **cause)
{
	if (earlier)
		*earlier = 0;
	*out = NULL;
	if (topo_record_parse(text, len, out, cause))
		return -1;
	if (strcmp(topo_record_uid(*out), uid) != 0) {
		topo_record_free(*out);
		*out = NULL;
		if (earlier)
			*earlier = 1;
		return cause_fail(cause, "the record places an earlier JobSet of this name, not uid %s", uid);
	}
	return 0;
}
