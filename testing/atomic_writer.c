/*
 * atomic_writer: kubelet's AtomicWriter steps, for tests. See atomic_writer.h.
 */
#define _GNU_SOURCE
#include "atomic_writer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int join(char *out, const char *a, const char *b)
{
	int n = snprintf(out, PATH_MAX, "%s/%s", a, b);

	if (n < 0 || n >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

static int in_payload(const char *key, const struct atomic_writer_file *files, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		if (strcmp(files[i].key, key) == 0)
			return 1;
	}
	return 0;
}

/* 1 when `path` holds exactly `value`, 0 otherwise (also when missing). */
static int same_content(const char *path, const char *value)
{
	char buf[4096];
	size_t want = strlen(value), used = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	while ((n = read(fd, buf + used, sizeof(buf) - used)) > 0 && used < sizeof(buf))
		used += (size_t)n;
	close(fd);
	return used == want && memcmp(buf, value, want) == 0;
}

static int write_file(const char *path, const char *value)
{
	size_t len = strlen(value), done = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		return -1;
	while (done < len) {
		ssize_t n = write(fd, value + done, len - done);

		if (n < 0) {
			int saved = errno;

			close(fd);
			errno = saved;
			return -1;
		}
		done += (size_t)n;
	}
	if (fchmod(fd, 0644) != 0 || close(fd) != 0)
		return -1;
	return 0;
}

static int create_user_visible_links(const char *dir, const struct atomic_writer_file *files, size_t count)
{
	char link_path[PATH_MAX], target[PATH_MAX], existing[PATH_MAX];

	for (size_t i = 0; i < count; i++) {
		if (join(link_path, dir, files[i].key) != 0 || join(target, "..data", files[i].key) != 0)
			return -1;
		if (readlink(link_path, existing, sizeof(existing)) >= 0)
			continue;
		if (errno != ENOENT || symlink(target, link_path) != 0)
			return -1;
	}
	return 0;
}

int atomic_writer_remove_tree(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *entry;
	DIR *d = opendir(dir);

	if (!d)
		return errno == ENOENT ? 0 : -1;
	while ((entry = readdir(d)) != NULL) {
		struct stat st;

		if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
			continue;
		if (join(path, dir, entry->d_name) != 0 || lstat(path, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode))
			atomic_writer_remove_tree(path);
		else
			unlink(path);
	}
	closedir(d);
	return rmdir(dir);
}

int atomic_writer_write(const char *dir, const struct atomic_writer_file *files, size_t count,
			enum atomic_writer_order order, struct timespec *rename_at)
{
	char data_path[PATH_MAX], tmp_link[PATH_MAX], old_ts[PATH_MAX], old_ts_path[PATH_MAX];
	char ts_template[PATH_MAX], path[PATH_MAX], stamp[64];
	const char *ts_name;
	ssize_t old_len;
	int must_write = 0, dropped = 0;
	time_t now = time(NULL);
	struct tm tm;

	/* (1) the current timestamped directory, if any. */
	if (join(data_path, dir, "..data") != 0 || join(tmp_link, dir, "..data_tmp") != 0)
		return -1;
	old_len = readlink(data_path, old_ts, sizeof(old_ts) - 1);
	if (old_len < 0 && errno != ENOENT)
		return -1;
	old_ts[old_len > 0 ? old_len : 0] = '\0';
	if (old_len > 0 && join(old_ts_path, dir, old_ts) != 0)
		return -1;

	/* (2) and (3): dropped keys, and whether any content differs. */
	if (old_len > 0) {
		DIR *d = opendir(old_ts_path);
		struct dirent *entry;

		while (d && (entry = readdir(d)) != NULL) {
			if (entry->d_name[0] != '.' && !in_payload(entry->d_name, files, count))
				dropped = 1;
		}
		if (d)
			closedir(d);
		for (size_t i = 0; i < count && !must_write; i++) {
			if (join(path, old_ts_path, files[i].key) != 0)
				return -1;
			must_write = !same_content(path, files[i].value);
		}
		if (!must_write && !dropped)
			return 0;
	}

	/* (4) the new timestamped directory, named as Go's MkdirTemp does. */
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "..%Y_%m_%d_%H_%M_%S.", &tm);
	if (snprintf(ts_template, sizeof(ts_template), "%s/%sXXXXXX", dir, stamp) >=
	    (int)sizeof(ts_template)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (!mkdtemp(ts_template) || chmod(ts_template, 0755) != 0)
		return -1;
	ts_name = strrchr(ts_template, '/') + 1;
	for (size_t i = 0; i < count; i++) {
		if (join(path, ts_template, files[i].key) != 0 || write_file(path, files[i].value) != 0)
			return -1;
	}

	if (order == ATOMIC_WRITER_LINKS_BEFORE_RENAME && create_user_visible_links(dir, files, count) != 0)
		return -1;

	/* (5) the atomic swap. */
	unlink(tmp_link);
	if (symlink(ts_name, tmp_link) != 0)
		return -1;
	if (rename_at)
		clock_gettime(CLOCK_MONOTONIC, rename_at);
	if (rename(tmp_link, data_path) != 0)
		return -1;

	/* (6) links for new keys. */
	if (order == ATOMIC_WRITER_LINKS_AFTER_RENAME && create_user_visible_links(dir, files, count) != 0)
		return -1;

	/* (7) dropped links, then the old data. */
	if (old_len > 0) {
		DIR *d = opendir(old_ts_path);
		struct dirent *entry;

		while (d && (entry = readdir(d)) != NULL) {
			if (entry->d_name[0] == '.' || in_payload(entry->d_name, files, count))
				continue;
			if (join(path, dir, entry->d_name) == 0)
				unlink(path);
		}
		if (d)
			closedir(d);
		atomic_writer_remove_tree(old_ts_path);
	}
	return 1;
}
