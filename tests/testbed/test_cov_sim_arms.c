/* Placeholder: replaced by the suite's author. */
#include <check.h>
#include <stdlib.h>

#include "common/check_main.h"

START_TEST(test_placeholder)
{
	ck_assert_int_eq(1, 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cov_sim_arms");
	TCase *tc = tcase_create("placeholder");

	tcase_add_test(tc, test_placeholder);
	suite_add_tcase(s, tc);
	return tv_check_main(s);
}
