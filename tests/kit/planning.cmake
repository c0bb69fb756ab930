# Self-tests of Part 13's provided simulator and of the program plan_training (assignment 3).
# The simulator: published anchors (ZeRO's Figure 1, Korthikanti et al.'s activations, Llama 3's
# MFU), its rules and the directions of its trade-offs; one process.
add_executable(kit_planning_simulator planning/test_simulator.cpp)
target_link_libraries(kit_planning_simulator PRIVATE dtk_test_harness dtk_solutions)
target_compile_definitions(kit_planning_simulator PRIVATE
    DTK_STARTER_DIR="${PROJECT_SOURCE_DIR}/starter"
    DTK_PLANNING_TEST_DIR="${CMAKE_CURRENT_LIST_DIR}/planning")
set_target_properties(kit_planning_simulator PROPERTIES
                      RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests/kit)
add_test(NAME kit_planning_simulator COMMAND kit_planning_simulator)
# The program: the reference's plan, plans given by flags or in a file, bad inputs (exit 2).
add_test(NAME kit_planning_program
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/planning/check_program.sh $<TARGET_FILE:plan_training>
                 ${PROJECT_SOURCE_DIR}/starter/src/planning/configs)
