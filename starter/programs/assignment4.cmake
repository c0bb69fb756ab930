# Assignment 4's programs (included by starter/CMakeLists.txt where the tree holds its student
# files): dp_averaging, gradient averaging against weight averaging over uneven shares (14.5);
# overlap_bench, the communication Part 15 hides; and in assignment 4's bundle gpt_train
# (gpt_train.cmake), on Parts 14 and 15 and the earlier parts' reference, compiled (prebuilt/).
dtk_add_program(dp_averaging dp_averaging.cpp)
target_sources(dp_averaging PRIVATE programs/command_line.cpp)
dtk_add_program(overlap_bench overlap_bench.cpp)
target_sources(overlap_bench PRIVATE programs/command_line.cpp)
include(programs/gpt_train.cmake)
