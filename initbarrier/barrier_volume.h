/*
 * barrier_volume: watches the ConfigMap volume that kubelet maintains and
 * reads the `started` key from it.
 *
 * Kubelet's AtomicWriter fills the mount directory like this: the payload
 * goes into a fresh `..<timestamp>.<random>` directory, a symlink
 * `..data_tmp` to it is renamed over `..data` (one atomic IN_MOVED_TO on the
 * mount directory), and each key is a symlink `<key> -> ..data/<key>`,
 * created after the rename when the key is new (before it in old kubelets).
 * An optional ConfigMap that does not exist yet is an empty directory.
 *
 * Two kernel interfaces can watch the directory, both event-driven (no
 * wake-up while nothing changes):
 *   - dnotify (default): fcntl(F_NOTIFY) on the directory, delivered as a
 *     real-time signal read from a signalfd. Its marks belong to one global
 *     group, so closing it at exit is free.
 *   - inotify: IN_MOVED_TO/IN_CREATE on the directory. Closing an inotify
 *     instance that still has a watch waits for an SRCU grace period in the
 *     kernel (fsnotify_destroy_group), measured at 6-14 ms here, which lands
 *     in the barrier's exit and so in the release latency. It also reports
 *     the directory's removal, which dnotify cannot.
 * docs/barrier.md has the measurements.
 *
 * Lifecycle: barrier_volume_open() either succeeds fully (the watch is in
 * place) or leaves nothing open; after success, barrier_volume_close() must
 * be called. The watch is set up before anything is read, so no update can
 * slip between the first read and the first event. With dnotify, the
 * signals it uses are blocked for the whole process by open.
 */
#ifndef MUSTER_BARRIER_VOLUME_H
#define MUSTER_BARRIER_VOLUME_H

#include <stddef.h>

#include "barrier_core.h"

enum barrier_watch {
	BARRIER_WATCH_DNOTIFY,
	BARRIER_WATCH_INOTIFY,
};

struct barrier_volume {
	enum barrier_watch kind;
	int event_fd; /* inotify instance, or the signalfd of dnotify's signals */
	int dir_fd; /* dnotify: the watched directory */
	const char *dir; /* borrowed from the caller; must outlive the volume */
};

/* Parses "dnotify" or "inotify". Returns 0, or -1. */
int barrier_watch_parse(const char *name, enum barrier_watch *kind);

/* Name of a watch kind, for the log. */
const char *barrier_watch_name(enum barrier_watch kind);

/* Starts watching `dir` (a directory). Returns 0, or -1 with a sentence in
 * err (which always receives a NUL-terminated string). */
int barrier_volume_open(struct barrier_volume *volume, const char *dir, enum barrier_watch kind, char *err,
			size_t err_size);

/* The descriptor to poll for readability. */
int barrier_volume_fd(const struct barrier_volume *volume);

/* What draining the inotify queue found. */
enum barrier_volume_change {
	BARRIER_VOLUME_NOTHING, /* events about other names only */
	BARRIER_VOLUME_CHANGED, /* `..data` or a release key may have changed, or events were lost */
	BARRIER_VOLUME_GONE, /* the directory was deleted, moved or unmounted (inotify only) */
};

/* Reads every queued event without blocking. Returns the strongest change
 * seen, or -1 with err set when reading fails. */
int barrier_volume_drain(struct barrier_volume *volume, char *err, size_t err_size);

/* The release keys as last read, with the buffers they point into. */
struct barrier_volume_content {
	struct barrier_volume_keys keys;
	char started[BARRIER_KEY_MAX + 2];
	char uid[BARRIER_KEY_MAX + 2];
	char generation[BARRIER_KEY_MAX + 2];
};

/* Reads the release keys `started`, `jobset-uid` and `generation` from one
 * projection: through `<dir>/..data` when it exists (the keys are there as
 * soon as `..data` is renamed, before kubelet creates the user-visible
 * links, and all come from the same payload directory), else from `<dir>`
 * itself. At most BARRIER_KEY_MAX + 1 bytes of a key are read; a longer
 * value is reported as present with those bytes, which never parse as a
 * number nor match a uid. Returns 0, or -1 with err set on an unexpected
 * read error. */
int barrier_volume_read(const struct barrier_volume *volume, struct barrier_volume_content *content,
			char *err, size_t err_size);

/* Reads at most buf_size - 1 bytes of the file at `path` (following links,
 * never blocking on a FIFO) and NUL-terminates them. Returns 1 when read,
 * 0 when the path does not exist, -1 with err set on another error. Also
 * used for the token file. */
int barrier_read_small_file(const char *path, char *buf, size_t buf_size, size_t *len, char *err,
			    size_t err_size);

/* Stops the watch and closes the descriptor. Safe on a closed volume. */
void barrier_volume_close(struct barrier_volume *volume);

#endif
