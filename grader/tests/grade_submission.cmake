# One self-test of dtk-grade: assemble a submission, grade it, check the per-part scores.
#
#   cmake -DDTK_GRADE=<dtk-grade> -DNAME=<name> -DWORK=<dir> -DBASE=<solutions or starter dir>
#         -DSTUDENT_FILES=<the student files: DTK_STUDENT_FILES>
#         [-DPATCH=<NAME.patch applied to a copy of BASE>] [-DPACK=<how>]
#         [-DMANIFEST=<the build's manifest> -DALLOW_MPI=<call;...>]
#         -DEXPECT="1=full;2=lost;3=zero;..." [-DEXPECT_OUTPUT="regex;..."]
#         [-DMAX_SECONDS=<n>] [-DARGS="--timeout;5"] [-DSEEDS="28741244;844925099"]
#         [-DGUARD=ON] [-DLIMITS="total_memory_mb=1024;..."]
#         [-DSPEED_BONUS="max_busy=1;..."] -P grade_submission.cmake
#
# PACK: dir (default: grade the directory), tar (make handin.tar), or a broken archive:
# tar-absolute, tar-dotdot, tar-symlink (an extra member with an absolute path, with "..", or
# model/func_impl.cpp as a symbolic link), tar-missing (without the assignment's first student
# file: model/func_impl.cpp, or collectives/my_collectives.cpp), not-a-tar,
# tar-not-utf8, tar-newline-name (an extra member with an absolute path named with bytes
# \377\376, or with lines of fake feedback), tar-gzip (tar -czf, named handin.tar), tar-empty
# (a valid archive without members), tar-duplicate (a second model/func_impl.cpp, the
# starter's, appended).
# PATCH: a unified diff against solutions/, paths relative to the student tree (a/FILE, b/FILE);
# it must apply exactly (no fuzz), or the test fails with patch's own output. The files it
# touches are then configured (@ONLY): @DTK_SOLUTIONS_DIR@, @DTK_SELFTEST_RESULTS@ and
# @DTK_SELFTEST_VICTIM@ expand.
# ALLOW_MPI: grade with a copy of MANIFEST whose allowed_mpi also lists these calls.
# LIMITS: grade with a copy of MANIFEST whose "limits" have these values.
# SPEED_BONUS: likewise for the "speed_bonus" of the part that has one (max_busy=1 and a large
# max_spread time the bonus whatever the machine's load: for tests that assert a bonus is not
# earned, so that the timing, not a deferral, decides).
# GUARD: a hostile submission; the grading must leave the victim (a directory outside the
# scratch, owned by the caller) and the kit's precompiled header unchanged, and no file of the
# sandbox user where anyone may write (a world-writable directory is made in /var/tmp for the
# submission to try).
# Expectations, per part: N=full (all points), N=zero (none), N=lost (some lost); per function
# (the rubric items named "Part N | <function>: ..."): <function>=half (at least half of its
# points lost), <function>=minor (some lost, less than half); a speed bonus (assignment 2):
# <function>_bonus=zero (it earned none). A part's and a function's scores leave the bonus out.
# SEEDS: grade again with each of these seeds; every test must get the same score as with seed 7.
cmake_minimum_required(VERSION 3.21)

set(files ${STUDENT_FILES})
set(files_but_func_impl ${files})
list(REMOVE_ITEM files_but_func_impl model/func_impl.cpp)
set(files_but_first ${files})
list(POP_FRONT files_but_first)
set(tree ${WORK}/tree)
set(results ${WORK}/results.json)
set(DTK_SELFTEST_RESULTS ${results})
set(DTK_SELFTEST_VICTIM ${WORK}/victim)
get_filename_component(build_dir ${DTK_GRADE} DIRECTORY)
set(kit_pch ${build_dir}/grader/data/pch/dtk_grade_pch.hpp.gch)
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
if(PATCH)
  get_filename_component(patch_name ${PATCH} NAME)
  execute_process(COMMAND patch -p1 --batch --forward --fuzz=0 --no-backup-if-mismatch
                          -d ${tree} -i ${PATCH}
                  RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT status EQUAL 0)
    fail("${patch_name} no longer applies to ${BASE}: update the patch (patch said:\n${output})")
  endif()
  file(STRINGS ${PATCH} patched REGEX "^\\+\\+\\+ b/")
  foreach(line IN LISTS patched)
    string(REGEX REPLACE "^\\+\\+\\+ b/([^\t]*).*" "\\1" file "${line}")
    file(RENAME ${tree}/${file} ${tree}/${file}.in)
    configure_file(${tree}/${file}.in ${tree}/${file} @ONLY)
    file(REMOVE ${tree}/${file}.in)
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
  run(tar -cf ${tar} -C ${tree} ${files_but_func_impl} -C ${WORK}/links model/func_impl.cpp)
