# Hostile and adversarial hand-ins: each costs only what it touches, gets what its code
# deserves, changes nothing outside its scratch and leaves nothing behind. Each grades its whole
# assignment (default 1): what it attacks is the grading, not one part. How they are
# registered: selftests.cmake.
set(all_full 1=full 2=full 3=full 4=full 5=full 6=full)

# Adversarial submissions: each costs only the tests it touches, and leaves nothing behind.
dtk_grade_selftest(adversarial_fake_output OVERLAY adversarial_fake_output
                   EXPECT 1=zero 2=full 3=full 4=full 5=full 6=full
                   EXPECT_OUTPUT "ended during this test")
dtk_grade_selftest(adversarial_results_file OVERLAY adversarial_results_file
                   EXPECT 1=zero 2=full 3=full 4=full 5=full 6=full)
dtk_grade_selftest(adversarial_deadlock OVERLAY adversarial_deadlock ARGS --timeout 8
                   EXPECT 1=full 2=full 3=lost 4=full 5=full 6=full EXPECT_OUTPUT "deadlock")
dtk_grade_selftest(adversarial_segfault OVERLAY adversarial_segfault
                   EXPECT 1=full 2=lost 3=full 4=full 5=full 6=full
                   EXPECT_OUTPUT "Segmentation fault|signal 11")
dtk_grade_selftest(adversarial_abort OVERLAY adversarial_abort
                   EXPECT 1=full 2=full 3=full 4=full 5=full 6=lost)
dtk_grade_selftest(adversarial_fork OVERLAY adversarial_fork
                   EXPECT 1=full 2=full 3=full 4=full 5=full 6=zero EXPECT_OUTPUT "fork")
dtk_grade_selftest(adversarial_loop_and_sleep OVERLAY adversarial_loop_and_sleep
                   EXPECT 1=full 2=full 3=full 4=full 5=full 6=lost)
dtk_grade_selftest(adversarial_flood OVERLAY adversarial_flood
                   EXPECT 1=full 2=full 3=full 4=full 5=full 6=lost)
# A crash that an earlier test's code caused (a thread it left, memory it corrupted) costs the
# tests after it nothing: the test that died after others in one process passes when run again
# alone. The landmine here is a thread left running, which costs the function that left it (its
# code cannot run outside a student call: it crashes there, with that function's test).
dtk_grade_selftest(adversarial_later_crash OVERLAY adversarial_later_crash
                   EXPECT 1=full 2=full 3=lost naive_collect_forward_input=zero 4=full 5=full 6=full)
dtk_grade_selftest(adversarial_memory OVERLAY adversarial_memory
                   EXPECT 1=full 2=full 3=full 4=full 5=full 6=lost EXPECT_OUTPUT "bad_alloc")
# Communication through the Communicator only: the test of a function that communicates runs
# sealed, so blocks exchanged through files are never written.
dtk_grade_selftest(adversarial_file_exchange OVERLAY adversarial_file_exchange
                   EXPECT 1=full 2=full 3=lost 4=full 5=full 6=full
                   naive_collect_forward_input=half naive_collect_forward_output=half
                   EXPECT_OUTPUT "no file from rank 0")
dtk_grade_selftest(hostile_runs_symlink OVERLAY hostile_runs_symlink GUARD
                   EXPECT 1=zero 2=full 3=full 4=full 5=full 6=full)
# Nothing outlives a grading, however deep it is buried: chains of directories far beyond
# PATH_MAX in the scratch and wherever anyone may write go with the private temporary
# directories and the sweep, or with the sweep alone where no mount namespace is allowed.
dtk_grade_selftest(hostile_deep_chains OVERLAY hostile_deep_chains GUARD EXPECT ${all_full})
dtk_grade_selftest(hostile_deep_chains_no_namespace OVERLAY hostile_deep_chains GUARD
                   NO_MOUNT_NAMESPACE EXPECT ${all_full})
dtk_grade_selftest(hostile_dladdr OVERLAY hostile_dladdr
                   EXPECT 1=full 2=zero 3=zero 4=full 5=full 6=zero EXPECT_OUTPUT "dladdr")
dtk_grade_selftest(hostile_record_reset OVERLAY hostile_record_reset
                   EXPECT 1=full 2=full 3=zero 4=full 5=full 6=full EXPECT_OUTPUT "MPI_Bcast")
dtk_grade_selftest(adversarial_stop OVERLAY adversarial_stop MAX_SECONDS 20
                   EXPECT 1=full 2=full 3=full 4=full 5=full 6=lost EXPECT_OUTPUT "stopped")
# Filling the disk from a student call, in the scratch or in the private /tmp and /var/tmp: every
# student call is sealed, so it creates no file at all and Part 4 keeps its points (the disk
# limit, disk_mb, still bounds what runs unsealed: the compiler and mpirun).
dtk_grade_selftest(adversarial_disk OVERLAY adversarial_disk EXPECT ${all_full})
dtk_grade_selftest(adversarial_disk_tmp OVERLAY adversarial_disk_tmp LIMITS disk_mb=512
                   EXPECT ${all_full})
