# Assignment 3's programs (included by starter/CMakeLists.txt where the tree holds its student
# files): gpt_train, the GPT's trainer, and plan_training (Part 13): a plan simulated, or the
# student's plan_training's (its main is not planner.cpp: that is the student file's name).
dtk_add_program(gpt_train gpt_train.cpp)
target_sources(gpt_train PRIVATE programs/gpt_train_report.cpp programs/gpt_train_parallelism.cpp
                                 programs/gpt_train_analytic.cpp programs/command_line.cpp)
target_link_libraries(gpt_train PRIVATE dtk_gpt)
dtk_add_program(plan_training plan_training_main.cpp)
target_sources(plan_training PRIVATE programs/command_line.cpp)
