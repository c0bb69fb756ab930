# Assignment 1's self-tests (Parts 1-6): the reference and the starter, honest mistakes, broken
# archives. How they are registered: selftests.cmake.
set(all_full 1=full 2=full 3=full 4=full 5=full 6=full)
set(func_impl_zero 1=full 2=zero 3=zero 4=full 5=full 6=zero)

# The reference and the starter, as directories and as archives.
dtk_grade_selftest(solutions EXPECT ${all_full} EXPECT_OUTPUT "Seed 7")
dtk_grade_selftest(starter BASE starter EXPECT 1=zero 2=zero 3=zero 4=zero 5=zero 6=zero
                   EXPECT_OUTPUT "not implemented yet: NotImplemented: dtk::get_info")
dtk_grade_selftest(solutions_tar PACK tar EXPECT ${all_full})
dtk_grade_selftest(solutions_compiled OVERLAY alternative_padded_allreduce MAX_SECONDS 10
                   EXPECT ${all_full} EXPECT_OUTPUT "model/func_impl.cpp: compiled")

# Wrong answers cost their own function only (wrong_split_modulo under three seeds:
# other_seeds). A function wrong on a layout where both groups have more than one rank loses
# at least half its points; a mistake confined to groups of one rank loses less. The feedback
# names the failing layouts and the known mistake the output matches.
dtk_grade_mistake(wrong_get_info_swapped_colors COSTS get_info=half
                  EXPECT_OUTPUT "world ranks in communicator order" "colors swapped")
dtk_grade_mistake(wrong_get_info_dp_major COSTS get_info=half
                  EXPECT_OUTPUT "Wrong on mp=2 dp=2, mp=3 dp=2, mp=2 dp=4, mp=4 dp=2"
                                "a dp-major layout")
dtk_grade_mistake(wrong_get_info_split_key_reversed COSTS get_info=half
                  EXPECT_OUTPUT "Split key reversed")
dtk_grade_mistake(wrong_get_info_one_rank_groups COSTS get_info=minor
                  EXPECT_OUTPUT "groups of one rank")
dtk_grade_mistake(wrong_forward_no_rearrangement
                  COSTS naive_collect_forward_input=half naive_collect_forward_output=half
                  EXPECT_OUTPUT "rows and columns interleaved")
dtk_grade_mistake(wrong_forward_world_comm COSTS naive_collect_forward_input=half
                  EXPECT_OUTPUT "the world communicator")
dtk_grade_mistake(wrong_split_modulo COSTS split_train=half ${other_seeds}
                  EXPECT_OUTPUT "grouped by modulo")
dtk_grade_mistake(wrong_cost_error_type COSTS model_training_cost_analysis=minor
                  EXPECT_OUTPUT "expected 1, got 2")
dtk_grade_mistake(wrong_split_dp1_only COSTS 1=lost EXPECT_OUTPUT "expected shape")

# Forbidden calls cost their part, named in the feedback.
dtk_grade_mistake(forbidden_bcast COSTS 3=zero EXPECT_OUTPUT "MPI_Bcast")
# The manifest alone decides whether a call is forbidden: allowing MPI_Bcast there, the same
# code gets all of Part 3's points (the bytes a broadcast moves between ranks count: traffic is
# counted where MPI is, whatever carries it).
dtk_grade_mistake(allowed_bcast OVERLAY forbidden_bcast ALLOW_MPI MPI_Bcast COSTS 3=full)
dtk_grade_mistake(forbidden_send_recv COSTS 6=zero EXPECT_OUTPUT "MPI_Send")

# Broken submissions: refused members are reported; a missing or broken file costs its parts,
# and the other files' parts are still graded.
dtk_grade_selftest(compile_error OVERLAY compile_error EXPECT ${func_impl_zero}
                   EXPECT_OUTPUT "does not compile" "error:")
dtk_grade_selftest(tar_absolute_path PACK tar-absolute EXPECT ${all_full}
                   EXPECT_OUTPUT "absolute path")
dtk_grade_selftest(tar_dotdot PACK tar-dotdot EXPECT ${all_full} EXPECT_OUTPUT "\\.\\.")
dtk_grade_selftest(tar_symlink PACK tar-symlink EXPECT ${func_impl_zero}
                   EXPECT_OUTPUT "symbolic link")
dtk_grade_selftest(tar_missing_file PACK tar-missing EXPECT ${func_impl_zero}
                   EXPECT_OUTPUT "no model/func_impl.cpp")
dtk_grade_selftest(not_a_tar PACK not-a-tar EXPECT 1=zero 2=zero 3=zero 4=zero 5=zero 6=zero
                   EXPECT_OUTPUT "not a tar archive")
# Names and texts that are not UTF-8 or hold newlines are shown escaped; honest mistakes
# (a gzipped or empty archive, a file twice) are graded or named plainly.
dtk_grade_selftest(tar_not_utf8 PACK tar-not-utf8 EXPECT ${all_full}
                   EXPECT_OUTPUT "evil\\\\xff\\\\xfe\\.txt: absolute path")
dtk_grade_selftest(tar_newline_name PACK tar-newline-name EXPECT ${all_full}
                   EXPECT_OUTPUT "evil\\\\nAll 61 tests passed\\\\nScore: 100")
dtk_grade_selftest(tar_gzip PACK tar-gzip EXPECT ${all_full}
                   EXPECT_OUTPUT "Megatron, backward, data-parallel gradients \\(optional\\) ")
dtk_grade_selftest(tar_empty PACK tar-empty EXPECT 1=zero 2=zero 3=zero 4=zero 5=zero 6=zero
                   EXPECT_OUTPUT "handin.tar is a tar archive with no files in it")
dtk_grade_selftest(tar_duplicate PACK tar-duplicate EXPECT ${func_impl_zero}
                   EXPECT_OUTPUT "2 files that could be model/func_impl.cpp")

# The grader's own failures still leave a results.json (score 0, the error).
add_test(NAME grader_internal_error
         COMMAND ${CMAKE_COMMAND} -DDTK_GRADE=$<TARGET_FILE:dtk-grade>
                 -DWORK=${CMAKE_CURRENT_BINARY_DIR}/selftests/internal_error
                 -DSUBMISSION=${PROJECT_SOURCE_DIR}/solutions
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/tests/internal_error.cmake)
