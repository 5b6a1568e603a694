# verl_discover_gtest_suites(<target> PREFIX <p> PROPERTIES <k v ...>): one ctest test per GoogleTest suite of
# <target>, named <p><Suite> and running `<target> --gtest_filter=<Suite>.*`.
#
# Why not gtest_discover_tests (one process per test): each process of a LibTorch binary spends ~0.65 s before
# main() registering LibTorch's operators (measured with perf on the 2-core AMD EPYC), and the unit label alone
# has 800 tests in 185 suites. The suites are listed when ctest runs (as gtest_discover_tests' PRE_TEST mode does),
# again whenever the binary is newer than the list.
set(_VERL_GTEST_SUITES_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/VerlGTestSuitesAddTests.cmake")

function(verl_discover_gtest_suites target)
  cmake_parse_arguments(ARG "" "PREFIX" "PROPERTIES" ${ARGN})
  set(ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake")
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites_include.cmake")
  file(GENERATE OUTPUT "${include_file}" CONTENT
"set(VERL_SUITES_EXECUTABLE [==[$<TARGET_FILE:${target}>]==])
set(VERL_SUITES_WORKING_DIR [==[${CMAKE_CURRENT_BINARY_DIR}]==])
set(VERL_SUITES_PREFIX [==[${ARG_PREFIX}]==])
set(VERL_SUITES_PROPERTIES [==[${ARG_PROPERTIES}]==])
set(VERL_SUITES_CTEST_FILE [==[${ctest_file}]==])
set(VERL_SUITES_INCLUDE_FILE [==[${include_file}]==])
include([==[${_VERL_GTEST_SUITES_SCRIPT}]==])
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
