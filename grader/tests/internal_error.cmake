# Self-test of dtk-grade's failure path: when the grader itself fails (here: a manifest that is
# not JSON), it still writes results.json (score 0, the error for the course staff) and a
# totals.json of nothing graded, and exits 1.
#
#   cmake -DDTK_GRADE=<dtk-grade> -DWORK=<dir> -DSUBMISSION=<dir> -P internal_error.cmake
cmake_minimum_required(VERSION 3.21)

function(fail message)
  message(FATAL_ERROR "grader self-test internal_error: ${message}")
endfunction()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
file(WRITE ${WORK}/manifest.json "{ this is not JSON")
execute_process(COMMAND ${DTK_GRADE} ${SUBMISSION} --manifest ${WORK}/manifest.json
                        --results ${WORK}/results.json
                RESULT_VARIABLE status OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
message(STATUS "${stdout}${stderr}")
if(NOT status EQUAL 1)
  fail("dtk-grade exited with ${status}, expected 1")
endif()
if(NOT EXISTS ${WORK}/results.json)
  fail("no results.json")
endif()
file(READ ${WORK}/results.json json)
string(JSON score GET "${json}" score)
string(JSON output GET "${json}" output)
if(NOT score EQUAL 0 OR NOT output MATCHES "^Internal error, please tell the course staff: .*not valid JSON")
  fail("results.json should give 0 and the error, holds:\n${json}")
endif()
# And no totals.json of an earlier grading beside it: one that says nothing was graded.
file(WRITE ${WORK}/totals.json "{\"parts\": {\"1\": {\"score\": 10, \"max\": 10}}}")
execute_process(COMMAND ${DTK_GRADE} ${SUBMISSION} --manifest ${WORK}/manifest.json
                        --results ${WORK}/results.json OUTPUT_QUIET ERROR_QUIET)
file(READ ${WORK}/totals.json totals)
string(JSON parts ERROR_VARIABLE no_parts LENGTH "${totals}" parts)
if(no_parts OR NOT parts EQUAL 0)
  fail("totals.json should say that nothing was graded, holds:\n${totals}")
endif()
