/*
 * barrier_args: the barrier's command line and environment into its
 * configuration (barrier_args.h): flags, the push token from a file or the
 * environment, and usage errors reported where `kubectl describe` shows
 * them.
 */
#define _GNU_SOURCE
#include "barrier_args.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "barrier_core.h"
#include "barrier_volume.h"
#include "muster_api.h"

#ifndef MUSTER_VERSION
#define MUSTER_VERSION "dev"
#endif

#define DEFAULT_TERMINATION_LOG "/dev/termination-log"
#define TIMEOUT_MAX 604800u /* one week */

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: muster-barrier [flags]\n"
		"\n"
		"Blocks until the controller releases this pod's restart attempt, then exits 0 so\n"
		"the main containers start. Release by volume: the ConfigMap mounted at --dir names\n"
		"this JobSet (key `jobset-uid` = --jobset-uid), a generation >= --generation (key\n"
		"`generation`, absent = 0) and an attempt >= --attempt (key `started`). Release by\n"
		"push: a valid line `MUSTER1 RELEASE <attempt> <token>[ <generation>]` on the\n"
		"--listen port.\n"
		"\n"
		"Flags:\n"
		"  --dir PATH              ConfigMap volume mount directory (default " MUSTER_BARRIER_MOUNT
		")\n"
		"  --watch dnotify|inotify kernel interface watching --dir (default dnotify: its\n"
		"                          teardown is free; inotify also notices the directory\n"
		"                          vanishing but adds 6-14 ms to the exit)\n"
		"  --attempt N             restart attempt of this pod, 0..2147483647 (default 0);\n"
		"                          from the label " JOBSET_LABEL_RESTART_ATTEMPT "\n"
		"  --generation N          muster's generation of the JobSet (its resumes), from the\n"
		"                          label " MUSTER_LABEL_GANG_GENERATION "; empty or absent: 0\n"
		"  --jobset-uid UID        the JobSet's uid, from the label " JOBSET_LABEL_UID ";\n"
		"                          a volume release must name it (empty: not checked)\n"
		"  --listen [ADDR:]PORT    also accept a pushed release on this TCP port\n"
		"                          (IPv6 as [ADDR]:PORT or ADDR:PORT; port 0 picks a free port)\n"
		"  --token-file PATH       file holding the push token (overrides $" MUSTER_ENV_BARRIER_TOKEN
		")\n"
		"  --timeout SECONDS       give up after this long, 0..604800 (default 0: never)\n"
		"  --termination-log PATH  where the failure reason goes if the file exists\n"
		"                          (default " DEFAULT_TERMINATION_LOG ")\n"
		"  --help, --version\n"
		"\n"
		"Environment:\n"
		"  " MUSTER_ENV_BARRIER_TOKEN "    push token, 16..256 printable ASCII bytes, no spaces\n"
		"  POD_NAMESPACE, POD_NAME  printed on every log line as pod=NAMESPACE/NAME\n"
		"\n"
		"Exit codes:\n");
	for (const struct barrier_exit_info *e = barrier_exit_table; e->name; e++)
		fprintf(out, "  %3d  %-9s %s\n", e->code, e->name, e->meaning);
}