elseif(PACK STREQUAL "tar-missing")
  run(tar -cf ${tar} -C ${tree} ${files_but_first})
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

set(shared /var/tmp/dtk-selftest-${NAME})
# A copy of the build's manifest with other rules or limits.
if(ALLOW_MPI OR LIMITS OR SPEED_BONUS)
  file(READ ${MANIFEST} manifest)
  foreach(call IN LISTS ALLOW_MPI)
    string(JSON count LENGTH "${manifest}" allowed_mpi)
    string(JSON manifest SET "${manifest}" allowed_mpi ${count} "\"${call}\"")
  endforeach()
  foreach(limit IN LISTS LIMITS)
    string(REPLACE "=" ";" limit ${limit})
    list(GET limit 0 key)
    list(GET limit 1 value)
    string(JSON manifest SET "${manifest}" limits ${key} ${value})
  endforeach()
  string(JSON parts LENGTH "${manifest}" parts)
  math(EXPR last_part "${parts} - 1")
  foreach(part RANGE ${last_part})
    string(JSON bonus ERROR_VARIABLE no_bonus GET "${manifest}" parts ${part} speed_bonus)
    if(no_bonus)
      continue()
    endif()
    foreach(setting IN LISTS SPEED_BONUS)
      string(REPLACE "=" ";" setting ${setting})
      list(GET setting 0 key)
      list(GET setting 1 value)
      string(JSON manifest SET "${manifest}" parts ${part} speed_bonus ${key} ${value})
    endforeach()
  endforeach()
  file(WRITE ${WORK}/manifest.json "${manifest}")
  list(APPEND ARGS --manifest ${WORK}/manifest.json)
endif()

if(GUARD)
  file(WRITE ${DTK_SELFTEST_VICTIM}/file "must keep its owner\n")
  file(REMOVE_RECURSE ${shared})
  file(MAKE_DIRECTORY ${shared})
  run(chmod 1777 ${shared})
  file(SHA256 ${kit_pch} pch_before)
endif()

# Not root, there is no sandbox: grade as the caller (the checks below still hold).
execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT uid EQUAL 0)
  list(APPEND ARGS --no-sandbox)
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

# Per-part and per-function scores from results.json; `scores` lists every test's score.
file(SIZE ${results} size)
if(size GREATER 1000000)
  fail("results.json is ${size} bytes: captured output is not capped")
