/*
 * atomic_writer: a test helper that lays out a directory exactly as kubelet's
 * AtomicWriter (pkg/volume/util/atomic_writer.go) does for a ConfigMap
 * volume, so the barrier is tested against the real on-disk protocol.
 *
 * One write, as kubelet does it:
 *   1. read the `..data` link to find the current timestamped directory;
 *   2. find user-visible keys that the new payload drops;
 *   3. stop if every file already holds the same bytes and nothing is dropped;
 *   4. create `..YYYY_MM_DD_HH_MM_SS.<random>` (mode 0755) and write the
 *      payload into it (mode 0644);
 *   5. symlink `..data_tmp` to it and rename() that over `..data`;
 *   6. create the link `<key> -> ..data/<key>` for each new key (after the
 *      rename in current kubelets; before it in old ones: see the order flag);
 *   7. remove dropped user-visible links, then the old timestamped directory.
 *
 * Test-only: it is not linked into any shipped binary.
 */
#ifndef MUSTER_ATOMIC_WRITER_H
#define MUSTER_ATOMIC_WRITER_H

#include <stddef.h>
#include <time.h>

struct atomic_writer_file {
	const char *key;
	const char *value;
};

enum atomic_writer_order {
	ATOMIC_WRITER_LINKS_AFTER_RENAME, /* current kubelet */
	ATOMIC_WRITER_LINKS_BEFORE_RENAME, /* kubelet before the race fix */
};

/* Projects `files` into `dir` (which must exist). When `rename_at` is not
 * NULL it receives CLOCK_MONOTONIC just before the rename(2) of `..data`,
 * for latency measurements; it is left untouched when nothing is written.
 * Returns 1 when it wrote, 0 when the payload was already there, -1 on error
 * (errno set). */
int atomic_writer_write(const char *dir, const struct atomic_writer_file *files, size_t count,
			enum atomic_writer_order order, struct timespec *rename_at);

/* Removes `dir` and everything below it (a test's scratch directory). */
int atomic_writer_remove_tree(const char *dir);

#endif
