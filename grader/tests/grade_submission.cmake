# One self-test of dtk-grade: assemble a submission, grade it, check the per-part scores.
#
#   cmake -DDTK_GRADE=<dtk-grade> -DNAME=<name> -DWORK=<dir> -DBASE=<solutions or starter dir>
#         [-DOVERLAY=<dir of student files copied over BASE>] [-DPACK=<how>]
#         -DEXPECT="1=full;2=lost;3=zero;..." [-DEXPECT_OUTPUT="regex;..."]
#         [-DMAX_SECONDS=<n>] [-DARGS="--timeout;5"] -P grade_submission.cmake
#
# PACK: dir (default: grade the directory), tar (make handin.tar), or a broken archive:
# tar-absolute, tar-dotdot, tar-symlink (an extra member with an absolute path, with "..", or
# model/func_impl.cpp as a symbolic link), tar-missing (no model/func_impl.cpp), not-a-tar,
# tar-not-utf8, tar-newline-name (an extra member with an absolute path named with bytes
# \377\376, or with lines of fake feedback), tar-gzip (tar -czf, named handin.tar), tar-empty
# (a valid archive without members), tar-duplicate (a second model/func_impl.cpp, the
# starter's, appended).
# Overlay files are configured (@ONLY): @DTK_SOLUTIONS_DIR@ and @DTK_SELFTEST_RESULTS@ expand.
# Expectations: full (all points), zero (none), lost (some lost), or a number of points.
cmake_minimum_required(VERSION 3.21)

set(files data/data_parallel_preprocess.cpp model/func_impl.cpp model_training_cost_analysis.cpp)
set(tree ${WORK}/tree)
set(results ${WORK}/results.json)
set(DTK_SELFTEST_RESULTS ${results})
get_filename_component(DTK_SOLUTIONS_DIR ${BASE}/../solutions ABSOLUTE)

function(fail message)
  message(FATAL_ERROR "grader self-test ${NAME}: ${message}")
endfunction()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_QUIET ERROR_VARIABLE error)
  if(NOT status EQUAL 0)
    fail("${ARGN} failed: ${error}")
  endif()
endfunction()

