# The grader's self-tests that no patch makes: the reference and the starter of each assignment,
# as directories and as archives, broken archives, and the grader's refusals. Every seeded
# mistake and hostile hand-in registers itself from its own patch (grader/tests/submissions/,
# selftests.cmake).
set(all_full 1=full 2=full 3=full 4=full 5=full 6=full)
set(func_impl_zero 1=full 2=zero 3=zero 4=full 5=full 6=zero)
set(all_zero 1=zero 2=zero 3=zero 4=zero 5=zero 6=zero)

# Assignment 1: the reference and the starter, as directories and as archives.
dtk_grade_selftest(solutions EXPECT ${all_full} EXPECT_OUTPUT "Seed 7")
dtk_grade_selftest(starter BASE starter EXPECT ${all_zero}
                   EXPECT_OUTPUT "not implemented yet: NotImplemented: dtk::get_info")
dtk_grade_selftest(solutions_tar PACK tar EXPECT ${all_full})

# Broken archives: refused members are reported; a missing or broken file costs its parts, and
# the other files' parts are still graded.
dtk_grade_selftest(tar_absolute_path PACK tar-absolute EXPECT ${all_full}
                   EXPECT_OUTPUT "absolute path")
dtk_grade_selftest(tar_dotdot PACK tar-dotdot EXPECT ${all_full} EXPECT_OUTPUT "\\.\\.")
dtk_grade_selftest(tar_symlink PACK tar-symlink EXPECT ${func_impl_zero}
                   EXPECT_OUTPUT "symbolic link")
dtk_grade_selftest(tar_missing_file PACK tar-missing EXPECT ${func_impl_zero}
                   EXPECT_OUTPUT "no model/func_impl.cpp")
dtk_grade_selftest(not_a_tar PACK not-a-tar EXPECT ${all_zero} EXPECT_OUTPUT "not a tar archive")
# Names and texts that are not UTF-8 or hold newlines are shown escaped; honest mistakes
# (a gzipped or empty archive, a file twice) are graded or named plainly.
dtk_grade_selftest(tar_not_utf8 PACK tar-not-utf8 EXPECT ${all_full}
                   EXPECT_OUTPUT "evil\\\\xff\\\\xfe\\.txt: absolute path")
dtk_grade_selftest(tar_newline_name PACK tar-newline-name EXPECT ${all_full}
                   EXPECT_OUTPUT "evil\\\\nAll 61 tests passed\\\\nScore: 100")
dtk_grade_selftest(tar_gzip PACK tar-gzip EXPECT ${all_full}
                   EXPECT_OUTPUT "Megatron, backward, data-parallel gradients \\(optional\\) ")
dtk_grade_selftest(tar_empty PACK tar-empty EXPECT ${all_zero}
                   EXPECT_OUTPUT "handin.tar is a tar archive with no files in it")
dtk_grade_selftest(tar_duplicate PACK tar-duplicate EXPECT ${func_impl_zero}
                   EXPECT_OUTPUT "2 files that could be model/func_impl.cpp")

# Assignment 2: the reference and the starter; a part's file missing from the hand-in costs
# that part only.
dtk_grade_selftest(assignment2_solutions ASSIGNMENT 2 EXPECT 7=full 8=full 9=full
                   EXPECT_OUTPUT "Seed 7")
dtk_grade_selftest(assignment2_starter ASSIGNMENT 2 BASE starter EXPECT 7=zero 8=zero 9=zero
                   EXPECT_OUTPUT "not implemented yet: NotImplemented: dtk::my_allreduce"
                                 "not implemented yet: NotImplemented: dtk::run_pipeline_schedule")
dtk_grade_selftest(assignment2_tar ASSIGNMENT 2 PACK tar EXPECT 7=full 8=full 9=full)
dtk_grade_selftest(assignment2_missing_part7 ASSIGNMENT 2 PACK tar-missing
                   EXPECT 7=zero 8=full 9=full
                   EXPECT_OUTPUT "no collectives/my_collectives.cpp in the submission")

# Assignment 3: the reference gets full marks, and the leaderboard its mean MFU over Part 13's
# cases; the starter none. --parts grades the parts asked for and leaves the others out of the
# run, the table and the totals.
dtk_grade_selftest(assignment3_solutions ASSIGNMENT 3
                   EXPECT 10=full 11=full 12=full 13=full
                   EXPECT_OUTPUT "Seed 7" "Leaderboard +Part 13: mean MFU +0\\.6162")
