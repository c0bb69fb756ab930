# How the grader's self-tests are registered (included from grader/CMakeLists.txt): the
# self-tests no patch makes are listed in selftests_unpatched.cmake; every other one registers
# itself from its own patch in grader/tests/submissions/.
#
# Adding a seeded mistake (or a hostile hand-in) touches one file: NAME.patch in submissions/, a
# unified diff against solutions/ (grade_submission.py) whose preamble (the text before its
# first "---" or "diff" line, which patch ignores) registers it. The preamble starts with one
# record per self-test the patch makes, records separated by a blank line; prose follows:
#
#   dtk-selftest: wrong_qkv_contiguous_block      the test is grader_<this name>
#   assignment: 3
#   costs: qkv_columns=half
#   expect-output: a contiguous block of the fused \[Q \| K \| V\] columns
#   why: what it shows, on as many lines as needed,
#     each further line indented
#
# Every key is a keyword of dtk_grade_selftest below, in lower case with "-" for "_":
# assignment, base, pack, parts, max-seconds, load (one value); costs, expect, args, allow-mpi,
# limits, speed-bonus (words separated by spaces); expect-output (one regular expression, the
# whole rest of the line); seeds (numbers, or "other": other_seeds below); guard,
# second-checkout, no-mount-namespace (the value "yes"); why (the reason, for readers only: the
# one key that goes on over indented lines; repeat any other key to give it more values). The
# patch itself is the OVERLAY; a record needs costs or expect. Records are read at configure
# time (CMake configures again when a patch changes or one is added); a line they cannot read
# stops the configuration, naming the patch and the line.
#
# dtk_grade_selftest(NAME ...): grades one submission of ASSIGNMENT (default 1; solutions/
# changed by OVERLAY PATCH, the patch grader/tests/submissions/PATCH.patch; or BASE starter;
# maybe packed into a broken archive, PACK) and checks the scores EXPECT says (see
# grade_submission.py and check_totals.py). PARTS 2,3,6 grades those parts only (--parts).
# COSTS KEY=VERDICT...: the patch is an honest mistake that costs what COSTS says and nothing
# else: every other function and part it could touch keeps all its points (EXPECT ... others=full,
# check_totals.py), and only the parts whose file the patch changes are graded (PARTS, from the
# manifest), since no other part can lose anything. LOAD N grades it while N busy processes
# share the machine's cores (grade_submission.py), alone (RUN_SERIAL: they would slow every
# other test down).
# Gradings of one sandbox slot take turns (they share its user and lock), hence the long
# timeout; `make test` gives CTest three slots (grader/tests/sandbox-slots.json).
#
# A verdict must not depend on the seed, which draws values, never shapes: in each assignment
# one mistake whose detection hangs on the values drawn is graded again under the two seeds
# below and must get the same score on every test (the reference's other functions of its
# parts included). The reference itself gets full marks under a fresh random seed in every
# bundle and autograder-package test. Every mistake under three seeds would add two gradings
# to each and about a fifth to `make test`'s time.
set(other_seeds 844925099 28741244)
# The reference's outputs the self-tests share (grade_submission.py) are made afresh by each
# `ctest` run: this test empties their cache before any self-test starts.
add_test(NAME grader_selftests_fresh_reference
         COMMAND sh -c "rm -rf '${CMAKE_CURRENT_BINARY_DIR}'/selftests/.reference-*")
set_tests_properties(grader_selftests_fresh_reference PROPERTIES FIXTURES_SETUP fresh_reference
                     LABELS grading)

