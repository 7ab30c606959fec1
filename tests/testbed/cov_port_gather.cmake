# The port-channel and gather workloads' simulator-side paths (issue 24):
# refusals, the operation limit at each step of each program, edge sizes,
# the shrinker's edits, invariants provoked on purpose.
tv_add_check_test(test_wl_port_gather_cov SOURCES test_wl_port_gather_cov.c
  LIBS ${TV_LIB_OBJECTS} PkgConfig::JANSSON PkgConfig::XXHASH m)
target_include_directories(test_wl_port_gather_cov PRIVATE
  ${PROJECT_SOURCE_DIR}/testbed)
set_tests_properties(test_wl_port_gather_cov PROPERTIES TIMEOUT 300)
