# Reads a Gradescope results.json (as dtk-grade writes it) and prints, for the shell to add up
# (CMake's math() has no floating point):
#   score <score>
#   test <score> <max_score> <name>      one line per entry of tests[]
# Fails with a clear message if a field SPEC requires is missing.
#
# usage: cmake -DRESULTS=<results.json> -P results_summary.cmake
if(NOT DEFINED RESULTS OR NOT EXISTS "${RESULTS}")
  message(FATAL_ERROR "results_summary.cmake: no results file '${RESULTS}' (pass -DRESULTS=...)")
endif()
file(READ "${RESULTS}" json)

string(JSON score ERROR_VARIABLE error GET "${json}" score)
if(error)
  message(FATAL_ERROR "${RESULTS}: no top-level \"score\" (${error})")
endif()
message("score ${score}")

string(JSON count ERROR_VARIABLE error LENGTH "${json}" tests)
if(error OR count EQUAL 0)
  message(FATAL_ERROR "${RESULTS}: no \"tests\" array, or an empty one")
endif()
math(EXPR last "${count} - 1")
foreach(i RANGE ${last})
  foreach(field name score max_score)
    string(JSON ${field} ERROR_VARIABLE error GET "${json}" tests ${i} ${field})
    if(error)
      message(FATAL_ERROR "${RESULTS}: tests[${i}] has no \"${field}\"")
    endif()
  endforeach()
  message("test ${score} ${max_score} ${name}")
endforeach()
