# Assignment 2's programs (included by starter/CMakeLists.txt where the tree holds its student
# files): Part 7's benchmark, and unified_train's pipeline trainer with ZeRO.
dtk_add_program(collectives_bench collectives_bench.cpp)
dtk_add_unified_train_trainer(unified_train_pipeline.cpp DTK_WITH_PIPELINE_TRAINER)