# dtk_grade_selftest's keywords: flags, those with one value, those with a list (a patch's
# preamble gives them too, dtk_grade_record_value).
set(dtk_selftest_flags GUARD SECOND_CHECKOUT NO_MOUNT_NAMESPACE)
set(dtk_selftest_values ASSIGNMENT BASE OVERLAY PACK MAX_SECONDS PARTS LOAD)
set(dtk_selftest_lists EXPECT EXPECT_OUTPUT ARGS ALLOW_MPI SEEDS LIMITS SPEED_BONUS COSTS)
function(dtk_grade_selftest name)
  cmake_parse_arguments(ARG "${dtk_selftest_flags}" "${dtk_selftest_values}"
                        "${dtk_selftest_lists}" ${ARGN})
  if(NOT ARG_BASE)
    set(ARG_BASE solutions)
  endif()
  if(NOT ARG_ASSIGNMENT)
    set(ARG_ASSIGNMENT 1)
  endif()
  if(NOT ARG_ASSIGNMENT IN_LIST DTK_ASSIGNMENTS)
    message(FATAL_ERROR "dtk_grade_selftest(${name}): no assignment ${ARG_ASSIGNMENT}")
  endif()
  if(NOT ARG_EXPECT AND NOT ARG_COSTS)
    message(FATAL_ERROR "dtk_grade_selftest(${name}): say what it EXPECTs or what it COSTS")
  endif()
  set(driver ${CMAKE_CURRENT_SOURCE_DIR}/tests/grade_submission.py)
  set(files ${DTK_ASSIGNMENT${ARG_ASSIGNMENT}_STUDENT_FILES})
  set(patched "")
  if(ARG_OVERLAY)
    set(patch ${CMAKE_CURRENT_SOURCE_DIR}/tests/submissions/${ARG_OVERLAY}.patch)
    dtk_grade_patched_files(patched ${patch})
    list(APPEND driver --patch=${patch})
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
  # The driver's options: one --KEY=VALUE per value of a list (a value may start with "-").
  foreach(key IN ITEMS PATCHED_FILE:patched STUDENT_FILE:files EXPECT:ARG_EXPECT
                       EXPECT_OUTPUT:ARG_EXPECT_OUTPUT ALLOW_MPI:ARG_ALLOW_MPI
                       LIMIT:ARG_LIMITS SPEED_BONUS:ARG_SPEED_BONUS SEED:ARG_SEEDS
                       PACK:ARG_PACK MAX_SECONDS:ARG_MAX_SECONDS LOAD:ARG_LOAD)
    string(REPLACE ":" ";" key "${key}")
    list(GET key 1 variable)
    list(GET key 0 option)
    string(TOLOWER "--${option}=" option)
    string(REPLACE "_" "-" option "${option}")
    set(values ${${variable}})
    list(TRANSFORM values PREPEND ${option})
    list(APPEND driver ${values})
  endforeach()
  foreach(flag IN LISTS dtk_selftest_flags)
    if(ARG_${flag})
      string(TOLOWER "--${flag}" option)
      string(REPLACE "_" "-" option "${option}")
      list(APPEND driver ${option})
    endif()
  endforeach()
  add_test(NAME grader_${name}
           COMMAND ${driver} --dtk-grade=$<TARGET_FILE:dtk-grade> --name=${name}
                   --work=${CMAKE_CURRENT_BINARY_DIR}/selftests/${name}
                   --base=${PROJECT_SOURCE_DIR}/${ARG_BASE}
                   --manifest=${DTK_GRADE_DATA}/manifests/assignment${ARG_ASSIGNMENT}.json
                   -- ${args})
  # A grading leaves a core idle about a third of the time (compiling, starting ranks,
  # sandboxing, a hostile hand-in waiting for its watchdog): `make test` runs three at once on
  # two cores, each in its own sandbox slot (grade_submission.py), whose user no other grading
  # shares: what one leaves behind, the processes it sees and its limits are its own. Gradings
  # that time something, lock the kit or watch directories every user shares, or add load of
  # their own, run alone.
  set_tests_properties(grader_${name} PROPERTIES TIMEOUT 600 LABELS grading
                                                 FIXTURES_REQUIRED fresh_reference)
  if(ARG_LOAD OR ARG_SPEED_BONUS OR ARG_MAX_SECONDS OR ARG_NO_MOUNT_NAMESPACE OR ARG_GUARD
     OR ARG_SECOND_CHECKOUT)
    dtk_whole_machine(grader_${name})
  else()
    set_tests_properties(grader_${name} PROPERTIES RESOURCE_GROUPS sandbox:1)
  endif()
endfunction()

