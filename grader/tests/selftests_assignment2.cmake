# Assignment 2's self-tests (Parts 7-9): the reference and the starter, honest mistakes, the
# speed bonus. How they are registered: selftests.cmake; its hostile hand-ins (issue 18):
# selftests_hostile.cmake.

dtk_grade_selftest(assignment2_solutions ASSIGNMENT 2 EXPECT 7=full 8=full 9=full
                   EXPECT_OUTPUT "Seed 7")
dtk_grade_selftest(assignment2_starter ASSIGNMENT 2 BASE starter EXPECT 7=zero 8=zero 9=zero
                   EXPECT_OUTPUT "not implemented yet: NotImplemented: dtk::my_allreduce"
                                 "not implemented yet: NotImplemented: dtk::run_pipeline_schedule")
dtk_grade_selftest(assignment2_tar ASSIGNMENT 2 PACK tar EXPECT 7=full 8=full 9=full)
# A part's file missing from the hand-in costs that part only.
dtk_grade_selftest(assignment2_missing_part7 ASSIGNMENT 2 PACK tar-missing
                   EXPECT 7=zero 8=full 9=full
                   EXPECT_OUTPUT "no collectives/my_collectives.cpp in the submission")

# Part 7: each common mistake costs its own function only, and the feedback names it. A collective called inside costs that function; a deadlock costs only the
# tests it happens in.
dtk_grade_mistake(wrong_allreduce_chunks_off_by_one ASSIGNMENT 2 COSTS my_allreduce=half
                  EXPECT_OUTPUT "Wrong on p=8 count=19 float sum")
dtk_grade_mistake(wrong_allgather_rotated ASSIGNMENT 2 COSTS my_allgather=half
                  EXPECT_OUTPUT "block b holding rank b - 1's src")
dtk_grade_mistake(wrong_collectives_op_ignored ASSIGNMENT 2
                  COSTS my_allreduce=half my_reduce_scatter=half my_allreduce_bonus=zero
                  EXPECT_OUTPUT "summing whatever the op \\(the op ignored\\)"
                                "Not timed: a speed bonus needs all of my_allreduce's points")
# The speed bonus is timed, so only what cannot depend on the machine's load is asserted: a
# correct my_allreduce 20 times slower than it should be earns none (timed, stopped, or
# deferred on a busy machine).
dtk_grade_mistake(slow_allreduce ASSIGNMENT 2 COSTS my_allreduce_bonus=zero
                  EXPECT_OUTPUT "my_allreduce took [0-9.]+x MPI_Allreduce's time|my_allreduce: the timing run did not|Deferred: the machine was")
# Bytes missing: the feedback names the likely cause (chunks cut too short), not files.
dtk_grade_mistake(wrong_allreduce_remainder_dropped ASSIGNMENT 2 COSTS my_allreduce=half
                  EXPECT_OUTPUT "[Cc]hunks or blocks cut too short")
dtk_grade_mistake(forbidden_allreduce_collective ASSIGNMENT 2 COSTS my_allreduce=zero
                  EXPECT_OUTPUT "dtk::my_allreduce gets no points" "Communicator::Allreduce")
# The Communicator's Alltoall is Part 12's (assignment 3): the audit knows it, and Part 7
# may not call it.
dtk_grade_mistake(forbidden_alltoall_collective ASSIGNMENT 2 COSTS my_alltoall=zero
                  EXPECT_OUTPUT "dtk::my_alltoall gets no points" "Communicator::Alltoall")
dtk_grade_mistake(deadlock_alltoall_blocking_sends ASSIGNMENT 2 COSTS my_alltoall=minor
                  EXPECT_OUTPUT "Wrong on p=4 count=131072 float")

# Part 8: each mistake costs its own function only; the executor is driven with the grader's
# own schedules, so a wrong 1F1B costs 8.3 alone; a deadlock that only large activations show
# costs that item; a collective inside the executor costs the executor.
dtk_grade_mistake(deadlock_pipeline_blocking_sends ASSIGNMENT 2 COSTS run_pipeline_schedule=minor
                  EXPECT_OUTPUT "Wrong on p=2 m=4 1f1b float width=65536")
dtk_grade_mistake(wrong_one_f_one_b_warmup ASSIGNMENT 2 COSTS one_f_one_b_schedule=half
                  EXPECT_OUTPUT "expected F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7"
                                "a warm-up one forward too long")
# Load never costs points (issue 31): the same mistake graded while ten busy processes share the
# two cores costs the same and nothing else; the executor's cases of 1 MB activations, past
# their 2 s watchdog among other tests at such a load, pass when run again alone with the
# manifest's retry_test_seconds (the feedback then says so).
dtk_grade_mistake(wrong_one_f_one_b_warmup_under_load ASSIGNMENT 2
                  OVERLAY wrong_one_f_one_b_warmup COSTS one_f_one_b_schedule=half LOAD 10
                  EXPECT_OUTPUT "a warm-up one forward too long")
dtk_grade_mistake(wrong_pipeline_info_swapped ASSIGNMENT 2 COSTS get_pipeline_info=half
                  EXPECT_OUTPUT "pp_comm: world ranks in communicator order")
dtk_grade_mistake(wrong_partition_even_layers ASSIGNMENT 2 COSTS partition_layers=half
                  EXPECT_OUTPUT "the largest stage's cost")
# The outside catalogue's misses: a gradient received into input_shape fails on the hidden
# stages, whose input and output widths differ; a partition with an empty stage fails under
# every seed (cases with ties, fixed by the case; other_seeds: graded under three).
dtk_grade_mistake(wrong_pipeline_grad_input_shape ASSIGNMENT 2 COSTS run_pipeline_schedule=half
                  EXPECT_OUTPUT "MPI reported MPI_ERR_TRUNCATE: message truncated")
dtk_grade_mistake(wrong_partition_empty_stages ASSIGNMENT 2 COSTS partition_layers=minor
                  ${other_seeds}
                  EXPECT_OUTPUT "empty stages \\(b\\[s\\] == b\\[s \\+ 1\\]\\): expected 0, got [1-9]")
dtk_grade_mistake(forbidden_pipeline_barrier ASSIGNMENT 2 COSTS run_pipeline_schedule=zero
                  EXPECT_OUTPUT "Communicator::Barrier")

# Part 9: each mistake costs its own function only; an Allreduce where one Reduce_scatter is
# asked for keeps the shard item and loses those that count its bytes; a wrong
# zero_shard_range also costs ZeRO-1, which shards with it.
dtk_grade_mistake(wrong_zero2_allreduce ASSIGNMENT 2 COSTS zero2_grad_shard=half
                  EXPECT_OUTPUT "bytes sent beyond the [0-9]+ that one Reduce_scatter sends")
dtk_grade_mistake(wrong_zero1_averaged ASSIGNMENT 2 COSTS zero1_grad_shard=half
                  EXPECT_OUTPUT "the gradient averaged, not summed")
dtk_grade_mistake(wrong_zero_gather_padding_kept ASSIGNMENT 2 COSTS zero_gather_params=half
                  EXPECT_OUTPUT "the padding kept")
dtk_grade_mistake(wrong_zero_shard_range_floor ASSIGNMENT 2
                  COSTS zero_shard_range=half zero1_grad_shard=lost
                  EXPECT_OUTPUT "shards of numel / dp values, rounded down")
