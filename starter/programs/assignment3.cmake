# Assignment 3's programs (included by starter/CMakeLists.txt where the tree holds its student
# files). plan_training (Part 13): a plan simulated, or the student's plan_training's; not
# planner.cpp: that is the student file's name.
dtk_add_program(plan_training plan_training_main.cpp)
target_sources(plan_training PRIVATE programs/command_line.cpp)
