/*
 * http_tls: the HTTP server's TLS: the certificate chain and key read and
 * checked (parse, match), the certificate each handshake takes, their hot
 * reload from the files (inotify on their directories, a periodic check),
 * the reload counters and the expiry check. Not the listening socket, the
 * routes or the connections' deadlines (http_serve.c, http_conn.c).
 *
 * TLS: libmicrohttpd hands each handshake's choice of certificate to a GnuTLS
 * retrieve callback (MHD_OPTION_HTTPS_CERT_CALLBACK), which returns the
 * server's current pair. GnuTLS keeps pointers to that pair in the session
 * and does not copy it, so a pair replaced by a reload must live until the
 * last connection that took it closes: every pair counts its users (one for
 * being current, one per connection whose handshake took it), and the
 * connections are tracked from libmicrohttpd's connection notifications. The
 * callback is given the GnuTLS session only: libmicrohttpd keeps its
 * connection as the session's pointer (gnutls_session_set_ptr, which its own
 * PSK callback reads back), and the connection's socket context is our
 * record, so the handshake finds its server without any process-wide state.
 * Each server keeps its connections in its own list under its own lock (for
 * the teardown of connections whose close was never notified). Reloads run
 * on one watcher thread per server, the only writer of its current pair.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>

#include "http_serve_int.h"
#include "cause.h"
#include "mlog.h"

/* A stream of changes postpones a reload by at most this long. */
#define TLS_DEBOUNCE_MAX_MS 1000
/* How often a directory that cannot be watched is tried again. */
#define TLS_MISSING_RETRY_MS 1000
#define TLS_WATCH_MASK                                                                                       \
	(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB | IN_DELETE_SELF | \
	 IN_MOVE_SELF | IN_ONLYDIR)

/* A TLS connection of some server, from libmicrohttpd's start notification
 * to its close notification. */
struct tls_connection {
	struct tls_connection *prev, *next;
	gnutls_session_t session;
	struct http_serve *server;
	struct tls_pair *pair; /* what its handshake took; NULL before */
};

/* ---- TLS credentials ---- */

static void tls_pair_free(struct tls_pair *pair)
{
	if (!pair)
		return;
	for (unsigned i = 0; i < pair->cert_count; i++)
		gnutls_pcert_deinit(&pair->certs[i]);
	gnutls_privkey_deinit(pair->key);
	free(pair);
}

/* Drops one user of pair; the last frees it. Called with the server's tls.lock held. */
static void tls_pair_release(struct tls_pair *pair)
{
	if (pair && --pair->users == 0)
		tls_pair_free(pair);
}

/* Frees a buffer that may hold key material, wiping it first. */
static void free_secret(gnutls_datum_t *datum)
{
	if (datum->data) {
		gnutls_memset(datum->data, 0, datum->size);
		free(datum->data);
	}
	datum->data = NULL;
	datum->size = 0;
}

/* Reads the regular file path (what: "certificate file" or "key file"), at
 * most HTTP_SERVE_TLS_FILE_MAX bytes. Returns 0, or a negative code of lib/base/errors.h
 * with *cause naming the file. */
