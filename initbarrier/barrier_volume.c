/*
 * barrier_volume: dnotify or inotify on the mount directory. See
 * barrier_volume.h.
 *
 * Only the mount directory itself is watched (not the timestamped
 * directories): every kubelet update ends in a rename of `..data` there
 * (IN_MOVED_TO, DN_RENAME), and a new key adds the creation of its link
 * (IN_CREATE, DN_CREATE). The watch costs no wake-up while nothing changes.
 */
#define _GNU_SOURCE
#include "barrier_volume.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define DATA_NAME "..data"

/* dnotify's signal. musl and glibc keep the first real-time signals for
 * themselves, so SIGRTMIN is computed at run time. SIGIO is what the kernel
 * sends instead when the real-time signal queue overflows. */
static int dnotify_signal(void)
{
	return SIGRTMIN + 2;
}

int barrier_watch_parse(const char *name, enum barrier_watch *kind)
{
	if (strcmp(name, "dnotify") == 0)
		*kind = BARRIER_WATCH_DNOTIFY;
	else if (strcmp(name, "inotify") == 0)
		*kind = BARRIER_WATCH_INOTIFY;
	else
		return -1;
	return 0;
}

const char *barrier_watch_name(enum barrier_watch kind)
{
	return kind == BARRIER_WATCH_DNOTIFY ? "dnotify" : "inotify";
}

static int open_inotify(struct barrier_volume *volume, char *err, size_t err_size)
{
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

	if (fd < 0) {
		snprintf(err, err_size, "inotify_init1: %s", strerror(errno));
		return -1;
	}
	if (inotify_add_watch(fd, volume->dir,
			      IN_MOVED_TO | IN_CREATE | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF |
				      IN_ONLYDIR) < 0) {
		snprintf(err, err_size, "cannot watch %s: %s", volume->dir, strerror(errno));
		close(fd);
		return -1;
	}
	volume->event_fd = fd;
	return 0;
}

static int open_dnotify(struct barrier_volume *volume, char *err, size_t err_size)
{
	sigset_t set;
	int dir_fd, sfd;

	/* Block first: an unblocked real-time signal would kill the process. */
	sigemptyset(&set);
	sigaddset(&set, dnotify_signal());
	sigaddset(&set, SIGIO);
	if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
		snprintf(err, err_size, "sigprocmask: %s", strerror(errno));
		return -1;
	}
	sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0) {
		snprintf(err, err_size, "signalfd: %s", strerror(errno));
		return -1;
	}
	dir_fd = open(volume->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0 || fcntl(dir_fd, F_SETSIG, dnotify_signal()) != 0 ||
	    fcntl(dir_fd, F_NOTIFY, DN_CREATE | DN_RENAME | DN_MODIFY | DN_DELETE | DN_MULTISHOT) != 0) {
		snprintf(err, err_size, "cannot watch %s with dnotify: %s", volume->dir, strerror(errno));
		if (dir_fd >= 0)
			close(dir_fd);
		close(sfd);
		return -1;
	}
	volume->event_fd = sfd;
	volume->dir_fd = dir_fd;
	return 0;
}

int barrier_volume_open(struct barrier_volume *volume, const char *dir, enum barrier_watch kind, char *err,
			size_t err_size)
{
	volume->kind = kind;
	volume->event_fd = -1;
	volume->dir_fd = -1;
	volume->dir = dir;
	err[0] = '\0';
	return kind == BARRIER_WATCH_DNOTIFY ? open_dnotify(volume, err, err_size)
					     : open_inotify(volume, err, err_size);
}

int barrier_volume_fd(const struct barrier_volume *volume)
{
	return volume->event_fd;
}

static int name_matters(const struct inotify_event *event)
{
	/* IN_CLOSE_WRITE covers a plain file written in place (a hostPath or
	 * a person testing by hand); kubelet never does that. */
	return event->len > 0 && (strcmp(event->name, DATA_NAME) == 0 ||
				  strcmp(event->name, MUSTER_CONFIGMAP_KEY_STARTED) == 0 ||
				  strcmp(event->name, MUSTER_CONFIGMAP_KEY_JOBSET_UID) == 0 ||
				  strcmp(event->name, MUSTER_CONFIGMAP_KEY_GENERATION) == 0);
}

/* dnotify says only "this directory changed": every signal is a change. */
static int drain_dnotify(struct barrier_volume *volume, char *err, size_t err_size)
{
	struct signalfd_siginfo info[16];
	int change = BARRIER_VOLUME_NOTHING;

	for (;;) {
		ssize_t n = read(volume->event_fd, info, sizeof(info));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return change;
		if (n <= 0) {
			snprintf(err, err_size, "reading dnotify signals: %s",
				 n < 0 ? strerror(errno) : "end of file");
			return -1;
		}
		change = BARRIER_VOLUME_CHANGED;
	}
}

