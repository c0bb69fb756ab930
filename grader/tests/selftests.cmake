# How the grader's self-tests are registered (included from grader/CMakeLists.txt, before the
# self-tests themselves: selftests_assignment<N>.cmake per assignment, selftests_hostile.cmake).
#
# dtk_grade_selftest(NAME ...): grades one submission of ASSIGNMENT (default 1; solutions/
# changed by OVERLAY PATCH, the patch grader/tests/submissions/PATCH.patch; or BASE starter;
# maybe packed into a broken archive, PACK) and checks the scores EXPECT says (see
# grade_submission.cmake and check_totals.py). PARTS 2,3,6 grades those parts only (--parts).
# COSTS KEY=VERDICT...: the patch is an honest mistake that costs what COSTS says and nothing
# else: every other function and part it could touch keeps all its points (EXPECT ... others=full,
# check_totals.py), and only the parts whose file the patch changes are graded (PARTS, from the
# manifest), since no other part can lose anything. LOAD N grades it while N busy processes
# share the machine's cores (grade_submission.cmake), alone (RUN_SERIAL: they would slow every
# other test down).
# Gradings of one sandbox slot take turns (they share its user and lock), hence the long
# timeout; `make test` gives CTest two slots (grader/tests/sandbox-slots.json).
#
# A verdict must not depend on the seed, which draws values, never shapes: in each assignment
# one mistake whose detection hangs on the values drawn is graded again under the two seeds
# below and must get the same score on every test (the reference's other functions of its
# parts included). The reference itself gets full marks under a fresh random seed in every
# bundle and autograder-package test. Every mistake under three seeds would add two gradings
# to each and about a fifth to `make test`'s time.
set(other_seeds SEEDS 844925099 28741244)
# The reference's outputs the self-tests share (grade_submission.cmake) are made afresh by each
# `ctest` run: this test empties their cache before any self-test starts.
add_test(NAME grader_selftests_fresh_reference
         COMMAND sh -c "rm -rf '${CMAKE_CURRENT_BINARY_DIR}'/selftests/.reference-*")
set_tests_properties(grader_selftests_fresh_reference PROPERTIES FIXTURES_SETUP fresh_reference
                     LABELS grading)