static int read_tls_file(const char *path, const char *what, gnutls_datum_t *out, char **cause)
{
	char error[128], quoted[300];
	unsigned char *data = NULL;
	size_t len = 0, size;
	struct stat st;
	int fd, err = 0;

	mlog_quote(quoted, sizeof(quoted), path, strlen(path));
	/* Non-blocking: a FIFO put in the file's place cannot hang the open. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		err = MUSTER_EIO;
		cause_err(cause, err, "TLS %s %s: %s", what, quoted,
			  http_error_text(errno, error, sizeof(error)));
		goto out;
	}
	if (fstat(fd, &st) != 0) {
		err = MUSTER_EIO;
		cause_err(cause, err, "TLS %s %s: %s", what, quoted,
			  http_error_text(errno, error, sizeof(error)));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err = cause_err(cause, MUSTER_EINVAL, "TLS %s %s: not a regular file", what, quoted);
		goto out;
	}
	if ((uintmax_t)st.st_size > HTTP_SERVE_TLS_FILE_MAX)
		goto too_large;
	size = (size_t)st.st_size + 1;
	data = malloc(size);
	if (!data) {
		err = cause_err(cause, MUSTER_ENOMEM, "out of memory");
		goto out;
	}
	for (;;) {
		ssize_t n;

		if (len == size) {
			/* The file grew since fstat(). */
			unsigned char *bigger;

			if (size > HTTP_SERVE_TLS_FILE_MAX)
				goto too_large;
			size = size * 2 > HTTP_SERVE_TLS_FILE_MAX + 1 ? HTTP_SERVE_TLS_FILE_MAX + 1
								      : size * 2;
			bigger = malloc(size);
			if (!bigger) {
				err = cause_err(cause, MUSTER_ENOMEM, "out of memory");
				goto out;
			}
			memcpy(bigger, data, len);
			gnutls_memset(data, 0, len);
			free(data);
			data = bigger;
		}
		n = read(fd, data + len, size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = MUSTER_EIO;
			cause_err(cause, err, "TLS %s %s: %s", what, quoted,
				  http_error_text(errno, error, sizeof(error)));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	goto out;

too_large:
	err = cause_err(cause, MUSTER_ETOOBIG, "TLS %s %s: larger than %u bytes", what, quoted,
			HTTP_SERVE_TLS_FILE_MAX);
out:
	if (fd >= 0)
		close(fd);
	if (err) {
		gnutls_datum_t wipe = { data, (unsigned)len };

		free_secret(&wipe);
		return err;
	}
	out->data = data;
	out->size = (unsigned)len;
	return 0;
}

/* Both files, and their digest to tell a change. */
static int tls_read(const struct tls_state *tls, gnutls_datum_t *cert, gnutls_datum_t *key,
		    unsigned char digest[TLS_DIGEST_SIZE], char **cause)
{
	int err;

	err = read_tls_file(tls->cert_file, "certificate file", cert, cause);
	if (!err)
		err = read_tls_file(tls->key_file, "key file", key, cause);
	if (!err && (gnutls_hash_fast(GNUTLS_DIG_SHA256, cert->data, cert->size, digest) != 0 ||
		     gnutls_hash_fast(GNUTLS_DIG_SHA256, key->data, key->size, digest + 32) != 0))
		err = cause_err(cause, MUSTER_ENOMEM, "cannot hash the TLS files");
	if (err) {
		free_secret(cert);
		free_secret(key);
	}
	return err;
}

/* Whether the key is the certificate's: it signs, the certificate's public
 * key verifies. Returns 0 or a GnuTLS error. */
static int tls_key_matches(const struct tls_pair *pair)
{
	static const unsigned char probe[] = "muster http_serve: does this key match the certificate?";
	const gnutls_datum_t data = { (unsigned char *)probe, sizeof(probe) - 1 };
	gnutls_datum_t signature = { NULL, 0 };
	gnutls_digest_algorithm_t hash = GNUTLS_DIG_SHA256;
	gnutls_sign_algorithm_t algorithm;
	int pk, ret;

	pk = gnutls_pubkey_get_pk_algorithm(pair->certs[0].pubkey, NULL);
	if (pk < 0)
		return pk;
	ret = gnutls_pubkey_get_preferred_hash_algorithm(pair->certs[0].pubkey, &hash, NULL);
	if (ret < 0)
		return ret;
	algorithm = gnutls_pk_to_sign((gnutls_pk_algorithm_t)pk, hash);
	if (algorithm == GNUTLS_SIGN_UNKNOWN)
		return GNUTLS_E_UNKNOWN_PK_ALGORITHM;
	ret = gnutls_privkey_sign_data2(pair->key, algorithm, 0, &data, &signature);
	if (ret >= 0)
		ret = gnutls_pubkey_verify_data2(pair->certs[0].pubkey, algorithm, 0, &data, &signature);
	gnutls_free(signature.data);
	return ret < 0 ? ret : 0;
}