dtk_grade_selftest(adversarial_total_memory OVERLAY adversarial_total_memory
                   LIMITS total_memory_mb=1024 EXPECT 1=full 2=full 3=lost 4=full 5=full 6=full
                   EXPECT_OUTPUT "total_memory_mb")
dtk_grade_selftest(include_reference OVERLAY include_reference
                   EXPECT 1=zero 2=full 3=full 4=full 5=full 6=full)
dtk_grade_selftest(adversarial_not_utf8 OVERLAY adversarial_not_utf8
                   EXPECT 1=full 2=full 3=full 4=full 5=zero 6=full
                   EXPECT_OUTPUT "budget \\\\xff\\\\xfe\\\\x1b\\[2J")
dtk_grade_selftest(adversarial_incbin OVERLAY adversarial_incbin
                   EXPECT 1=full 2=full 3=full 4=zero 5=zero 6=full
                   EXPECT_OUTPUT "assembly of its own \\(\"\\.incbin")
dtk_grade_selftest(adversarial_raw_syscall OVERLAY adversarial_raw_syscall
                   EXPECT 1=zero 2=full 3=full 4=full 5=full 6=full
                   EXPECT_OUTPUT "assembly of its own \\(\"syscall")
dtk_grade_selftest(adversarial_section_name OVERLAY adversarial_section_name
                   EXPECT 1=zero 2=full 3=full 4=full 5=full 6=full
                   EXPECT_OUTPUT "assembly of its own \\(\"\\.INCBIN")
dtk_grade_selftest(adversarial_relocations OVERLAY adversarial_relocations
                   EXPECT 1=zero 2=full 3=full 4=full 5=full 6=full
                   EXPECT_OUTPUT "too large to audit")

# Assignment 2, Part 7 against a student who reads the grader (issue 18): the speed bonus is
# timed on fresh inputs with every result checked, MPI's turn where the student's code cannot
# reach it; each rank holds only its own input, only bytes between different ranks count,
# the student call can neither create nor write files, and a function's rules follow its calls
# into the other student files.
# The two speed bonus attacks are timed whatever the load (SPEED_BONUS): the code, not a
# deferral, must earn them nothing (on a very busy machine their slow timing runs may not
# finish within the measurement's time, which earns nothing too).
set(timed_anyway SPEED_BONUS max_busy=1 max_spread=100)
set(timed "my_allreduce took [0-9.]+x MPI_Allreduce's time|my_allreduce: the timing run did not")
dtk_grade_selftest(hostile_bonus_memoised ASSIGNMENT 2 OVERLAY hostile_bonus_memoised
                   ${timed_anyway} EXPECT 7=full 8=full 9=full my_allreduce_bonus=zero
                   EXPECT_OUTPUT "${timed}")
dtk_grade_selftest(hostile_bonus_affinity ASSIGNMENT 2 OVERLAY hostile_bonus_affinity
                   ${timed_anyway} EXPECT 7=full 8=full 9=full my_allreduce_bonus=zero
                   EXPECT_OUTPUT "${timed}")
dtk_grade_selftest(hostile_reads_other_ranks_inputs ASSIGNMENT 2
                   OVERLAY hostile_reads_other_ranks_inputs
                   EXPECT 7=lost my_allreduce=half my_allgather=half my_reduce_scatter=half
                          my_alltoall=half 8=full 9=full)
dtk_grade_selftest(hostile_shm_exchange_self_padding ASSIGNMENT 2
                   OVERLAY hostile_shm_exchange_self_padding
                   EXPECT 7=lost my_allreduce=zero my_allgather=full my_reduce_scatter=full
                          my_alltoall=full 8=full 9=full)
dtk_grade_selftest(hostile_shm_exchange_neighbour_padding ASSIGNMENT 2
                   OVERLAY hostile_shm_exchange_neighbour_padding
                   EXPECT 7=lost my_allreduce=zero my_allgather=full my_reduce_scatter=full
                          my_alltoall=full 8=full 9=full)
dtk_grade_selftest(hostile_allgather_from_formula ASSIGNMENT 2
                   OVERLAY hostile_allgather_from_formula
                   EXPECT 7=lost my_allreduce=full my_allgather=half my_reduce_scatter=full
                          my_alltoall=full 8=full 9=full
                   EXPECT_OUTPUT "received 0 bytes from the other ranks during the call")
dtk_grade_selftest(hostile_lingering_thread ASSIGNMENT 2 OVERLAY hostile_lingering_thread
                   EXPECT 7=lost my_allreduce=zero my_allgather=full my_reduce_scatter=full
                          my_alltoall=full 8=full 9=full
                   EXPECT_OUTPUT "a thread left running after the call returned")
dtk_grade_selftest(hostile_collective_via_zero ASSIGNMENT 2 OVERLAY hostile_collective_via_zero
                   EXPECT 7=zero 8=full 9=full
                   EXPECT_OUTPUT "Communicator::Allreduce \\(in the code of dtk::my_allreduce\\)"
                                 "Communicator::Allgather \\(called from dtk::my_alltoall, at run time\\)")

