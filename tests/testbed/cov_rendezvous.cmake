# The rendezvous workload's simulator-side paths (issue 24): refusals,
# checks failed on purpose, crash and connect corners, the shrinker's
# edits, swarm generation, traces and stats.
tv_add_check_test(test_wl_rendezvous_cov SOURCES test_wl_rendezvous_cov.c
  LIBS ${TV_LIB_OBJECTS} PkgConfig::JANSSON PkgConfig::XXHASH m)
target_include_directories(test_wl_rendezvous_cov PRIVATE
  ${PROJECT_SOURCE_DIR}/testbed
  ${PROJECT_SOURCE_DIR}/testbed/workloads/rendezvous
  ${PROJECT_SOURCE_DIR}/engine/rendezvous)
set_tests_properties(test_wl_rendezvous_cov PROPERTIES TIMEOUT 300)