# The submission.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
file(COPY ${BASE}/ DESTINATION ${tree} FILES_MATCHING PATTERN "*.cpp")
if(OVERLAY)
  file(GLOB_RECURSE overlay RELATIVE ${OVERLAY} ${OVERLAY}/*.cpp)
  foreach(file IN LISTS overlay)
    configure_file(${OVERLAY}/${file} ${tree}/${file} @ONLY)
  endforeach()
endif()

set(submission ${tree})
set(tar ${WORK}/handin.tar)
if(PACK STREQUAL "tar")
  run(tar -cf ${tar} -C ${tree} ${files})
elseif(PACK STREQUAL "tar-absolute" OR PACK STREQUAL "tar-dotdot")
  file(WRITE ${WORK}/evil.txt "should never be extracted\n")
  run(tar -cf ${tar} -C ${tree} ${files})
  if(PACK STREQUAL "tar-absolute")
    run(tar -rPf ${tar} ${WORK}/evil.txt)
  else()
    run(tar -rPf ${tar} -C ${tree} ../evil.txt)
  endif()
elseif(PACK STREQUAL "tar-symlink")
  file(MAKE_DIRECTORY ${WORK}/links/model)
  file(CREATE_LINK /etc/passwd ${WORK}/links/model/func_impl.cpp SYMBOLIC)
  run(tar -cf ${tar} -C ${tree} data/data_parallel_preprocess.cpp model_training_cost_analysis.cpp
      -C ${WORK}/links model/func_impl.cpp)
elseif(PACK STREQUAL "tar-missing")
  run(tar -cf ${tar} -C ${tree} data/data_parallel_preprocess.cpp model_training_cost_analysis.cpp)
elseif(PACK STREQUAL "not-a-tar")
  file(WRITE ${tar} "This is my homework, please grade it.\n")
elseif(PACK STREQUAL "tar-not-utf8" OR PACK STREQUAL "tar-newline-name")
  if(PACK STREQUAL "tar-not-utf8")
    set(name "evil\\377\\376.txt")
  else()
    set(name "evil\\nAll 61 tests passed\\nScore: 100")
  endif()
  run(tar -cf ${tar} -C ${tree} ${files})
  # The name's bytes come from printf: CMake strings cannot hold invalid UTF-8.
  run(sh -c "name=\"$(printf '${WORK}/${name}')\" && echo x > \"$name\" && tar -rPf ${tar} \"$name\"")
elseif(PACK STREQUAL "tar-gzip")
  run(tar -czf ${tar} -C ${tree} ${files})
elseif(PACK STREQUAL "tar-empty")
  run(tar -cf ${tar} -T /dev/null)
elseif(PACK STREQUAL "tar-duplicate")
  run(tar -cf ${tar} -C ${tree} ${files})
  run(tar -rf ${tar} -C ${BASE}/../starter model/func_impl.cpp)
endif()
if(PACK AND NOT PACK STREQUAL "dir")
  set(submission ${tar})
endif()

# Grading.
string(TIMESTAMP start "%s")
execute_process(COMMAND ${DTK_GRADE} ${submission} --seed 7 --results ${results} ${ARGS}
                RESULT_VARIABLE status OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
string(TIMESTAMP end "%s")
math(EXPR seconds "${end} - ${start}")
message(STATUS "${NAME}: graded in ${seconds} s\n${stdout}${stderr}")
if(NOT status EQUAL 0)
  fail("dtk-grade exited with ${status}, expected 0")
endif()
if(MAX_SECONDS AND seconds GREATER MAX_SECONDS)
  fail("grading took ${seconds} s, more than ${MAX_SECONDS} s")
endif()

# "1.6666666666666667" -> 166: hundredths of a point, as an integer (math() has no decimals).
function(to_hundredths value out)
  if(NOT value MATCHES "^([0-9]+)(\\.([0-9]*))?$")
    fail("score \"${value}\" is not a plain number")
  endif()
  set(fraction "${CMAKE_MATCH_3}00")
  string(SUBSTRING "${fraction}" 0 2 fraction)
  math(EXPR hundredths "${CMAKE_MATCH_1} * 100 + 1${fraction} - 100")
  set(${out} ${hundredths} PARENT_SCOPE)
endfunction()

# Per-part scores from results.json.
file(SIZE ${results} size)
if(size GREATER 1000000)
  fail("results.json is ${size} bytes: captured output is not capped")
endif()
file(READ ${results} json)
string(JSON count LENGTH "${json}" tests)
string(JSON all_output GET "${json}" output)
math(EXPR last "${count} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${json}" tests ${i} name)
  string(JSON score GET "${json}" tests ${i} score)
  string(JSON max GET "${json}" tests ${i} max_score)
  string(JSON output GET "${json}" tests ${i} output)
  string(APPEND all_output "\n${output}")
  if(NOT name MATCHES "^Part ([0-9]+) ")
    fail("test name \"${name}\" does not start with \"Part N\"")
  endif()
  set(part ${CMAKE_MATCH_1})
  if(NOT DEFINED score_${part})
    set(score_${part} 0)
    set(max_${part} 0)
  endif()
  to_hundredths(${score} score)
  to_hundredths(${max} max)
  math(EXPR score_${part} "${score_${part}} + ${score}")
  math(EXPR max_${part} "${max_${part}} + ${max}")
endforeach()

foreach(expectation IN LISTS EXPECT)
  if(NOT expectation MATCHES "^([0-9]+)=(full|zero|lost)$")
    fail("bad expectation \"${expectation}\"")
  endif()
  set(part ${CMAKE_MATCH_1})
  set(want ${CMAKE_MATCH_2})
  if(NOT DEFINED score_${part})
    fail("no test of Part ${part} in results.json")
  endif()
  set(got "${score_${part}}/${max_${part}} hundredths of a point")
  if(want STREQUAL "full" AND NOT score_${part} EQUAL max_${part})
    fail("Part ${part} should get full marks, got ${got}")
  elseif(want STREQUAL "zero" AND NOT score_${part} EQUAL 0)
    fail("Part ${part} should get no points, got ${got}")
  elseif(want STREQUAL "lost" AND NOT score_${part} LESS max_${part})
    fail("Part ${part} should lose points, got ${got}")
  endif()
  message(STATUS "Part ${part}: ${got} (${want}, as expected)")
endforeach()

foreach(pattern IN LISTS EXPECT_OUTPUT)
  if(NOT "${all_output}\n${stdout}" MATCHES "${pattern}")
    fail("the feedback does not match \"${pattern}\"")
  endif()
endforeach()

# Nothing of the submission may outlive the grading. Other gradings (ctest -j) use the same
# sandbox user: look while holding their lock, when none of them is running.
execute_process(COMMAND id -u dtk-sandbox RESULT_VARIABLE no_user OUTPUT_QUIET ERROR_QUIET)
if(no_user EQUAL 0 AND EXISTS /run/dtk-grade.lock)
  execute_process(COMMAND flock /run/dtk-grade.lock ps -u dtk-sandbox -o stat=,pid=,args=
                  OUTPUT_VARIABLE processes)
  string(REGEX MATCHALL "(^|\n)[^Z\n][^\n]*" alive "${processes}")  # zombies are dead
  if(alive)
    fail("processes of the sandbox user are still running:\n${processes}")
  endif()
endif()
