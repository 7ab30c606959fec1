/*
 * tensorverbs-oom: the tensorverbs command whose allocations fail on
 * demand, for the rxe suite's allocation sweep on real verbs
 * (tests/rxe/run.sh, oom_sweep).  Its allocators are wrapped
 * (tests/common/wrap_alloc.c, site mode: a site is the return address of
 * the allocating call; jansson's are attributed to the call into jansson,
 * wrap_calls.c adds the set-up calls); this file arms them from the
 * environment before main() runs and says what happened when the
 * process exits.
 *
 *   TV_OOM_RECORD=FILE  fail nothing; at exit write every distinct site,
 *                       as its offset in the executable (hex, one per
 *                       line, first-seen order: what addr2line takes)
 *   TV_OOM_SITE=0xOFF   fail the first allocation made at that site; at
 *                       exit say on stderr whether it came:
 *                       "oom: site 0xOFF failed" or "... never reached"
 *
 * Offsets, not addresses: the executable is position-independent and
 * every process loads it elsewhere.  A value that is not what is
 * described above stops the process (exit 2) naming it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/wrap_alloc.h"

static const char *record_path;
static uintptr_t armed_off;
static uintptr_t exe_base;

static void oom_ctl_record(void)
{
	const void *const *sites;
	size_t n = oom_sites_stop(&sites);
	FILE *f = fopen(record_path, "w");

	if (!f) {
		fprintf(stderr, "oom: TV_OOM_RECORD=%s: %s\n", record_path,
			strerror(errno));
		return;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(f, "0x%" PRIxPTR "\n", (uintptr_t)sites[i] - exe_base);
	if (fclose(f))
		fprintf(stderr, "oom: TV_OOM_RECORD=%s: %s\n", record_path,
			strerror(errno));
}

static void oom_ctl_exit(void)
{
	if (record_path) {
		oom_ctl_record();
		return;
	}
	fprintf(stderr, "oom: site 0x%" PRIxPTR " %s\n", armed_off,
		oom_disarm() ? "failed" : "never reached");
}

static void oom_ctl_refuse(const char *var, const char *val, const char *why)
{
	fprintf(stderr, "oom: %s=%s: %s\n", var, val, why);
	_exit(2);
}

__attribute__((constructor)) static void oom_ctl_start(void)
{
	const char *rec = getenv("TV_OOM_RECORD");
	const char *site = getenv("TV_OOM_SITE");
	Dl_info info;
	char *end;

	if (!rec && !site)
		return;
	if (rec && site)
		oom_ctl_refuse("TV_OOM_SITE", site, "TV_OOM_RECORD is set too");
	if (!dladdr((const void *)&oom_ctl_start, &info) || !info.dli_fbase)
		oom_ctl_refuse(rec ? "TV_OOM_RECORD" : "TV_OOM_SITE",
			       rec ? rec : site,
			       "dladdr cannot find the executable's base");
	exe_base = (uintptr_t)info.dli_fbase;
	/*
	 * jansson allocates inside its library: by the call into it (each
	 * json_pack, json_object_set_new ... of the code a site of its own),
	 * before anything has made a JSON value.
	 */
	oom_library_init();
	json_set_alloc_funcs(oom_library_malloc, free);
	if (rec) {
		if (!*rec)
			oom_ctl_refuse("TV_OOM_RECORD", rec, "an empty path");
		record_path = rec;
		oom_sites_start();
	} else {
		errno = 0;
		armed_off = (uintptr_t)strtoull(site, &end, 16);
		if (errno || end == site || *end || !armed_off)
			oom_ctl_refuse("TV_OOM_SITE", site,
				       "not a hex offset in the executable");
		oom_arm_site((const void *)(exe_base + armed_off));
	}
	atexit(oom_ctl_exit);
}
