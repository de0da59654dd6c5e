/*
 * kube_event: an Event on an object (kube_event.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "kube_event.h"
#include "kube_path.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kube_error.h"
#include "mlog.h"

int kube_event_post(struct kube_client *client, const struct kube_event_object *o, const char *component,
		    const char *reason, int warning, const char *message)
{
	char path[KUBE_PATH_MAX], stamp[32], prefix[300];
	cJSON *body = cJSON_CreateObject(), *metadata, *object, *source;
	char *cause = NULL;
	time_t now = time(NULL);
	struct tm tm;
	int err = MUSTER_ENOMEM;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(prefix, sizeof(prefix), "%s.", o->name);
	if (!body || !cJSON_AddStringToObject(body, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(body, "kind", "Event") ||
	    !(metadata = cJSON_AddObjectToObject(body, "metadata")) ||
	    !cJSON_AddStringToObject(metadata, "generateName", prefix) ||
	    !cJSON_AddStringToObject(metadata, "namespace", o->namespace) ||
	    !(object = cJSON_AddObjectToObject(body, "involvedObject")) ||
	    !cJSON_AddStringToObject(object, "apiVersion", o->api_version) ||
	    !cJSON_AddStringToObject(object, "kind", o->kind) ||
	    !cJSON_AddStringToObject(object, "name", o->name) ||
	    !cJSON_AddStringToObject(object, "namespace", o->namespace) ||
	    (o->uid && *o->uid && !cJSON_AddStringToObject(object, "uid", o->uid)) ||
	    !cJSON_AddStringToObject(body, "reason", reason) ||
	    !cJSON_AddStringToObject(body, "message", message) ||
	    !cJSON_AddStringToObject(body, "type", warning ? "Warning" : "Normal") ||
	    !(source = cJSON_AddObjectToObject(body, "source")) ||
	    !cJSON_AddStringToObject(source, "component", component) ||
	    !cJSON_AddStringToObject(body, "reportingComponent", component) ||
	    !cJSON_AddStringToObject(body, "firstTimestamp", stamp) ||
	    !cJSON_AddStringToObject(body, "lastTimestamp", stamp) ||
	    !cJSON_AddNumberToObject(body, "count", 1)) {
		mlog(MLOG_WARN, "event-failed", "object=%s/%s reason=%s cause=\"out of memory\"",
		     o->namespace, o->name, reason);
		goto out;
	}
	err = kube_path(path, sizeof(path), &KUBE_EVENTS, o->namespace, NULL, &cause);
	if (!err)
		err = kube_create(client, path, body, NULL, &cause);
	if (err)
		mlog(MLOG_WARN, "event-failed", "object=%s/%s reason=%s err=%s cause=\"%s\"", o->namespace,
		     o->name, reason, muster_err_name(err), cause ? cause : "");
	free(cause);
out:
	cJSON_Delete(body);
	return err;
}
