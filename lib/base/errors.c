/*
 * errors: names and messages of muster's error codes (errors.h).
 */
#include "errors.h"

#include <stddef.h>

struct err_info {
	int code;
	const char *name;
	const char *message;
};

static const struct err_info err_table[] = {
#define MUSTER_ERR_ROW(name, value, message) { value, #name, message },
	MUSTER_ERRORS(MUSTER_ERR_ROW)
#undef MUSTER_ERR_ROW
};

static const struct err_info *err_find(int err)
{
	for (size_t i = 0; i < sizeof(err_table) / sizeof(err_table[0]); i++)
		if (err_table[i].code == err)
			return &err_table[i];
	return NULL;
}

const char *muster_err_name(int err)
{
	const struct err_info *info = err_find(err);

	return info ? info->name : "MUSTER_E?";
}

const char *muster_err_message(int err)
{
	const struct err_info *info = err_find(err);

	return info ? info->message : "unknown error";
}
