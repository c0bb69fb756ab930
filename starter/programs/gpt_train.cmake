# gpt_train, the GPT's trainer, on the students' functions: Parts 10-12's for its layouts; Part
# 8's for its pipeline (--pp), Part 9's for ZeRO (--zero 1, 2), Part 14's for its grid and
# interleaved schedule, Part 15's for its buckets (--bucket_mb) and Part 16's for ZeRO-3 (--zero
# 3), where the tree has them (dtk_tree_has:
# the student file, or in assignment 4's bundle the earlier parts' reference, compiled). Included
# by assignment3.cmake and assignment4.cmake; the first one defines it, where the tree has the
# GPT and Parts 10-12.
if(TARGET gpt_train OR NOT DTK_HOLDS_GPT)
  return()
endif()
foreach(file tensor_parallel/tensor_parallel.cpp context_parallel/context_parallel.cpp
             expert_parallel/expert_parallel.cpp)
  dtk_tree_has(has ${CMAKE_CURRENT_SOURCE_DIR} ${file})
  if(NOT has)
    return()
  endif()
endforeach()

dtk_add_program(gpt_train gpt_train.cpp)
target_sources(gpt_train PRIVATE programs/gpt_train_report.cpp programs/gpt_train_parallelism.cpp
                                 programs/gpt_train_analytic.cpp programs/command_line.cpp)
target_link_libraries(gpt_train PRIVATE dtk_gpt)
if(TARGET dtk_prebuilt)
  target_link_libraries(gpt_train PRIVATE dtk_prebuilt)
endif()
dtk_tree_has(has_part8 ${CMAKE_CURRENT_SOURCE_DIR} pipeline/pipeline.cpp)
dtk_tree_has(has_part14 ${CMAKE_CURRENT_SOURCE_DIR} five_dimensional/five_dimensional.cpp)
dtk_tree_has(has_part15 ${CMAKE_CURRENT_SOURCE_DIR} overlap/overlap.cpp)
dtk_tree_has(has_part9 ${CMAKE_CURRENT_SOURCE_DIR} zero/zero.cpp)
dtk_tree_has(has_part16 ${CMAKE_CURRENT_SOURCE_DIR} memory/memory.cpp)
if(has_part8)
  target_sources(gpt_train PRIVATE programs/gpt_train_pipeline.cpp)
  target_compile_definitions(gpt_train PRIVATE DTK_WITH_GPT_PIPELINE=1)
endif()
# The interleaved schedule's chunks are cut by Part 8's partition.
if(has_part8 AND has_part14)
  target_sources(gpt_train PRIVATE programs/gpt_train_five_dimensional.cpp)
  target_compile_definitions(gpt_train PRIVATE DTK_WITH_GPT_INTERLEAVED=1)
endif()
if(has_part9)
  target_sources(gpt_train PRIVATE programs/gpt_train_zero.cpp)
  target_compile_definitions(gpt_train PRIVATE DTK_WITH_GPT_ZERO=1)
endif()
if(has_part16)
  target_sources(gpt_train PRIVATE programs/gpt_train_memory.cpp)
  target_compile_definitions(gpt_train PRIVATE DTK_WITH_GPT_MEMORY=1)
endif()
if(has_part15)
  target_sources(gpt_train PRIVATE programs/gpt_train_overlap.cpp)
  target_compile_definitions(gpt_train PRIVATE DTK_WITH_GPT_OVERLAP=1)
endif()
