/*
 * Corpus replay: feeds every file named on the command line (directories
 * are walked one level deep, in name order) to LLVMFuzzerTestOneInput().
 * Built with any compiler, so the normal test suite replays the corpus;
 * libFuzzer's own main() is used only by the fuzz build.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int replay_file(const char *path)
{
	struct stat st;
	uint8_t *buf;
	size_t got;
	FILE *f;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return -ENOENT;
	f = fopen(path, "rb");
	if (!f)
		return -errno;
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	got = fread(buf, 1, (size_t)st.st_size, f);
	fclose(f);
	if (got != (size_t)st.st_size) {
		free(buf);
		return -EIO;
	}
	/* An exact-size copy: ASan sees any read past the input. */
	LLVMFuzzerTestOneInput(buf, got);
	free(buf);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int replay_dir(const char *dir, unsigned int *count_p)
{
	struct dirent **names;
	char path[4096];
	int n, i, ret = 0;

	n = scandir(dir, &names, NULL, by_name);
	if (n < 0)
		return -errno;
	for (i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir,
				 names[i]->d_name);
			if (replay_file(path) == 0)
				(*count_p)++;
			else
				ret = -EIO;
		}
		free(names[i]);
	}
	free(names);
	return ret;
}

int main(int argc, char **argv)
{
	unsigned int count = 0;
	struct stat st;
	int i;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st)) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		if (S_ISDIR(st.st_mode) ? replay_dir(argv[i], &count) :
					  replay_file(argv[i])) {
			fprintf(stderr, "%s: unreadable input\n", argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode))
			count++;
	}
	if (!count) {
		fprintf(stderr, "%s: no inputs found\n", argv[0]);
		return 1;
	}
	printf("%s: %u inputs replayed, no failure\n", argv[0], count);
	return 0;
}