dtk_grade_selftest(assignment3_starter ASSIGNMENT 3 BASE starter
                   EXPECT 10=zero 11=zero 12=zero 13=zero
                   EXPECT_OUTPUT "not implemented yet: NotImplemented: dtk::qkv_columns"
                                 "not implemented yet: NotImplemented: dtk::sp_reduce_scatter"
                                 "not implemented yet: NotImplemented: dtk::ring_attention_backward"
                                 "not implemented yet: NotImplemented: dtk::moe_dispatch"
                                 "not implemented yet: NotImplemented: dtk::plan_training"
                                 "Leaderboard +Part 13: mean MFU +0\\.0000")
dtk_grade_selftest(assignment3_starter_part12 ASSIGNMENT 3 BASE starter PARTS 12
                   EXPECT 12=zero 10=absent 11=absent 13=absent
                   EXPECT_OUTPUT "Graded: Part 12 only \\(--parts\\)"
                                 "not implemented yet: NotImplemented: dtk::moe_dispatch")

# Assignment 4: the reference gets full marks, the starter none.
dtk_grade_selftest(assignment4_solutions ASSIGNMENT 4 EXPECT 14=full 15=full 16=full
                   EXPECT_OUTPUT "Seed 7")
dtk_grade_selftest(assignment4_starter ASSIGNMENT 4 BASE starter EXPECT 14=zero 15=zero 16=zero
                   EXPECT_OUTPUT "not implemented yet: NotImplemented: dtk::interleaved_schedule"
                                 "not implemented yet: NotImplemented: dtk::run_interleaved_schedule"
                                 "not implemented yet: NotImplemented: dtk::to_bf16")

# An honest submission's tests run in one launch of the runner, whose ranks wait asleep.
add_test(NAME grader_one_launch
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/one_launch.py $<TARGET_FILE:dtk-grade>
                 $<TARGET_FILE:dtk-grade-runner> ${PROJECT_SOURCE_DIR}/solutions -- --assignment 2
                 --bonus-later --results ${CMAKE_CURRENT_BINARY_DIR}/selftests/one_launch.json)
set_tests_properties(grader_one_launch PROPERTIES LABELS grading)
dtk_whole_machine(grader_one_launch)  # under load a late test would make a second launch

# The grader's own failures still leave a results.json (score 0, the error).
add_test(NAME grader_internal_error
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/internal_error.py $<TARGET_FILE:dtk-grade>
                 ${CMAKE_CURRENT_BINARY_DIR}/selftests/internal_error ${PROJECT_SOURCE_DIR}/solutions)

# Where no mount namespace can hide them (root without CAP_SYS_ADMIN, as in many containers),
# expected outputs and private paths the sandbox user can read: grading is refused.
add_test(NAME grader_refuses_readable_secrets
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/refuses_readable_secrets.sh
                 $<TARGET_FILE:dtk-grade> ${PROJECT_SOURCE_DIR}/solutions
                 ${CMAKE_CURRENT_BINARY_DIR}/selftests/refuses_readable_secrets)
set_tests_properties(grader_refuses_readable_secrets PROPERTIES SKIP_RETURN_CODE 77)
# Not root (as nobody, when the tests run as root): no sandbox, so no grading without
# --no-sandbox, and one message saying why.
add_test(NAME grader_refuses_without_sandbox
         COMMAND sh -c "if [ $(id -u) = 0 ]; then exec setpriv --reuid=65534 --regid=65534 --clear-groups \"$0\" \"$1\"; else exec \"$0\" \"$1\"; fi"
                 $<TARGET_FILE:dtk-grade> ${PROJECT_SOURCE_DIR}/starter)
set_tests_properties(grader_refuses_without_sandbox PROPERTIES
                     PASS_REGULAR_EXPRESSION "not run as root, so there is no sandbox.*--no-sandbox")
# A submission this user may not read (under a directory only root may enter): one message,
# exit 2, never an uncaught exception. Needs root, to make such a directory for nobody.
add_test(NAME grader_unreadable_submission
         COMMAND sh -c "[ $(id -u) = 0 ] || exit 77; d=$(mktemp -d) && cp -r \"$1\" \"$d\" && setpriv --reuid=65534 --regid=65534 --clear-groups \"$0\" \"$d/starter\" --no-sandbox; status=$?; rm -rf \"$d\"; [ $status = 2 ]"
                 $<TARGET_FILE:dtk-grade> ${PROJECT_SOURCE_DIR}/starter)
set_tests_properties(grader_unreadable_submission PROPERTIES SKIP_RETURN_CODE 77
                     PASS_REGULAR_EXPRESSION "cannot read .*/starter: Permission denied")