/* The leaf's subject and notAfter, for the log. */
static void tls_describe(struct tls_pair *pair)
{
	gnutls_x509_crt_t leaf = NULL;
	gnutls_datum_t subject = { NULL, 0 };
	time_t not_after;
	struct tm tm;

	snprintf(pair->subject, sizeof(pair->subject), "\"?\"");
	snprintf(pair->not_after, sizeof(pair->not_after), "?");
	if (gnutls_x509_crt_init(&leaf) < 0)
		return;
	if (gnutls_x509_crt_import(leaf, &pair->certs[0].cert, GNUTLS_X509_FMT_DER) >= 0) {
		if (gnutls_x509_crt_get_dn3(leaf, &subject, 0) >= 0)
			mlog_quote(pair->subject, sizeof(pair->subject), (const char *)subject.data,
				   subject.size);
		not_after = gnutls_x509_crt_get_expiration_time(leaf);
		if (not_after != (time_t)-1 && gmtime_r(&not_after, &tm)) {
			strftime(pair->not_after, sizeof(pair->not_after), "%Y-%m-%dT%H:%M:%SZ", &tm);
			pair->expires = (int64_t)not_after;
		}
	}
	gnutls_free(subject.data);
	gnutls_x509_crt_deinit(leaf);
}

/* Parses the files' contents into a pair (one user). Returns 0, or MUSTER_EINVAL
 * (MUSTER_ENOMEM) with *cause naming the file at fault. */
static int tls_pair_parse(const struct tls_state *tls, const gnutls_datum_t *cert, const gnutls_datum_t *key,
			  struct tls_pair **out, char **cause)
{
	char cert_name[300], key_name[300];
	unsigned count = HTTP_SERVE_TLS_CHAIN_MAX;
	struct tls_pair *pair;
	int ret, err = 0;

