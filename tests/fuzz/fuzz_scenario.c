/*
 * Fuzz target: scenario files, every workload's (testbed/scenario.c and
 * each workload's parser: rendezvous, port, gather).  The input is the
 * file's text; when it names no workload, the first byte picks one, so
 * every parser sees it.  A scenario either loads or is refused with a
 * message naming the culprit (a JSON path, or jansson's line and
 * column); a loaded one has nodes and a name, and its JSON saved and
 * loaded again is accepted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <tensorverbs/testbed.h>
#include <tensorverbs/workload.h>

#include "fuzz.h"

static const char *const workloads[] = { NULL, "rendezvous", "port",
					 "gather" };

static void load(const char *text)
{
	struct tv_tb_scenario *sc = NULL;
	char err[TV_TB_ERR_MAX];
	int ret;

	err[0] = 0;
	ret = tv_tb_scenario_load_string(text, "fuzz", &sc, err);
	if (ret) {
		FZ_CHECK(ret < 0 && err[0] && !sc);
		return;
	}
	FZ_CHECK(sc && tv_tb_scenario_nodes(sc) >= 1);
	FZ_CHECK(tv_tb_scenario_name(sc) != NULL);
	tv_tb_scenario_free(sc);
}

/* The same object with "workload" set: another parser's turn. */
static void as_workload(const char *text, const char *wl)
{
	json_error_t jerr;
	json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	char *again;

	if (!root || !json_is_object(root)) {
		json_decref(root);
		return;
	}
	json_object_set_new(root, "workload", json_string(wl));
	again = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	if (again)
		load(again);
	free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);

	FZ_CHECK(text);
	memcpy(text, data, size);
	text[size] = 0;
	load(text);
	if (size && workloads[data[0] % 4] && !strstr(text, "\"workload\""))
		as_workload(text, workloads[data[0] % 4]);
	free(text);
	return 0;
}