# A submission sees no process but its own user's: not the grader's, not another grading's.
dtk_grade_selftest(hostile_sees_processes OVERLAY hostile_sees_processes EXPECT ${all_full})
# Nor what the grader keeps private: the reference, another checkout of the kit, the seed.
dtk_grade_selftest(hostile_reads_private OVERLAY hostile_reads_private SECOND_CHECKOUT
                   EXPECT ${all_full})
# A link planted where results.json goes is replaced, never written through.
dtk_grade_selftest(hostile_results_link OVERLAY hostile_results_link GUARD EXPECT ${all_full})

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

# Assignment 3 (and Part 7 again) against a red team with the grader's source (issue 31: 120
# of 120 for code worth 54). Each attack class gets what its code deserves; each of these
# self-tests failed on the grader the red team attacked (the attack worked there). The attacks
# that compute or find instead of communicating fall back, when there is nothing to find, to
# something plausible, right on one rank only: what that earns is what their code deserves.
# Unlike the ones above, each grades only the parts it attacks (and Part 9 for Part 7's, whose
# helpers live in zero/zero.cpp), to keep `make test` within its time.
# Class 1: every rank's inputs (and the expected values) live in the process under test: the
# whole logits, the whole sequences of q, k, v and dout, every rank's routing, found in memory.
dtk_grade_selftest(hostile_inputs_in_memory ASSIGNMENT 3 OVERLAY hostile_inputs_in_memory
                   PARTS 10,11,12
                   EXPECT vocab_parallel_cross_entropy=half ring_attention_forward=half
                          ring_attention_backward=half moe_dispatch=zero others=full)
# Class 2: what moves follows a formula the feedback prints (and Part 12's routing is drawn
# from seed 0, from the case's text, which the runner's command line holds).
dtk_grade_selftest(hostile_values_from_formula ASSIGNMENT 3 OVERLAY hostile_values_from_formula
                   PARTS 10,12
                   EXPECT sp_all_gather=half vocab_parallel_embedding=half moe_dispatch=zero
                          others=full)
# Class 3: bytes counted in the Communicator object handed over: wrong_moe_broadcast's traffic
# through a second Communicator on the same MPI communicator costs what wrong_moe_broadcast
# costs.
dtk_grade_selftest(hostile_moe_broadcast_side_communicator ASSIGNMENT 3
                   OVERLAY hostile_moe_broadcast_side_communicator PARTS 12
                   EXPECT moe_dispatch=minor others=full
                   EXPECT_OUTPUT "bytes sent beyond each row sent once")
# Class 4: the run-time trap watched one thread, and the audit what graded functions name: a
# forbidden collective called on a thread started inside the call, through a pointer a static
# initializer of another student file sets, costs the function that reaches it (a) in Part 11,
# (b) in Part 7 (hostile_collective_via_zero's attack, past both).
dtk_grade_selftest(hostile_threaded_collectives_ring ASSIGNMENT 3
                   OVERLAY hostile_threaded_collectives_ring PARTS 10,11
                   EXPECT ring_attention_forward=zero ring_attention_backward=zero others=full
                   EXPECT_OUTPUT "dtk::ring_attention_forward gets no points"
                                 "dtk::ring_attention_backward gets no points"
                                 "Communicator::Allgather" "Communicator::Reduce_scatter")
dtk_grade_selftest(hostile_threaded_collective_via_zero ASSIGNMENT 2
                   OVERLAY hostile_threaded_collective_via_zero PARTS 7,9 ARGS --bonus-later
                   EXPECT my_allreduce=zero my_allgather=zero my_reduce_scatter=zero others=full
                   EXPECT_OUTPUT "Communicator::Allreduce" "Communicator::Allgather"
                                 "Communicator::Reduce_scatter")
# Class 5: Part 13 judged in the process it runs in: the cluster the check simulates with,
# rewritten in memory (a million times the memory and bandwidth), and a trivial plan, gets
# what the trivial plan gets on the real clusters (it fits on one case of 15), and the
# leaderboard the MFU the trivial plan reaches there.
dtk_grade_selftest(hostile_planner_rewrites_cluster ASSIGNMENT 3
                   OVERLAY hostile_planner_rewrites_cluster PARTS 13 EXPECT plan_training=half
                   EXPECT_OUTPUT "Leaderboard +Part 13: mean MFU +0\\.0336")
# Class 6: System V IPC objects outlive a grading (three shared-memory segments of 16 MiB, a
# message queue and a semaphore set, mode 0666, from a static initializer and from Part 13's
# plan_training). Every student call and the loading run sealed (the calls fail), each launch
# has an IPC namespace of its own and the sweep removes what is left; the audit refuses shmget,
# msgget and semget, so plan_training's part gets nothing, and the grading leaves nothing
# behind (GUARD compares the IPC objects before and after).
dtk_grade_selftest(hostile_ipc_left_behind ASSIGNMENT 3 OVERLAY hostile_ipc_left_behind
                   PARTS 13 GUARD EXPECT 13=zero EXPECT_OUTPUT "shmget")
