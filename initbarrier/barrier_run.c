/*
 * barrier_run: the event loop. See barrier_run.h.
 *
 * Order matters at start: the inotify watch is placed before the volume is
 * read for the first time, so an update landing in between still produces an
 * event; the push listener is bound before the "waiting" line, so whoever
 * reads that line may push at once.
 */
#define _GNU_SOURCE
#include "barrier_run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "barrier_volume.h"
#include "mlog.h"

#define ERR_SIZE 256

struct loop_state {
	const struct barrier_config *config;
	struct barrier_identity own;
	struct barrier_volume volume;
	struct barrier_push push;
	int signal_fd;
	enum barrier_volume_verdict last_verdict;
	int have_verdict;
	struct barrier_release last_seen;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void barrier_write_termination_log(const char *path, const char *message)
{
	int fd;

	if (!path || !path[0])
		return;
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return;
	(void)!write(fd, message, strlen(message));
	close(fd);
}

/* Logs a failure, writes it to the termination log, returns the exit code. */
static int fail(const struct barrier_config *config, int code, const char *event, const char *message)
{
	char quoted[ERR_SIZE * 2];
	char line[ERR_SIZE * 2];

	mlog(MLOG_ERROR, event, "exit_code=%d msg=%s", code,
	     mlog_quote(quoted, sizeof(quoted), message, strlen(message)));
	snprintf(line, sizeof(line), "muster-barrier: %s\n", message);
	barrier_write_termination_log(config->termination_log, line);
	return code;
}

/* Reads and judges the volume. Returns 1 when released, 0 when still
 * blocked or on a read error (logged). */
static int check_volume(struct loop_state *state)
{
	struct barrier_volume_content content;
	const struct barrier_volume_keys *keys = &content.keys;
	char err[ERR_SIZE];
	struct barrier_release seen = { 0, 0 };
	enum barrier_volume_verdict verdict;
	int changed;

	if (barrier_volume_read(&state->volume, &content, err, sizeof(err)) != 0) {
		mlog(MLOG_WARN, "volume-read-failed", "error=\"%s\"", err);
		return 0;
	}
	verdict = barrier_judge_volume(keys, &state->own, &seen);
	if (verdict == BARRIER_VOLUME_RELEASED) {
		mlog(MLOG_INFO, "released",
		     "via=volume attempt=%u released_attempt=%u generation=%u released_generation=%u",
		     state->own.attempt, seen.attempt, state->own.generation, seen.generation);
		return 1;
	}
	/* One line per change of state, not per event. */
	changed = !state->have_verdict || verdict != state->last_verdict ||
		  (verdict == BARRIER_VOLUME_STALE && (seen.attempt != state->last_seen.attempt ||
						       seen.generation != state->last_seen.generation));
	if (verdict == BARRIER_VOLUME_STALE)
		state->last_seen = seen;
	if (changed) {
		char quoted[BARRIER_KEY_MAX * 4 + 8], quoted_uid[BARRIER_KEY_MAX * 4 + 8];

		if (verdict == BARRIER_VOLUME_STALE)
			mlog(MLOG_INFO, "volume",
			     "verdict=stale released_attempt=%u attempt=%u released_generation=%u generation=%u",
			     seen.attempt, state->own.attempt, seen.generation, state->own.generation);
		else if (verdict == BARRIER_VOLUME_INVALID)
			mlog(MLOG_WARN, "volume", "verdict=invalid content=%s generation=%s",
			     mlog_quote(quoted, sizeof(quoted), keys->started, keys->started_len),
			     mlog_quote(quoted_uid, sizeof(quoted_uid), keys->generation,
					keys->generation_len));
		else if (verdict == BARRIER_VOLUME_FOREIGN)
			/* A ConfigMap of the group's name that is not this JobSet's
			 * release: a leftover of an earlier JobSet, or somebody else's. */
			mlog(MLOG_WARN, "volume", "verdict=foreign jobset_uid=%s released_jobset_uid=%s",
			     state->own.jobset_uid,
			     keys->uid_present
				     ? mlog_quote(quoted_uid, sizeof(quoted_uid), keys->uid, keys->uid_len)
				     : "none");
		else if (state->have_verdict)
			mlog(MLOG_INFO, "volume", "verdict=empty");
	}
	state->have_verdict = 1;
	state->last_verdict = verdict;
	return 0;
}

static int open_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (sigprocmask(SIG_BLOCK, &set, NULL) != 0)
		return -1;
	/* A client closing early must not kill the barrier. */
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

static int on_signal(struct loop_state *state)
{
	struct signalfd_siginfo info;
	ssize_t n = read(state->signal_fd, &info, sizeof(info));

	if (n != (ssize_t)sizeof(info))
		return -1;
	mlog(MLOG_INFO, "stopped", "signal=%s exit_code=%d", info.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM",
	     info.ssi_signo == SIGINT ? MUSTER_BARRIER_EXIT_SIGINT : MUSTER_BARRIER_EXIT_SIGTERM);
	return info.ssi_signo == SIGINT ? MUSTER_BARRIER_EXIT_SIGINT : MUSTER_BARRIER_EXIT_SIGTERM;
}

static int poll_timeout(uint64_t deadline, uint64_t now)
{
	uint64_t wait;

	if (deadline == UINT64_MAX)
		return -1;
	if (deadline <= now)
		return 0;
	wait = deadline - now;
	return wait > INT_MAX ? INT_MAX : (int)wait;
}

static int timed_out(struct loop_state *state)
{
	const struct barrier_config *config = state->config;
	char message[ERR_SIZE];
	char seen[64];

	if (state->have_verdict && state->last_verdict == BARRIER_VOLUME_STALE)
		snprintf(seen, sizeof(seen), "stale release for attempt %u generation %u",
			 state->last_seen.attempt, state->last_seen.generation);
	else if (state->have_verdict && state->last_verdict == BARRIER_VOLUME_FOREIGN)
		snprintf(seen, sizeof(seen), "a release of another JobSet");
	else
		snprintf(seen, sizeof(seen), "%s",
			 state->have_verdict ? barrier_volume_verdict_name(state->last_verdict) : "empty");
	snprintf(message, sizeof(message),
		 "timed out after %u s waiting for the group release of attempt %u (volume: %s; "
		 "pushes rejected: %lu): not every pod of the group started in time",
		 config->timeout_seconds, config->attempt, seen, state->push.rejected);
	return fail(config, MUSTER_BARRIER_EXIT_TIMEOUT, "timeout", message);
}

static int loop(struct loop_state *state)
{
	const struct barrier_config *config = state->config;
	uint64_t deadline =
		config->timeout_seconds ? now_ms() + (uint64_t)config->timeout_seconds * 1000u : UINT64_MAX;

	for (;;) {
		struct pollfd fds[2 + 1 + BARRIER_PUSH_CONNS];
		uint64_t now = now_ms(), wake = deadline, conn_deadline;
		char err[ERR_SIZE];
		size_t n = 2;
		struct barrier_release released = { 0, 0 };
		int ready;

		fds[0] = (struct pollfd){ .fd = state->signal_fd, .events = POLLIN };
		fds[1] = (struct pollfd){ .fd = barrier_volume_fd(&state->volume), .events = POLLIN };
		n += barrier_push_pollfds(&state->push, fds + 2);
		conn_deadline = barrier_push_next_deadline(&state->push);
		if (conn_deadline < wake)
			wake = conn_deadline;
		ready = poll(fds, (nfds_t)n, poll_timeout(wake, now));
		if (ready < 0 && errno != EINTR) {
			snprintf(err, sizeof(err), "poll: %s", strerror(errno));
			return fail(config, MUSTER_BARRIER_EXIT_FAILURE, "failure", err);
		}
		now = now_ms();
		if (ready > 0 && fds[0].revents) {
			int code = on_signal(state);

			if (code >= 0)
				return code;
		}
		if (ready > 0 && fds[1].revents) {
			int change = barrier_volume_drain(&state->volume, err, sizeof(err));

			if (change < 0)
				return fail(config, MUSTER_BARRIER_EXIT_FAILURE, "failure", err);
			if (change == BARRIER_VOLUME_GONE) {
				snprintf(err, sizeof(err),
					 "the watched directory %s was removed or unmounted", config->dir);
				return fail(config, MUSTER_BARRIER_EXIT_FAILURE, "failure", err);
			}
			if (change == BARRIER_VOLUME_CHANGED && check_volume(state))
				return MUSTER_BARRIER_EXIT_RELEASED;
		}
		/* Connection deadlines are checked here even when poll() timed out. */
		if (barrier_push_handle(&state->push, fds + 2, now, &released)) {
			mlog(MLOG_INFO, "released",
			     "via=push attempt=%u released_attempt=%u generation=%u released_generation=%u",
			     config->attempt, released.attempt, config->generation, released.generation);
			return MUSTER_BARRIER_EXIT_RELEASED;
		}
		if (now >= deadline)
			return timed_out(state);
	}
}

int barrier_run(const struct barrier_config *config)
{
	struct loop_state state = {
		.config = config,
		.own = { .attempt = config->attempt,
			 .generation = config->generation,
			 .jobset_uid = config->jobset_uid },
		.signal_fd = -1,
	};
	char err[ERR_SIZE];
	struct stat st;
	int code;

	state.volume.event_fd = -1;
	state.volume.dir_fd = -1;
	barrier_push_init(&state.push, config->token, config->token_len, &state.own);
	if (stat(config->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(
			err, sizeof(err),
			"%s is not a directory: mount the group-scheduling ConfigMap volume there or pass --dir",
			config->dir);
		return fail(config, MUSTER_BARRIER_EXIT_USAGE, "usage", err);
	}
	state.signal_fd = open_signals();
	if (state.signal_fd < 0) {
		snprintf(err, sizeof(err), "signalfd: %s", strerror(errno));
		return fail(config, MUSTER_BARRIER_EXIT_FAILURE, "failure", err);
	}
	/* The watch first, then the first read: see the file comment. */
	if (barrier_volume_open(&state.volume, config->dir, config->watch, err, sizeof(err)) != 0) {
		code = fail(config, MUSTER_BARRIER_EXIT_FAILURE, "failure", err);
		goto out;
	}
	if (config->listen && barrier_push_listen(&state.push, &config->listen_addr, err, sizeof(err)) != 0)
		mlog(MLOG_WARN, "listen-failed", "error=\"%s\" fallback=volume", err);
	if (!config->jobset_uid[0])
		mlog(MLOG_WARN, "no-jobset-uid",
		     "reason=\"--jobset-uid is empty (no " JOBSET_LABEL_UID " label): a release is "
		     "judged by its generation and attempt only\"");
	if (check_volume(&state)) {
		code = MUSTER_BARRIER_EXIT_RELEASED;
		goto out;
	}
	mlog(MLOG_INFO, "waiting",
	     "dir=%s watch=%s attempt=%u generation=%u jobset_uid=%s timeout=%u listen=%s volume=%s",
	     mlog_quote(err, sizeof(err), config->dir, strlen(config->dir)),
	     barrier_watch_name(config->watch), config->attempt, config->generation,
	     config->jobset_uid[0] ? config->jobset_uid : "none", config->timeout_seconds,
	     state.push.listen_fd >= 0 ? state.push.bound : "none",
	     barrier_volume_verdict_name(state.last_verdict));
	code = loop(&state);
out:
	barrier_push_close(&state.push);
	barrier_volume_close(&state.volume);
	close(state.signal_fd);
	return code;
}