# Registers the self-tests a patch's preamble describes (the header above): each record's
# "key: value" lines become dtk_grade_selftest's arguments.
function(dtk_grade_patch_selftests patch)
  get_filename_component(stem ${patch} NAME_WE)
  file(READ ${patch} text)
  set(name "")
  set(line_number 0)
  while(NOT text STREQUAL "")
    string(FIND "${text}" "\n" end)
    if(end EQUAL -1)
      string(LENGTH "${text}" end)
    endif()
    string(SUBSTRING "${text}" 0 ${end} line)
    math(EXPR next "${end} + 1")
    string(SUBSTRING "${text}" ${next} -1 text)
    math(EXPR line_number "${line_number} + 1")
    if(line MATCHES "^(--- |diff )")
      break()
    elseif(line MATCHES "^dtk-selftest: *([A-Za-z0-9_]+)$")
      dtk_grade_record_selftest("${name}" "${stem}" "${args}")
      set(name ${CMAKE_MATCH_1})
      set(args "")
      set(key "")
    elseif(line STREQUAL "")
      dtk_grade_record_selftest("${name}" "${stem}" "${args}")
      set(name "")
    elseif(NOT name)  # prose
    elseif(line MATCHES "^[ \t]" AND key STREQUAL "WHY")  # the reason goes on
    elseif(line MATCHES "^([a-z-]+): *(.*)$")
      string(TOUPPER "${CMAKE_MATCH_1}" key)
      string(REPLACE "-" "_" key "${key}")
      if(NOT key STREQUAL "WHY")
        dtk_grade_record_value(args ${key} "${CMAKE_MATCH_2}" "${patch}, line ${line_number}")
      endif()
    else()
      message(FATAL_ERROR "${patch}, line ${line_number}: expected \"key: value\", an indented "
                          "continuation or a blank line in the record of ${name}, got \"${line}\"")
    endif()
  endwhile()
  dtk_grade_record_selftest("${name}" "${stem}" "${args}")
  get_property(registered DIRECTORY PROPERTY dtk_selftests_of_${stem})
  if(NOT registered)
    message(FATAL_ERROR "${patch}: no \"dtk-selftest: NAME\" record in its "
                        "preamble, so no self-test grades it (selftests.cmake)")
  endif()
endfunction()

# Appends to the list `out` a preamble's "key: value" line, as dtk_grade_selftest's keyword
# and its values; `where` (the patch and the line) names a line it cannot read.
function(dtk_grade_record_value out key value where)
  unset(values)
  if(key IN_LIST dtk_selftest_flags)
    if(NOT value STREQUAL "yes")
      message(FATAL_ERROR "${where}: a flag takes the value \"yes\", got \"${value}\"")
    endif()
    set(values "")
  elseif(key STREQUAL "EXPECT_OUTPUT")
    set(values "${value}")  # one regular expression, spaces and all
  elseif(key STREQUAL "SEEDS" AND value STREQUAL "other")
    set(values ${other_seeds})
  elseif(key IN_LIST dtk_selftest_lists OR key IN_LIST dtk_selftest_values)
    string(REGEX MATCHALL "[^ \t]+" values "${value}")
    list(LENGTH values count)
    if(key IN_LIST dtk_selftest_values AND NOT count EQUAL 1)
      message(FATAL_ERROR "${where}: ${key} takes one value, got \"${value}\"")
    endif()
  endif()
  if(NOT DEFINED values OR key STREQUAL "OVERLAY")
    set(keys ${dtk_selftest_flags} ${dtk_selftest_values} ${dtk_selftest_lists})
    list(REMOVE_ITEM keys OVERLAY)
    list(TRANSFORM keys TOLOWER)
    list(TRANSFORM keys REPLACE "_" "-")
    list(JOIN keys ", " keys)
    string(TOLOWER "${key}" key)
    string(REPLACE "_" "-" key "${key}")
    message(FATAL_ERROR "${where}: \"${key}\" is no key of a self-test (selftests.cmake): the "
                        "keys are ${keys} and why")
  endif()
  set(${out} ${${out}} ${key} ${values} PARENT_SCOPE)
endfunction()

# Registers the self-test of the record just read, if any: the patch `stem` is its OVERLAY.
function(dtk_grade_record_selftest name stem args)
  if(name)
    dtk_grade_selftest(${name} OVERLAY ${stem} ${args})
    set_property(DIRECTORY APPEND PROPERTY dtk_selftests_of_${stem} ${name})
  endif()
endfunction()

# Every patch in submissions/ registers its own self-tests; CMake configures again when one is
# added.
function(dtk_grade_register_patches)
  file(GLOB patches CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/submissions/*.patch)
  foreach(patch IN LISTS patches)
    dtk_grade_patch_selftests(${patch})
  endforeach()
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