	*out = NULL;
	mlog_quote(cert_name, sizeof(cert_name), tls->cert_file, strlen(tls->cert_file));
	mlog_quote(key_name, sizeof(key_name), tls->key_file, strlen(tls->key_file));
	pair = calloc(1, sizeof(*pair));
	if (!pair)
		return cause_err(cause, MUSTER_ENOMEM, "out of memory");
	pair->users = 1;
	/* Unsorted chains are refused: a client needs the leaf first, then
	 * each certificate's issuer. */
	ret = gnutls_pcert_list_import_x509_raw(pair->certs, &count, cert, GNUTLS_X509_FMT_PEM,
						GNUTLS_X509_CRT_LIST_FAIL_IF_UNSORTED);
	if (ret == GNUTLS_E_SHORT_MEMORY_BUFFER) {
		err = cause_err(cause, MUSTER_EINVAL, "TLS certificate file %s: more than %u certificates",
				cert_name, HTTP_SERVE_TLS_CHAIN_MAX);
		goto out;
	}
	if (ret < 0 || count == 0) {
		err = cause_err(cause, MUSTER_EINVAL, "TLS certificate file %s: no PEM certificate chain: %s",
				cert_name, ret < 0 ? gnutls_strerror(ret) : "empty");
		goto out;
	}
	pair->cert_count = count;
	ret = gnutls_privkey_init(&pair->key);
	if (ret < 0) {
		err = cause_err(cause, MUSTER_ENOMEM, "out of memory");
		goto out;
	}
	ret = gnutls_privkey_import_x509_raw(pair->key, key, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (ret < 0) {
		err = cause_err(cause, MUSTER_EINVAL, "TLS key file %s: no unencrypted PEM private key: %s",
				key_name, gnutls_strerror(ret));
		goto out;
	}
	ret = tls_key_matches(pair);
	if (ret < 0) {
		err = cause_err(cause, MUSTER_EINVAL,
				"TLS key file %s does not match the certificate in %s: %s", key_name,
				cert_name, gnutls_strerror(ret));
		goto out;
	}
	tls_describe(pair);
out:
	if (err)
		tls_pair_free(pair);
	else
		*out = pair;
	return err;
}

/* GnuTLS asks for the certificate of a handshake: the connection's server's
 * current pair, which the connection then holds until it closes. */
int http_tls_certificate(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
			 const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length, gnutls_pcert_st **pcert,
			 unsigned int *pcert_length, gnutls_privkey_t *privkey)
{
	struct MHD_Connection *mhd_connection = gnutls_session_get_ptr(session);
	const union MHD_ConnectionInfo *info =
		mhd_connection ? MHD_get_connection_info(mhd_connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT)
			       : NULL;
	struct conn *conn = info ? info->socket_context : NULL;
	struct tls_connection *connection = conn ? conn->tls : NULL;
	struct tls_state *tls;
	int result = -1;

	(void)req_ca_rdn;
	(void)nreqs;
	(void)pk_algos;
	(void)pk_algos_length;
	/* No record only when its start notification could not allocate: the
	 * handshake fails rather than use a pair nobody holds. */
	if (!connection || connection->session != session)
		return -1;
	tls = &connection->server->tls;
	pthread_mutex_lock(&tls->lock);
	if (tls->current) {
		struct tls_pair *pair = tls->current;

		pair->users++;
		tls_pair_release(connection->pair); /* a renegotiation's previous one */
		connection->pair = pair;
		*pcert = pair->certs;
		*pcert_length = pair->cert_count;
		*privkey = pair->key;
		result = 0;
	}
	pthread_mutex_unlock(&tls->lock);
	if (result == 0)
		http_conn_hello(connection->server, conn);
	return result;
}

/* A TLS connection's record, from libmicrohttpd's start notification: the
 * handshake finds it through the connection's socket context. */
struct tls_connection *http_tls_connection_open(struct http_serve *server,
						struct MHD_Connection *mhd_connection)
{
	const union MHD_ConnectionInfo *info =
		MHD_get_connection_info(mhd_connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	struct tls_connection *connection = NULL;

	if (info && info->tls_session && (connection = calloc(1, sizeof(*connection)))) {
		connection->session = info->tls_session;
		connection->server = server;
		pthread_mutex_lock(&server->tls.lock);
		connection->next = server->tls.connections;
		if (server->tls.connections)
			server->tls.connections->prev = connection;
		server->tls.connections = connection;
		pthread_mutex_unlock(&server->tls.lock);
	}
	return connection;
}

void http_tls_connection_close(struct http_serve *server, struct tls_connection *connection)
{
	pthread_mutex_lock(&server->tls.lock);
	if (connection->prev)
		connection->prev->next = connection->next;
	else
		server->tls.connections = connection->next;
	if (connection->next)
		connection->next->prev = connection->prev;
	tls_pair_release(connection->pair);
	pthread_mutex_unlock(&server->tls.lock);
	free(connection);
}

/* ---- TLS reloads ---- */

static int64_t monotonic_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Watches the directories not watched yet (at start, and again after one was
 * removed or renamed). A failure is logged once: the periodic check goes on. */
static void tls_watch_directories(struct http_serve *server)
{
	struct tls_state *tls = &server->tls;
	char error[128], quoted[300];

	if (tls->inotify_fd < 0)
		return;
	for (size_t i = 0; i < tls->dir_count; i++) {
		if (tls->watches[i] >= 0)
			continue;
		tls->watches[i] = inotify_add_watch(tls->inotify_fd, tls->dirs[i], TLS_WATCH_MASK);
		if (tls->watches[i] >= 0) {
			tls->watch_failed[i] = 0;
		} else if (!tls->watch_failed[i]) {
			tls->watch_failed[i] = 1;
			mlog_quote(quoted, sizeof(quoted), tls->dirs[i], strlen(tls->dirs[i]));
			mlog(MLOG_WARN, "tls-watch-failed",
			     "listen=%s dir=%s error=\"%s\" recheck_seconds=%u", server->address, quoted,
			     http_error_text(errno, error, sizeof(error)), HTTP_SERVE_TLS_RECHECK_SECONDS);
		}
	}
}

static int tls_watch_missing(const struct tls_state *tls)
{
	if (tls->inotify_fd < 0)
		return 0;
	for (size_t i = 0; i < tls->dir_count; i++) {
		if (tls->watches[i] < 0)
			return 1;
	}
	return 0;
}

/* Reads the pending inotify events; returns whether there were any. Every
 * event counts: the files are reached through symlinks whose names say
 * little, and a reload that finds the same bytes costs two small reads. */
static int tls_drain(struct tls_state *tls)
{
	char buffer[4096];
	int any = 0;

	for (;;) {
		ssize_t n = read(tls->inotify_fd, buffer, sizeof(buffer));
		size_t at = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return any;
		while (at + sizeof(struct inotify_event) <= (size_t)n) {
			struct inotify_event event;

			memcpy(&event, buffer + at, sizeof(event));
			/* The directory went away, or was renamed (its watch would
			 * follow it): its path is watched again at the next check. */
			for (size_t i = 0; i < tls->dir_count; i++) {
				if (tls->watches[i] != event.wd ||
				    !(event.mask & (IN_IGNORED | IN_MOVE_SELF | IN_DELETE_SELF)))
					continue;
				if (!(event.mask & IN_IGNORED))
					inotify_rm_watch(tls->inotify_fd, event.wd);
				tls->watches[i] = -1;
			}
			any = 1;
			at += sizeof(struct inotify_event) + event.len;
		}
	}
}

/* The serving certificate's expiry: the gauge, and a warning
 * (tls-certificate-expiring) when less than HTTP_SERVE_TLS_EXPIRY_WARN_DAYS
 * remain, once on the pair's load and then at most once a day, so that a
 * certificate nothing renews is seen weeks before the apiserver refuses it. */
void http_tls_expiry_check(struct http_serve *server, int force)
{
	struct tls_state *tls = &server->tls;
	const struct tls_pair *pair = tls->current;
	int64_t left, now = monotonic_ms();

	if (!pair || !pair->expires)
		return;
	metrics_gauge_set(tls->expiry, (double)pair->expires);
	left = pair->expires - (int64_t)time(NULL);
	if (left >= (int64_t)HTTP_SERVE_TLS_EXPIRY_WARN_DAYS * 86400)
		return;
	if (!force && tls->warned_at && now - tls->warned_at < 86400LL * 1000)
		return;
	tls->warned_at = now;
	mlog(MLOG_WARN, "tls-certificate-expiring", "listen=%s subject=%s not_after=%s days_left=%lld",
	     server->address, pair->subject, pair->not_after, (long long)(left > 0 ? left / 86400 : 0));
	if (tls->expiring)
		tls->expiring(tls->expiring_arg, pair->subject, pair->not_after,
			      (long long)(left > 0 ? left / 86400 : 0));
}

/* Reads the files and, if they changed, swaps in the new pair or logs why
 * not. Runs on the watcher thread only. */
static void tls_reload(struct http_serve *server)
{
	struct tls_state *tls = &server->tls;
	gnutls_datum_t cert = { NULL, 0 }, key = { NULL, 0 };
	unsigned char digest[TLS_DIGEST_SIZE];
	char *cause = NULL, quoted[600], cert_name[300], key_name[300];
	struct tls_pair *pair = NULL, *old;
	int err;

	memset(digest, 0, sizeof(digest));
	err = tls_read(tls, &cert, &key, digest, &cause);
	if (!err && memcmp(digest, tls->digest, sizeof(digest)) == 0) {
		/* Unchanged, or back to what is in use: a failure is over. */
		free(tls->failure);
		tls->failure = NULL;
		goto out;
	}
	if (!err)
		err = tls_pair_parse(tls, &cert, &key, &pair, &cause);
	mlog_quote(cert_name, sizeof(cert_name), tls->cert_file, strlen(tls->cert_file));
	mlog_quote(key_name, sizeof(key_name), tls->key_file, strlen(tls->key_file));
	if (err) {
		const char *why = cause ? cause : "out of memory";

		if (tls->failure && strcmp(tls->failure, why) == 0 &&
		    memcmp(digest, tls->failure_digest, sizeof(digest)) == 0)
			goto out; /* logged already */
		mlog_quote(quoted, sizeof(quoted), why, strlen(why));
		mlog(MLOG_WARN, "tls-reload-failed", "listen=%s cert=%s key=%s err=%d cause=%s kept=%s",
		     server->address, cert_name, key_name, err, quoted, tls->current->subject);
		metrics_counter_inc(tls->reloads_error);
		free(tls->failure);
		tls->failure = cause ? cause : strdup(why);
		cause = NULL;
		memcpy(tls->failure_digest, digest, sizeof(digest));
		goto out;
	}
	pthread_mutex_lock(&tls->lock);
	old = tls->current;
	tls->current = pair;
	tls_pair_release(old);
	pthread_mutex_unlock(&tls->lock);
	memcpy(tls->digest, digest, sizeof(digest));
	free(tls->failure);
	tls->failure = NULL;
	mlog(MLOG_INFO, "tls-reloaded", "listen=%s cert=%s key=%s subject=%s not_after=%s chain=%u",
	     server->address, cert_name, key_name, pair->subject, pair->not_after, pair->cert_count);
	metrics_counter_inc(tls->reloads_ok);
	http_tls_expiry_check(server, 1);
out:
	free(cause);
	free_secret(&cert);
	free_secret(&key);
}

/* The watcher: a reload HTTP_SERVE_TLS_DEBOUNCE_MS after the last change in
 * the directories (so that a certificate and its key written one after the
 * other are read together; at most TLS_DEBOUNCE_MAX_MS after the first), and
 * one every HTTP_SERVE_TLS_RECHECK_SECONDS in case inotify missed one (a
 * file system that does not report), or every TLS_MISSING_RETRY_MS while a
 * directory is not watched. */
static void *tls_watch(void *arg)
{
	struct http_serve *server = arg;
	struct tls_state *tls = &server->tls;
	int64_t now = monotonic_ms(), next_check = now + HTTP_SERVE_TLS_RECHECK_SECONDS * 1000LL;
	int64_t due = 0, first = 0;

	if (tls_watch_missing(tls))
		next_check = now + TLS_MISSING_RETRY_MS;
	for (;;) {
		struct pollfd fds[2] = { { tls->wake_fd, POLLIN, 0 }, { tls->inotify_fd, POLLIN, 0 } };
		int64_t deadline = due && due < next_check ? due : next_check;
		int n;

		now = monotonic_ms();
		n = poll(fds, tls->inotify_fd >= 0 ? 2 : 1, deadline > now ? (int)(deadline - now) : 0);
		if (n < 0 && errno != EINTR) {
			struct timespec pause = { 0, 100000000L }; /* never spin */

			nanosleep(&pause, NULL);
		}
		if (n > 0 && (fds[0].revents & POLLIN))
			break;
		now = monotonic_ms();
		if (n > 0 && (fds[1].revents & POLLIN) && tls_drain(tls)) {
			if (!due)
				first = now;
			due = now + HTTP_SERVE_TLS_DEBOUNCE_MS;
			if (due > first + TLS_DEBOUNCE_MAX_MS)
				due = first + TLS_DEBOUNCE_MAX_MS;
		}
		if ((due && now >= due) || now >= next_check) {
			tls_watch_directories(server);
			tls_reload(server);
			http_tls_expiry_check(server, 0);
			due = 0;
			next_check = monotonic_ms() + HTTP_SERVE_TLS_RECHECK_SECONDS * 1000LL;
			/* A directory that cannot be watched (yet: replaced, not
			 * there again) is tried again, and its files read, every
			 * second. */
			if (tls_watch_missing(tls))
				next_check = monotonic_ms() + TLS_MISSING_RETRY_MS;
		}
	}
	return NULL;
}

/* The directory part of path, malloc'd: "." for a bare name. */
static char *directory_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;
	char *dir;