static int usage_error(const char *termination_log, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Reports a usage error on stderr and in the termination log (so a pod that
 * was given bad arguments says so in `kubectl describe`). */
static int usage_error(const char *termination_log, const char *fmt, ...)
{
	char message[512], line[560];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	fprintf(stderr, "muster-barrier: %s (see --help)\n", message);
	snprintf(line, sizeof(line), "muster-barrier: %s\n", message);
	barrier_write_termination_log(termination_log, line);
	return MUSTER_BARRIER_EXIT_USAGE;
}

static int parse_u32(const char *text, uint32_t max, uint32_t *out)
{
	uint32_t value;

	if (barrier_parse_attempt(text, strlen(text), &value) != 0 || value > max)
		return -1;
	/* Refuse the white space barrier_parse_attempt tolerates in a file. */
	for (const char *p = text; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
	}
	*out = value;
	return 0;
}

/* Reads the token file into config->token, dropping trailing white space
 * (a file written by `echo` ends in a newline). */
static int read_token_file(const char *path, struct barrier_config *config, char *err, size_t err_size)
{
	char buf[BARRIER_TOKEN_MAX + 3];
	size_t used = 0;
	int found = barrier_read_small_file(path, buf, sizeof(buf), &used, err, err_size);

	if (found <= 0) {
		if (found == 0)
			snprintf(err, err_size, "no such file");
		return -1;
	}
	while (used > 0 && (buf[used - 1] == '\n' || buf[used - 1] == '\r' || buf[used - 1] == ' ' ||
			    buf[used - 1] == '\t'))
		used--;
	if (used > BARRIER_TOKEN_MAX) {
		snprintf(err, err_size, "token is longer than 256 bytes");
		return -1;
	}
	memcpy(config->token, buf, used);
	config->token[used] = '\0';
	config->token_len = used;
	return 0;
}

int barrier_args_parse(int argc, char **argv, struct barrier_config *config)
{
	enum {
		OPT_DIR = 256,
		OPT_WATCH,
		OPT_ATTEMPT,
		OPT_GENERATION,
		OPT_JOBSET_UID,
		OPT_LISTEN,
		OPT_TOKEN_FILE,
		OPT_TIMEOUT,
		OPT_TERMLOG,
		OPT_HELP,
		OPT_VERSION
	};
	static const struct option options[] = {
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "watch", required_argument, NULL, OPT_WATCH },
		{ "attempt", required_argument, NULL, OPT_ATTEMPT },
		{ "generation", required_argument, NULL, OPT_GENERATION },
		{ "jobset-uid", required_argument, NULL, OPT_JOBSET_UID },
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "termination-log", required_argument, NULL, OPT_TERMLOG },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	const char *token_file = NULL, *cause = NULL, *env_token;
	int opt;

	config->dir = MUSTER_BARRIER_MOUNT;
	config->termination_log = DEFAULT_TERMINATION_LOG;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case OPT_DIR:
			config->dir = optarg;
			break;
		case OPT_WATCH:
			if (barrier_watch_parse(optarg, &config->watch) != 0)
				return usage_error(config->termination_log,
						   "--watch '%.100s' is neither dnotify nor inotify", optarg);
			break;
		case OPT_ATTEMPT:
			if (parse_u32(optarg, BARRIER_ATTEMPT_MAX, &config->attempt) != 0)
				return usage_error(
					config->termination_log,
					"--attempt '%.100s' is not a number from 0 to 2147483647 (is the "
					"restart-attempt label missing?)",
					optarg);
			break;
		case OPT_GENERATION:
			/* Empty: the label is absent (a JobSet never resumed). */
			if (optarg[0] && parse_u32(optarg, RELEASE_GENERATION_MAX, &config->generation) != 0)
				return usage_error(
					config->termination_log,
					"--generation '%.100s' is not a number from 0 to 2147483647", optarg);
			break;
		case OPT_JOBSET_UID:
			if (strlen(optarg) > RELEASE_UID_MAX || strpbrk(optarg, " \t\r\n"))
				return usage_error(
					config->termination_log,
					"--jobset-uid '%.100s' is not a uid (at most %d bytes, no spaces)",
					optarg, RELEASE_UID_MAX);
			memcpy(config->jobset_uid, optarg, strlen(optarg) + 1);
			break;
		case OPT_LISTEN:
			if (barrier_listen_parse(optarg, &config->listen_addr, &cause) != 0)
				return usage_error(config->termination_log, "--listen '%.100s': %s", optarg,
						   cause);
			config->listen = 1;
			config->listen_spec = optarg;
			break;
		case OPT_TOKEN_FILE:
			token_file = optarg;
			break;
		case OPT_TIMEOUT:
			if (parse_u32(optarg, TIMEOUT_MAX, &config->timeout_seconds) != 0)
				return usage_error(
					config->termination_log,
					"--timeout '%.100s' is not a number of seconds from 0 to 604800",
					optarg);
			break;
		case OPT_TERMLOG:
			config->termination_log = optarg;
			break;
		case OPT_HELP:
			usage(stdout);
			return 0;
		case OPT_VERSION:
			printf("muster-barrier %s\n", MUSTER_VERSION);
			return 0;
		default:
			return usage_error(config->termination_log, "unknown flag or missing value: %.100s",
					   argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error(config->termination_log, "unexpected argument '%.100s'", argv[optind]);

	if (token_file) {
		char err[256];

		if (read_token_file(token_file, config, err, sizeof(err)) != 0)
			return usage_error(config->termination_log, "--token-file %.200s: %s", token_file,
					   err);
	} else if ((env_token = getenv(MUSTER_ENV_BARRIER_TOKEN)) != NULL && env_token[0]) {
		size_t len = strnlen(env_token, BARRIER_TOKEN_MAX + 1);

		if (len > BARRIER_TOKEN_MAX)
			return usage_error(config->termination_log, "%s is longer than 256 bytes",
					   MUSTER_ENV_BARRIER_TOKEN);
		memcpy(config->token, env_token, len);
		config->token[len] = '\0';
		config->token_len = len;
	}
	if (config->listen) {
		if (config->token_len == 0)
			return usage_error(config->termination_log,
					   "--listen needs a token: set %s or --token-file",
					   MUSTER_ENV_BARRIER_TOKEN);
		if (barrier_token_check(config->token, config->token_len, &cause) != 0)
			return usage_error(config->termination_log, "push token rejected: %s", cause);
	}
	return -1;
}
