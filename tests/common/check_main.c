/* The main() of a Check program (check_main.h). */
#include <stdlib.h>

#include "common/check_main.h"

int tv_check_main(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	/*
	 * Check's environment (CK_RUN_CASE, CK_EXCLUDE_CASE, CK_FORK...)
	 * still applies: ctest splits some suites into cases through it.
	 */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	/* Frees the suites too: under TV_SANITIZE, LeakSanitizer checks. */
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
