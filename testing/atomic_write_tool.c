/*
 * atomic-write: writes KEY=VALUE pairs into a directory exactly as kubelet's
 * AtomicWriter projects a ConfigMap volume (see atomic_writer.h). Used by the
 * barrier demo to play kubelet; not shipped.
 *
 *   atomic-write DIR KEY=VALUE...
 */
#include <stdio.h>
#include <string.h>

#include "atomic_writer.h"

#define MAX_KEYS 16

int main(int argc, char **argv)
{
	struct atomic_writer_file files[MAX_KEYS];
	int count = 0, written;

	if (argc < 2 || argc - 2 > MAX_KEYS) {
		fprintf(stderr, "usage: atomic-write DIR KEY=VALUE... (at most %d keys)\n", MAX_KEYS);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (!eq || eq == argv[i]) {
			fprintf(stderr, "atomic-write: '%s' is not KEY=VALUE\n", argv[i]);
			return 2;
		}
		*eq = '\0';
		files[count].key = argv[i];
		files[count].value = eq + 1;
		count++;
	}
	written = atomic_writer_write(argv[1], files, (size_t)count, ATOMIC_WRITER_LINKS_AFTER_RENAME, NULL);
	if (written < 0) {
		perror("atomic-write");
		return 1;
	}
	return 0;
}