endif()
file(READ ${results} json)
string(JSON count LENGTH "${json}" tests)
string(JSON all_output GET "${json}" output)
math(EXPR last "${count} - 1")
set(scores "")
foreach(i RANGE ${last})
  string(JSON name GET "${json}" tests ${i} name)
  string(JSON score GET "${json}" tests ${i} score)
  string(JSON max GET "${json}" tests ${i} max_score)
  string(JSON output GET "${json}" tests ${i} output)
  string(APPEND all_output "\n${output}")
  if(NOT name MATCHES "^Part ([0-9]+) \\| ([A-Za-z0-9_]+)")
    fail("test name \"${name}\" does not start with \"Part N | function\"")
  endif()
  set(keys ${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
  set(function ${CMAKE_MATCH_2})
  # A speed bonus is timed, not judged: it counts apart (<function>_bonus) and may differ from
  # one grading to the next.
  if(name MATCHES ": speed bonus$")
    set(keys ${function}_bonus)
  else()
    list(APPEND scores "${name}=${score}")
  endif()
  foreach(key IN ITEMS ${keys})
    if(NOT DEFINED score_${key})
      set(score_${key} 0)
      set(max_${key} 0)
    endif()
    to_hundredths(${score} hundredths)
    to_hundredths(${max} max_hundredths)
    math(EXPR score_${key} "${score_${key}} + ${hundredths}")
    math(EXPR max_${key} "${max_${key}} + ${max_hundredths}")
  endforeach()
endforeach()

# The same submission under other seeds: the same score on every test.
foreach(seed IN LISTS SEEDS)
  set(again ${WORK}/results-${seed}.json)
  execute_process(COMMAND ${DTK_GRADE} ${submission} --seed ${seed} --results ${again} ${ARGS}
                  RESULT_VARIABLE status OUTPUT_VARIABLE again_stdout ERROR_VARIABLE again_stderr)
  if(NOT status EQUAL 0)
    fail("grading with seed ${seed} exited with ${status}:\n${again_stdout}${again_stderr}")
  endif()
  file(READ ${again} json)
  string(JSON count_again LENGTH "${json}" tests)
  set(scores_again "")
  math(EXPR last_again "${count_again} - 1")
  foreach(i RANGE ${last_again})
    string(JSON name GET "${json}" tests ${i} name)
    string(JSON score GET "${json}" tests ${i} score)
    if(NOT name MATCHES ": speed bonus$")
      list(APPEND scores_again "${name}=${score}")
    endif()
  endforeach()
  list(LENGTH scores judged)
  list(LENGTH scores_again judged_again)
  if(NOT judged_again EQUAL judged)
    fail("grading with seed ${seed} judged ${judged_again} tests, seed 7 judged ${judged}")
  endif()
  foreach(with_seed_7 with_seed IN ZIP_LISTS scores scores_again)
    if(NOT with_seed STREQUAL with_seed_7)
      fail("seed ${seed} gives \"${with_seed}\", seed 7 gave \"${with_seed_7}\"")
    endif()
  endforeach()
  message(STATUS "seed ${seed}: the same score on all ${judged} judged tests")
endforeach()

foreach(expectation IN LISTS EXPECT)
  if(NOT expectation MATCHES "^([0-9]+|[A-Za-z0-9_]+)=(full|zero|lost|half|minor)$")
    fail("bad expectation \"${expectation}\"")
  endif()
  set(key ${CMAKE_MATCH_1})
  set(want ${CMAKE_MATCH_2})
  if(key MATCHES "^[0-9]+$")
    set(what "Part ${key}")
  else()
    set(what "${key}")
  endif()
  if(NOT DEFINED score_${key})
    fail("no test of ${what} in results.json")
  endif()
  set(got "${score_${key}}/${max_${key}} hundredths of a point")
  math(EXPR lost_twice "2 * (${max_${key}} - ${score_${key}})")
  if(want STREQUAL "full" AND NOT score_${key} EQUAL max_${key})
    fail("${what} should get full marks, got ${got}")
  elseif(want STREQUAL "zero" AND NOT score_${key} EQUAL 0)
    fail("${what} should get no points, got ${got}")
  elseif(want STREQUAL "lost" AND NOT score_${key} LESS max_${key})
    fail("${what} should lose points, got ${got}")
  elseif(want STREQUAL "half" AND lost_twice LESS max_${key})
    fail("${what} should lose at least half its points, got ${got}")
  elseif(want STREQUAL "minor" AND (lost_twice EQUAL 0 OR NOT lost_twice LESS max_${key}))
    fail("${what} should lose some points but less than half, got ${got}")
  endif()
  message(STATUS "${what}: ${got} (${want}, as expected)")
endforeach()

foreach(pattern IN LISTS EXPECT_OUTPUT)
  if(NOT "${all_output}\n${stdout}" MATCHES "${pattern}")
    fail("the feedback does not match \"${pattern}\"")
  endif()
endforeach()

if(GUARD)
  execute_process(COMMAND find ${DTK_SELFTEST_VICTIM} ! -user ${uid} OUTPUT_VARIABLE changed)
  if(changed)
    fail("the grading changed the owner of files outside its scratch:\n${changed}")
  endif()
  # Other gradings take turns with the lock; their scratch directories are theirs.
  execute_process(COMMAND flock /run/dtk-grade.lock
                          find /tmp /var/tmp /dev/shm /run/lock -maxdepth 2 -path "/tmp/dtk-grade.*"
                          -prune -o -user dtk-sandbox -print
                  OUTPUT_VARIABLE leftovers)
  file(REMOVE_RECURSE ${shared})
  if(leftovers)
    fail("files of the sandbox user were left behind:\n${leftovers}")
  endif()
  file(SHA256 ${kit_pch} pch_after)
  if(NOT pch_after STREQUAL pch_before)
    fail("the grading changed the kit's precompiled header ${kit_pch}")
  endif()
endif()

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
