/*
 * model_fields: the length limits of the names in muster's object models
 * (the JobSet model here, the controller's pod decoder) and the decimal
 * reader of muster's numeric labels. The cJSON field readers themselves are
 * lib/base/kjson.h. Pure.
 */
#ifndef MUSTER_MODEL_FIELDS_H
#define MUSTER_MODEL_FIELDS_H

#include <stddef.h>
#include <stdint.h>

/* A label value and a DNS label (namespace, replicated job name, JobSet
 * name: JobSet copies the name into a label, so it cannot be longer). */
#define MODEL_LABEL_MAX 63
/* A DNS subdomain: metadata.name of a pod. */
#define MODEL_OBJECT_NAME_MAX 253
/* metadata.uid is a UUID (36 characters); anything up to 64 is accepted so
 * that another apiserver's format still works, longer is refused. */
#define MODEL_UID_MAX 64

/* Parses a decimal number of at most `max_digits` digits, no sign and no
 * spaces, not above limit. Returns 0 and *value, or -1 (no cause). */
int model_parse_decimal(const char *text, unsigned max_digits, uint64_t limit, uint64_t *value);

#endif
