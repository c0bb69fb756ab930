# Assignment 3's programs (included by starter/CMakeLists.txt where the tree holds its student
# files): gpt_train, the GPT's trainer, and plan_training (Part 13): a plan simulated, or the
# student's plan_training's (its main is not planner.cpp: that is the student file's name).
dtk_add_program(gpt_train gpt_train.cpp)
target_sources(gpt_train PRIVATE programs/gpt_train_report.cpp programs/gpt_train_parallelism.cpp
                                 programs/gpt_train_analytic.cpp programs/command_line.cpp)
target_link_libraries(gpt_train PRIVATE dtk_gpt)
# Its pipeline (--pp) runs on Part 8's functions, where the tree holds assignment 2's files.
dtk_tree_holds(holds_part8 ${CMAKE_CURRENT_SOURCE_DIR} 2)
if(holds_part8)
  target_sources(gpt_train PRIVATE programs/gpt_train_pipeline.cpp)
  target_compile_definitions(gpt_train PRIVATE DTK_WITH_GPT_PIPELINE=1)
endif()
# Its interleaved schedule (--schedule interleaved) on Part 14's, where the tree holds assignment
# 4's files too (the chunks are cut by Part 8's partition).
dtk_tree_holds(holds_part14 ${CMAKE_CURRENT_SOURCE_DIR} 4)
if(holds_part8 AND holds_part14)
  target_sources(gpt_train PRIVATE programs/gpt_train_five_dimensional.cpp)
  target_compile_definitions(gpt_train PRIVATE DTK_WITH_GPT_INTERLEAVED=1)
endif()
# Its buckets (--bucket_mb) on Part 15's, also assignment 4's.
if(holds_part14)
  target_sources(gpt_train PRIVATE programs/gpt_train_overlap.cpp)
  target_compile_definitions(gpt_train PRIVATE DTK_WITH_GPT_OVERLAP=1)
endif()
dtk_add_program(plan_training plan_training_main.cpp)
target_sources(plan_training PRIVATE programs/command_line.cpp)
