# Assignment 3's programs (included by starter/CMakeLists.txt where the tree holds its student
# files): gpt_train, the GPT's trainer.
dtk_add_program(gpt_train gpt_train.cpp)
target_sources(gpt_train PRIVATE programs/gpt_train_report.cpp programs/command_line.cpp)
target_link_libraries(gpt_train PRIVATE dtk_gpt)
