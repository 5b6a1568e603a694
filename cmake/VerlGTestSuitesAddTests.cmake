# Run by ctest (through the include file of verl_discover_gtest_suites): lists the GoogleTest suites of
# VERL_SUITES_EXECUTABLE when the binary is newer than the last list, writes one add_test per suite into
# VERL_SUITES_CTEST_FILE, and includes it.
if(NOT EXISTS "${VERL_SUITES_EXECUTABLE}")
  get_filename_component(_name "${VERL_SUITES_EXECUTABLE}" NAME)
  add_test("${_name}_NOT_BUILT" "${_name}_NOT_BUILT")
  return()
endif()

if(NOT EXISTS "${VERL_SUITES_CTEST_FILE}" OR
   NOT "${VERL_SUITES_CTEST_FILE}" IS_NEWER_THAN "${VERL_SUITES_EXECUTABLE}" OR
   NOT "${VERL_SUITES_CTEST_FILE}" IS_NEWER_THAN "${CMAKE_CURRENT_LIST_FILE}" OR
   NOT "${VERL_SUITES_CTEST_FILE}" IS_NEWER_THAN "${VERL_SUITES_INCLUDE_FILE}")
  execute_process(
    COMMAND "${VERL_SUITES_EXECUTABLE}" --gtest_list_tests
    WORKING_DIRECTORY "${VERL_SUITES_WORKING_DIR}"
    OUTPUT_VARIABLE _listing
    ERROR_VARIABLE _errors
    RESULT_VARIABLE _rc
    TIMEOUT 60)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${VERL_SUITES_EXECUTABLE} --gtest_list_tests failed (${_rc}): ${_errors}")
  endif()
  # Suite lines start in column 0 and end with '.', optionally followed by "  # TypeParam = ..."; test lines are
  # indented. gtest_main's "Running main() from ..." line has no trailing '.'.
  string(REPLACE ";" "\\;" _listing "${_listing}")
  string(REPLACE "\n" ";" _lines "${_listing}")
  set(_content "")
  set(_count 0)
  foreach(_line IN LISTS _lines)
    if(_line MATCHES "^([A-Za-z_][A-Za-z0-9_/]*)\\.( .*)?$")
      set(_suite "${CMAKE_MATCH_1}")
      set(_test "${VERL_SUITES_PREFIX}${_suite}")
      string(APPEND _content
        "add_test([==[${_test}]==] [==[${VERL_SUITES_EXECUTABLE}]==] [==[--gtest_filter=${_suite}.*]==])\n"
        "set_tests_properties([==[${_test}]==] PROPERTIES WORKING_DIRECTORY [==[${VERL_SUITES_WORKING_DIR}]==] "
        "${VERL_SUITES_PROPERTIES})\n")
      math(EXPR _count "${_count} + 1")
    endif()
  endforeach()
  if(_count EQUAL 0)
    message(FATAL_ERROR "${VERL_SUITES_EXECUTABLE} --gtest_list_tests listed no suites")
  endif()
  file(WRITE "${VERL_SUITES_CTEST_FILE}" "${_content}")
endif()

include("${VERL_SUITES_CTEST_FILE}")
