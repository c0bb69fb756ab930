# Assignment 3's programs (included by starter/CMakeLists.txt where the tree holds its student
# files): gpt_train, the GPT's trainer (gpt_train.cmake), and plan_training (Part 13): a plan
# simulated, or the student's plan_training's (its main is not planner.cpp: that is the student
# file's name).
include(programs/gpt_train.cmake)
dtk_add_program(plan_training plan_training_main.cpp)
target_sources(plan_training PRIVATE programs/command_line.cpp)
