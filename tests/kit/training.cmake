# Self-tests: training. The model code (starter/include/dtk/mlp, training, data), unified_train
# and the IDX loader, all against the reference (dtk_solutions). Sources and scripts live in
# training/.

# Catch2 programs on the MPI-aware harness, like the public tests.
foreach(test exactness idx_loader)
  add_executable(kit_training_${test} training/test_${test}.cpp)
  target_link_libraries(kit_training_${test} PRIVATE dtk_test_harness dtk_solutions)
  set_target_properties(kit_training_${test} PROPERTIES
                        RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests/kit)
endforeach()

# (mp, dp) in {(2,1), (1,2), (2,2)}, naive and Megatron, train to the weights of (1,1).
dtk_add_mpi_test(NAME kit_training_exactness RANKS 4
                 COMMAND $<TARGET_FILE:kit_training_exactness>)
dtk_add_mpi_test(NAME kit_training_idx_loader RANKS 1
                 COMMAND $<TARGET_FILE:kit_training_idx_loader>)

# A short run on Fashion-MNIST learns, naive and Megatron.
foreach(style naive megatron)
  if(style STREQUAL "megatron")
    set(flag --megatron-mp)
  else()
    set(flag "")
  endif()
  add_test(NAME kit_training_learns_${style}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/training/check_learns.sh $<TARGET_FILE:unified_train>
                   "${flag}" ${DTK_MPIEXEC} ${DTK_MPIRUN_FLAGS})
  set_tests_properties(kit_training_learns_${style} PROPERTIES PROCESSORS 4)
endforeach()

# Bad command lines and missing data: one clear line, non-zero exit.
add_test(NAME kit_training_cli_errors
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/training/check_cli_errors.sh
                 $<TARGET_FILE:unified_train> ${DTK_MPIEXEC} ${DTK_MPIRUN_FLAGS})
set_tests_properties(kit_training_cli_errors PROPERTIES PROCESSORS 4)

# The pipeline trainer (assignment 2): every layout, schedule, micro-batch count and ZeRO stage
# trains to the weights of one rank; and what it measures (stashed micro-batches, ZeRO's memory
# and bytes, the bubble reported) holds.
foreach(mode layouts measurements)
  add_test(NAME kit_pipeline_training_${mode}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/training/check_pipeline_training.py ${mode}
                   $<TARGET_FILE:unified_train> ${DTK_MPIEXEC} ${DTK_MPIRUN_FLAGS})
  dtk_whole_machine(kit_pipeline_training_${mode})
endforeach()

# dp_averaging (assignment 4, 14.5's functions): on uneven shares gradient averaging is one rank's
# weights; weight averaging is with SGD averaged every step only, not with Adam or local steps; a
# bad command line is one line; the handout's table is what it prints.
add_test(NAME kit_dp_averaging
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/training/check_dp_averaging.py
                 ${PROJECT_SOURCE_DIR}/handout.md $<TARGET_FILE:dp_averaging> ${DTK_MPIEXEC} ${DTK_MPIRUN_FLAGS})
dtk_whole_machine(kit_dp_averaging)

# overlap_bench (assignment 4, Part 15's functions): every table's rows, every result right on 2
# and 3 ranks; a bad command line is one line. Its timings are printed, never judged.
add_test(NAME kit_overlap_bench
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/training/check_overlap_bench.py
                 $<TARGET_FILE:overlap_bench> ${DTK_MPIEXEC} ${DTK_MPIRUN_FLAGS})
dtk_whole_machine(kit_overlap_bench)
