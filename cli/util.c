/* What several subcommands share: numbers, TV_BREAK, --faults, quoting. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

int cli_parse_u64(const char *s, uint64_t *v_p)
{
	return tv_tb_parse_u64(s, v_p);
}

int cli_breakage_from_env(const char *cmd, const char **name_p)
{
	const char *v = getenv("TV_BREAK");
	char known[512];

	if (!v || !*v) {
		*name_p = NULL;
		return 0;
	}
	if (tv_tb_breakage_check(v)) {
		tv_tb_breakage_names(known, sizeof(known));
		fprintf(stderr, "tensorverbs %s: bad TV_BREAK '%s' (known: %s)\n",
			cmd, v, known);
		return -EINVAL;
	}
	*name_p = v;
	return 0;
}

int cli_apply_faults(struct tv_tb_scenario *sc, const char *text,
		     const char *cmd)
{
	char err[TV_TB_PLAN_ERR_MAX];
	json_t *plan;
	int rc;

	if (!text)
		return 0;
	rc = tv_tb_plan_from_text(text, &plan, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "tensorverbs %s: bad --faults: %s\n", cmd,
			rc == -EINVAL ? err : strerror(-rc));
		return rc;
	}
	rc = tv_tb_scenario_set_faults(sc, plan, false);
	json_decref(plan);
	if (rc)
		fprintf(stderr, "tensorverbs %s: %s\n", cmd, strerror(-rc));
	return rc;
}

void cli_put_shell_word(FILE *out, const char *w)
{
	/* Quote only if the shell would split or expand it. */
	if (!*w || strpbrk(w, " \t\n'\"$\\;&|<>()*?[]{}~`!#")) {
		fputc('\'', out);
		for (; *w; w++) {
			if (*w == '\'')
				fputs("'\\''", out);
			else
				fputc(*w, out);
		}
		fputc('\'', out);
	} else {
		fputs(w, out);
	}
}

char *cli_repro_command(const char *breakage, const char *argv0,
			const char *file, const char *faults, uint64_t seed)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (breakage)
		fprintf(f, "TV_BREAK=%s ", breakage);
	cli_put_shell_word(f, argv0);
	fputs(" run", f);
	if (file) {
		fputc(' ', f);
		cli_put_shell_word(f, file);
	}
	if (faults) {
		fputs(" --faults ", f);
		cli_put_shell_word(f, faults);
	}
	fprintf(f, " --seed %" PRIu64, seed);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}
