/* This file is private to the wire test suite: its Check suites. */
#ifndef TV_TESTS_WIRE_SUITES_H
#define TV_TESTS_WIRE_SUITES_H

#include <check.h>

Suite *wire_suite(void);
Suite *types_suite(void);
Suite *serialize_suite(void);

#endif /* TV_TESTS_WIRE_SUITES_H */
