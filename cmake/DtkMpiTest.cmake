# dtk_add_mpi_test(NAME <name> RANKS <n> COMMAND <program> [args...])
#
# Registers a CTest test that runs <program> under mpirun with <n> ranks. The flags make it
# work as root and with more ranks than cores, and turn a hang into a failure (exit 110).
#
# DTK_MPIEXEC, <build>/dtk-mpirun, is the mpirun every test starts: it gives each run an Open
# MPI session directory of its own, so that ctest -j and two students on one machine never
# collide creating theirs.
include_guard(GLOBAL)

set(DTK_MPIEXEC ${CMAKE_BINARY_DIR}/dtk-mpirun)
configure_file(${CMAKE_CURRENT_LIST_DIR}/dtk-mpirun.in ${DTK_MPIEXEC} @ONLY
               FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                                WORLD_READ WORLD_EXECUTE)

set(DTK_MPIRUN_TIMEOUT 120 CACHE STRING "Seconds before mpirun kills a hung test")

# The programs choose Open MPI's single-machine transports themselves (dtk/single_machine_mpi.hpp).
set(DTK_MPIRUN_FLAGS --oversubscribe --allow-run-as-root --timeout ${DTK_MPIRUN_TIMEOUT})

# The test programs' own code (checks, expected values from small formulas, Catch2) is compiled
# -O1: it runs in milliseconds, and compiles in 60 % of -O3's time (test_tensor_parallel.cpp 9.6 s
# against 16.2, 2026-12-06), a student's edit-to-result time. The code under test, the student
# files and the provided model, keeps -O3.
set(DTK_TEST_COMPILE_OPTIONS -O1)

function(dtk_add_mpi_test)
  cmake_parse_arguments(ARG "" "NAME;RANKS" "COMMAND" ${ARGN})
  add_test(NAME ${ARG_NAME}
           COMMAND ${DTK_MPIEXEC} ${DTK_MPIRUN_FLAGS} -n ${ARG_RANKS} ${ARG_COMMAND})
  set_tests_properties(${ARG_NAME} PROPERTIES PROCESSORS ${ARG_RANKS})
endfunction()

# dtk_whole_machine(<test>...): the tests run alone (RUN_SERIAL). For a test that builds a tree,
# trains, benchmarks or grades a class or a bundle: beside a grading pinned to one core it
# starved that grading, and correct code lost points (run_pipeline_schedule's 1 MB item, one
# suite run of three, 2026-11-28). `make test` runs CTest with a slot more than the cores (the
# kit's Makefile, TEST_JOBS), so `PROCESSORS <cores>` no longer means the whole machine.
function(dtk_whole_machine)
  set_tests_properties(${ARGN} PROPERTIES RUN_SERIAL TRUE)
endfunction()

# dtk_label_fast_tests(): labels `fast` every test of the current directory that has no label
# yet. The kit's long tests carry a label of their own (`release`, `class-scale`, ...) where
# they are registered; everything else runs in seconds, so `ctest -L fast` is a developer's
# edit loop (docs/contributing.md, Tests). Call it once, after the directory's last test.
function(dtk_label_fast_tests)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(test IN LISTS tests)
    get_test_property(${test} LABELS labels)
    if(NOT labels)
      set_tests_properties(${test} PROPERTIES LABELS fast)
    endif()
  endforeach()
endfunction()
