/*
 * kube_error: names, messages and translations of the kube_* error codes.
 * See kube_error.h for the contract.
 */
#define _POSIX_C_SOURCE 200809L
#include "kube_error.h"
#include "cause.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "utf8.h"

struct kube_err_info {
	int code;
	const char *name;
	const char *message;
};

static const struct kube_err_info err_table[] = {
#define KUBE_ERR_ROW(name, value, message) { value, #name, message },
	KUBE_ERRORS(KUBE_ERR_ROW)
#undef KUBE_ERR_ROW
};

static const struct kube_err_info *err_find(int err)
{
	for (size_t i = 0; i < sizeof(err_table) / sizeof(err_table[0]); i++)
		if (err_table[i].code == err)
			return &err_table[i];
	return NULL;
}

const char *kube_err_name(int err)
{
	const struct kube_err_info *info = err_find(err);

	return info ? info->name : "KUBE_E?";
}

const char *kube_err_message(int err)
{
	const struct kube_err_info *info = err_find(err);

	return info ? info->message : "unknown error";
}

int kube_err_from_http(long status)
{
	if (status >= 200 && status < 300)
		return KUBE_OK;
	if (status == 401 || status == 403)
		return KUBE_EUNAUTHORIZED;
	if (status == 404)
		return KUBE_ENOTFOUND;
	if (status == 409)
		return KUBE_ECONFLICT;
	if (status == 410)
		return KUBE_EGONE;
	if (status == 429)
		return KUBE_ETHROTTLED;
	if (status >= 500 && status < 600)
		return KUBE_ESERVER;
	return KUBE_EHTTP;
}

int kube_err_may_heal(int err)
{
	return kube_err_is_transient(err) || err == KUBE_ETLS;
}

int kube_err_is_transient(int err)
{
	return err == KUBE_ETRANSPORT || err == KUBE_ETIMEOUT || err == KUBE_ETHROTTLED ||
	       err == KUBE_ESERVER;
}

int kube_cause(char **cause, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cause_verr(cause, err, fmt, ap);
	va_end(ap);
	return err;
}
