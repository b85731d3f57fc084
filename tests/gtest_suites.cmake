# Registers one CTest test per gtest suite of a built test binary (run as a POST_BUILD step by
# fanout_add_suite_test in tests/CMakeLists.txt):
#   cmake -DBIN=<binary> -DLABEL=<label> -DTIMEOUT=<s> -DOUT=<file> -P gtest_suites.cmake
# Binaries that link LibTorch pay about half a second to start, so a process per case cost more
# than the cases themselves; a process per suite keeps the failing suite's name in CTest's list
# and the failing case's name in its output.
execute_process(COMMAND "${BIN}" --gtest_list_tests OUTPUT_VARIABLE listing RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${BIN} --gtest_list_tests failed (${rc}): ${err}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(content "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #]+)\\.")
    set(suite "${CMAKE_MATCH_1}")
    string(APPEND content "add_test([==[${suite}]==] [==[${BIN}]==] [==[--gtest_filter=${suite}.*]==])\n")
    string(APPEND content "set_tests_properties([==[${suite}]==] PROPERTIES LABELS ${LABEL} TIMEOUT ${TIMEOUT})\n")
  endif()
endforeach()
file(WRITE "${OUT}" "${content}")