	if (!slash)
		return strdup(".");
	if (len == 0)
		len = 1; /* "/name" */
	dir = malloc(len + 1);
	if (dir) {
		memcpy(dir, path, len);
		dir[len] = '\0';
	}
	return dir;
}

/* Loads the first pair and prepares the watch (started later by
 * tls_watch_start). Returns 0 or a negative code of lib/base/errors.h with *cause. */
int http_tls_setup(struct http_serve *server, const struct http_serve_options *options, char **cause)
{
	struct tls_state *tls = &server->tls;
	gnutls_datum_t cert = { NULL, 0 }, key = { NULL, 0 };
	char error[128];
	int err;

	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES ||
	    MHD_is_feature_supported(MHD_FEATURE_HTTPS_CERT_CALLBACK) != MHD_YES)
		return cause_err(cause, MUSTER_ECONFIG,
				 "libmicrohttpd was built without TLS certificate callbacks");
	if (pthread_mutex_init(&tls->lock, NULL) != 0)
		return cause_err(cause, MUSTER_ENOMEM, "cannot make a lock");
	tls->lock_ready = 1;
	tls->cert_file = strdup(options->tls_cert_file);
	tls->key_file = strdup(options->tls_key_file);
	tls->dirs[0] = tls->cert_file ? directory_of(tls->cert_file) : NULL;
	tls->dirs[1] = tls->key_file ? directory_of(tls->key_file) : NULL;
	if (!tls->cert_file || !tls->key_file || !tls->dirs[0] || !tls->dirs[1])
		return cause_err(cause, MUSTER_ENOMEM, "out of memory");
	tls->dir_count = 2;
	if (strcmp(tls->dirs[0], tls->dirs[1]) == 0) {
		free(tls->dirs[1]);
		tls->dirs[1] = NULL;
		tls->dir_count = 1;
	}
	tls->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (tls->wake_fd < 0) {
		err = MUSTER_EIO;
		return cause_err(cause, err, "cannot make an eventfd: %s",
				 http_error_text(errno, error, sizeof(error)));
	}
	/* Watched before the first read, so that no change after it is missed.
	 * Without inotify the periodic check still reloads. */
	tls->inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (tls->inotify_fd < 0)
		mlog(MLOG_WARN, "tls-watch-failed", "listen=%s error=\"%s\" recheck_seconds=%u",
		     server->address, http_error_text(errno, error, sizeof(error)),
		     HTTP_SERVE_TLS_RECHECK_SECONDS);
	tls_watch_directories(server);

