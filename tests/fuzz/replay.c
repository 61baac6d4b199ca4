// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A main() for the fuzz targets without libFuzzer: runs the target once on
 * every file named or found in the directories named, so that the corpus
 * (with every input that once crashed) is a regression test in the host
 * suite, built by the project's own compiler and run in the VM too, where
 * there is no clang. Exit 0, or the target aborts.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;

	if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		perror(path);
		return -1;
	}
	/* Exactly len bytes, as libFuzzer gives them. */
	buf = malloc(len ? (size_t)len : 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		perror(path);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0;

	for (int i = 1; i < argc; i++) {
		struct dirent **names;
		struct stat st;
		int n;

		if (stat(argv[i], &st)) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (run_file(argv[i]))
				return 1;
			files++;
			continue;
		}
		n = scandir(argv[i], &names, NULL, alphasort);
		if (n < 0) {
			perror(argv[i]);
			return 1;
		}
		for (int j = 0; j < n; j++) {
			char path[4096];

			snprintf(path, sizeof(path), "%s/%s", argv[i], names[j]->d_name);
			if (names[j]->d_name[0] != '.' && !stat(path, &st) && S_ISREG(st.st_mode)) {
				if (run_file(path))
					return 1;
				files++;
			}
			free(names[j]);
		}
		free(names);
	}
	printf("%d input(s) replayed\n", files);
	/* No input at all is a broken corpus path, not a pass. */
	return files ? 0 : 1;
}
