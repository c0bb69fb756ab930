# Grading a class: --batch, its speed bonuses, a Slurm cluster, and the Gradescope and Autolab
# packages run as those services run them (label class-scale: minutes each, mostly builds).

# A class at once: dtk-grade --batch (scores as single gradings, resuming, the summary page,
# Gradescope's export layout, job slots that leave nothing behind).
add_test(NAME grader_batch
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/batch_test.py ${PROJECT_SOURCE_DIR}
                 $<TARGET_FILE:dtk-grade> ${CMAKE_CURRENT_BINARY_DIR}/selftests/batch)
set_tests_properties(grader_batch PROPERTIES TIMEOUT 900 LABELS class-scale)
dtk_whole_machine(grader_batch)

# The speed bonus of a class (assignment 2): timed after the gradings, deferred when the
# machine is busy, timed when the batch runs again.
add_test(NAME grader_batch_bonus
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/batch_bonus_test.sh ${PROJECT_SOURCE_DIR}
                 $<TARGET_FILE:dtk-grade> ${DTK_GRADE_DATA}/manifests/assignment2.json
                 ${CMAKE_CURRENT_BINARY_DIR}/selftests/batch_bonus)
set_tests_properties(grader_batch_bonus PROPERTIES TIMEOUT 900 LABELS class-scale)
dtk_whole_machine(grader_batch_bonus)

# A class graded on a Slurm cluster (scripts/grade-class-slurm.sh): a single-node cluster the
# test starts and stops itself gives the gradebook of a local batch.
add_test(NAME grader_slurm
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/slurm_test.sh ${PROJECT_SOURCE_DIR}
                 $<TARGET_FILE:dtk-grade> ${CMAKE_CURRENT_BINARY_DIR}/selftests/slurm)
set_tests_properties(grader_slurm PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77 LABELS class-scale)
dtk_whole_machine(grader_slurm)

# The Gradescope autograders `make autograder.zip` writes, unpacked and run as Gradescope
# does, the kit locked down: the reference gets full marks in the second and fourth assignment
# (autograder_zip.sh; the first and third are Autolab's, below).
add_test(NAME grader_autograder_zip
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/autograder_zip.sh ${PROJECT_SOURCE_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/selftests/autograder_zip)
set_tests_properties(grader_autograder_zip PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77
                                                      LABELS class-scale)
dtk_whole_machine(grader_autograder_zip)

# The Autolab autograders `make autolab` writes, run as Tango runs them: the last line of
# output is the scores JSON, with full marks for the reference in the first and third assignment.
add_test(NAME grader_autolab
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/autolab_test.sh ${PROJECT_SOURCE_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/selftests/autolab)
set_tests_properties(grader_autolab PROPERTIES TIMEOUT 900 LABELS class-scale)
dtk_whole_machine(grader_autolab)