static int drain_inotify(struct barrier_volume *volume, char *err, size_t err_size)
{
	/* Aligned as the kernel requires; large enough for many events. */
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int change = BARRIER_VOLUME_NOTHING;

	for (;;) {
		ssize_t n = read(volume->event_fd, buf, sizeof(buf));

		if (n < 0) {
			if (errno == EAGAIN)
				return change;
			if (errno == EINTR)
				continue;
			snprintf(err, err_size, "reading inotify events: %s", strerror(errno));
			return -1;
		}
		for (char *p = buf; p < buf + n;) {
			/* buf is aligned for the struct and the kernel pads each
			 * record's name so the next one stays aligned. */
			const struct inotify_event *event = (const struct inotify_event *)(const void *)p;

			if (event->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT))
				change = BARRIER_VOLUME_GONE;
			else if ((event->mask & IN_Q_OVERFLOW) || name_matters(event))
				change = change == BARRIER_VOLUME_GONE ? change : BARRIER_VOLUME_CHANGED;
			p += sizeof(*event) + event->len;
		}
	}
}

int barrier_volume_drain(struct barrier_volume *volume, char *err, size_t err_size)
{
	err[0] = '\0';
	return volume->kind == BARRIER_WATCH_DNOTIFY ? drain_dnotify(volume, err, err_size)
						     : drain_inotify(volume, err, err_size);
}

/* Reads `name` relative to dir_fd (AT_FDCWD: a path). Returns 1 with the
 * content NUL-terminated in buf, 0 when it does not exist, -1 on error. */
static int read_small_at(int dir_fd, const char *name, char *buf, size_t buf_size, size_t *len, char *err,
			 size_t err_size)
{
	int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	size_t used = 0;

	if (fd < 0) {
		/* ENOTDIR: `..data` is not (yet) a directory link. */
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		snprintf(err, err_size, "opening %s: %s", name, strerror(errno));
		return -1;
	}
	while (used < buf_size - 1) {
		ssize_t n = read(fd, buf + used, buf_size - 1 - used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, err_size, "reading %s: %s", name, strerror(errno));
			close(fd);
			return -1;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	buf[used] = '\0';
	*len = used;
	return 1;
}

int barrier_read_small_file(const char *path, char *buf, size_t buf_size, size_t *len, char *err,
			    size_t err_size)
{
	return read_small_at(AT_FDCWD, path, buf, buf_size, len, err, err_size);
}

/* One key into its buffer and its slot of the keys. */
static int read_key(int dir_fd, const char *name, char *buf, size_t buf_size, int *present, const char **text,
		    size_t *len, char *err, size_t err_size)
{
	int found = read_small_at(dir_fd, name, buf, buf_size, len, err, err_size);

	if (found < 0)
		return -1;
	*present = found;
	*text = buf;
	if (!found)
		*len = 0;
	return 0;
}

int barrier_volume_read(const struct barrier_volume *volume, struct barrier_volume_content *content,
			char *err, size_t err_size)
{
	struct barrier_volume_keys *keys = &content->keys;
	char path[PATH_MAX];
	int dir_fd, rc = -1;

	err[0] = '\0';
	memset(keys, 0, sizeof(*keys));
	/* Kubelet's volume: every key of one projection lives in the directory
	 * `..data` points to, and a projection is never changed in place (the
	 * next one is a new directory swapped in by a rename). Reading all keys
	 * through one descriptor of that directory gives a consistent release,
	 * whatever kubelet does meanwhile. Without `..data` (a directory written
	 * by hand, or kubelet before its first projection) the keys are read
	 * where they are. */
	if ((size_t)snprintf(path, sizeof(path), "%s/" DATA_NAME, volume->dir) >= sizeof(path)) {
		snprintf(err, err_size, "path of the keys under %s is too long", volume->dir);
		return -1;
	}
	dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0 && errno != ENOENT && errno != ENOTDIR) {
		snprintf(err, err_size, "opening %s: %s", path, strerror(errno));
		return -1;
	}
	if (dir_fd < 0) {
		dir_fd = open(volume->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dir_fd < 0) {
			snprintf(err, err_size, "opening %s: %s", volume->dir, strerror(errno));
			return -1;
		}
	}
	if (read_key(dir_fd, MUSTER_CONFIGMAP_KEY_STARTED, content->started, sizeof(content->started),
		     &keys->started_present, &keys->started, &keys->started_len, err, err_size) == 0 &&
	    read_key(dir_fd, MUSTER_CONFIGMAP_KEY_JOBSET_UID, content->uid, sizeof(content->uid),
		     &keys->uid_present, &keys->uid, &keys->uid_len, err, err_size) == 0 &&
	    read_key(dir_fd, MUSTER_CONFIGMAP_KEY_GENERATION, content->generation,
		     sizeof(content->generation), &keys->generation_present, &keys->generation,
		     &keys->generation_len, err, err_size) == 0)
		rc = 0;
	close(dir_fd);
	return rc;
}

void barrier_volume_close(struct barrier_volume *volume)
{
	if (volume->dir_fd >= 0)
		close(volume->dir_fd);
	if (volume->event_fd >= 0)
		close(volume->event_fd);
	volume->dir_fd = -1;
	volume->event_fd = -1;
}
