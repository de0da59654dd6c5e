/*
 * kube_error: HTTP statuses into muster's error codes, and which of them a
 * retry may heal (kube_error.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "kube_error.h"
#include "cause.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "utf8.h"

int kube_err_from_http(long status)
{
	if (status >= 200 && status < 300)
		return MUSTER_OK;
	if (status == 401 || status == 403)
		return MUSTER_EUNAUTHORIZED;
	if (status == 404)
		return MUSTER_ENOTFOUND;
	if (status == 409)
		return MUSTER_ECONFLICT;
	if (status == 410)
		return MUSTER_EGONE;
	if (status == 429)
		return MUSTER_ETHROTTLED;
	if (status >= 500 && status < 600)
		return MUSTER_ESERVER;
	return MUSTER_EHTTP;
}

int kube_err_may_heal(int err)
{
	return kube_err_is_transient(err) || err == MUSTER_ETLS;
}

int kube_err_is_transient(int err)
{
	return err == MUSTER_ETRANSPORT || err == MUSTER_ETIMEOUT || err == MUSTER_ETHROTTLED ||
	       err == MUSTER_ESERVER;
}