function(dtk_grade_selftest name)
  cmake_parse_arguments(ARG "GUARD;SECOND_CHECKOUT;NO_MOUNT_NAMESPACE"
                        "ASSIGNMENT;BASE;OVERLAY;PACK;MAX_SECONDS;PARTS;LOAD"
                        "EXPECT;EXPECT_OUTPUT;ARGS;ALLOW_MPI;SEEDS;LIMITS;SPEED_BONUS;COSTS"
                        ${ARGN})
  if(NOT ARG_BASE)
    set(ARG_BASE solutions)
  endif()
  if(NOT ARG_ASSIGNMENT)
    set(ARG_ASSIGNMENT 1)
  endif()
  if(NOT ARG_ASSIGNMENT IN_LIST DTK_ASSIGNMENTS)
    message(FATAL_ERROR "dtk_grade_selftest(${name}): no assignment ${ARG_ASSIGNMENT}")
  endif()
  set(files ${DTK_ASSIGNMENT${ARG_ASSIGNMENT}_STUDENT_FILES})
  set(patch "")
  set(patched "")
  if(ARG_OVERLAY)
    set(patch ${CMAKE_CURRENT_SOURCE_DIR}/tests/submissions/${ARG_OVERLAY}.patch)
    dtk_grade_patched_files(patched ${patch})
  endif()
  if(ARG_COSTS)
    dtk_grade_parts_of_files(ARG_PARTS ${ARG_ASSIGNMENT} "${patched}")
    if(NOT ARG_PARTS)
      message(FATAL_ERROR "dtk_grade_selftest(${name}): COSTS needs an OVERLAY that changes "
                          "the file of a part of assignment ${ARG_ASSIGNMENT}")
    endif()
    list(JOIN ARG_PARTS "," ARG_PARTS)
    list(APPEND ARG_EXPECT ${ARG_COSTS} others=full)
  endif()
  set(args --assignment ${ARG_ASSIGNMENT} ${ARG_ARGS})
  if(ARG_PARTS)
    list(APPEND args --parts ${ARG_PARTS})
  endif()
  add_test(NAME grader_${name}
           COMMAND ${CMAKE_COMMAND} -DDTK_GRADE=$<TARGET_FILE:dtk-grade> -DNAME=${name}
                   -DWORK=${CMAKE_CURRENT_BINARY_DIR}/selftests/${name}
                   -DBASE=${PROJECT_SOURCE_DIR}/${ARG_BASE} -DPATCH=${patch}
                   "-DPATCHED_FILES=${patched}" "-DSTUDENT_FILES=${files}"
                   -DPACK=${ARG_PACK} "-DEXPECT=${ARG_EXPECT}"
                   "-DEXPECT_OUTPUT=${ARG_EXPECT_OUTPUT}" "-DARGS=${args}"
                   -DMANIFEST=${DTK_GRADE_DATA}/manifests/assignment${ARG_ASSIGNMENT}.json
                   "-DALLOW_MPI=${ARG_ALLOW_MPI}"
                   "-DLIMITS=${ARG_LIMITS}" "-DSPEED_BONUS=${ARG_SPEED_BONUS}"
                   -DGUARD=${ARG_GUARD} -DSECOND_CHECKOUT=${ARG_SECOND_CHECKOUT}
                   -DNO_MOUNT_NAMESPACE=${ARG_NO_MOUNT_NAMESPACE}
                   -DMAX_SECONDS=${ARG_MAX_SECONDS} "-DSEEDS=${ARG_SEEDS}" -DLOAD=${ARG_LOAD}
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/tests/grade_submission.cmake)
  # A grading leaves a core idle about half the time (compiling, starting ranks, sandboxing, a
  # hostile hand-in waiting for its watchdog): two run at once, each in its own sandbox slot
  # (grade_submission.cmake), whose user no other grading shares: what one leaves behind, the
  # processes it sees and its limits are its own. Gradings that time something, lock the kit or
  # watch directories every user shares run alone.
  set_tests_properties(grader_${name} PROPERTIES TIMEOUT 600 PROCESSORS 2 LABELS grading
                                                 FIXTURES_REQUIRED fresh_reference)
  if(ARG_LOAD)
    set_tests_properties(grader_${name} PROPERTIES RUN_SERIAL TRUE)
  elseif(NOT (ARG_SPEED_BONUS OR ARG_MAX_SECONDS OR ARG_NO_MOUNT_NAMESPACE OR ARG_GUARD
              OR ARG_SECOND_CHECKOUT))
    set_tests_properties(grader_${name} PROPERTIES PROCESSORS 1 RESOURCE_GROUPS sandbox:1)
  endif()
endfunction()

# dtk_grade_mistake(NAME COSTS KEY=VERDICT... [ARG...]): the honest mistake NAME.patch (or
# OVERLAY PATCH) costs what COSTS says and nothing else; the ARGs are dtk_grade_selftest's.
function(dtk_grade_mistake name)
  if(NOT "COSTS" IN_LIST ARGN)
    message(FATAL_ERROR "dtk_grade_mistake(${name}): say what the mistake COSTS")
  endif()
  if(NOT "OVERLAY" IN_LIST ARGN)
    list(APPEND ARGN OVERLAY ${name})
  endif()
  dtk_grade_selftest(${name} ${ARGN})
endfunction()

# The student files a patch changes: its "+++ b/FILE" lines. CMake configures again when the
# patch changes.
function(dtk_grade_patched_files out patch)
  if(NOT EXISTS ${patch})
    message(FATAL_ERROR "no patch ${patch}")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${patch})
  file(STRINGS ${patch} lines REGEX "^\\+\\+\\+ b/")
  set(files "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^\\+\\+\\+ b/([^\t]*).*" "\\1" file "${line}")
    list(APPEND files ${file})
  endforeach()
  set(${out} ${files} PARENT_SCOPE)
endfunction()

# The numbers of the parts of `assignment` (enabled in its manifest) whose file is one of `files`.
function(dtk_grade_parts_of_files out assignment files)
  file(READ ${CMAKE_CURRENT_SOURCE_DIR}/manifests/assignment${assignment}.json manifest)
  string(JSON count LENGTH "${manifest}" parts)
  math(EXPR last "${count} - 1")
  set(parts "")
  foreach(index RANGE ${last})
    string(JSON file GET "${manifest}" parts ${index} file)
    string(JSON enabled ERROR_VARIABLE always GET "${manifest}" parts ${index} enabled)
    if(file IN_LIST files AND (always OR enabled))
      string(JSON part GET "${manifest}" parts ${index} part)
      list(APPEND parts ${part})
    endif()
  endforeach()
  set(${out} ${parts} PARENT_SCOPE)
endfunction()