	err = tls_read(tls, &cert, &key, tls->digest, cause);
	if (!err)
		err = tls_pair_parse(tls, &cert, &key, &tls->current, cause);
	free_secret(&cert);
	free_secret(&key);
	return err;
}

int http_tls_watch_start(struct http_serve *server, char **cause)
{
	char error[128];
	int err = pthread_create(&server->tls.watcher, NULL, tls_watch, server);

	if (err)
		return cause_err(cause, MUSTER_EIO, "cannot start the TLS watcher thread: %s",
				 http_error_text(err, error, sizeof(error)));
	server->tls.watcher_started = 1;
	return 0;
}

/* Stops the watcher and frees the TLS state; the daemon is stopped, so no
 * connection is left but those whose close was never notified. */
void http_tls_teardown(struct http_serve *server)
{
	struct tls_state *tls = &server->tls;
	struct tls_connection *connection, *next;

	if (tls->watcher_started) {
		uint64_t one = 1;

		if (write(tls->wake_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
			mlog(MLOG_ERROR, "tls-watch-failed", "listen=%s cause=\"cannot wake the watcher\"",
			     server->address);
		pthread_join(tls->watcher, NULL);
	}
	if (tls->lock_ready) {
		/* The daemon is stopped: only connections whose close was never
		 * notified are left. */
		for (connection = tls->connections; connection; connection = next) {
			next = connection->next;
			tls_pair_release(connection->pair);
			free(connection);
		}
		tls->connections = NULL;
		tls_pair_release(tls->current);
		tls->current = NULL;
		pthread_mutex_destroy(&tls->lock);
		tls->lock_ready = 0;
	}
	if (tls->inotify_fd >= 0)
		close(tls->inotify_fd);
	if (tls->wake_fd >= 0)
		close(tls->wake_fd);
	free(tls->dirs[0]);
	free(tls->dirs[1]);
	free(tls->cert_file);
	free(tls->key_file);
	free(tls->failure);
}

/* The reload counters, when there is a registry. A failure (say, a second
 * server on the registry) is logged and leaves them NULL, which counts
 * nothing. */
void http_tls_counters(struct http_serve *server)
{
	static const struct metrics_label ok = { "result", "ok" }, error = { "result", "error" };
	static const char help[] = "Reloads of the TLS certificate and key, by result.";
	char *cause = NULL, quoted[300];
	int err;

	if (!server->latency)
		return;
	err = metrics_counter_register(server->latency, "muster_tls_reloads_total", help, &ok, 1,
				       &server->tls.reloads_ok, &cause);
	if (!err)
		err = metrics_counter_register(server->latency, "muster_tls_reloads_total", help, &error, 1,
					       &server->tls.reloads_error, &cause);
	if (err) {
		server->tls.reloads_ok = server->tls.reloads_error = NULL;
		mlog(MLOG_WARN, "http-metric-failed",
		     "listen=%s name=muster_tls_reloads_total err=%d cause=%s", server->address, err,
		     http_quote_cause(quoted, sizeof(quoted), cause));
		free(cause);
		cause = NULL;
	}
	err = metrics_gauge_register(server->latency, "muster_tls_certificate_expiry_timestamp_seconds",
				     "notAfter of the serving certificate in use, as Unix time (seconds).",
				     NULL, 0, &server->tls.expiry, &cause);
	if (err) {
		server->tls.expiry = NULL;
		mlog(MLOG_WARN, "http-metric-failed",
		     "listen=%s name=muster_tls_certificate_expiry_timestamp_seconds err=%d cause=%s",
		     server->address, err, http_quote_cause(quoted, sizeof(quoted), cause));
		free(cause);
	}
}
