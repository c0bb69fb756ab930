# Self-tests of the student release (files in release/): starter/ and solutions/ stay one source,
# the figures parse, and the bundle `make release` writes works end to end and leaks nothing.

# The source checker: single-source comparison, and the bundle's no-reference-code scan.
add_executable(dtk_source_check ${CMAKE_CURRENT_LIST_DIR}/release/dtk_source_check.cpp)
target_compile_features(dtk_source_check PRIVATE cxx_std_17)
target_compile_options(dtk_source_check PRIVATE -Wall -Wextra)

# starter/ and solutions/ agree on includes, signatures and the provided block of each file...
add_test(NAME kit_single_source
         COMMAND dtk_source_check single-source ${PROJECT_SOURCE_DIR}/starter
                 ${PROJECT_SOURCE_DIR}/solutions ${DTK_STUDENT_FILES})
# ...and the checker does catch a drift, and a leak (tried on temporary copies).
add_test(NAME kit_source_check_self_test
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/release/source_check_self_test.sh
                 $<TARGET_FILE:dtk_source_check> ${PROJECT_SOURCE_DIR} ${DTK_STUDENT_FILES})

# Every figure parses; every figure handout.md shows exists.
add_test(NAME kit_figures COMMAND ${CMAKE_CURRENT_LIST_DIR}/release/check_figures.sh
                                  ${PROJECT_SOURCE_DIR})

# Part 7's rubric table in handout.md is what the manifest gives (scripts/rubric-table.py).
add_test(NAME kit_handout_rubric
         COMMAND python3 ${PROJECT_SOURCE_DIR}/scripts/rubric-table.py
                 ${PROJECT_SOURCE_DIR}/grader/manifests/assignment2.json 7
                 --check ${PROJECT_SOURCE_DIR}/handout.md)

# docs/handouts/ holds what each bundle's handout is now (scripts/render-handouts.sh).
add_test(NAME kit_rendered_handouts
         COMMAND ${PROJECT_SOURCE_DIR}/scripts/render-handouts.sh --check)

# Each assignment's bundle, end to end: pack, unpack, build, stubs fail, reference passes,
# handin grades full.
# It builds a whole student tree (about a minute with -j2, hence alone) and grades once.
# dtk-grade is defined in grader/, added after tests/: TARGET_EXISTS is evaluated at generate
# time, so this sees it; without it the test fails at its last step with a clear message.
foreach(assignment IN LISTS DTK_ASSIGNMENTS)
  set(name kit_release_bundle_assignment${assignment})
  if(assignment EQUAL 1)
    set(name kit_release_bundle)  # the kit's first test of its kind kept its name
  endif()
  add_test(NAME ${name}
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/release/test_bundle.py ${PROJECT_SOURCE_DIR}
                   $<TARGET_FILE:dtk_source_check>
                   --grader=$<$<TARGET_EXISTS:dtk-grade>:$<TARGET_FILE:dtk-grade>> ${assignment})
  set_tests_properties(${name} PROPERTIES TIMEOUT 1800 LABELS release)
  dtk_whole_machine(${name})
endforeach()

# A course that does not assign Part 6 (disabled in a scratch copy of assignment 1's manifest):
# its bundle has no Part 6 stubs, public test or handout section, provides Part 6's reference,
# builds, and its reference hand-in gets 75 out of 75.
add_test(NAME kit_release_bundle_without_part6
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/release/test_bundle.py ${PROJECT_SOURCE_DIR}
                 $<TARGET_FILE:dtk_source_check>
                 --grader=$<$<TARGET_EXISTS:dtk-grade>:$<TARGET_FILE:dtk-grade>> 1 6)
set_tests_properties(kit_release_bundle_without_part6 PROPERTIES TIMEOUT 1800 LABELS release)
dtk_whole_machine(kit_release_bundle_without_part6)

# An assignment is a unit: a throw-away one, added to a copy of the kit as its own files only,
# builds, releases, packs and grades (about two minutes: the copy's build mostly hits ccache).
add_test(NAME kit_new_assignment
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/release/test_new_assignment.py ${PROJECT_SOURCE_DIR})
set_tests_properties(kit_new_assignment PROPERTIES TIMEOUT 1800 LABELS release)
dtk_whole_machine(kit_new_assignment)
